"""Warm-up exclusion, outlier flags, summary statistics and their invariances."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procure.measure import stats
from procure.measure.samples import SampleArrays
from procure.measure.stats import Series
from procure.measure.summarise import SourceSummary, dedup, fill_stats, series_of


def series(values, steps=None, covers=None) -> Series:
    values = np.asarray(values, dtype=float)
    n = values.size
    steps = np.arange(1, n + 1, dtype=float) if steps is None else np.asarray(steps, float)
    covers = np.ones(n) if covers is None else np.asarray(covers, float)
    return Series(steps, np.full(n, -1), values, covers)


def test_warmup_drops_two_percent_of_steps_at_training_start():
    # 100 steps from step 1: floor(2%) = 2 steps are warm-up
    assert stats.warmup_count(series([5.0] * 100), at_start=True) == 2
    # 30 steps: max(1, floor(0.6)) = 1
    assert stats.warmup_count(series([5.0] * 30), at_start=True) == 1


def test_warmup_fixed_part_only_applies_when_the_log_starts_with_training():
    values = [5.0] * 100
    assert stats.warmup_count(series(values, steps=range(500, 600)), at_start=False) == 0


def test_warmup_drops_leading_steps_three_times_off_the_median():
    # a restart mid-log: 40 s and 20 s before 5 s steps, then a too-fast first step
    assert stats.warmup_count(series([40.0, 20.0, 5.0, 5.1, 4.9]), at_start=False) == 2
    assert stats.warmup_count(series([0.3, 5.0, 5.1, 4.9, 5.0]), at_start=False) == 1
    # an interval sample covering many steps satisfies the fixed rule on its own
    assert stats.warmup_count(series([9.0, 5.0, 5.0], covers=[100, 100, 100]), True) == 1


def test_warmup_always_keeps_one_sample():
    assert stats.warmup_count(series([100.0]), at_start=True) == 0
    assert stats.warmup_count(series([100.0, 1.0]), at_start=True) == 1


def test_training_start_is_judged_against_the_print_interval():
    assert stats.starts_at_training_start(series([1.0] * 3, steps=[10, 20, 30]))
    assert stats.starts_at_training_start(series([1.0] * 3, steps=[0, 1, 2]))
    assert not stats.starts_at_training_start(series([1.0] * 3, steps=[551, 552, 553]))
    assert stats.starts_at_training_start(series([1.0], steps=[np.nan]))


def test_outliers_need_five_robust_sigmas_and_five_percent():
    steady = np.array([55.0, 55.1, 54.9, 55.05, 55.0, 54.95, 55.1, 55.0])
    assert not stats.outlier_mask(np.append(steady, 56.0)).any()       # 1.8%: immaterial
    mask = stats.outlier_mask(np.append(steady, 67.6))
    assert mask.tolist() == [False] * 8 + [True]
    noisy = np.array([1.0, 1.3, 0.8, 1.2, 0.9, 1.1, 1.25])             # 1.3 is within 5 sigma
    assert not stats.outlier_mask(noisy).any()
    assert not stats.outlier_mask(np.array([1.0, 9.0])).any()          # two samples: no flags


def test_summary_weights_the_mean_by_steps_covered():
    summary = stats.summary(np.array([2.0, 4.0]), np.array([3.0, 1.0]))
    assert summary["mean"] == pytest.approx(2.5)      # (2*3 + 4*1) / 4
    assert summary["p50"] == pytest.approx(3.0)       # percentiles are over samples
    assert summary["count"] == 2
    assert summary["std"] == pytest.approx(np.std([2.0, 4.0], ddof=1))
    assert summary["cv"] == pytest.approx(summary["std"] / 2.5)


def test_summary_percentiles_use_numpy_linear_interpolation():
    values = np.arange(1.0, 101.0)
    summary = stats.summary(values)
    assert summary["p95"] == pytest.approx(95.05)
    assert summary["p99"] == pytest.approx(99.01)
    assert summary["max"] == 100.0 and summary["min"] == 1.0
    assert stats.summary(np.array([])) is None


def test_histogram_counts_every_sample():
    hist = stats.histogram(np.array([1.0, 1.0, 2.0, 3.0]), bins=2)
    assert hist == {"edges_s": [1.0, 2.0, 3.0], "counts": [2, 2]}


def _summarised(step, rank, value):
    arrays = SampleArrays(np.asarray(step, float), np.asarray(rank, np.int64),
                          np.asarray(value, float), np.ones(len(step)))
    samples, _ = dedup(arrays)
    summary = SourceSummary(path="x", format="test", aggregation="per-step")
    fill_stats(summary, series_of(samples))
    return summary


rows = st.lists(st.tuples(st.integers(0, 60), st.floats(0.5, 50.0, allow_nan=False)),
                min_size=1, max_size=60, unique_by=lambda r: r[0])


@settings(max_examples=60, deadline=None)
@given(rows, st.randoms(use_true_random=False), st.integers(0, 3))
def test_stats_are_invariant_to_row_order_and_duplication(data, rnd, copies):
    steps = [r[0] for r in data]
    values = [r[1] for r in data]
    base = _summarised(steps, [-1] * len(steps), values)
    idx = list(range(len(steps))) * (copies + 1)
    rnd.shuffle(idx)
    mixed = _summarised([steps[i] for i in idx], [-1] * len(idx), [values[i] for i in idx])
    assert mixed.step_time_s == base.step_time_s
    assert mixed.warmup_excluded == base.warmup_excluded
    assert mixed.outliers == base.outliers
    assert mixed.samples == len(set(steps))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.1, 1e4, allow_nan=False), min_size=1, max_size=80))
def test_summary_is_ordered_and_finite(values):
    summary = stats.summary(np.asarray(values))
    assert summary["min"] <= summary["p50"] <= summary["p95"] <= summary["p99"] <= summary["max"]
    assert summary["min"] <= summary["mean"] * (1 + 1e-12) and summary["mean"] <= summary["max"] * (1 + 1e-12)
    assert all(np.isfinite(v) for v in summary.values())
