"""IngestResult: the sources, their combined statistics and the ``procure.ingest/v1`` dict."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import median
from typing import Any

import numpy as np

from procure.measure import stats
from procure.measure.samples import SampleArrays
from procure.measure.stats import Series
from procure.measure.summarise import SourceSummary

SCHEMA = "procure.ingest/v1"
SIGNIFICANT_DIGITS = 9
LEVELS = ("per-step", "interval-mean", "whole-run", "cumulative")


@dataclass
class IngestResult:
    """What ``ingest`` read: one SourceSummary per file, plus files it skipped and why.

    ``groups`` are the per-step series of rank groups (Kineto traces of several ranks of one
    job): in the combined statistics they replace their member files, which would otherwise
    count every step once per rank.
    """

    sources: list[SourceSummary]
    skipped: list[dict[str, str]] = field(default_factory=list)
    groups: list[tuple[list[str], Series]] = field(default_factory=list)

    def _pooled(self) -> tuple[str, Series, int] | None:
        grouped = {p for paths, _ in self.groups for p in paths}
        for level in LEVELS:
            parts = [s.kept for s in self.sources
                     if s.aggregation == level and s.kept is not None and len(s.kept)
                     and s.path not in grouped]
            if level == "per-step":
                parts += [series for _, series in self.groups if len(series)]
            if parts:
                return level, SampleArrays.concat(parts), len(parts)
        return None

    def combined(self) -> dict[str, Any] | None:
        """Statistics over all kept samples of the finest aggregation level available."""
        pooled = self._pooled()
        if pooled is None:
            return None
        level, series, count = pooled
        summary = stats.summary(series.step_time_s, series.covers)
        assert summary is not None
        steps = float(series.covers.sum())
        return {**summary, "aggregation": level, "sources": count,
                "steps": int(steps) if steps.is_integer() else steps}

    def step_time_summary(self) -> dict[str, Any] | None:
        """The combined mean, p50, p95, p99, max, std, cv and count the quote uses."""
        combined = self.combined()
        if combined is None:
            return None
        keys = ("mean", "p50", "p95", "p99", "max", "std", "cv", "count", "aggregation")
        return _rounded_dict({k: combined[k] for k in keys})

    def histogram(self, bins: int = 30) -> dict[str, list[float]] | None:
        """Counts of the combined step-time samples in ``bins`` equal-width bins."""
        pooled = self._pooled()
        counts = None if pooled is None else stats.histogram(pooled[1].step_time_s, bins)
        return None if counts is None else _rounded_dict(counts)

    def busbw_gbs(self) -> float | None:
        """nccl-tests large-message (>= 1 GiB, else the largest) bus bandwidth, GB/s.

        all_reduce results are preferred (other collectives only when there is none); with
        several files, the median of their figures.
        """
        tables = [s.bus_bandwidth for s in self.sources
                  if s.bus_bandwidth and s.bus_bandwidth.get("large_message_gbs") is not None]
        all_reduce = [t for t in tables if t.get("collective") == "all_reduce"] or tables
        figures = [float(t["large_message_gbs"]) for t in all_reduce]
        return _round(float(median(figures))) if figures else None

    def to_dict(self) -> dict[str, Any]:
        return _rounded_dict({
            "schema": SCHEMA,
            "sources": [_source_dict(s) for s in self.sources],
            "combined": self.combined(),
            "skipped": list(self.skipped),
        })




def _source_dict(s: SourceSummary) -> dict[str, Any]:
    return {
        "path": s.path,
        "format": s.format,
        "variant": s.variant,
        "aggregation": s.aggregation,
        "steps": s.steps,
        "samples": s.samples,
        "warmup_excluded": s.warmup_excluded,
        "step_time_s": s.step_time_s,
        "steps_per_sample": s.steps_per_sample,
        "outliers": s.outliers,
        "gpus": s.gpus,
        "accelerator": s.accelerator,
        "notes": s.notes,
        "stragglers": s.stragglers,
        "bus_bandwidth": s.bus_bandwidth,
        "collectives": s.collectives,
    }


def _round(value: float) -> float:
    if not math.isfinite(value) or value == 0 or float(value).is_integer():
        return value
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")


def _rounded_dict(obj: dict[str, Any]) -> dict[str, Any]:
    """``_rounded`` of a mapping, keeping its type."""
    return {k: _rounded(v) for k, v in obj.items()}


def _rounded(obj: object) -> object:
    """JSON-ready copy: numpy scalars to Python, floats to 9 significant digits."""
    if isinstance(obj, dict):
        return {k: _rounded(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_rounded(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return _round(float(obj))
    return obj
