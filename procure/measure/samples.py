"""What a parser hands back: step-time samples plus what the log says about the run."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

AGGREGATIONS = ("per-step", "interval-mean", "whole-run", "cumulative")
MAX_STEP_TIME_S = 1e6  # 11.6 days: anything slower is a corrupt value, not a step
MAX_RANK = 2**31 - 1   # ranks and GPU counts beyond this are corrupt fields (they must fit int64 maths)
MAX_GPUS = 10_000_000  # the schema's bound on a bid's GPUs
# A rank is slow in a step when its time is more than this above the step's median rank (the
# acceptance spec's "stragglers over 5%"); see ``stragglers`` for the rule built on it.
STRAGGLER_EXCESS = 0.05


def _finite(value: float | None) -> float | None:
    """``float(value)`` when it is a finite number, else None (never an exception: untyped callers
    may pass a log's text or a huge integer)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


@dataclass
class SampleBuilder:
    """Collects samples row by row (text parsers); ``arrays()`` freezes them."""

    step: list[float] = field(default_factory=list)
    rank: list[int] = field(default_factory=list)
    step_time_s: list[float] = field(default_factory=list)
    covers: list[float] = field(default_factory=list)

    def add(self, step_time_s: float | None, step: float | None = None, covers: float = 1.0,
            rank: int | None = None) -> None:
        """Add one sample; a missing, non-positive or non-finite time is not a sample (nor are
        values no float can hold: a log's numbers are untrusted)."""
        time_s, covers_f = _finite(step_time_s), _finite(covers)
        if time_s is None or not 0 < time_s <= MAX_STEP_TIME_S or covers_f is None or covers_f <= 0:
            return
        if rank is not None and not 0 <= rank <= MAX_RANK:
            rank = None   # a corrupt rank field: the sample stands, its rank is unknown
        step_f = _finite(step)
        self.step.append(np.nan if step_f is None else step_f)
        self.rank.append(-1 if rank is None else int(rank))
        self.step_time_s.append(time_s)
        self.covers.append(covers_f)

    def __len__(self) -> int:
        return len(self.step_time_s)

    def arrays(self) -> SampleArrays:
        return SampleArrays(
            step=np.asarray(self.step, dtype=np.float64),
            rank=np.asarray(self.rank, dtype=np.int64),
            step_time_s=np.asarray(self.step_time_s, dtype=np.float64),
            covers=np.asarray(self.covers, dtype=np.float64),
        )


@dataclass(frozen=True)
class SampleArrays:
    """Column arrays of samples: step index (NaN if unknown), rank (-1 if unknown), time, covers.

    ``covers`` is how many training steps a sample stands for (1 for per-step timings, the log
    interval for interval means, the whole run for run totals).
    """

    step: np.ndarray
    rank: np.ndarray
    step_time_s: np.ndarray
    covers: np.ndarray

    def __len__(self) -> int:
        return int(self.step_time_s.size)

    @staticmethod
    def empty() -> SampleArrays:
        return SampleBuilder().arrays()

    def tail(self, start: int) -> SampleArrays:
        return SampleArrays(self.step[start:], self.rank[start:], self.step_time_s[start:],
                            self.covers[start:])

    @staticmethod
    def concat(parts: list[SampleArrays]) -> SampleArrays:
        return SampleArrays(*(np.concatenate([getattr(p, f) for p in parts])
                              for f in ("step", "rank", "step_time_s", "covers")))


@dataclass(frozen=True)
class RankReduction:
    """Per-step and per-rank aggregates of a per-rank table (what straggler analysis needs).

    ``basis`` is the per-rank quantity compared between ranks: the step time itself, or the
    busy (compute) time when an op trace shows it (waiting ranks all end a step together).
    """

    steps: np.ndarray            # sorted unique step ids
    step_time_max_s: np.ndarray  # per step: slowest rank's step time (what the job waits for)
    ranks_per_step: np.ndarray   # per step: number of ranks seen
    basis_max_s: np.ndarray      # per step: max over ranks of the basis
    basis_median_s: np.ndarray   # per step: median over ranks of the basis
    ranks: np.ndarray            # sorted unique rank ids
    basis_sum_s: np.ndarray      # per rank: sum of the basis over steps
    basis_count: np.ndarray      # per rank: steps seen
    times_slowest: np.ndarray    # per rank: steps in which this rank had the max basis
    slow_steps: np.ndarray       # per rank: steps more than STRAGGLER_EXCESS above the step's median rank
    slowdown_ppm: np.ndarray     # per rank: sum over steps of (basis / step median - 1), parts per million
    basis: str = "step_time_s"
    rows: int = 0
    duplicates: int = 0
    invalid: int = 0


@dataclass
class Parsed:
    """One file's parse: samples, aggregation level and the facts the log states."""

    format: str
    samples: SampleArrays = field(default_factory=SampleArrays.empty)
    aggregation: str = "per-step"
    variant: str | None = None
    gpus: int | None = None
    accelerator: str | None = None
    notes: list[str] = field(default_factory=list)
    bus_bandwidth: dict[str, Any] | None = None
    collectives: dict[str, Any] | None = None
    reduction: RankReduction | None = None
    info: dict[str, Any] = field(default_factory=dict)
    starts_at_training_start: bool | None = None
