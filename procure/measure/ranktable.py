"""Per-rank step and op tables (CSV/Parquet): column schemas and the vectorised reduction.

Accepted schemas (column names are matched case-insensitively, see docs/log-formats.md):

- step table: ``step``, ``rank`` and a duration: ``step_time_s`` (or ``duration_s``, ``time_s``,
  ``seconds``, ``duration``), ``*_ms`` or ``*_us`` variants;
- span table: ``step``, ``rank``, ``start_s`` and ``end_s`` (or ``_ms``/``_us``/bare);
- op trace (ByteDance StragglerAnalysis): ``step``, ``rank``, ``optype``, ``start_ts``,
  ``duration`` in seconds; per (step, rank) the step time is the span of its ops and the busy
  time the sum of ``*-compute`` ops.

The reduction deduplicates (step, rank) keeping the largest time (order-independent), then
computes per-step and per-rank aggregates with numpy; per-rank sums are exact integer
microseconds so the dask path gives bit-identical results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from procure.measure.errors import LogError
from procure.measure.samples import MAX_STEP_TIME_S, RankReduction

STEP_NAMES = ("step", "iteration", "iter", "global_step", "step_id", "train_step")
RANK_NAMES = ("rank", "global_rank", "rank_id", "worker", "worker_id", "gpu", "device")
OP_NAMES = ("optype", "op_type", "op", "op_name", "name", "kind")
_DURATION_STEMS = ("step_time", "duration", "time", "iteration_time", "elapsed", "dur")
_UNITS = {"s": 1.0, "sec": 1.0, "seconds": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
_START_STEMS = ("start", "start_ts", "start_time", "begin", "ts")
_END_STEMS = ("end", "end_ts", "end_time", "stop")
COMPUTE_SUFFIX = "compute"


@dataclass(frozen=True)
class TableSchema:
    """Which columns of a table hold what, and the factor that turns times into seconds."""

    kind: str                 # "step" | "span" | "op"
    step: str
    rank: str
    duration: str | None = None
    start: str | None = None
    end: str | None = None
    op: str | None = None
    scale: float = 1.0

    def columns(self) -> list[str]:
        names = [self.step, self.rank, self.duration, self.start, self.end, self.op]
        return [n for n in names if n]


def _find(columns: dict[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        if name in columns:
            return columns[name]
    return None


def _find_timed(columns: dict[str, str], stems: tuple[str, ...]) -> tuple[str, float] | None:
    for stem in stems:
        for unit, factor in _UNITS.items():
            name = f"{stem}_{unit}"
            if name in columns:
                return columns[name], factor
        if stem in columns:
            return columns[stem], 1.0
    return None


def schema_for(column_names: list[str], source: str) -> TableSchema:
    """Recognise a per-rank table's columns or raise LogError listing what is accepted."""
    columns = {name.strip().lower(): name for name in column_names}
    step, rank = _find(columns, STEP_NAMES), _find(columns, RANK_NAMES)
    if step is None or rank is None:
        raise LogError(f"{source}: a per-rank table needs 'step' and 'rank' columns; "
                       f"found {sorted(column_names)} (see docs/log-formats.md)")
    op = _find(columns, OP_NAMES)
    start = _find_timed(columns, _START_STEMS)
    duration = _find_timed(columns, _DURATION_STEMS)
    end = _find_timed(columns, _END_STEMS)
    if op and start and duration:
        return TableSchema("op", step, rank, duration=duration[0], start=start[0], op=op,
                           scale=duration[1])
    if duration:
        return TableSchema("step", step, rank, duration=duration[0], scale=duration[1])
    if start and end:
        return TableSchema("span", step, rank, start=start[0], end=end[0], scale=start[1])
    raise LogError(f"{source}: no step-time column; expected step_time_s, duration_ms, "
                   f"start_s/end_s or an op trace (optype, start_ts, duration); "
                   f"found {sorted(column_names)}")


def step_rank_times(table: Any, schema: TableSchema) -> tuple[dict[str, np.ndarray], int]:
    """(step, rank, step_time_s[, busy_s]) arrays from a pyarrow Table, vectorised.

    Rows with a missing or invalid value (non-numeric text, NaN, infinities, fractional step or
    rank, non-positive step time, negative op duration) are dropped; their count is returned.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    table = table.select(schema.columns())
    columns = {name: _numeric(table[name]) for name in schema.columns() if name != schema.op}
    step, rank = columns[schema.step], columns[schema.rank]
    valid = pc.and_(_whole(step), _whole(rank))
    if schema.kind == "step":
        times = _seconds(columns[schema.duration], schema.scale)
    elif schema.kind == "span":
        end = pc.cast(columns[schema.end], pa.float64())
        times = _seconds(pc.subtract(end, pc.cast(columns[schema.start], pa.float64())),
                         schema.scale)
    else:
        times = None
        start = _seconds(columns[schema.start], schema.scale)
        duration = _seconds(columns[schema.duration], schema.scale)
        valid = pc.and_(valid, pc.and_(_within(start, -MAX_STEP_TIME_S),
                                       _within(duration, 0.0)))
    if times is not None:
        valid = pc.and_(valid, pc.and_(_within(times, 0.0), pc.greater(times, 0.0)))
    valid = pc.fill_null(valid, False)
    invalid = len(table) - pc.sum(valid).as_py() if len(table) else 0
    if invalid:
        table, step, rank = (pc.filter(x, valid) for x in (table, step, rank))
        times = None if times is None else pc.filter(times, valid)
        columns = {name: pc.filter(col, valid) for name, col in columns.items()}
    step, rank = (x if x.type == pa.int64() else pc.cast(x, pa.int64()) for x in (step, rank))
    if times is not None:
        return _arrays(step, rank, times), int(invalid)
    return _op_arrays(table, columns, schema, step, rank), int(invalid)


def _numeric(column: Any) -> Any:
    """Integer columns as they are, everything else as float64 (text coerced to null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    if pa.types.is_integer(kind):
        return column
    if pa.types.is_floating(kind) or pa.types.is_decimal(kind) or pa.types.is_null(kind):
        return pc.cast(column, pa.float64())
    import pandas as pd

    values = pd.to_numeric(column.to_pandas().astype("string"), errors="coerce")
    return pa.chunked_array([pa.array(values.to_numpy(dtype="float64", na_value=np.nan),
                                      type=pa.float64())])


def _seconds(values: Any, scale: float) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    values = values if values.type == pa.float64() else pc.cast(values, pa.float64())
    return values if scale == 1.0 else pc.multiply(values, scale)


def _within(values: Any, low: float) -> Any:
    """Finite values in [low, MAX_STEP_TIME_S] seconds."""
    import pyarrow.compute as pc

    return pc.and_(pc.is_finite(values), pc.and_(pc.greater_equal(values, low),
                                                 pc.less_equal(values, MAX_STEP_TIME_S)))


def _whole(column: Any) -> Any:
    """Valid integers (a float column must hold whole numbers below 2**53)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_integer(column.type):
        return pc.is_valid(column)
    values = pc.cast(column, pa.float64())
    return pc.and_(pc.is_finite(values),
                   pc.and_(pc.equal(pc.floor(values), values),
                           pc.less(pc.abs(values), float(2**53))))


def _arrays(step: Any, rank: Any, times: Any, busy: Any = None) -> dict[str, np.ndarray]:
    out = {
        "step": _np(step, np.int64),
        "rank": _np(rank, np.int64),
        "step_time_s": _np(times, np.float64),
    }
    if busy is not None:
        out["busy_s"] = _np(busy, np.float64)
    return out


def _np(values: Any, dtype: type) -> np.ndarray:
    """One contiguous numpy array (a single copy for chunked columns)."""
    return np.asarray(values.to_numpy(), dtype=dtype)


def _op_arrays(table: Any, columns: dict[str, Any], schema: TableSchema, step: Any,
               rank: Any) -> dict[str, np.ndarray]:
    """Op trace -> per (step, rank) span of all ops and busy time of compute ops.

    Repeated ops (same step, rank, op and start) count once; busy time is summed in integer
    nanoseconds so the result does not depend on the order of the rows.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    start = pc.multiply(pc.cast(columns[schema.start], pa.float64()), schema.scale)
    duration = pc.multiply(pc.cast(columns[schema.duration], pa.float64()), schema.scale)
    op = pc.cast(table[schema.op], pa.string())
    is_compute = pc.fill_null(pc.ends_with(op, COMPUTE_SUFFIX), False)
    busy_ns = pc.cast(pc.round(pc.multiply(duration, 1e9), round_mode="half_to_even"),
                      pa.int64())
    ops = pa.table({
        "step": step, "rank": rank, "op": op, "start": start, "end": pc.add(start, duration),
        "busy_ns": pc.if_else(is_compute, busy_ns, 0),
    })
    unique = ops.group_by(["step", "rank", "op", "start"]).aggregate(
        [("end", "max"), ("busy_ns", "max")])
    ops = pa.table({name: unique[source] for name, source in (
        ("step", "step"), ("rank", "rank"), ("start", "start"), ("end", "end_max"),
        ("busy_ns", "busy_ns_max"))})
    grouped = ops.group_by(["step", "rank"]).aggregate(
        [("start", "min"), ("end", "max"), ("busy_ns", "sum")])
    span = pc.subtract(grouped["end_max"], grouped["start_min"])
    busy = pc.divide(pc.cast(grouped["busy_ns_sum"], pa.float64()), 1e9)
    return _arrays(grouped["step"], grouped["rank"], span, busy)


def to_us(seconds: np.ndarray) -> np.ndarray:
    """Integer microseconds: their sums are exact (below 2**53 us, 285 years) in any order."""
    return np.rint(seconds * 1e6).astype(np.int64)


def sort_dedup(arrays: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], int]:
    """Sort by (step, rank) and keep the largest time of duplicated keys; return dups dropped."""
    step, rank = arrays["step"], arrays["rank"]
    n = step.size
    if n > 1:
        d_step = np.diff(step)
        in_order = bool(np.all((d_step > 0) | ((d_step == 0) & (np.diff(rank) > 0))))
        if not in_order:
            order = np.lexsort((rank, step))
            arrays = {k: v[order] for k, v in arrays.items()}
            step, rank = arrays["step"], arrays["rank"]
    if n == 0:
        return arrays, 0
    first = np.empty(n, dtype=bool)
    first[0] = True
    np.not_equal(step[1:], step[:-1], out=first[1:])
    first[1:] |= rank[1:] != rank[:-1]
    starts = np.flatnonzero(first)
    if starts.size == n:
        return arrays, 0
    out = {"step": step[starts], "rank": rank[starts]}
    for key in ("step_time_s", "busy_s"):
        if key in arrays:
            out[key] = np.maximum.reduceat(arrays[key], starts)
    return out, n - int(starts.size)


def reduce_steps(step: np.ndarray, rank: np.ndarray, time_s: np.ndarray,
                 basis_s: np.ndarray) -> dict[str, np.ndarray]:
    """Per-step aggregates of rows sorted by (step, rank) with unique keys."""
    n = step.size
    first = np.empty(n, dtype=bool)
    first[:1] = True
    np.not_equal(step[1:], step[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, n))
    basis_max = np.maximum.reduceat(basis_s, starts)
    is_max = basis_s == np.repeat(basis_max, counts)
    group = np.repeat(np.arange(starts.size), counts)
    max_rows = np.flatnonzero(is_max)
    first_max = max_rows[np.r_[True, np.diff(group[max_rows]) != 0]] if max_rows.size else max_rows
    return {
        "steps": step[starts],
        "step_time_max_s": np.maximum.reduceat(time_s, starts),
        "ranks_per_step": counts.astype(np.int64),
        "basis_max_s": basis_max,
        "basis_median_s": _group_median(basis_s, starts, counts, group),
        "slowest_rank": rank[first_max],
    }


def _group_median(values: np.ndarray, starts: np.ndarray, counts: np.ndarray,
                  group: np.ndarray) -> np.ndarray:
    if counts.size and np.all(counts == counts[0]):
        return np.median(values.reshape(counts.size, int(counts[0])), axis=1)
    ordered = values[np.lexsort((values, group))]
    lo = starts + (counts - 1) // 2
    hi = starts + counts // 2
    return (ordered[lo] + ordered[hi]) / 2.0


def reduce_ranks(rank: np.ndarray, basis_us: np.ndarray) -> dict[str, np.ndarray]:
    """Per-rank exact sums (integer microseconds) and counts."""
    weights = basis_us.astype(np.float64)  # integer-valued: float64 sums stay exact
    if rank.size and rank.min() >= 0 and rank.max() < 4 * rank.size + 1024:
        counts = np.bincount(rank)
        present = np.flatnonzero(counts)
        sums = np.bincount(rank, weights=weights, minlength=counts.size)
        return {"ranks": present, "sum_us": sums[present].astype(np.int64),
                "count": counts[present]}
    ranks, inverse = np.unique(rank, return_inverse=True)
    sums = np.bincount(inverse, weights=weights, minlength=ranks.size)
    return {"ranks": ranks, "sum_us": sums.astype(np.int64),
            "count": np.bincount(inverse, minlength=ranks.size)}


def build_reduction(per_step: dict[str, np.ndarray], per_rank: dict[str, np.ndarray],
                    basis: str, rows: int, duplicates: int, invalid: int = 0) -> RankReduction:
    """Assemble a RankReduction from the per-step and per-rank parts (either backend)."""
    ranks = per_rank["ranks"]
    slowest = np.searchsorted(ranks, per_step["slowest_rank"])
    times_slowest = np.bincount(slowest, minlength=ranks.size).astype(np.int64)
    return RankReduction(
        steps=per_step["steps"].astype(np.float64),
        step_time_max_s=per_step["step_time_max_s"],
        ranks_per_step=per_step["ranks_per_step"],
        basis_max_s=per_step["basis_max_s"],
        basis_median_s=per_step["basis_median_s"],
        ranks=ranks.astype(np.int64),
        basis_sum_s=per_rank["sum_us"].astype(np.float64) / 1e6,
        basis_count=per_rank["count"].astype(np.int64),
        times_slowest=times_slowest,
        basis=basis,
        rows=rows,
        duplicates=duplicates,
        invalid=invalid,
    )


def reduce_arrays(arrays: dict[str, np.ndarray], invalid: int = 0,
                  rows: int | None = None) -> RankReduction:
    """The whole in-process reduction of (step, rank, step_time_s[, busy_s]) arrays.

    ``rows`` is the table's row count (for op traces: ops, not (step, rank) pairs).
    """
    rows = int(arrays["step"].size) + invalid if rows is None else rows
    arrays, duplicates = sort_dedup(arrays)
    basis_key = "busy_s" if "busy_s" in arrays else "step_time_s"
    per_step = reduce_steps(arrays["step"], arrays["rank"], arrays["step_time_s"],
                            arrays[basis_key])
    per_rank = reduce_ranks(arrays["rank"], to_us(arrays[basis_key]))
    return build_reduction(per_step, per_rank, basis_key, rows, duplicates, invalid)
