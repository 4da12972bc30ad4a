"""Goodput: the share of wall-clock time that trains, after checkpoints and failures.

With a job interruption rate ``N·λ`` (per second), checkpoint write time ``δ``, checkpoint
interval ``τ`` and restart cost ``R``, the lost fraction is about ``δ/τ + N·λ·(τ/2 + R)``
(Young 1974; the ETTR form of Kokolis et al. 2025). Young's optimum is ``τ* = sqrt(2δ/(N·λ))``.
"""

from __future__ import annotations

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

    def to_dict(self) -> dict[str, Any]:
        tau_s = self.checkpoint_interval_s
        interval_min = None if tau_s is None else tau_s / 60
        return {
            "fraction": self.fraction,
            "lost_fraction": self.lost_fraction,
            "failures_per_gpu_hour": self.failures_per_gpu_hour,
            "job_mtti_h": self.job_mtti_h,
            "checkpoint_write_s": self.checkpoint_write_s,
            "checkpoint_interval_min": interval_min,
            "restart_min": self.restart_min,
            "clamped": self.clamped,
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
    return float((2.0 * write_s / job_failures_per_s) ** 0.5)


def lost_fraction(write_s: float, interval_s: float | None, job_failures_per_s: Any, restart_s: float) -> Any:
    """First-order lost fraction; works on floats and numpy arrays alike (no clamping)."""
    checkpoint_cost = 0.0 if interval_s is None else write_s / interval_s
    rework = 0.0 if interval_s is None else interval_s / 2.0
    return checkpoint_cost + job_failures_per_s * (rework + restart_s)


def interval_s(gpus: int, params: int, assumptions: Assumptions) -> float | None:
    """The checkpoint interval in use: the given one, else Young's optimum."""
    if assumptions.checkpoint_interval_min is not None:
        return assumptions.checkpoint_interval_min * 60.0
    write_s = checkpoint_write_s(params, assumptions.checkpoint_bytes_per_param,
                                 assumptions.checkpoint_write_gbs)
    return young_interval_s(write_s, gpus * assumptions.failures_per_gpu_hour / 3600.0)


def goodput(gpus: int, params: int, assumptions: Assumptions) -> Goodput:
    """Goodput of a job on ``gpus`` GPUs checkpointing ``params`` parameters."""
    rate_per_gpu_h = assumptions.failures_per_gpu_hour
    job_rate_s = gpus * rate_per_gpu_h / 3600.0
    write_s = checkpoint_write_s(params, assumptions.checkpoint_bytes_per_param,
                                 assumptions.checkpoint_write_gbs)
    tau_s = interval_s(gpus, params, assumptions)
    raw = lost_fraction(write_s, tau_s, job_rate_s, assumptions.restart_min * 60.0)
    lost = min(max(raw, 0.0), MAX_LOST_FRACTION)
    return Goodput(
        fraction=1.0 - lost,
        lost_fraction=lost,
        failures_per_gpu_hour=rate_per_gpu_h,
        job_mtti_h=None if job_rate_s <= 0 else 1.0 / (gpus * rate_per_gpu_h),
        checkpoint_write_s=write_s,
        checkpoint_interval_s=tau_s,
        restart_min=assumptions.restart_min,
        clamped=lost != raw,
    )
