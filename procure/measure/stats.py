"""Warm-up exclusion, outlier flags and summary statistics of step-time samples.

Rules (also in docs/log-formats.md):

- warm-up: when the log covers the start of training, the leading samples covering the first
  ``max(1, floor(2%))`` of the steps are excluded; then, always, every leading sample more than
  3x slower or 3x faster than the median of the samples after it (a compile or restart
  warm-up mid-log; a first step timed before asynchronous work finished). At least one sample
  is always kept. Whole-run and cumulative figures have no warm-up to exclude.
- outliers (flagged, never dropped): slower than ``median + 5 * 1.4826 * MAD`` (five robust
  standard deviations) AND more than 5% above the median, so that a statistically unusual but
  immaterial step in a very steady run is not flagged.
- mean is weighted by the steps each sample covers (the true time per step); P50/P95/P99
  (numpy linear interpolation), std (sample, ddof=1) and CV are over samples, so for interval
  means they understate the tail.
"""

from __future__ import annotations

import math

import numpy as np

from procure.measure.quantiles import median, percentiles
from procure.measure.samples import SampleArrays

WARMUP_FRACTION = 0.02
WARMUP_SLOW_RATIO = 3.0
OUTLIER_MADS = 5.0
OUTLIER_MIN_EXCESS = 0.05
MAD_TO_SIGMA = 1.4826


# The statistics read samples in step order; they are the parsers' own column arrays.
Series = SampleArrays


def starts_at_training_start(series: Series) -> bool:
    """True when the first sample is the first step(s) of training (or the step is unknown).

    A log printed every k steps starts at step k (or k - 1, or 0), so the first step is
    compared with the larger of the steps a sample covers and the typical step spacing.
    """
    if len(series) == 0 or np.isnan(series.step[0]):
        return True
    steps = series.step[~np.isnan(series.step)]
    gaps = np.diff(steps)
    spacing = median(gaps[gaps > 0]) if np.any(gaps > 0) else 1.0
    return bool(series.step[0] <= max(series.covers[0], spacing) + 1)


def warmup_count(series: Series, at_start: bool) -> int:
    """How many leading samples the warm-up rule excludes (see module docstring)."""
    n = len(series)
    values, covers = series.step_time_s, series.covers
    k = 0
    if at_start and n > 1:
        need = max(1, math.floor(WARMUP_FRACTION * float(covers.sum())))
        covered = 0.0
        while k < n - 1 and covered < need:
            covered += covers[k]
            k += 1
    while k < n - 1 and _off_pace(values[k], median(values[k + 1:])):
        k += 1
    return k


def _off_pace(value: float, middle: float) -> bool:
    """3x slower (compilation, restart) or 3x faster (asynchronous dispatch) than the rest."""
    return value > WARMUP_SLOW_RATIO * middle or value * WARMUP_SLOW_RATIO < middle


def outlier_mask(values: np.ndarray) -> np.ndarray:
    """Boolean mask of slow outliers (see module docstring)."""
    if values.size < 3:
        return np.zeros(values.size, dtype=bool)
    middle = median(values)
    mad = median(np.abs(values - middle))
    threshold = max(middle + OUTLIER_MADS * MAD_TO_SIGMA * mad,
                    middle * (1.0 + OUTLIER_MIN_EXCESS))
    return values > threshold


def summary(values: np.ndarray, covers: np.ndarray | None = None) -> dict[str, float] | None:
    """count, mean (step-weighted), p50, p95, p99, max, min, std (ddof=1), cv."""
    if values.size == 0:
        return None
    weights = np.ones_like(values) if covers is None else covers
    mean = float(np.sum(values * weights) / np.sum(weights))
    p50, p95, p99 = percentiles(values, [50, 95, 99])
    std = float(np.std(values, ddof=1)) if values.size > 1 else 0.0
    return {
        "count": int(values.size),
        "mean": mean,
        "p50": p50,
        "p95": p95,
        "p99": p99,
        "max": float(values.max()),
        "min": float(values.min()),
        "std": std,
        "cv": std / mean if mean > 0 else 0.0,
    }


def histogram(values: np.ndarray, bins: int = 30) -> dict[str, list[float]] | None:
    """Counts of step times in ``bins`` equal-width bins between min and max."""
    if values.size == 0:
        return None
    counts, edges = np.histogram(values, bins=max(1, int(bins)))
    return {"edges_s": [float(e) for e in edges], "counts": [int(c) for c in counts]}


def typical_covers(covers: np.ndarray) -> int | float | None:
    """The steps a typical sample covers (median), as an int when whole."""
    if covers.size == 0:
        return None
    value = median(covers)
    return int(value) if value.is_integer() else round(value, 3)
