"""The numpy fast path for plain step tables keeps exactly the rows and values the general
(pyarrow.compute) path keeps, and a Parquet ingest imports neither pandas nor pyarrow.compute."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from procure.measure.ranktable import schema_for, step_rank_times, step_rank_times_arrow

VALUES = {
    "int64": st.integers(-(2 ** 62), 2 ** 62), "int32": st.integers(-(2 ** 31), 2 ** 31 - 1),
    "uint32": st.integers(0, 2 ** 32 - 1), "int8": st.integers(-128, 127),
    "double": st.floats(allow_nan=True, allow_infinity=True), "float": st.floats(width=32),
}
ARROW = {"int64": pa.int64(), "int32": pa.int32(), "uint32": pa.uint32(), "int8": pa.int8(),
         "double": pa.float64(), "float": pa.float32()}


@st.composite
def plain_tables(draw):
    rows = draw(st.integers(0, 30))
    names = draw(st.sampled_from([("step", "rank", "step_time_s"), ("iteration", "gpu", "duration_ms"),
                                  ("step", "rank", "time_us")]))
    columns = {}
    for name in names:
        kind = draw(st.sampled_from(sorted(VALUES)))
        strategy = VALUES[kind]
        if kind in ("double", "float"):       # mostly plausible values, with the odd NaN and infinity
            strategy = st.one_of(strategy, st.integers(0, 50).map(float), st.floats(0, 100))
        values = draw(st.lists(strategy, min_size=rows, max_size=rows))
        columns[name] = pa.chunked_array([pa.array(values[: rows // 2], ARROW[kind]),
                                          pa.array(values[rows // 2:], ARROW[kind])])
    return pa.table(columns)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(table=plain_tables())
def test_the_fast_path_keeps_what_the_general_path_keeps(table):
    schema = schema_for(table.column_names, "t")
    fast, fast_invalid = step_rank_times(table, schema)
    slow, slow_invalid = step_rank_times_arrow(table, schema)
    assert fast_invalid == slow_invalid
    for key in ("step", "rank", "step_time_s"):
        assert fast[key].dtype == slow[key].dtype and np.array_equal(fast[key], slow[key]), key


@pytest.mark.parametrize("column", [pa.array([1, None, 3]), pa.array(["1", "2", "3"])])
def test_nulls_and_text_take_the_general_path(column):
    table = pa.table({"step": column, "rank": [0, 0, 0], "step_time_s": [1.0, 1.0, 1.0]})
    arrays, invalid = step_rank_times(table, schema_for(table.column_names, "t"))
    expected = ([1, 3], 1) if column.null_count else ([1, 2, 3], 0)
    assert (arrays["step"].tolist(), invalid) == expected


def test_a_parquet_ingest_imports_neither_pandas_nor_pyarrow_compute(tmp_path):
    import pyarrow.parquet as pq

    path = tmp_path / "steps.parquet"
    pq.write_table(pa.table({"step": np.repeat(np.arange(5), 4), "rank": np.tile(np.arange(4), 5),
                             "step_time_s": np.linspace(1, 2, 20)}), path)
    code = (f"import sys\nfrom procure.measure import ingest\nresult = ingest([{str(path)!r}])\n"
            "print(result.sources[0].steps, 'pandas' in sys.modules, 'pyarrow.compute' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["5", "False", "False"]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(steps=st.integers(1, 6), ranks=st.integers(1, 7), seed=st.integers(0, 2 ** 32 - 1),
       shuffle=st.booleans(), drop=st.integers(0, 3))
def test_grid_sums_equal_the_general_per_rank_sums(steps, ranks, seed, shuffle, drop):
    from procure.measure.ranktable import reduce_arrays, reduce_ranks, sort_dedup, whole_us

    rng = np.random.default_rng(seed)
    step = np.repeat(np.arange(steps), ranks)
    rank = np.tile(rng.permutation(ranks * 3)[:ranks] if shuffle else np.arange(ranks), steps)
    times = rng.lognormal(0, 0.5, step.size)
    keep = np.ones(step.size, bool)
    keep[rng.choice(step.size, size=min(drop, step.size - 1), replace=False)] = False   # a ragged table too
    arrays = {"step": step[keep], "rank": rank[keep], "step_time_s": times[keep]}
    red = reduce_arrays(dict(arrays))
    ordered, _ = sort_dedup(dict(arrays))
    general = reduce_ranks(ordered["rank"], whole_us(ordered["step_time_s"]))
    assert np.array_equal(red.ranks, general["ranks"])
    assert np.array_equal(red.basis_sum_s, general["sum_us"].astype(np.float64) / 1e6)
    assert np.array_equal(red.basis_count, general["count"])
