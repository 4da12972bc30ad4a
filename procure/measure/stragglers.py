"""Straggler analysis from per-rank aggregates: who is slow and what it costs.

- slowest ranks: by mean basis time over the steps they appear in (ties: lower rank first);
- per-step skew: max minus median over ranks of the basis, per step;
- cost of the slowest rank: mean over steps of ``(max - median) / max`` (the share of the step
  the others spend waiting for the slowest rank);
- stragglers: ranks whose mean is more than 5% above the median of the rank means (the first
  50 listed, slowest first, with their count).

The basis is the per-rank step time, or the busy (compute) time when an op trace shows it:
in a synchronous job every rank ends the step together, so only busy time reveals who is slow.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from procure.measure.quantiles import median, percentiles
from procure.measure.samples import RankReduction

TOP_RANKS = 5
STRAGGLER_EXCESS = 0.05
MAX_LISTED = 50


def analyse(red: RankReduction) -> dict[str, Any] | None:
    """The ``stragglers`` section of a source, or None with fewer than two ranks."""
    if red.ranks.size < 2 or red.steps.size == 0:
        return None
    means = red.basis_sum_s / np.maximum(red.basis_count, 1)
    median_of_means = median(means)
    order = np.lexsort((red.ranks, -means))
    slow = means > median_of_means * (1.0 + STRAGGLER_EXCESS)
    skew = red.basis_max_s - red.basis_median_s
    skew_p50, skew_p95 = percentiles(skew, [50, 95])
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = np.where(red.basis_max_s > 0, skew / red.basis_max_s, 0.0)
    return {
        "basis": red.basis,
        "ranks": int(red.ranks.size),
        "steps": int(red.steps.size),
        "slowest_ranks": [_rank_entry(red, means, median_of_means, i) for i in order[:TOP_RANKS]],
        "straggler_ranks": [int(r) for r in red.ranks[order][slow[order]][:MAX_LISTED]],
        "straggler_count": int(slow.sum()),
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


def _rank_entry(red: RankReduction, means: np.ndarray, median: float, i: int) -> dict[str, Any]:
    return {
        "rank": int(red.ranks[i]),
        "mean_s": float(means[i]),
        "vs_median": _excess(float(means[i]), median),
        "times_slowest": int(red.times_slowest[i]),
        "steps": int(red.basis_count[i]),
    }
