"""Straggler analysis from per-rank aggregates: who is slow, how often, and what it costs.

- a rank's slowdown in a step is its time over the step's median rank, less one; a rank is *slow*
  in a step when that slowdown is above 5% (``STRAGGLER_EXCESS``, the acceptance spec's
  "stragglers over 5%");
- stragglers: ranks slow in at least half of the steps they ran (``STRAGGLER_SHARE``: a rank
  that is typically slow), or more than 5% slow on average over those steps (a rank slow now and
  then, but by a lot). Each step weighs the same, so a long stall that every rank waits through
  (a checkpoint, the first step's compilation) neither hides a slow rank nor makes one. Listed
  slowest first (by mean slowdown, ties: lower rank first), the first 50, with their count;
- slowest ranks: the 5 with the highest mean basis time over their steps (ties: lower rank first),
  ``vs_median`` that mean over the median rank's mean, less one;
- per-step skew: max minus median over ranks of the basis, per step;
- cost of the slowest rank: mean over steps of ``(max - median) / max`` (the share of the step
  the others spend waiting for the slowest rank).

The basis is the per-rank step time, or the busy (compute) time when an op trace shows it:
in a synchronous job every rank ends the step together, so only busy time reveals who is slow.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from procure.measure.quantiles import median, percentiles
from procure.measure.samples import STRAGGLER_EXCESS, RankReduction

__all__ = ["STRAGGLER_EXCESS", "STRAGGLER_SHARE", "analyse", "straggler_mask"]

TOP_RANKS = 5
STRAGGLER_SHARE = 0.5
MAX_LISTED = 50


def mean_slowdown(red: RankReduction) -> np.ndarray:
    """Per rank: mean over its steps of (its time / the step's median rank - 1)."""
    slowdown: np.ndarray = red.slowdown_ppm / 1e6 / np.maximum(red.basis_count, 1)
    return slowdown


def straggler_mask(red: RankReduction) -> np.ndarray:
    """Per rank: whether it is a straggler (see the module docstring)."""
    typically = red.slow_steps >= STRAGGLER_SHARE * red.basis_count
    on_average = mean_slowdown(red) > STRAGGLER_EXCESS
    mask: np.ndarray = (red.basis_count > 0) & (typically | on_average)
    return mask


def analyse(red: RankReduction) -> dict[str, Any] | None:
    """The ``stragglers`` section of a source, or None with fewer than two ranks."""
    if red.ranks.size < 2 or red.steps.size == 0:
        return None
    means = red.basis_sum_s / np.maximum(red.basis_count, 1)
    median_of_means = median(means)
    order = np.lexsort((red.ranks, -means))
    slowdown = mean_slowdown(red)
    named = np.flatnonzero(straggler_mask(red))
    named = named[np.lexsort((red.ranks[named], -slowdown[named]))]
    skew = red.basis_max_s - red.basis_median_s
    skew_p50, skew_p95 = percentiles(skew, [50, 95])
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = np.where(red.basis_max_s > 0, skew / red.basis_max_s, 0.0)
    return {
        "basis": red.basis,
        "ranks": int(red.ranks.size),
        "steps": int(red.steps.size),
        "slowest_ranks": [_rank_entry(red, means, median_of_means, slowdown, i) for i in order[:TOP_RANKS]],
        "straggler_ranks": [int(red.ranks[i]) for i in named[:MAX_LISTED]],
        "straggler_count": int(named.size),
        "stragglers": [_rank_entry(red, means, median_of_means, slowdown, i) for i in named[:MAX_LISTED]],
        "skew_s": {
            "mean": float(skew.mean()),
            "p50": skew_p50,
            "p95": skew_p95,
            "max": float(skew.max()),
        },
        "slowest_rank_cost": float(cost.mean()),
        "median_rank_mean_s": median_of_means,
    }


def _excess(value: float, median: float) -> float:
    return value / median - 1.0 if median > 0 else 0.0


def _rank_entry(red: RankReduction, means: np.ndarray, median: float, slowdown: np.ndarray,
                i: int) -> dict[str, Any]:
    return {
        "rank": int(red.ranks[i]),
        "mean_s": float(means[i]),
        "vs_median": _excess(float(means[i]), median),
        "times_slowest": int(red.times_slowest[i]),
        "slow_steps": int(red.slow_steps[i]),
        "slowdown": float(slowdown[i]),
        "steps": int(red.basis_count[i]),
    }
