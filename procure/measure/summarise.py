"""From one file's Parsed to its SourceSummary: dedup, per-rank reduction, warm-up, stats."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from procure.measure import stats
from procure.measure.ranktable import reduce_arrays
from procure.measure.samples import MAX_GPUS, Parsed, RankReduction, SampleArrays
from procure.measure.stats import Series
from procure.measure.stragglers import analyse

MAX_OUTLIERS_LISTED = 50
NO_WARMUP = ("whole-run", "cumulative")


@dataclass
class SourceSummary:
    """One ingested file: what it measured and how (``to_dict`` gives the JSON form)."""

    path: str
    format: str
    aggregation: str | None
    variant: str | None = None
    samples: int = 0
    steps: int | float = 0
    warmup_excluded: int = 0
    step_time_s: dict[str, float] | None = None
    steps_per_sample: float | None = None
    outliers: list[dict[str, Any]] = field(default_factory=list)
    gpus: int | None = None
    accelerator: str | None = None
    notes: list[str] = field(default_factory=list)
    stragglers: dict[str, Any] | None = None
    bus_bandwidth: dict[str, Any] | None = None
    collectives: dict[str, Any] | None = None
    kept: Series | None = None          # samples after warm-up (for combined stats, histogram)
    rank_samples: SampleArrays | None = None  # deduplicated per-rank samples (rank groups)
    info: dict[str, Any] = field(default_factory=dict)


def dedup(samples: SampleArrays) -> tuple[SampleArrays, int]:
    """Keep one sample per (step, rank): the slowest (order-independent). Unknown steps stay."""
    known = ~np.isnan(samples.step)
    idx = np.flatnonzero(known)
    if idx.size < 2:
        return samples, 0
    order = idx[np.lexsort((-samples.covers[idx], -samples.step_time_s[idx], samples.rank[idx],
                            samples.step[idx]))]
    step, rank = samples.step[order], samples.rank[order]
    first = np.r_[True, (step[1:] != step[:-1]) | (rank[1:] != rank[:-1])]
    keep = np.concatenate([order[first], np.flatnonzero(~known)])
    out = SampleArrays(samples.step[keep], samples.rank[keep], samples.step_time_s[keep],
                       samples.covers[keep])
    return out, int(idx.size - first.sum())


def series_of(samples: SampleArrays) -> Series:
    """Samples in step order (unknown steps keep their file order, at the end)."""
    order = np.argsort(np.where(np.isnan(samples.step), np.inf, samples.step), kind="stable")
    return Series(samples.step[order], samples.rank[order], samples.step_time_s[order],
                  samples.covers[order])


def per_step_max(samples: SampleArrays) -> tuple[Series, RankReduction | None]:
    """With several ranks: the slowest rank per step (what a synchronous job waits for)."""
    ranks = np.unique(samples.rank[samples.rank >= 0])
    steps_known = not np.isnan(samples.step).any()
    integral = steps_known and bool(np.all(samples.step == np.rint(samples.step)))
    if ranks.size < 2 or not integral:
        return series_of(samples), None
    red = reduce_arrays({"step": samples.step.astype(np.int64), "rank": samples.rank,
                         "step_time_s": samples.step_time_s})
    uniq, inverse = np.unique(samples.step, return_inverse=True)
    covers = np.zeros(uniq.size)
    np.maximum.at(covers, inverse, samples.covers)
    series = Series(red.steps, np.full(red.steps.size, -1), red.step_time_max_s, covers)
    return series, red


def plausible_gpus(gpus: object) -> int | None:
    """A GPU count a log states, when it is one (a corrupt field is no count)."""
    return gpus if isinstance(gpus, int) and not isinstance(gpus, bool) and 1 <= gpus <= MAX_GPUS else None


def summarise(parsed: Parsed, path: str) -> SourceSummary:
    samples, duplicates = dedup(parsed.samples)
    summary = SourceSummary(path=path, format=parsed.format, aggregation=parsed.aggregation,
                            variant=parsed.variant, gpus=plausible_gpus(parsed.gpus),
                            accelerator=parsed.accelerator, notes=list(parsed.notes),
                            bus_bandwidth=parsed.bus_bandwidth, collectives=parsed.collectives,
                            info=dict(parsed.info), rank_samples=samples)
    if duplicates:
        summary.notes.append(f"{duplicates} duplicate (step, rank) samples merged (slowest kept)")
    red: RankReduction | None
    if parsed.reduction is not None:
        series, red = _table_series(parsed.reduction), parsed.reduction
    else:
        series, red = per_step_max(samples)
    if red is not None:
        summary.stragglers = analyse(red)
        if parsed.reduction is None:
            summary.notes.append(f"{red.ranks.size} ranks: step time is the slowest rank per step")
    fill_stats(summary, series, parsed.starts_at_training_start)
    return summary


def _table_series(red: RankReduction) -> Series:
    n = red.steps.size
    return Series(red.steps, np.full(n, -1), red.step_time_max_s, np.ones(n))


def fill_stats(summary: SourceSummary, series: Series, at_start: bool | None = None) -> None:
    """Warm-up exclusion, outlier flags and statistics of a source's series."""
    summary.samples = len(series)
    summary.steps = step_number(float(series.covers.sum())) or 0
    if len(series) == 0:
        summary.aggregation = None
        return
    if summary.aggregation in NO_WARMUP:
        k = 0
    else:
        start = stats.starts_at_training_start(series) if at_start is None else at_start
        k = stats.warmup_count(series, start)
    summary.warmup_excluded = k
    kept = series.tail(k)
    summary.kept = kept
    summary.step_time_s = stats.summary(kept.step_time_s, kept.covers)
    summary.steps_per_sample = stats.typical_covers(series.covers)
    summary.outliers = _outliers(kept)
    flagged = int(stats.outlier_mask(kept.step_time_s).sum())
    if flagged > MAX_OUTLIERS_LISTED:
        summary.notes.append(f"{flagged} outliers flagged; the first {MAX_OUTLIERS_LISTED} "
                             "are listed")
    if summary.aggregation != "per-step" and len(series) > 1:
        _note_once(summary.notes, "understate the tail",
                   "percentiles over interval means understate the tail")


def _outliers(kept: Series) -> list[dict[str, Any]]:
    mask = stats.outlier_mask(kept.step_time_s)
    out: list[dict[str, Any]] = []
    for i in np.flatnonzero(mask)[:MAX_OUTLIERS_LISTED]:
        entry: dict[str, Any] = {"step": step_number(kept.step[i]),
                                 "step_time_s": float(kept.step_time_s[i])}
        if kept.rank[i] >= 0:
            entry["rank"] = int(kept.rank[i])
        out.append(entry)
    return out


def step_number(value: float) -> int | float | None:
    """A step index as an int when whole (JSON readability), None when unknown."""
    if np.isnan(value):
        return None
    return int(value) if float(value).is_integer() else float(value)


def _note_once(notes: list[str], marker: str, text: str) -> None:
    if not any(marker in n for n in notes):
        notes.append(text)
