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
from procure.measure.quantiles import column_sums_whole_us, row_medians
from procure.measure.samples import MAX_STEP_TIME_S, STRAGGLER_EXCESS, RankReduction

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

    def need(self, column: str | None) -> str:
        """A column this kind of table has (``schema_for`` sets every column its kind reads)."""
        if column is None:
            raise ValueError(f"a {self.kind!r} table has no such column")
        return column


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
    fast = _plain_step_table(table, schema)
    return fast if fast is not None else step_rank_times_arrow(table, schema)


def step_rank_times_arrow(table: Any, schema: TableSchema) -> tuple[dict[str, np.ndarray], int]:
    """``step_rank_times`` for every table (text, nulls, spans, op traces), with pyarrow.compute."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = table.select(schema.columns())
    columns = {name: _numeric(table[name]) for name in schema.columns() if name != schema.op}
    step, rank = columns[schema.step], columns[schema.rank]
    valid = pc.and_(_whole(step), _whole(rank))
    if schema.kind == "step":
        times = _seconds(columns[schema.need(schema.duration)], schema.scale)
    elif schema.kind == "span":
        end = pc.cast(columns[schema.need(schema.end)], pa.float64(), safe=False)
        times = _seconds(pc.subtract(end, pc.cast(columns[schema.need(schema.start)], pa.float64(), safe=False)),
                         schema.scale)
    else:
        times = None
        start = _seconds(columns[schema.need(schema.start)], schema.scale)
        duration = _seconds(columns[schema.need(schema.duration)], schema.scale)
        valid = pc.and_(valid, pc.and_(_within(start, -MAX_STEP_TIME_S),
                                       _within(duration, 0.0)))
    if times is not None:
        valid = pc.and_(valid, pc.and_(_within(times, 0.0), pc.greater(times, _f(0.0))))
    valid = pc.fill_null(valid, _false())
    invalid = len(table) - pc.sum(valid).as_py() if len(table) else 0
    if invalid:
        table, step, rank = (pc.filter(x, valid) for x in (table, step, rank))
        times = None if times is None else pc.filter(times, valid)
        columns = {name: pc.filter(col, valid) for name, col in columns.items()}
    step, rank = (x if x.type == pa.int64() else pc.cast(x, pa.int64()) for x in (step, rank))
    if times is not None:
        return _arrays(step, rank, times), int(invalid)
    return _op_arrays(table, columns, schema, step, rank), int(invalid)


_PLAIN = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "float", "double"}


def _plain_step_table(table: Any, schema: TableSchema) -> tuple[dict[str, np.ndarray], int] | None:
    """The usual step table (numbers, no nulls) in numpy alone, the same rows kept as the general
    path keeps: no pyarrow.compute import (a tenth of a second) and fewer passes. None otherwise."""
    if schema.kind != "step":
        return None
    names = (schema.step, schema.rank, schema.duration)
    columns = [table[name] for name in names]
    if any(str(c.type) not in _PLAIN or c.null_count for c in columns):
        return None
    step, rank, duration = (_plain_values(c) for c in columns)
    seconds = duration.astype(np.float64, copy=False)
    seconds = seconds if schema.scale == 1.0 else seconds * schema.scale
    invalid = 0
    if not _all_valid(step, rank, seconds):
        valid = _valid_rows(step, rank, seconds)
        invalid = int(valid.size - np.count_nonzero(valid))
        if invalid:
            step, rank, seconds = step[valid], rank[valid], seconds[valid]
    return {"step": step.astype(np.int64, copy=False), "rank": rank.astype(np.int64, copy=False),
            "step_time_s": seconds}, invalid


def _all_valid(step: np.ndarray, rank: np.ndarray, seconds: np.ndarray) -> bool:
    """Every row valid, known from two reductions (no mask of the table's size): integer keys and
    times between 0 and the cap (NaN makes min or max NaN, which fails the comparison)."""
    if step.dtype.kind == "f" or rank.dtype.kind == "f":
        return False
    return seconds.size == 0 or (bool(seconds.min() > 0) and bool(seconds.max() <= MAX_STEP_TIME_S))


def _valid_rows(step: np.ndarray, rank: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    valid: np.ndarray = seconds > 0                     # NaN and infinities fail one of these two
    valid &= seconds <= MAX_STEP_TIME_S
    for key in (step, rank):
        if key.dtype.kind == "f":
            valid &= _whole_np(key)
    return valid


def _plain_values(column: Any) -> np.ndarray:
    """A null-free primitive column's values as a read-only numpy view of its buffer. Several chunks
    are joined by arrow (``combine_chunks``), in arrow's memory pool, which reuses what the reader
    just freed: joining with numpy would add the column's size to the peak RSS."""
    dtype = np.dtype(column.type.to_pandas_dtype())
    whole = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if len(whole) == 0:
        return np.empty(0, dtype)
    return np.frombuffer(whole.buffers()[1], dtype=dtype, count=len(whole), offset=whole.offset * dtype.itemsize)


def _whole_np(values: np.ndarray) -> np.ndarray:
    """As ``_whole`` for a float column: finite, whole and below 2**53."""
    whole: np.ndarray = np.isfinite(values) & (np.floor(values) == values) & (np.abs(values) < float(2**53))
    return whole


_NUMERIC_TEXT = r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$"
INT64_MAX = 2**63 - 1


def _numeric(column: Any) -> Any:
    """Integer columns as int64 (a uint64 value past int64 becomes null), numbers as float64, numeric
    text as float64 (other text null); any other type (bool, binary that is not numeric text, lists,
    structs, timestamps) is all null, so its rows count as invalid. Pure pyarrow: no pandas import."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    if pa.types.is_dictionary(kind):
        return _numeric(pc.cast(column, kind.value_type))
    if pa.types.is_unsigned_integer(kind) and kind.bit_width == 64:
        fits = pc.less_equal(column, pa.scalar(INT64_MAX, kind))
        return pc.cast(pc.if_else(fits, column, pa.scalar(None, kind)), pa.int64())
    if pa.types.is_integer(kind):
        return column
    if pa.types.is_floating(kind) or pa.types.is_decimal(kind) or pa.types.is_null(kind):
        return pc.cast(column, pa.float64(), safe=False)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind) \
            or pa.types.is_large_binary(kind):
        return _numeric_text(column)
    return pa.chunked_array([pa.nulls(len(column), pa.float64())])


def _numeric_text(column: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
        ok = pc.fill_null(pc.match_substring_regex(column, r"^\s*[-+0-9.eE]+\s*$"), False)
        column = pc.cast(pc.if_else(ok, column, pa.scalar(None, column.type)), pa.string())  # ASCII now
    text = pc.utf8_trim_whitespace(column)
    ok = pc.fill_null(pc.match_substring_regex(text, _NUMERIC_TEXT), False)
    return pc.cast(pc.if_else(ok, text, pa.scalar(None, text.type)), pa.float64(), safe=False)


def _text(column: Any) -> Any:
    """An op-name column as strings (null where it is not text)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    if pa.types.is_dictionary(kind):
        return _text(pc.cast(column, kind.value_type))
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return pc.cast(column, pa.string())
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
        return pc.cast(column, pa.string())
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        ok = pc.fill_null(pc.match_substring_regex(column, r"^[\x20-\x7e]*$"), False)
        return pc.cast(pc.if_else(ok, column, pa.scalar(None, kind)), pa.string())
    return pa.chunked_array([pa.nulls(len(column), pa.string())])


def _f(value: float) -> Any:
    """A pyarrow float64 scalar built from its bytes. ``pa.scalar``, ``pa.array`` and a bare Python
    number in a compute call all make pyarrow check for pandas objects, which imports pandas: half a
    second or more of a Parquet ingest that never needs it."""
    import pyarrow as pa

    return pa.Array.from_buffers(pa.float64(), 1, [None, pa.py_buffer(np.array([value], np.float64).tobytes())])[0]


def _false() -> Any:
    import pyarrow as pa

    return pa.Array.from_buffers(pa.bool_(), 1, [None, pa.py_buffer(b"\x00")])[0]


def _seconds(values: Any, scale: float) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    values = values if values.type == pa.float64() else pc.cast(values, pa.float64(), safe=False)
    return values if scale == 1.0 else pc.multiply(values, _f(scale))


def _within(values: Any, low: float) -> Any:
    """Finite values in [low, MAX_STEP_TIME_S] seconds."""
    import pyarrow.compute as pc

    return pc.and_(pc.is_finite(values), pc.and_(pc.greater_equal(values, _f(low)),
                                                 pc.less_equal(values, _f(MAX_STEP_TIME_S))))


def _whole(column: Any) -> Any:
    """Valid integers (a float column must hold whole numbers below 2**53)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_integer(column.type):
        return pc.is_valid(column)
    values = pc.cast(column, pa.float64(), safe=False)
    return pc.and_(pc.is_finite(values),
                   pc.and_(pc.equal(pc.floor(values), values),
                           pc.less(pc.abs(values), _f(2**53))))


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
    """One contiguous numpy array (a single copy for chunked columns), read from the chunks' value
    buffers: ``to_numpy`` would import pandas. The values are valid rows only (no nulls)."""
    import pyarrow as pa

    target = pa.from_numpy_dtype(np.dtype(dtype))
    chunks = values.chunks if hasattr(values, "chunks") else [values]
    parts: list[np.ndarray] = []
    for chunk in chunks:
        if chunk.type != target:
            chunk = pc_cast(chunk, target)
        if chunk.null_count:
            raise ValueError("a column with nulls reached the numpy conversion")
        parts.append(np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk), offset=chunk.offset * np.dtype(dtype).itemsize))
    if not parts:
        return np.empty(0, dtype=dtype)
    return np.concatenate(parts) if len(parts) > 1 else parts[0].copy()


def pc_cast(values: Any, target: Any) -> Any:
    import pyarrow.compute as pc

    return pc.cast(values, target, safe=False)


def _op_arrays(table: Any, columns: dict[str, Any], schema: TableSchema, step: Any,
               rank: Any) -> dict[str, np.ndarray]:
    """Op trace -> per (step, rank) span of all ops and busy time of compute ops.

    Repeated ops (same step, rank, op and start) count once; busy time is summed in integer
    nanoseconds so the result does not depend on the order of the rows.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    start = pc.multiply(pc.cast(columns[schema.need(schema.start)], pa.float64(), safe=False), _f(schema.scale))
    duration = pc.multiply(pc.cast(columns[schema.need(schema.duration)], pa.float64(), safe=False),
                           _f(schema.scale))
    op = _text(table[schema.op])
    is_compute = pc.fill_null(pc.ends_with(op, COMPUTE_SUFFIX), False)
    busy_ns = pc.cast(pc.round(pc.multiply(duration, _f(1e9)), round_mode="half_to_even"),
                      pa.int64())
    ops = pa.table({
        "step": step, "rank": rank, "op": op, "start": start, "end": pc.add(start, duration),
        "busy_ns": pc.if_else(is_compute, busy_ns, pa.scalar(0, pa.int64())),
    })
    unique = ops.group_by(["step", "rank", "op", "start"]).aggregate(
        [("end", "max"), ("busy_ns", "max")])
    ops = pa.table({name: unique[source] for name, source in (
        ("step", "step"), ("rank", "rank"), ("start", "start"), ("end", "end_max"),
        ("busy_ns", "busy_ns_max"))})
    grouped = ops.group_by(["step", "rank"]).aggregate(
        [("start", "min"), ("end", "max"), ("busy_ns", "sum")])
    span = pc.subtract(grouped["end_max"], grouped["start_min"])
    busy = pc.divide(pc.cast(grouped["busy_ns_sum"], pa.float64(), safe=False), _f(1e9))
    return _arrays(grouped["step"], grouped["rank"], span, busy)


def whole_us(seconds: np.ndarray) -> np.ndarray:
    """Integer microseconds as integer-valued float64: their sums (below 2**53 us, 285 years) are
    exact in any order, so the in-process and dask reductions agree to the bit."""
    out = seconds * 1e6
    return np.rint(out, out=out)


def sort_dedup(arrays: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], int]:
    """Sort by (step, rank) and keep the largest time of duplicated keys; return dups dropped."""
    step, rank = arrays["step"], arrays["rank"]
    n = step.size
    if n > 1:
        if _strictly_ordered(step, rank):
            return arrays, 0                     # sorted, every key once: the usual table
        order = np.lexsort((rank, step))         # stable: duplicates keep their file order
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


def _strictly_ordered(step: np.ndarray, rank: np.ndarray) -> bool:
    """Rows sorted by (step, rank) with no key twice, in boolean passes (no int64 differences)."""
    later, earlier = step[1:], step[:-1]
    if not np.all(later >= earlier):
        return False
    return bool(np.all((later > earlier) | (rank[1:] > rank[:-1])))


def reduce_steps(step: np.ndarray, rank: np.ndarray, time_s: np.ndarray,
                 basis_s: np.ndarray) -> dict[str, np.ndarray]:
    """Per-step aggregates of rows sorted by (step, rank) with unique keys."""
    n = step.size
    first = np.empty(n, dtype=bool)
    first[:1] = True
    np.not_equal(step[1:], step[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, n))
    if counts.size and counts[0] * counts.size == n and np.all(counts == counts[0]):
        return _rectangular_steps(step, rank, time_s, basis_s, starts, counts)
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


def _rectangular_steps(step: np.ndarray, rank: np.ndarray, time_s: np.ndarray, basis_s: np.ndarray,
                       starts: np.ndarray, counts: np.ndarray) -> dict[str, np.ndarray]:
    """``reduce_steps`` when every step has the same number of ranks (the usual table): one 2-D
    view, so max, the first slowest rank and the median are row operations. Same results."""
    rows, width = counts.size, int(counts[0])
    basis = basis_s.reshape(rows, width)
    slowest = basis.argmax(axis=1)            # the first maximum, as the general path picks
    every = np.arange(rows)
    return {
        "steps": step[starts],
        "step_time_max_s": time_s.reshape(rows, width).max(axis=1),
        "ranks_per_step": counts.astype(np.int64),
        "basis_max_s": basis[every, slowest],
        "basis_median_s": row_medians(basis),
        "slowest_rank": rank.reshape(rows, width)[every, slowest],
    }


def _group_median(values: np.ndarray, starts: np.ndarray, counts: np.ndarray,
                  group: np.ndarray) -> np.ndarray:
    if counts.size and np.all(counts == counts[0]):
        return row_medians(values.reshape(counts.size, int(counts[0])))
    ordered = values[np.lexsort((values, group))]
    lo = starts + (counts - 1) // 2
    hi = starts + counts // 2
    medians: np.ndarray = (ordered[lo] + ordered[hi]) / 2.0
    return medians


def reduce_ranks(rank: np.ndarray, basis_us: np.ndarray) -> dict[str, np.ndarray]:
    """Per-rank exact sums (integer microseconds) and counts."""
    weights = basis_us.astype(np.float64, copy=False)  # integer-valued: float64 sums stay exact
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


_BLOCK_ROWS = 1 << 19
_MAX_SLOWDOWN_PPM = 1e9   # a step 1,000x its median counts as 1,000x: per-rank sums stay exact (< 2**53)


def step_slowdowns(basis_s: np.ndarray, step_median_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per (step, rank) row: slow (more than STRAGGLER_EXCESS above its step's median rank) and the
    slowdown ``basis / median - 1`` in whole parts per million, clipped (integer-valued float64, so
    per-rank sums are exact in any order and both backends agree to the bit). ``step_median_s`` is
    the row's step median; a step whose median is 0 (no busy time) slows no rank."""
    counted = step_median_s > 0
    ratio = np.divide(basis_s, step_median_s, out=np.ones_like(basis_s), where=counted)
    slow: np.ndarray = ratio > 1.0 + STRAGGLER_EXCESS
    ppm = np.rint((ratio - 1.0) * 1e6)
    np.clip(ppm, -_MAX_SLOWDOWN_PPM, _MAX_SLOWDOWN_PPM, out=ppm)
    return slow, ppm


def rank_slowdowns(per_step: dict[str, np.ndarray], rank: np.ndarray, basis_s: np.ndarray,
                   ranks: np.ndarray) -> dict[str, np.ndarray]:
    """Per rank of ``ranks`` (sorted): steps it was slow in and its summed slowdown (ppm), from rows
    sorted by (step, rank) with unique keys."""
    counts, medians = per_step["ranks_per_step"], per_step["basis_median_s"]
    ends = np.cumsum(counts)
    slow_steps, slowdown = np.zeros(ranks.size), np.zeros(ranks.size)
    first = 0
    while first < counts.size:          # whole steps, about _BLOCK_ROWS rows at a time (bounded memory)
        last = max(first + 1, int(np.searchsorted(ends, ends[first] - counts[first] + _BLOCK_ROWS, "right")))
        lo, hi = int(ends[first] - counts[first]), int(ends[last - 1])
        slow, ppm = step_slowdowns(basis_s[lo:hi], np.repeat(medians[first:last], counts[first:last]))
        where = np.searchsorted(ranks, rank[lo:hi])
        slow_steps += np.bincount(where, weights=slow, minlength=ranks.size)
        slowdown += np.bincount(where, weights=ppm, minlength=ranks.size)
        first = last
    return {"slow_steps": slow_steps.astype(np.int64), "slowdown_ppm": slowdown}


def grid_slowdowns(per_step: dict[str, np.ndarray], basis_s: np.ndarray) -> dict[str, np.ndarray]:
    """``rank_slowdowns`` for a grid (every step holds the same ranks in the same order): column
    sums of a steps x ranks view in blocks, no search or scatter. The same whole numbers."""
    medians = per_step["basis_median_s"]
    rows = medians.size
    table = basis_s.reshape(rows, -1)
    slow_steps, slowdown = np.zeros(table.shape[1]), np.zeros(table.shape[1])
    block = max(1, _BLOCK_ROWS // max(table.shape[1], 1))
    for start in range(0, rows, block):
        stop = min(start + block, rows)
        slow, ppm = step_slowdowns(table[start:stop], medians[start:stop, None])
        slow_steps += slow.sum(axis=0)
        slowdown += ppm.sum(axis=0)
    return {"slow_steps": slow_steps.astype(np.int64), "slowdown_ppm": slowdown}


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
        slow_steps=per_rank["slow_steps"].astype(np.int64),
        slowdown_ppm=per_rank["slowdown_ppm"].astype(np.float64),
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
    grid = _grid_ranks(per_step, arrays["rank"], arrays[basis_key])
    per_rank = grid or reduce_ranks(arrays["rank"], whole_us(arrays[basis_key]))
    per_rank.update(grid_slowdowns(per_step, arrays[basis_key]) if grid else
                    rank_slowdowns(per_step, arrays["rank"], arrays[basis_key], per_rank["ranks"]))
    return build_reduction(per_step, per_rank, basis_key, rows, duplicates, invalid)


def _grid_ranks(per_step: dict[str, np.ndarray], rank: np.ndarray,
                basis_s: np.ndarray) -> dict[str, np.ndarray] | None:
    """``reduce_ranks`` for a grid (every step holds the same ranks in the same order): column sums
    of a steps x ranks view, no scatter. Integer-valued sums below 2**53 are exact in any order,
    so the figures are identical. None when the table is not such a grid."""
    counts = per_step["ranks_per_step"]
    if not counts.size or counts[0] * counts.size != rank.size or not np.all(counts == counts[0]):
        return None
    grid = rank.reshape(counts.size, int(counts[0]))
    first = grid[0]
    if not np.all(grid == first) or (first.size > 1 and not np.all(first[1:] > first[:-1])):
        return None
    sums = column_sums_whole_us(basis_s.reshape(grid.shape))
    return {"ranks": first.astype(np.int64), "sum_us": sums.astype(np.int64),
            "count": np.full(first.size, counts.size, dtype=np.int64)}
