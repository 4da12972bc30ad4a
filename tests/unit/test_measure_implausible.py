"""Vendor logs whose values no real run prints are input errors naming the file (and the line where
there is one), not internal errors or figures the economics divide by (issue 30)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from procure.measure import LogError, ingest
from procure.measure.collect import MIN_STEP_TIME_S

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


def _edited(tmp_path: Path, fixture: str, name: str, old: str, new: str) -> Path:
    text = (FIXTURES / fixture).read_text()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize("value", ["-326.80", "1e-300"])
def test_an_nccl_bus_bandwidth_that_is_negative_or_tiny_is_refused_with_its_line(tmp_path, value):
    path = _edited(tmp_path, "nccl_tests_old_columns.txt", "nccl.txt", "326.80", value)
    with pytest.raises(LogError, match=r"nccl\.txt:9: a bus bandwidth of .* GB/s is not a measurement"):
        ingest([path])


def test_an_nccl_log_with_zero_bandwidth_at_large_messages_is_refused(tmp_path):
    text = (FIXTURES / "nccl_tests_old_columns.txt").read_text()
    for value in ("313.18", "312.13", "326.80", "327.36", "313.17", "312.65"):
        text = text.replace(value, "0.00")
    path = tmp_path / "zero.txt"
    path.write_text(text)
    with pytest.raises(LogError, match=r"zero\.txt: the bus bandwidth at its largest messages is 0 GB/s"):
        ingest([path])


def test_the_nccl_fixture_still_reads():
    assert ingest([FIXTURES / "nccl_tests_old_columns.txt"]).sources[0].bus_bandwidth is not None


@pytest.mark.parametrize("history, kind, where", [("5", "a number", "1:21"), ('{"a": 1}', "an object", "1:21"),
                                                  ('"x"', "a string", "1:21")])
def test_a_trainer_state_whose_log_history_is_not_a_list_is_an_input_error(tmp_path, history, kind, where):
    path = tmp_path / "trainer_state.json"
    path.write_text('{"global_step": 10, "log_history": ' + history + "}")
    with pytest.raises(LogError, match=rf"trainer_state\.json:{where}: `log_history` is {kind}, not a list"):
        ingest([path])


def test_a_megatron_step_of_1e_300_s_is_refused_as_implausible(tmp_path):
    path = _edited(tmp_path, "megatron_lm_interval10.log", "tiny.log", "(ms): 2000.0", "(ms): 1e-300")
    with pytest.raises(LogError, match=r"tiny\.log: a step time of .* s is implausible: a training step "
                                       r"takes at least 1 ms"):
        ingest([path])


def test_a_kineto_trace_of_femtoseconds_is_refused_as_implausible(tmp_path):
    trace = json.loads((FIXTURES / "kineto_rank-0.json").read_text())
    for event in trace["traceEvents"]:
        for key in ("ts", "dur"):
            if isinstance(event.get(key), (int, float)):
                event[key] *= 1e-12          # microseconds: 100 ms steps become 1e-13 s
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace))
    with pytest.raises(LogError, match=r"trace\.json: a step time of 1e-13 s is implausible"):
        ingest([path])


def test_a_per_rank_table_of_microsecond_steps_is_refused(tmp_path):
    path = tmp_path / "ranks.csv"
    path.write_text("step,rank,step_time_s\n" + "".join(f"{s},{r},1e-6\n" for s in range(20) for r in range(2)))
    with pytest.raises(LogError, match=r"ranks\.csv: a step time of 1e-06 s is implausible"):
        ingest([path])


def test_the_floor_is_one_millisecond():
    assert MIN_STEP_TIME_S == 1e-3
