"""Line normalisation: prefixes, colours, numbers, durations, timestamps, format detection."""

from __future__ import annotations

import pytest

from procure.measure import FORMATS, detect_format
from procure.measure.normalize import (lines, parse_clock, parse_number,
                                       parse_timestamp, strip_prefixes)


@pytest.mark.parametrize("token, expected", [
    ("193,831", 193831.0),
    ("1,234.5", 1234.5),
    ("6.706e+03", 6706.0),
    ("112.9TFLOPS", 112.9),
    ("12.3/45.6", 12.3),
    ("-3", -3.0),
    (".5", 0.5),
    ("  42  ", 42.0),
    ("'7.0'", 7.0),
    (3, 3.0),
])
def test_numbers_in_log_tokens(token, expected):
    assert parse_number(token) == expected


@pytest.mark.parametrize("token", ["N/A", "n/a", "null", "None", "", "nan", "inf", "-inf", "abc",
                                   "1e400", None, True, float("nan")])
def test_missing_or_non_finite_numbers_are_none(token):
    assert parse_number(token) is None


@pytest.mark.parametrize("text, seconds", [
    ("0:03:29", 209.0),
    ("23:58:27", 86307.0),
    ("4 days, 7:14:51", 4 * 86400 + 7 * 3600 + 14 * 60 + 51),
    ("1 day, 0:02:01", 86521.0),
    ("06:19", 379.0),
    ("43:24:54", 43 * 3600 + 24 * 60 + 54),
    ("1m 3s", 63.0),
    ("9h 30m 16s", 34216.0),
    ("3s", 3.0),
    ("250ms", 0.25),
])
def test_clock_and_unit_durations(text, seconds):
    assert parse_clock(text) == pytest.approx(seconds)


def test_timestamps_differences_are_exact_to_the_millisecond():
    a = parse_timestamp("2025-01-15 10:23:45,123")
    b = parse_timestamp("2025-01-15T10:23:47.623")
    assert b - a == pytest.approx(2.5, abs=1e-6)
    zoned = parse_timestamp("2025-10-17T11:32:59+08:00")
    assert zoned == parse_timestamp("2025-10-17T03:32:59Z")
    assert parse_timestamp("not a time") is None


@pytest.mark.parametrize("raw, text, rank", [
    ("[1,3]<stdout>:           8             2     float", "8             2     float", 3),
    ("[default7]: iteration    31214/  115311 |", "iteration    31214/  115311 |", 7),
    ("[rank12]:[titan] step: 1", "step: 1", 12),
    (" 0: :::MLLOG {}", ":::MLLOG {}", 0),
    ("stdout: hello", "hello", None),
    ("I0317 10:00:13.658792 1253 metric_logger.py:181] completed step: 1", "completed step: 1", None),
])
def test_launcher_prefixes_are_stripped_and_rank_kept(raw, text, rank):
    body, got_rank, _ = strip_prefixes(raw)
    assert body == text
    assert got_rank == rank


def test_ansi_colours_nbsp_and_timestamps_are_removed():
    body, rank, ts = strip_prefixes("\x1b[31m[rank0]:[titan] 2025-01-15 10:23:45,123 - root - "
                                    "INFO - \x1b[32mstep:\u00a0 10\x1b[39m")
    assert body == "- root - INFO - step:  10"
    assert rank == 0
    assert ts == parse_timestamp("2025-01-15 10:23:45.123")


def test_carriage_returns_split_progress_bar_updates():
    parsed = lines("Epoch 0: 1/3\rEpoch 0: 2/3\r\nlast\n\n")
    assert [line.text for line in parsed] == ["Epoch 0: 1/3", "Epoch 0: 2/3", "last"]
    assert [line.lineno for line in parsed] == [1, 2, 3]


@pytest.mark.parametrize("name, head, fmt", [
    ("x.parquet", b"PAR1....", "rank-table"),
    ("steps.csv", b"step,rank,step_time_s\n1,0,2.0\n", "rank-table"),
    ("other.csv", b"a,b\n1,2\n", None),
    ("meta.yaml", b"world_size: 8\npp_size: 2\n", "straggler-meta"),
    ("cluster.yaml", b"workload:\n  model: llama\n", None),
    ("t.json", b'{"schemaVersion": 1, "traceEvents": [', "kineto"),
    ("raw.txt", b"noise\n 0: :::MLLOG {\"key\": 1}\n:::SYSJSON {\"accelerators_per_node\": \"8\"}",
     "mlperf"),
    ("sys.json", b'{"number_of_nodes": "2", "accelerators_per_node": "8"}', "mlperf-system"),
    ("m.log", b" iteration 1/ 10 | elapsed time per iteration (ms): 5.0 |", "megatron"),
    ("n.log", b"Training epoch 0, iteration 5/99 | train_step_timing in s: 1.0", "nemo"),
    ("t.log", b"[rank0]:[titan] 2025 - root - INFO - step: 1 loss: 2", "torchtitan"),
    ("d.log", b"epoch=0/micro_step=1/global_step=1, RunningAvgSamplesPerSec=1, CurrSamplesPerSec=1",
     "deepspeed"),
    ("s.log", b"{'loss': 1.0, 'global_step/max_steps': '1/9'}", "ms-swift"),
    ("c.log", b"step 00010/01000 (1.00%) | loss: 5.1 | dt: 989.44ms | tok/sec: 529,912", "nanochat"),
    ("x.log", b"completed step: 3, seconds: 5.4, TFLOP/s/device: 1", "maxtext"),
    ("i.log", b"step=1 loss=2 tgs (tokens/gpu/second)=3917.95", "internevo"),
    ("n.txt", b"#       size         count      type   redop    root     time   algbw   busbw",
     "nccl-tests"),
    ("README.md", b":::MLLOG {\"key\": 1} elapsed time per iteration", None),
    ("notes.txt", b"nothing to see", None),
])
def test_detect_format(name, head, fmt):
    assert detect_format(name, head) == fmt
    assert fmt is None or fmt in FORMATS
