"""ingest(): folders, detection, format override, limits, errors and the JSON contract."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from procure.errors import ProcureError
from procure.measure import FORMATS, IngestResult, Limits, LogError, ingest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
MEGATRON = " iteration {i:8d}/     100 | elapsed time per iteration (ms): {ms} | lm loss: 1.0 |\n"


def megatron_log(values_ms) -> str:
    return "".join(MEGATRON.format(i=i, ms=v) for i, v in enumerate(values_ms, start=1))


def test_log_error_is_a_procure_error_with_exit_code_1():
    assert issubclass(LogError, ProcureError) and LogError.exit_code == 1


def test_folders_are_read_recursively_sorted_and_unknown_files_skipped(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "run.log").write_text(megatron_log([10, 2, 2, 2]))
    (tmp_path / "a.log").write_text(megatron_log([9, 3, 3]))
    (tmp_path / "notes.txt").write_text("lunch at noon\n")
    (tmp_path / ".hidden.log").write_text(megatron_log([1, 1]))
    result = ingest([tmp_path])
    assert [Path(s.path).name for s in result.sources] == ["a.log", "run.log"]
    assert result.skipped == [{"path": str(tmp_path / "notes.txt"),
                               "reason": "no known log or trace format"}]


def test_progress_is_called_once_per_file(tmp_path):
    for name in ("a.log", "b.log", "c.txt"):
        (tmp_path / name).write_text(megatron_log([5, 1, 1]) if name.endswith(".log") else "x\n")
    calls = []
    ingest([tmp_path], progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 3), (2, 3), (3, 3)]


def test_nothing_measured_is_a_log_error_naming_each_file(tmp_path):
    (tmp_path / "empty.log").write_text(" iteration 1/ 10 | lm loss: 1.0 |\n"
                                        " elapsed time per iteration (ms): N/A\n")
    (tmp_path / "notes.txt").write_text("nothing\n")
    with pytest.raises(LogError) as info:
        ingest([tmp_path])
    message = str(info.value)
    assert "empty.log: megatron: no step times found" in message
    assert "notes.txt: no known log or trace format" in message


def test_internevo_without_consecutive_lines_alone_is_an_error(shared_dir):
    with pytest.raises(LogError, match="InternEvo prints no step time"):
        ingest([shared_dir / "data" / "logs" / "other_internevo_record_metrics.log"])


def test_a_file_without_steps_next_to_one_with_steps_is_a_source(tmp_path):
    (tmp_path / "a.log").write_text(megatron_log([5, 1, 1]))
    (tmp_path / "b.log").write_text("Training epoch 0, iteration 1/9 | lr: 1e-4 |\n")
    result = ingest([tmp_path / "a.log", tmp_path / "b.log"], fmt=None)
    empty = result.to_dict()["sources"][1]
    assert (empty["format"], empty["steps"], empty["step_time_s"]) == ("nemo", 0, None)
    assert empty["aggregation"] is None
    assert any("no step times" in n for n in empty["notes"])


def test_missing_paths_and_unknown_formats_are_errors(tmp_path):
    with pytest.raises(LogError, match="no such file or folder"):
        ingest([tmp_path / "nope.log"])
    with pytest.raises(LogError, match="unknown log format 'fancy'"):
        ingest([FIXTURES / "nemo2.log"], fmt="fancy")
    with pytest.raises(LogError, match="no files found"):
        ingest([tmp_path])


def test_format_override_applies_to_every_file(tmp_path):
    odd = tmp_path / "odd.out"
    odd.write_text("completed step: 1, seconds: 2.0\ncompleted step: 2, seconds: 3.0\n")
    assert ingest([odd], fmt="maxtext").sources[0].format == "maxtext"
    with pytest.raises(LogError, match="no step times"):
        ingest([odd], fmt="megatron")


def test_non_utf8_text_names_the_byte_offset(tmp_path):
    bad = tmp_path / "latin1.log"
    bad.write_bytes(megatron_log([5, 1]).encode() + b"caf\xe9\n")
    with pytest.raises(LogError) as info:
        ingest([bad])
    offset = len(megatron_log([5, 1]).encode()) + 3
    assert f"latin1.log: not UTF-8 text (byte 0xe9 at offset {offset})" in str(info.value)


def test_utf8_bom_is_accepted(tmp_path):
    path = tmp_path / "bom.log"
    path.write_bytes(b"\xef\xbb\xbf" + megatron_log([5, 1, 1]).encode())
    assert ingest([path]).sources[0].samples == 3


def test_size_limits_are_enforced_with_a_clear_message(tmp_path):
    path = tmp_path / "big.log"
    path.write_text(megatron_log([5] * 50))
    with pytest.raises(LogError, match="larger than the .* limit for one log"):
        ingest([path], limits=Limits(text_bytes=100))
    packed = tmp_path / "big.log.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(LogError, match="larger than"):
        ingest([packed], limits=Limits(text_bytes=100))
    table = tmp_path / "t.csv"
    table.write_text("step,rank,step_time_s\n1,0,1.0\n")
    with pytest.raises(LogError, match="limit for one table"):
        ingest([table], limits=Limits(table_bytes=10))


def test_corrupt_gzip_and_parquet_are_log_errors(tmp_path):
    gz = tmp_path / "trace.json.gz"
    gz.write_bytes(b"\x1f\x8b" + b"\x00" * 20)
    pq = tmp_path / "x.parquet"
    pq.write_bytes(b"PAR1 not really")
    for path in (gz, pq):
        with pytest.raises(LogError, match="cannot read"):
            ingest([path])


def test_gzip_text_logs_are_read(tmp_path):
    path = tmp_path / "run.log.gz"
    path.write_bytes(gzip.compress(megatron_log([5, 1, 1]).encode()))
    assert ingest([path]).sources[0].format == "megatron"


def test_detection_reads_past_the_first_mebibyte(tmp_path):
    path = tmp_path / "long.out"
    path.write_text("x" * 80 + "\n" * 1 + ("setup noise line\n" * 70000) + megatron_log([5, 1, 1]))
    assert ingest([path]).sources[0].samples == 3


def test_to_dict_schema_and_json_round_trip():
    result = ingest([FIXTURES / "megatron_lm_interval10.log", FIXTURES / "nccl_tests_old_columns.txt"])
    d = json.loads(json.dumps(result.to_dict()))
    assert d["schema"] == "procure.ingest/v1"
    required = {"path", "format", "steps", "warmup_excluded", "step_time_s", "steps_per_sample",
                "samples", "outliers", "gpus", "notes", "stragglers", "bus_bandwidth",
                "aggregation"}
    for src in d["sources"]:
        assert required <= set(src)
    assert set(d["sources"][0]["step_time_s"]) >= {"mean", "p50", "p95", "p99", "max", "std",
                                                   "cv", "min"}
    assert d["combined"]["aggregation"] == "interval-mean"


def test_step_time_summary_histogram_and_busbw():
    result = ingest([FIXTURES / "nemo2.log", FIXTURES / "nccl_tests_old_columns.txt"])
    summary = result.step_time_summary()
    assert set(summary) == {"mean", "p50", "p95", "p99", "max", "std", "cv", "count",
                            "aggregation"}
    assert (summary["count"], summary["mean"]) == (5, pytest.approx(3.1))
    hist = result.histogram(bins=4)
    assert len(hist["edges_s"]) == 5 and sum(hist["counts"]) == 5
    assert result.busbw_gbs() == pytest.approx(327.08)


def test_combined_prefers_per_step_sources():
    result = ingest([FIXTURES / "nemo2.log", FIXTURES / "train_results.json"])
    combined = result.to_dict()["combined"]
    assert (combined["aggregation"], combined["sources"], combined["count"]) == ("per-step", 1, 5)
    only_whole = ingest([FIXTURES / "train_results.json"])
    assert only_whole.step_time_summary()["aggregation"] == "whole-run"


def test_no_step_sources_give_no_summary():
    result = ingest([FIXTURES / "nccl_tests_all_gather.txt"])
    assert isinstance(result, IngestResult)
    assert result.step_time_summary() is None and result.histogram() is None


def test_mlperf_system_matching_by_folder(tmp_path):
    folder = tmp_path / "results" / "dgxh100_n2" / "gpt3"
    folder.mkdir(parents=True)
    shutil.copy(FIXTURES / "mlperf_v3_train_step_timing.txt", folder / "result_0.txt")
    shutil.copy(FIXTURES / "mlperf_system_dgxh100_n2.json", tmp_path / "dgxh100_n2.json")
    other = json.loads((FIXTURES / "mlperf_system_dgxh100_n2.json").read_text())
    other["number_of_nodes"] = "2"
    other["accelerators_per_node"] = "4"
    (tmp_path / "other_n2.json").write_text(json.dumps(other))
    result = {Path(s.path).name: s for s in ingest([tmp_path]).sources}
    assert result["result_0.txt"].gpus == 16          # the folder names the system
    (tmp_path / "dgxh100_n2.json").unlink()
    result = {Path(s.path).name: s for s in ingest([tmp_path]).sources}
    assert result["result_0.txt"].gpus == 8           # by node count and accelerator name


def test_formats_tuple_is_public():
    assert "megatron" in FORMATS and "rank-table" in FORMATS and len(set(FORMATS)) == len(FORMATS)
