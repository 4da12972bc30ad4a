"""Goodput: the share of wall-clock time that trains, after checkpoints, failures and the steady
losses of a real run.

With a job interruption rate ``N·λ`` (per second), checkpoint write time ``δ``, checkpoint
interval ``τ`` and restart cost ``R``, the lost fraction is about ``δ/τ + N·λ·(τ/2 + R)``
(Young 1974; the ETTR form of Kokolis et al. 2025). Young's optimum is ``τ* = sqrt(2δ/(N·λ))``,
never shorter than one write. The write bandwidth grows with the cluster (each GPU's share) up to
the storage system's aggregate, unless it is given. Evaluations and data stalls then take their
share of what is left.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from procure.economics.inputs import Assumptions

MAX_LOST_FRACTION = 0.99  # beyond this the first-order formula means nothing; we clamp and say so


@dataclass(frozen=True)
class Goodput:
    fraction: float
    lost_fraction: float
    failures_per_gpu_hour: float
    job_mtti_h: float | None                 # mean time to interruption of the whole job
    checkpoint_write_s: float
    checkpoint_interval_s: float | None      # None when nothing fails and no interval is given
    restart_min: float
    clamped: bool                            # the formula gave a lost fraction outside [0, 0.99]
    checkpoint_write_gbs: float = 0.0        # the aggregate write bandwidth used
    steady_lost_fraction: float = 0.0        # evaluations and data stalls, of the time left

    @property
    def checkpoint_interval_min(self) -> float | None:
        """The interval in minutes, as the reports state it."""
        tau_s = self.checkpoint_interval_s
        return None if tau_s is None else tau_s / 60

    def to_dict(self) -> dict[str, Any]:
        """The JSON form ``procure estimate`` prints (the quote's document reads the attributes)."""
        return {
            "fraction": self.fraction,
            "lost_fraction": self.lost_fraction,
            "failures_per_gpu_hour": self.failures_per_gpu_hour,
            "job_mtti_h": self.job_mtti_h,
            "checkpoint_write_s": self.checkpoint_write_s,
            "checkpoint_interval_min": self.checkpoint_interval_min,
            "restart_min": self.restart_min,
            "clamped": self.clamped,
            "checkpoint_write_gbs": self.checkpoint_write_gbs,
            "steady_lost_fraction": self.steady_lost_fraction,
        }


def checkpoint_write_s(params: int, bytes_per_param: float, write_gbs: float) -> float:
    """Seconds to write the full training state at the aggregate storage bandwidth."""
    if write_gbs <= 0:
        raise ValueError(f"checkpoint write bandwidth must be positive, got {write_gbs!r}")
    return params * bytes_per_param / (write_gbs * 1e9)


def young_interval_s(write_s: float, job_failures_per_s: float) -> float | None:
    """Young's optimal checkpoint interval; None when the job never fails."""
    if job_failures_per_s <= 0:
        return None
    tau = float((2.0 * write_s / job_failures_per_s) ** 0.5)
    return tau if math.isfinite(tau) else None     # a rate so small the interval overflows: nothing fails


def lost_fraction(write_s: float, interval_s: float | None, job_failures_per_s: Any, restart_s: float) -> Any:
    """First-order lost fraction; works on floats and numpy arrays alike (no clamping)."""
    checkpoint_cost = 0.0 if interval_s is None else write_s / interval_s
    rework = 0.0 if interval_s is None else interval_s / 2.0
    return checkpoint_cost + job_failures_per_s * (rework + restart_s)


def write_gbs(gpus: int, assumptions: Assumptions) -> float:
    """The aggregate checkpoint write bandwidth: the given one, else each GPU's share up to the
    storage system's aggregate."""
    if assumptions.checkpoint_write_gbs is not None:
        return assumptions.checkpoint_write_gbs
    return min(gpus * assumptions.checkpoint_write_gbs_per_gpu, assumptions.storage_write_cap_gbs)


def write_s_of(gpus: int, params: int, assumptions: Assumptions) -> float:
    """Seconds to write one checkpoint of ``params`` parameters from ``gpus`` GPUs."""
    return checkpoint_write_s(params, assumptions.checkpoint_bytes_per_param, write_gbs(gpus, assumptions))


def interval_s(gpus: int, params: int, assumptions: Assumptions) -> float | None:
    """The checkpoint interval in use: the given one, else Young's optimum, never shorter than one
    write (the next checkpoint cannot start before the last is written)."""
    if assumptions.checkpoint_interval_min is not None:
        return assumptions.checkpoint_interval_min * 60.0
    write_s = write_s_of(gpus, params, assumptions)      # a synchronous write: it blocks until durable
    return checkpoint_interval_for(write_s, write_s, gpus * assumptions.failures_per_gpu_hour / 3600.0)


def steady_kept(assumptions: Assumptions) -> float:
    """The share of time evaluations and data stalls leave (each a share of what is left)."""
    return 1.0 - steady_lost_fraction(assumptions.eval_fraction, assumptions.data_stall_fraction, 0.0)


def goodput(gpus: int, params: int, assumptions: Assumptions) -> Goodput:
    """Goodput of a job on ``gpus`` GPUs checkpointing ``params`` parameters."""
    rate_per_gpu_h = assumptions.failures_per_gpu_hour
    job_rate_s = gpus * rate_per_gpu_h / 3600.0
    write_s = write_s_of(gpus, params, assumptions)
    tau_s = interval_s(gpus, params, assumptions)
    raw = lost_fraction(write_s, tau_s, job_rate_s, assumptions.restart_min * 60.0)
    lost = min(max(raw, 0.0), MAX_LOST_FRACTION)
    kept = steady_kept(assumptions)
    return Goodput(
        fraction=(1.0 - lost) * kept,
        lost_fraction=lost,
        failures_per_gpu_hour=rate_per_gpu_h,
        job_mtti_h=None if job_rate_s <= 0 else 1.0 / (gpus * rate_per_gpu_h),
        checkpoint_write_s=write_s,
        checkpoint_interval_s=tau_s,
        restart_min=assumptions.restart_min,
        clamped=lost != raw,
        checkpoint_write_gbs=write_gbs(gpus, assumptions),
        steady_lost_fraction=1.0 - kept,
    )


# --- Run-level losses of a whole published run (the whole-run backtest and its band) -----------------
#
# The quote's goodput above charges failures and a synchronous checkpoint at one fixed bandwidth. A
# whole run also loses time to checkpoint stalls whose write bandwidth grows with the number of nodes
# (until the storage system's aggregate caps it), to in-loop evaluations, to input-pipeline stalls and
# to early-run instabilities (loss spikes and the rollbacks they cause). Each term below is one pure
# function; their defaults and sources are in ``procure.assumptions.RUN_LOSS_ASSUMPTIONS`` and the
# fitted ones in the whole-run corpus's fitted file (benchmarks/refit_runs.py).


@dataclass(frozen=True)
class RunLossParams:
    failures_per_gpu_hour: float
    restart_min: float
    checkpoint_bytes_per_param: float
    node_write_gbs: float           # checkpoint write bandwidth one node reaches
    storage_write_cap_gbs: float    # the storage system's aggregate write bandwidth
    host_copy_gbs: float            # device-to-host copy per GPU (what an asynchronous checkpoint blocks on)
    eval_fraction: float
    data_stall_fraction: float
    instability_fraction: float


@dataclass(frozen=True)
class RunGoodput:
    fraction: float
    failure_lost: float             # rework since the last checkpoint plus restarts
    checkpoint_lost: float          # training blocked by checkpoint writes
    eval_lost: float
    data_stall_lost: float
    instability_lost: float
    write_gbs: float
    checkpoint_stall_s: float
    checkpoint_interval_s: float | None
    job_mtti_h: float | None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def checkpoint_write_gbs_at(nodes: int, node_write_gbs: float, storage_write_cap_gbs: float) -> float:
    """Aggregate checkpoint write bandwidth: every node writes its shard, the storage caps the sum."""
    if nodes < 1 or node_write_gbs <= 0 or storage_write_cap_gbs <= 0:
        raise ValueError("nodes and bandwidths must be positive")
    return min(nodes * node_write_gbs, storage_write_cap_gbs)


def checkpoint_stall_s(state_bytes: float, write_gbs: float, gpus: int, host_copy_gbs: float,
                       asynchronous: bool) -> tuple[float, float]:
    """(seconds training is blocked per checkpoint, seconds until the checkpoint is durable).
    A synchronous checkpoint blocks for the whole write; an asynchronous one only for the copy of
    each GPU's shard to host memory, and the next one cannot start before the write has finished."""
    write_s = state_bytes / (write_gbs * 1e9)
    if not asynchronous:
        return write_s, write_s
    return state_bytes / gpus / (host_copy_gbs * 1e9), write_s


def checkpoint_interval_for(stall_s: float, durable_s: float, job_failures_per_s: float) -> float | None:
    """Young's interval for the blocking cost, never shorter than the time to make one durable."""
    tau = young_interval_s(stall_s, job_failures_per_s)
    return None if tau is None else max(tau, durable_s)


def failure_lost_fraction(job_failures_per_s: float, interval_s: float | None, restart_s: float) -> float:
    """Work redone since the last checkpoint (half an interval on average) plus the restart, per failure."""
    rework_s = 0.0 if interval_s is None else interval_s / 2.0
    return job_failures_per_s * (rework_s + restart_s)


def checkpoint_lost_fraction(stall_s: float, interval_s: float | None) -> float:
    return 0.0 if interval_s is None else stall_s / interval_s


def steady_lost_fraction(eval_fraction: float, data_stall_fraction: float, instability_fraction: float) -> float:
    """Evaluations, data stalls and instabilities, each a share of the remaining time (multiplicative)."""
    kept = (1.0 - eval_fraction) * (1.0 - data_stall_fraction) * (1.0 - instability_fraction)
    return 1.0 - kept


def run_goodput(gpus: int, gpus_per_node: int, params: int, p: RunLossParams,
                asynchronous_checkpoint: bool = False) -> RunGoodput:
    """Goodput of a whole run: interruptions and checkpoints (first order, Young's interval), then the
    steady losses; clamped to at least 1 - MAX_LOST_FRACTION."""
    nodes = max(1, -(-gpus // max(1, gpus_per_node)))
    write_gbs = checkpoint_write_gbs_at(nodes, p.node_write_gbs, p.storage_write_cap_gbs)
    stall_s, durable_s = checkpoint_stall_s(params * p.checkpoint_bytes_per_param, write_gbs, gpus,
                                            p.host_copy_gbs, asynchronous_checkpoint)
    job_rate_s = gpus * p.failures_per_gpu_hour / 3600.0
    tau = checkpoint_interval_for(stall_s, durable_s, job_rate_s)
    fail = failure_lost_fraction(job_rate_s, tau, p.restart_min * 60.0)
    ckpt = checkpoint_lost_fraction(stall_s, tau)
    steady = steady_lost_fraction(p.eval_fraction, p.data_stall_fraction, p.instability_fraction)
    kept = max(1.0 - fail - ckpt, 0.0) * (1.0 - steady)
    return RunGoodput(
        fraction=max(kept, 1.0 - MAX_LOST_FRACTION), failure_lost=fail, checkpoint_lost=ckpt,
        eval_lost=p.eval_fraction, data_stall_lost=p.data_stall_fraction, instability_lost=p.instability_fraction,
        write_gbs=write_gbs, checkpoint_stall_s=stall_s, checkpoint_interval_s=tau,
        job_mtti_h=None if job_rate_s <= 0 else 1.0 / (gpus * p.failures_per_gpu_hour))
