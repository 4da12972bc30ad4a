"""Property tests: mutated or random lines into every parser end in a result or a LogError."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procure.measure import LogError, ingest
from procure.measure.parsers import TEXT_PARSERS
from procure.measure.summarise import summarise

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"

SEEDS = {
    "megatron": ["megatron_lm_interval10.log", "megatron_deepspeed_kv.log", "gpt_neox.log"],
    "nemo": ["nemo2.log", "nemo1_tqdm.log"],
    "mlperf": ["mlperf_v3_train_step_timing.txt", "mlperf_lora_block_throughput.txt",
               "mlperf_v4_blocks_only.txt"],
    "mlperf-system": ["mlperf_system_dgxh100_n2.json"],
    "torchtitan": ["torchtitan_2ranks.log", "torchtitan_freq1_restart.log"],
    "deepspeed": ["deepspeed_throughput.log", "deepspeed_breakdown.log"],
    "hf-trainer": ["llamafactory_trainer_log.jsonl", "trainer_state.json", "hf_trainer_stdout.log"],
    "ms-swift": ["ms_swift.log"],
    "maxtext": ["maxtext.log"],
    "nanochat": ["nanochat.log", "nanogpt.log"],
    "internevo": ["internevo.log"],
    "kineto": ["kineto_rank-0.json", "rocm_kineto.json"],
    "nccl-tests": ["nccl_tests_all_gather.txt", "nccl_tests_old_columns.txt"],
    "straggler-meta": ["meta-ops.yaml"],
}

NASTY = ["N/A", "nan", "-inf", "1e309", "-5", "0", "", "null", "9" * 40, "\x1b[31m", "|", "/",
         "{", "]", ":::MLLOG {", "\u00a0", "é", "\r", "1,2,3", "0x1f", "1e-320"]


def _lines(fmt: str) -> list[str]:
    return [line for name in SEEDS[fmt] for line in (FIXTURES / name).read_text().splitlines()]


@st.composite
def mutated(draw, fmt: str) -> str:
    lines = _lines(fmt)
    picked = draw(st.lists(st.sampled_from(lines), min_size=0, max_size=12))
    out = []
    for line in picked:
        action = draw(st.integers(0, 4))
        if action == 1 and line:
            cut = draw(st.integers(0, len(line)))
            line = line[:cut]
        elif action == 2:
            tokens = line.split(" ")
            at = draw(st.integers(0, max(0, len(tokens) - 1)))
            tokens[at] = draw(st.sampled_from(NASTY))
            line = " ".join(tokens)
        elif action == 3:
            line = line + draw(st.text(max_size=20))
        elif action == 4 and line:
            at = draw(st.integers(0, len(line) - 1))
            line = line[:at] + draw(st.sampled_from(NASTY)) + line[at + 1:]
        out.append(line)
    return "\n".join(out)


def _check(fmt: str, text: str) -> None:
    try:
        parsed = TEXT_PARSERS[fmt](text, f"fuzz.{fmt}")
        summary = summarise(parsed, "fuzz")
    except LogError:
        return
    values = parsed.samples.step_time_s
    assert all(math.isfinite(v) and v > 0 for v in values)
    if summary.step_time_s is not None:
        assert all(math.isfinite(v) for v in summary.step_time_s.values())
        assert summary.step_time_s["count"] == summary.samples - summary.warmup_excluded


@pytest.mark.parametrize("fmt", sorted(SEEDS))
def test_mutated_lines_never_crash_a_parser(fmt):
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(mutated(fmt))
    def run(text):
        _check(fmt, text)

    run()


@pytest.mark.parametrize("fmt", sorted(SEEDS))
def test_random_text_never_crashes_a_parser(fmt):
    @settings(max_examples=15, deadline=None)
    @given(st.text(max_size=300))
    def run(text):
        _check(fmt, text)

    run()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200), st.sampled_from([".log", ".json", ".csv", ".parquet", ".gz",
                                                 ".yaml"]))
def test_random_files_end_in_a_result_or_a_log_error(tmp_path_factory, data, suffix):
    path = tmp_path_factory.mktemp("fuzz") / f"input{suffix}"
    path.write_bytes(data)
    try:
        ingest([path])
    except LogError:
        pass
