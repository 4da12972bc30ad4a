"""Per-rank tables: schemas, CSV/Parquet parity, deduplication, stragglers, op traces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procure.measure import LogError, ingest
from procure.measure.ranktable import reduce_arrays, schema_for
from procure.measure.stragglers import analyse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


def write_table(path: Path, columns: dict) -> Path:
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    table = pa.table(columns)
    if path.suffix == ".parquet":
        pq.write_table(table, path, row_group_size=7)
    else:
        pcsv.write_csv(table, path)
    return path


def grid(steps: int, ranks: int, seed: int = 0, slow_rank: int | None = None):
    rng = np.random.default_rng(seed)
    step = np.repeat(np.arange(1, steps + 1), ranks)
    rank = np.tile(np.arange(ranks), steps)
    seconds = 2.0 * rng.lognormal(0.0, 0.02, step.size)
    if slow_rank is not None:
        seconds[rank == slow_rank] *= 1.2
    return {"step": step, "rank": rank, "step_time_s": seconds}


@pytest.mark.parametrize("names, kind", [
    (["step", "rank", "step_time_s"], "step"),
    (["Step", "RANK", "duration_ms"], "step"),
    (["iteration", "global_rank", "time_us"], "step"),
    (["step", "rank", "start_s", "end_s"], "span"),
    (["step", "rank", "optype", "start_ts", "duration", "stage"], "op"),
])
def test_schemas(names, kind):
    assert schema_for(names, "t.csv").kind == kind


def test_schema_units():
    assert schema_for(["step", "rank", "duration_ms"], "x").scale == 1e-3
    assert schema_for(["step", "rank", "step_time_us"], "x").scale == 1e-6


@pytest.mark.parametrize("names, message", [
    (["rank", "step_time_s"], "needs 'step' and 'rank'"),
    (["step", "rank", "loss"], "no step-time column"),
])
def test_schema_errors_say_what_is_accepted(names, message):
    with pytest.raises(LogError, match=message):
        schema_for(names, "bad.csv")


def test_csv_and_parquet_give_the_same_result(tmp_path):
    columns = grid(20, 8, slow_rank=5)
    a = ingest([write_table(tmp_path / "t.csv", columns)]).to_dict()["sources"][0]
    b = ingest([write_table(tmp_path / "t.parquet", columns)]).to_dict()["sources"][0]
    for key in ("step_time_s", "stragglers", "samples", "warmup_excluded", "outliers"):
        assert a[key] == b[key], key
    assert a["stragglers"]["straggler_ranks"] == [5]
    assert a["stragglers"]["slowest_ranks"][0]["times_slowest"] == 20


def test_step_time_is_the_slowest_rank_per_step():
    red = reduce_arrays({"step": np.array([1, 1, 1, 2, 2, 2]), "rank": np.array([0, 1, 2, 0, 1, 2]),
                         "step_time_s": np.array([1.0, 3.0, 2.0, 2.0, 2.5, 2.0])})
    assert red.step_time_max_s.tolist() == [3.0, 2.5]
    assert red.basis_median_s.tolist() == [2.0, 2.0]
    assert red.times_slowest.tolist() == [0, 2, 0]
    section = analyse(red)
    assert section["skew_s"]["max"] == pytest.approx(1.0)
    # mean over steps of (max - median) / max
    assert section["slowest_rank_cost"] == pytest.approx(((3 - 2) / 3 + (2.5 - 2) / 2.5) / 2)
    # rank 1: 3/2 - 1 = 0.5 and 2.5/2 - 1 = 0.25 over the step medians, both above 5%: 0.375 on average
    assert section["slowest_ranks"][0] == {"rank": 1, "mean_s": 2.75, "vs_median": 0.375,
                                           "times_slowest": 2, "slow_steps": 2, "slowdown": 0.375, "steps": 2}


def test_ties_for_the_slowest_rank_go_to_the_lower_rank():
    red = reduce_arrays({"step": np.array([1, 1]), "rank": np.array([7, 3]),
                         "step_time_s": np.array([2.0, 2.0])})
    assert dict(zip(red.ranks.tolist(), red.times_slowest.tolist())) == {3: 1, 7: 0}


def test_ragged_steps_and_unsorted_rows():
    step = np.array([2, 1, 2, 1, 1, 3])
    rank = np.array([0, 2, 1, 0, 1, 0])
    seconds = np.array([5.0, 3.0, 4.0, 1.0, 2.0, 9.0])
    red = reduce_arrays({"step": step, "rank": rank, "step_time_s": seconds})
    assert red.steps.tolist() == [1.0, 2.0, 3.0]
    assert red.ranks_per_step.tolist() == [3, 2, 1]
    assert red.basis_median_s.tolist() == [2.0, 4.5, 9.0]
    assert red.basis_sum_s.tolist() == [15.0, 6.0, 3.0]


def test_duplicated_rows_keep_the_slowest_and_are_counted(tmp_path):
    columns = grid(5, 4)
    columns = {k: np.concatenate([v, v[:3]]) for k, v in columns.items()}
    columns["step_time_s"][-1] += 1.0             # a conflicting duplicate: slower wins
    src = ingest([write_table(tmp_path / "d.csv", columns)]).to_dict()["sources"][0]
    assert any("3 duplicate (step, rank) rows" in n for n in src["notes"])
    assert src["samples"] == 5


def test_rows_with_missing_values_are_dropped(tmp_path):
    path = tmp_path / "gaps.csv"
    path.write_text("step,rank,step_time_s\n1,0,2.0\n1,1,\n2,0,2.1\n2,1,2.2\n")
    src = ingest([path]).to_dict()["sources"][0]
    assert src["samples"] == 2 and src["step_time_s"]["max"] == pytest.approx(2.2)


def test_op_trace_busy_time_names_the_slow_rank():
    red_src = ingest([FIXTURES / "trace-ops.csv"]).to_dict()["sources"][0]
    strag = red_src["stragglers"]
    assert strag["basis"] == "busy_s"
    assert [r["rank"] for r in strag["slowest_ranks"][:1]] == [3]
    assert strag["skew_s"]["mean"] == pytest.approx(1.0)       # 1.5 s vs median 0.5 s


def test_repeated_ops_count_once(tmp_path):
    text = (FIXTURES / "trace-ops.csv").read_text().splitlines()
    doubled = tmp_path / "trace-ops.csv"
    doubled.write_text("\n".join(text + text[1:]) + "\n")
    a = ingest([FIXTURES / "trace-ops.csv"]).to_dict()["sources"][0]
    b = ingest([doubled]).to_dict()["sources"][0]
    assert a["stragglers"] == b["stragglers"] and a["step_time_s"] == b["step_time_s"]


def test_empty_table_has_no_steps(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("step,rank,step_time_s\n")
    with pytest.raises(LogError, match="no rows with step times"):
        ingest([path])

table_rows = st.lists(st.tuples(st.integers(1, 12), st.integers(0, 6),
                                st.floats(0.01, 100.0, allow_nan=False)),
                      min_size=1, max_size=80, unique_by=lambda r: (r[0], r[1]))


@settings(max_examples=40, deadline=None)
@given(table_rows, st.randoms(use_true_random=False), st.integers(0, 2))
def test_table_reduction_is_invariant_to_row_order_and_duplication(rows, rnd, copies):
    def reduced(chosen):
        red = reduce_arrays({"step": np.array([r[0] for r in chosen], dtype=np.int64),
                             "rank": np.array([r[1] for r in chosen], dtype=np.int64),
                             "step_time_s": np.array([r[2] for r in chosen])})
        return red, analyse(red)

    base, base_section = reduced(rows)
    mixed_rows = rows * (copies + 1)
    rnd.shuffle(mixed_rows)
    mixed, mixed_section = reduced(mixed_rows)
    for field in ("steps", "step_time_max_s", "basis_median_s", "ranks", "basis_sum_s",
                  "times_slowest", "ranks_per_step"):
        assert np.array_equal(getattr(base, field), getattr(mixed, field)), field
    assert base_section == mixed_section
    assert mixed.duplicates == len(rows) * copies


def test_gzipped_csv_tables(tmp_path):
    import gzip

    packed = tmp_path / "steps.csv.gz"
    packed.write_bytes(gzip.compress((FIXTURES / "rank_steps_ms.csv").read_bytes()))
    a = ingest([packed]).to_dict()["sources"][0]
    b = ingest([FIXTURES / "rank_steps_ms.csv"]).to_dict()["sources"][0]
    assert a["format"] == "rank-table"
    assert (a["step_time_s"], a["stragglers"]) == (b["step_time_s"], b["stragglers"])
