"""The run a bid's step time implies, without prices: time to train, goodput and GPU-hours, in
total and per phase (what ``procure estimate`` shows next to the step time; the quote's economics
use the same goodput and phase times)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from procure.economics.bid import phase_seconds
from procure.economics.goodput import Goodput, goodput
from procure.economics.inputs import Assumptions, BidCase
from procure.economics.throughput import throughput


@dataclass(frozen=True)
class PhaseRun:
    name: str
    step_time_s: float
    mfu: float | None
    time_to_train_days: float
    gpu_hours: float

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "step_time_s": self.step_time_s, "mfu": self.mfu,
                "time_to_train_days": self.time_to_train_days, "gpu_hours": self.gpu_hours}


@dataclass(frozen=True)
class RunTime:
    goodput: Goodput
    time_to_train_days: float
    gpu_hours: float
    phases: tuple[PhaseRun, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"time_to_train_days": self.time_to_train_days, "gpu_hours": self.gpu_hours,
                "goodput": self.goodput.to_dict(), "phases": [p.to_dict() for p in self.phases]}


def run_time(case: BidCase, assumptions: Assumptions) -> RunTime | None:
    """None when a phase has no feasible step time (the estimate says why)."""
    phases = case.all_phases()
    if not all(p.performance.feasible for p in phases):
        return None
    gpus = case.performance.gpus
    gp = goodput(gpus, case.params, assumptions)
    seconds = phase_seconds(case, gp)
    rows = tuple(PhaseRun(p.name, float(p.performance.step_time_s or 0.0), throughput(p.performance).mfu,
                          s / 86400.0, s / 3600.0 * gpus)
                 for p, s in zip(phases, seconds))
    return RunTime(gp, sum(seconds) / 86400.0, sum(seconds) / 3600.0 * gpus, rows)
