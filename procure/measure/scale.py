"""The per-rank table reduction on dask.dataframe (``procure[scale]``), for tables too large for
one process or already partitioned on a cluster.

It computes exactly what ``ranktable.reduce_arrays`` computes in-process: (step, rank) keys
deduplicated by max, per-step aggregates with the same numpy code on partitions shuffled by
step, per-rank sums in integer microseconds. The results are identical to in-process.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from procure.errors import ProcureError
from procure.measure import readers
from procure.measure.ranktable import (COMPUTE_SUFFIX, TableSchema, build_reduction,
                                       rank_slowdowns, reduce_steps)
from procure.measure.samples import MAX_STEP_TIME_S, RankReduction

_STEP_COLUMNS = ("steps", "step_time_max_s", "ranks_per_step", "basis_max_s", "basis_median_s",
                 "slowest_rank")


class ScaleUnavailable(ProcureError):
    """dask is not installed, or the scheduler named cannot be reached."""

    exit_code = 1


def _require_dask() -> None:
    try:
        import dask.dataframe  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        raise ScaleUnavailable("a dask scheduler needs the optional dependencies: "
                               "pip install procure[scale]") from exc


@contextmanager
def client(scheduler: str) -> Iterator[Any]:
    """A dask client: ``local`` starts a LocalCluster of processes; else connect to an address."""
    _require_dask()
    from distributed import Client, LocalCluster

    # distributed leaves LocalCluster.__init__ and Client.__init__ unannotated
    if scheduler == "local":
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,  # type: ignore[no-untyped-call]
                          dashboard_address=None) as cluster, Client(cluster) as c:  # type: ignore[no-untyped-call]
            yield c
    else:
        with connect(scheduler) as c:
            yield c


SCHEDULER_CONNECT_S = 10   # an address that answers nothing is an input mistake, told within this


@contextmanager
def connect(scheduler: str) -> Iterator[Any]:
    """A client of the scheduler at ``scheduler``; ScaleUnavailable (exit 1) when it cannot be
    reached within SCHEDULER_CONNECT_S seconds or the address is not one dask understands."""
    from distributed import Client

    try:
        c = Client(scheduler, timeout=SCHEDULER_CONNECT_S)  # type: ignore[no-untyped-call]
    except (OSError, ValueError, TypeError) as exc:
        raise ScaleUnavailable(f"cannot reach the dask scheduler {scheduler!r} within "
                               f"{SCHEDULER_CONNECT_S} s ({exc}); check the address and that it is "
                               "running, or use --scheduler local") from None
    with c:
        yield c


def reduce_table(path: Path, schema: TableSchema, scheduler: str,
                 limits: readers.Limits = readers.DEFAULT_LIMITS) -> RankReduction:
    """The RankReduction of a Parquet/CSV table computed on dask."""
    _require_dask()
    from dask.base import compute   # `dask.compute` is this function, re-exported implicitly

    with client(scheduler) as c:
        frame = readers.dask_table(path, schema.columns(), limits)
        rows = frame.map_partitions(len).sum()
        keyed, valid = _keyed(frame, schema)
        per_rank = _per_rank(keyed)
        by_step = keyed.shuffle(on="step", shuffle_method="tasks")
        per_step, slowdowns = _per_step(by_step), _slowdowns(by_step)
        # dask.base.compute is unannotated
        rows_n, valid_n, keyed_n, ranks_df, steps_df, slow_df = compute(  # type: ignore[no-untyped-call]
            rows, valid, keyed.shape[0], per_rank, per_step, slowdowns, scheduler=c.get)
    steps_df = steps_df.sort_values("steps", kind="stable")
    ranks_df = ranks_df.sort_index()
    per_step_arrays = {k: steps_df[k].to_numpy() for k in _STEP_COLUMNS}
    per_rank_arrays = {"ranks": ranks_df.index.to_numpy(np.int64),
                       "sum_us": ranks_df["sum_us"].to_numpy(np.int64),
                       "count": ranks_df["count"].to_numpy(np.int64)}
    slow_df = slow_df.reindex(ranks_df.index, fill_value=0)
    per_rank_arrays["slow_steps"] = slow_df["slow_steps"].to_numpy(np.int64)
    per_rank_arrays["slowdown_ppm"] = slow_df["slowdown_ppm"].to_numpy(np.float64)
    basis = "busy_s" if schema.kind == "op" else "step_time_s"
    duplicates = 0 if schema.kind == "op" else int(valid_n) - int(keyed_n)
    return build_reduction(per_step_arrays, per_rank_arrays, basis, int(rows_n), duplicates,
                           invalid=int(rows_n) - int(valid_n))


def _keyed(frame: Any, schema: TableSchema) -> tuple[Any, Any]:
    """One row per (step, rank): step_time_s and basis_s (deduplicated by max), and the
    number of valid input rows."""
    if schema.kind == "op":
        ops = frame.map_partitions(_op_rows, schema, meta=_op_meta())
        valid_rows = ops.map_partitions(len).sum()
        ops = ops.groupby(["step", "rank", "op", "start"]).agg(
            {"end": "max", "busy_ns": "max"}).reset_index()  # repeated ops count once
        grouped = ops.groupby(["step", "rank"]).agg({"start": "min", "end": "max",
                                                     "busy_ns": "sum"})
        grouped = grouped.reset_index()
        keyed = grouped.assign(step_time_s=grouped["end"] - grouped["start"],
                               basis_s=grouped["busy_ns"] / 1e9)
        return keyed[["step", "rank", "step_time_s", "basis_s"]], valid_rows
    rows = frame.map_partitions(_time_rows, schema, meta=_time_meta())
    keyed = rows.groupby(["step", "rank"]).agg({"step_time_s": "max"}).reset_index()
    return keyed.assign(basis_s=keyed["step_time_s"]), rows.map_partitions(len).sum()


def _coerced(part: Any, schema: TableSchema) -> Any:
    """Numeric columns (text coerced to NaN) and the validity mask, as in-process."""
    import pandas as pd

    num = {name: pd.to_numeric(part[name], errors="coerce").astype("float64")
           for name in schema.columns() if name != schema.op}
    valid = _whole(num[schema.step]) & _whole(num[schema.rank])
    return num, valid


def _whole(values: Any) -> Any:
    return np.isfinite(values) & (np.floor(values) == values) & (values.abs() < 2.0**53)


def _time_rows(part: Any, schema: TableSchema) -> Any:
    import pandas as pd

    num, valid = _coerced(part, schema)
    if schema.kind == "step":
        seconds = num[schema.duration] * schema.scale
    else:
        seconds = (num[schema.end] - num[schema.start]) * schema.scale
    valid &= np.isfinite(seconds) & (seconds > 0) & (seconds <= MAX_STEP_TIME_S)
    return pd.DataFrame({"step": num[schema.step][valid].astype("int64"),
                         "rank": num[schema.rank][valid].astype("int64"),
                         "step_time_s": seconds[valid]})


def _time_meta() -> Any:
    import pandas as pd

    return pd.DataFrame({"step": pd.Series(dtype="int64"), "rank": pd.Series(dtype="int64"),
                         "step_time_s": pd.Series(dtype="float64")})


def _op_rows(part: Any, schema: TableSchema) -> Any:
    import pandas as pd

    num, valid = _coerced(part, schema)
    start = num[schema.start] * schema.scale
    duration = num[schema.duration] * schema.scale
    valid &= np.isfinite(start) & (start.abs() <= MAX_STEP_TIME_S)
    valid &= np.isfinite(duration) & (duration >= 0) & (duration <= MAX_STEP_TIME_S)
    start, duration = start[valid], duration[valid]
    op = part[schema.op][valid].astype(str)
    busy = np.where(op.str.endswith(COMPUTE_SUFFIX), np.rint(duration * 1e9), 0).astype("int64")
    return pd.DataFrame({"step": num[schema.step][valid].astype("int64"),
                         "rank": num[schema.rank][valid].astype("int64"), "op": op,
                         "start": start, "end": start + duration, "busy_ns": busy})


def _op_meta() -> Any:
    import pandas as pd

    return pd.DataFrame({"step": pd.Series(dtype="int64"), "rank": pd.Series(dtype="int64"),
                         "op": pd.Series(dtype="object"), "start": pd.Series(dtype="float64"),
                         "end": pd.Series(dtype="float64"), "busy_ns": pd.Series(dtype="int64")})


def _per_rank(keyed: Any) -> Any:
    us = keyed.assign(basis_us=(keyed["basis_s"] * 1e6).round().astype("int64"))
    return us.groupby("rank").agg(sum_us=("basis_us", "sum"), count=("basis_us", "count"))


def _per_step(by_step: Any) -> Any:
    import pandas as pd

    meta = pd.DataFrame({"steps": pd.Series(dtype="int64"),
                         "step_time_max_s": pd.Series(dtype="float64"),
                         "ranks_per_step": pd.Series(dtype="int64"),
                         "basis_max_s": pd.Series(dtype="float64"),
                         "basis_median_s": pd.Series(dtype="float64"),
                         "slowest_rank": pd.Series(dtype="int64")})
    return by_step.map_partitions(_partition_steps, meta=meta)


def _slowdowns(by_step: Any) -> Any:
    """Per rank: steps it was slow in and its summed slowdown (whole ppm: exact sums), from
    partitions that hold every rank of their steps."""
    import pandas as pd

    meta = pd.DataFrame({"rank": pd.Series(dtype="int64"), "slow_steps": pd.Series(dtype="int64"),
                         "slowdown_ppm": pd.Series(dtype="float64")})
    return by_step.map_partitions(_partition_slowdowns, meta=meta).groupby("rank").sum()


def _partition_slowdowns(part: Any) -> Any:
    import pandas as pd

    if len(part) == 0:
        return pd.DataFrame({"rank": pd.Series(dtype="int64"), "slow_steps": pd.Series(dtype="int64"),
                             "slowdown_ppm": pd.Series(dtype="float64")})
    part = part.sort_values(["step", "rank"], kind="stable")
    rank = part["rank"].to_numpy(np.int64)
    basis = part["basis_s"].to_numpy(np.float64)
    per_step = reduce_steps(part["step"].to_numpy(np.int64), rank, part["step_time_s"].to_numpy(np.float64), basis)
    ranks = np.unique(rank)
    out = rank_slowdowns(per_step, rank, basis, ranks)
    return pd.DataFrame({"rank": ranks, **out})


def _partition_steps(part: Any) -> Any:
    import pandas as pd

    if len(part) == 0:
        return pd.DataFrame({k: pd.Series(dtype="float64") for k in _STEP_COLUMNS})
    part = part.sort_values(["step", "rank"], kind="stable")
    out = reduce_steps(part["step"].to_numpy(np.int64), part["rank"].to_numpy(np.int64),
                       part["step_time_s"].to_numpy(np.float64),
                       part["basis_s"].to_numpy(np.float64))
    return pd.DataFrame(out)
