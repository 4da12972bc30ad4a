"""Judge measured logs (an ingest result) against an acceptance spec: ``procure.acceptance-result/v1``.

- the run's samples are every sample ingest read, less the spec's warm-up: a fixed number of
  leading steps of each log (not ingest's adaptive rule: a slower step must never be dropped as
  warm-up and turn a breach into a pass); logs of several files are pooled at the finest
  aggregation level they share (per-step before interval means), rank groups counted once;
- fewer measured steps than the spec asks for is an error (``TooFewSteps``), never a pass;
- mean is step-weighted, P99 is over per-step samples only: interval means hide the tail, so a P99
  commitment with no per-step evidence is ``unverified`` (a failed figure, like a breach);
- scaling efficiency: logs stating the spec's reference GPU count are the reference run, the rest
  the full run; no reference run leaves the figure ``unverified``;
- stragglers: ingest's rule (more than the spec's excess slower than the step's median rank in at
  least half of its steps or on average); a spec excess other than ingest's is judged on the slowest
  ranks' means over the median rank mean; the slowest ranks are listed with the steps in which
  each was the slowest;
- outlier steps: ingest's outlier rule over the measured steps (flagged and listed, never dropped).
"""

from __future__ import annotations

from typing import Any, Literal, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from procure.acceptance.spec import AcceptanceSpec, Threshold
from procure.measure import stats
from procure.measure.result import IngestResult
from procure.measure.samples import SampleArrays
from procure.measure.stragglers import STRAGGLER_EXCESS
from procure.measure.summarise import SourceSummary, per_step_max, step_number

RESULT_SCHEMA = "procure.acceptance-result/v1"
LEVELS = ("per-step", "interval-mean", "whole-run", "cumulative")
MAX_LISTED = 50


class TooFewSteps(ValueError):
    """The logs hold fewer measured steps than the spec asks for (or belong to another job)."""


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FigureResult(_Doc):
    figure: str
    status: Literal["pass", "breach", "unverified"]
    measured: Optional[float] = None
    committed: Optional[float] = None
    limit: Optional[float] = None
    bound: Optional[Literal["at-most", "at-least"]] = None
    message: str


class SlowRank(_Doc):
    rank: int
    mean_s: float
    vs_median: float
    times_slowest: int = Field(description="Steps in which this rank was the slowest.")
    steps: int
    source: str


class OutlierStep(_Doc):
    step: Optional[float] = None
    step_time_s: float
    source: str


class RunFigures(_Doc):
    gpus: Optional[int] = None
    sources: list[str]
    aggregation: str
    steps_measured: float
    warmup_excluded_steps: float
    mean_s: float
    p99_s: Optional[float] = None
    max_s: float


class AcceptanceResult(_Doc):
    schema_: Literal["procure.acceptance-result/v1"] = Field("procure.acceptance-result/v1", alias="schema")
    bid: str
    passed: bool
    figures: list[FigureResult]
    run: RunFigures
    reference_run: Optional[RunFigures] = None
    slow_ranks: list[SlowRank]
    straggler_ranks: list[int]
    outlier_steps: list[OutlierStep]
    service_credit_percent: Optional[float] = Field(None, description="Percent of the invoice the breaches earn.")
    notes: list[str]

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def to_data(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

    def breaches(self) -> list[FigureResult]:
        return [f for f in self.figures if f.status != "pass"]


class _Run:
    """The pooled measured samples of one job size: every sample of the logs less the spec's
    warm-up (a fixed count of leading steps, so a slower or an extra step can only move the
    statistics towards a breach; ingest's adaptive warm-up rule is not applied)."""

    def __init__(self, sources: list[SourceSummary], groups: list[tuple[list[str], SampleArrays]],
                 warmup_steps: int):
        names = {s.path for s in sources}
        grouped = [paths for paths, _ in groups if set(paths) & names]
        in_group = {p for paths in grouped for p in paths}
        self.sources = sources
        self.excluded = 0.0
        self.level, self.series, self.origin = "", SampleArrays.empty(), np.array([], dtype=object)
        for level in LEVELS:
            parts: list[tuple[str, SampleArrays]] = []
            for s in sources:
                if s.aggregation == level and s.path not in in_group:
                    parts.append((s.path, self._trim(_series(s), warmup_steps)))
            if level == "per-step":
                for paths in grouped:
                    members = [s for s in sources if s.path in paths and s.rank_samples is not None]
                    merged = SampleArrays.concat([s.rank_samples for s in members if s.rank_samples is not None])
                    parts.append((", ".join(paths), self._trim(per_step_max(merged)[0], warmup_steps)))
            parts = [(p, series) for p, series in parts if len(series)]
            if parts:
                self.level = level
                self.series = SampleArrays.concat([series for _, series in parts])
                self.origin = np.concatenate([np.full(len(series), p, dtype=object) for p, series in parts])
                return

    def _trim(self, series: SampleArrays, steps: float) -> SampleArrays:
        k, covered = 0, 0.0
        while k < len(series) and covered < steps:
            covered += float(series.covers[k])
            k += 1
        self.excluded += covered
        return series.tail(k)

    @property
    def steps(self) -> float:
        return float(self.series.covers.sum())

    def figures(self, gpus: int | None) -> RunFigures:
        summary = stats.summary(self.series.step_time_s, self.series.covers)
        assert summary is not None
        return RunFigures(gpus=gpus, sources=sorted({s.path for s in self.sources}), aggregation=self.level,
                          steps_measured=self.steps, warmup_excluded_steps=self.excluded,
                          mean_s=summary["mean"], p99_s=summary["p99"] if self.level == "per-step" else None,
                          max_s=summary["max"])


def _series(s: SourceSummary) -> SampleArrays:
    """All of a source's samples in step order (the slowest rank per step), before any warm-up:
    ingest's own summary step, redone on the deduplicated samples it keeps."""
    if s.rank_samples is not None and len(s.rank_samples):
        return per_step_max(s.rank_samples)[0]
    return s.kept if s.kept is not None else SampleArrays.empty()


def check(spec: AcceptanceSpec, result: IngestResult) -> AcceptanceResult:
    """The verdict of every threshold of ``spec`` on the logs ``result`` read (TooFewSteps: the logs
    cannot decide it)."""
    allowed = set(spec.evidence_formats)
    wrong = [f"{s.path}: {s.format} is not a format this spec accepts as evidence ({', '.join(spec.evidence_formats)})"
             for s in result.sources if s.format not in allowed and s.kept is not None and len(s.kept)]
    if wrong:
        raise TooFewSteps("\n".join(wrong))
    timed = [s for s in result.sources if s.kept is not None and len(s.kept)]
    ref_gpus = spec.scaling.reference_gpus if spec.scaling else None
    full = [s for s in timed if s.gpus is None or s.gpus != ref_gpus]
    reference = [s for s in timed if ref_gpus is not None and s.gpus == ref_gpus]
    other = [f"{s.path}: the log states {s.gpus:,} GPUs; the spec's job runs on {spec.job.gpus:,}"
             + (f" (reference run: {ref_gpus:,})" if ref_gpus else "")
             for s in full if s.gpus is not None and s.gpus != spec.job.gpus]
    if other:
        raise TooFewSteps("\n".join(other))
    groups = [(paths, series) for paths, series in result.groups]
    warmup, need = spec.steps.warmup_steps, spec.steps.measured_steps_min
    run = _Run(full, groups, warmup)
    if run.steps < need:
        raise TooFewSteps(_too_few("the burn-in", run, need, warmup))
    ref_run = _Run(reference, groups, warmup) if reference else None
    if ref_run is not None and ref_run.steps < need:
        raise TooFewSteps(_too_few(f"the reference run on {ref_gpus:,} GPUs", ref_run, need, warmup))
    figures = run.figures(spec.job.gpus)
    ref_figures = ref_run.figures(ref_gpus) if ref_run is not None else None
    verdicts = [_judge(t, figures, ref_figures, spec) for t in spec.thresholds]
    slow, stragglers, straggler_verdict = _stragglers(spec, full)
    if straggler_verdict is not None:
        verdicts.append(straggler_verdict)
    notes = []
    if run.level != "per-step":
        notes.append(f"the logs give {run.level} figures: percentiles need per-step times")
    if not any(s.stragglers for s in full):
        notes.append("no per-rank times in the logs: stragglers not checked")
    for skipped in result.skipped:
        notes.append(f"{skipped.get('path')}: skipped ({skipped.get('reason')})")
    failed = sum(1 for v in verdicts if v.status != "pass")
    credit = None
    if spec.service_credit is not None:
        cap = spec.service_credit.cap_percent if spec.service_credit.cap_percent is not None else 100.0
        credit = min(cap, failed * spec.service_credit.percent_per_breach)
    return AcceptanceResult(bid=spec.bid.id, passed=failed == 0, figures=verdicts, run=figures,
                            reference_run=ref_figures, slow_ranks=slow, straggler_ranks=stragglers,
                            outlier_steps=_outliers(run), service_credit_percent=credit, notes=notes)


def _too_few(what: str, run: _Run, need: int, warmup: int) -> str:
    return (f"{what}: {run.steps:g} steps measured after the {warmup}-step warm-up; the spec needs at least "
            f"{need} (a P99 over fewer steps means nothing): run longer, this is no pass")


def _judge(t: Threshold, run: RunFigures, ref: RunFigures | None, spec: AcceptanceSpec) -> FigureResult:
    label = {"mean_step_time_s": "mean step time", "p99_step_time_s": "P99 step time",
             "scaling_efficiency": "scaling efficiency"}[t.figure]
    measured: float | None
    if t.statistic == "mean":
        measured = run.mean_s
    elif t.statistic == "p99":
        measured = run.p99_s
        if measured is None:
            return FigureResult(figure=t.figure, status="unverified", committed=t.committed, limit=t.limit,
                                bound=t.bound, message=f"{label}: the logs carry no per-step times, so the "
                                f"committed {t.committed:.4g} s cannot be verified")
    else:
        if ref is None or spec.scaling is None:
            need = spec.scaling.reference_gpus if spec.scaling else 0
            return FigureResult(figure=t.figure, status="unverified", committed=t.committed, limit=t.limit,
                                bound=t.bound, message=f"{label}: no log of the reference run on {need:,} GPUs, "
                                f"so the committed {t.committed:.0%} cannot be verified")
        measured = (ref.mean_s * spec.scaling.reference_gpus) / (run.mean_s * spec.scaling.gpus)
    ok = measured <= t.limit if t.bound == "at-most" else measured >= t.limit
    if t.statistic == "efficiency":
        text = f"{label}: measured {measured:.1%} vs committed {t.committed:.1%}"
    else:
        text = f"{label}: measured {measured:.4g} s vs committed {t.committed:.4g} s"
    if not ok:
        text += " (breach)"
    return FigureResult(figure=t.figure, status="pass" if ok else "breach", measured=measured,
                        committed=t.committed, limit=t.limit, bound=t.bound, message=text)


def _stragglers(spec: AcceptanceSpec, sources: list[SourceSummary]
                ) -> tuple[list[SlowRank], list[int], FigureResult | None]:
    """The slowest ranks of every source with per-rank times, and the straggler verdict. With the
    spec's excess equal to ingest's rule, ingest's full straggler list and count decide; another
    excess is judged on the slowest ranks ingest lists."""
    slow: list[SlowRank] = []
    stragglers: set[int] = set()
    count, seen = 0, set()
    for s in sources:
        section = s.stragglers
        key = tuple(section.get("sources") or [s.path]) if section else ()
        if not section or key in seen:       # a rank group's section is shared by its members
            continue
        seen.add(key)
        median = float(section.get("median_rank_mean_s") or 0.0)
        where = ", ".join(key)
        over = set()
        for entry in section.get("slowest_ranks") or []:
            slow.append(SlowRank(rank=int(entry["rank"]), mean_s=float(entry["mean_s"]),
                                 vs_median=float(entry["vs_median"]), times_slowest=int(entry["times_slowest"]),
                                 steps=int(entry["steps"]), source=where))
            if median > 0 and float(entry["mean_s"]) > median * (1.0 + spec.stragglers.max_excess):
                over.add(int(entry["rank"]))
        if spec.stragglers.max_excess == STRAGGLER_EXCESS:
            over.update(int(r) for r in section.get("straggler_ranks") or [])
            count += max(int(section.get("straggler_count") or 0), len(over))
        else:
            count += len(over)
        stragglers |= over
    slow = sorted(slow, key=lambda r: (-r.vs_median, r.rank, r.source))[:MAX_LISTED]
    if not seen:
        return slow, [], None
    listed = sorted(stragglers)
    limit = spec.stragglers.max_straggler_ranks
    ok = count <= limit
    message = (f"stragglers: {count} rank(s) more than {spec.stragglers.max_excess:.0%} slower than the "
               f"median rank, in at least half of their steps or on average (limit {limit})")
    if listed:
        message += ": ranks " + ", ".join(str(r) for r in listed[:10]) + (" ..." if len(listed) > 10 else "")
    return slow, listed[:MAX_LISTED], FigureResult(
        figure="stragglers", status="pass" if ok else "breach", measured=float(count), committed=float(limit),
        limit=float(limit), bound="at-most", message=message if ok else message + " (breach)")


def _outliers(run: _Run) -> list[OutlierStep]:
    mask = stats.outlier_mask(run.series.step_time_s)
    return [OutlierStep(step=None if (n := step_number(float(run.series.step[i]))) is None else float(n),
                        step_time_s=float(run.series.step_time_s[i]), source=str(run.origin[i]))
            for i in np.flatnonzero(mask)[:MAX_LISTED]]


