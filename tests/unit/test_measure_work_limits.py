"""Limits on work, not only bytes (issue 30): lines, rows and row groups per file, checked before
or while a file is decoded, each refused as a LogError naming the file and the limit.

The limits are scaled down here (``Limits(max_lines=..., max_rows=...)``) so the shapes stay small;
benchmarks/ingest_limits.py measures peak memory for the full-size shapes at the default limits.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from procure.measure import LogError, ingest
from procure.measure.readers import DEFAULT_LIMITS, Limits

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


def _megatron_flood(path: Path, lines: int) -> Path:
    """A valid Megatron header, then ``lines`` 8-byte lines (the shape that passed 4 GB)."""
    head = (FIXTURES / "megatron_lm_interval10.log").read_bytes()
    path.write_bytes(head + b"x234567\n" * lines)
    return path


def test_a_text_log_with_more_lines_than_the_limit_is_refused(tmp_path):
    path = _megatron_flood(tmp_path / "flood.log", 5_000)
    with pytest.raises(LogError, match=r"flood\.log: too many lines \(5,0\d\d, over the limit of 4,000"):
        ingest([path], limits=Limits(max_lines=4_000))


def test_the_same_log_within_the_line_limit_is_read(tmp_path):
    path = _megatron_flood(tmp_path / "flood.log", 3_000)
    assert ingest([path], limits=Limits(max_lines=4_000)).sources[0].format == "megatron"


def _rank_csv(path: Path, rows: int) -> Path:
    steps = np.arange(rows) // 4
    ranks = np.arange(rows) % 4
    body = "".join(f"{s},{r},1.5\n" for s, r in zip(steps, ranks))
    path.write_text("step,rank,step_time_s\n" + body)
    return path


def test_a_csv_with_more_rows_than_the_limit_is_refused_while_streaming(tmp_path):
    path = _rank_csv(tmp_path / "ranks.csv", 20_000)
    with pytest.raises(LogError, match=r"ranks\.csv: too many rows \(more than 5,000, over the limit"):
        ingest([path], limits=Limits(max_rows=5_000))
    assert ingest([path], limits=Limits(max_rows=20_000)).sources[0].steps == 5_000


def _rank_parquet(path: Path, rows: int, row_group_size: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"step": np.arange(rows) // 4, "rank": np.arange(rows) % 4,
                      "step_time_s": np.full(rows, 1.5)})
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def test_a_parquet_file_with_more_rows_than_the_limit_is_refused_from_its_metadata(tmp_path, monkeypatch):
    path = _rank_parquet(tmp_path / "ranks.parquet", 8_000, 8_000)
    import pyarrow.parquet as pq

    def no_decoding(*args, **kwargs):
        raise AssertionError("rows decoded before the row count was checked")

    monkeypatch.setattr(pq.ParquetFile, "read", no_decoding)
    with pytest.raises(LogError, match=r"ranks\.parquet: too many rows \(8,000, over the limit of 1,000"):
        ingest([path], limits=Limits(max_rows=1_000))


def test_a_parquet_file_of_many_row_groups_is_refused(tmp_path):
    path = _rank_parquet(tmp_path / "groups.parquet", 400, 4)
    with pytest.raises(LogError, match=r"groups\.parquet: too many row groups \(100, over the limit of 50"):
        ingest([path], limits=Limits(max_row_groups=50))


def test_the_default_limits_allow_real_runs():
    # a 10k-step run of 1,024 ranks is 10 M rows; a 200 MiB log of 100-byte lines is 2 M lines
    assert DEFAULT_LIMITS.max_rows >= 10_000_000
    assert DEFAULT_LIMITS.max_lines >= DEFAULT_LIMITS.text_bytes // 128
