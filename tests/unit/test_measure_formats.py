"""The log-format table: every format is readable, detectable (or a table) and listed once."""

from __future__ import annotations

from procure.measure.detect import detect_format, detect_in_body
from procure.measure.formats import BY_NAME, FORMATS, LOG_FORMATS, SIGNATURES
from procure.measure.parsers import TEXT_PARSERS


def test_every_format_is_read_by_a_parser_or_as_a_table():
    for f in LOG_FORMATS:
        assert (f.parser is None) == f.table, f.name
        if f.parser is not None:
            assert callable(f.parse_function()), f.name
    assert set(TEXT_PARSERS) == {f.name for f in LOG_FORMATS if not f.table}


def test_names_are_unique_and_signature_orders_distinct():
    assert len(LOG_FORMATS) == len(BY_NAME) == len(FORMATS)     # no two formats share a name
    orders = [sig.order for _, sig in SIGNATURES]
    assert len(orders) == len(set(orders))


def test_each_signature_needs_one_of_its_words_on_the_matching_line():
    """The body scan tries a pattern only on lines holding a word: a pattern that could match
    without one would be found in the head and missed past the first MiB."""
    samples = {
        "mlperf": b':::MLLOG {"key": "run_start"}', "mlperf-system": b'{"accelerators_per_node": 8}',
        "megatron": b" iteration 10/ 100 | elapsed time per iteration (ms): 1234.5 |",
        "nemo": b"Epoch 0: train_step_timing in s=2.1", "torchtitan": b"[titan] step: 1 loss: 7.1",
        "deepspeed": b"RunningAvgSamplesPerSec=12.5", "hf-trainer": b'{"log_history": []}',
        "ms-swift": b"{'global_step/max_steps': '1/10'}", "maxtext": b"completed step: 3, seconds: 1.2",
        "nanochat": b"step 00010/01000 (1%) | loss: 3.2 | dt: 123.45ms",
        "internevo": b"tgs (tokens/gpu/second)=3000", "kineto": b'{"traceEvents": []}',
        "nccl-tests": b"# Avg bus bandwidth    : 180.5",
    }
    for name, line in samples.items():
        assert detect_format("x.log", line) == name, name
        padded = b"x\n" * (1 << 20) + line + b"\n"   # past the head: only the word scan finds it
        assert detect_in_body("x.log", padded) == name, name
    assert {f.name for f in LOG_FORMATS if f.signatures} == set(samples)
