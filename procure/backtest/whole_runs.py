"""Whole published pre-training runs (``procure.whole-runs/v1``): what a lab reported a run cost in
GPU-hours (or GPUs x days), next to a cluster.yaml that states the run as a user would, so that the
backtest measures the user path (``procure estimate`` of that file) against the published figure.

The index lists, per run, the cluster file, the figure and what it includes (restarts, ablations,
annealing ...), the sources and what was assumed, the source family and the fit/hold-out split
(decided per family before anything was fitted). This module holds the schema and the statistics;
the pipeline predicts each run.
"""

from __future__ import annotations

import math
import statistics
from statistics import NormalDist
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import Field, model_validator

from procure.errors import Diagnostic, InputError
from procure.sources.fields import Finite, Strict

SCHEMA = "procure.whole-runs/v1"
RUN_ID = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,199}$"
# What a published compute figure covers; a run states each part its source says it includes.
PARTS = ("pretraining", "annealing", "long-context", "restarts", "failures", "checkpointing", "evaluations",
         "ablations", "post-training", "idle")
FAMILIES = ("dense-a100", "dense-hopper", "dense-other", "moe")
Z90 = NormalDist().inv_cdf(0.9)  # the standard normal's 90th percentile: P10/P90 = median x exp(-/+ z sigma)


class PublishedCompute(Strict):
    gpu_hours: Optional[Finite] = Field(None, gt=0, le=1e12)
    gpus: Optional[int] = Field(None, gt=0, le=10_000_000)
    days: Optional[Finite] = Field(None, gt=0, le=3650)
    where: str = Field(min_length=1, description="table, page or sentence of the source that states it")
    includes: list[Literal[PARTS]] = Field(min_length=1)     # type: ignore[valid-type]
    excludes: list[Literal[PARTS]] = Field(default_factory=list)   # type: ignore[valid-type]

    @model_validator(mode="after")
    def _one_figure(self) -> PublishedCompute:
        by_days = self.gpus is not None and self.days is not None
        if (self.gpu_hours is None) == (not by_days):
            raise ValueError("state either `gpu_hours` or both `gpus` and `days`")
        return self

    @property
    def hours(self) -> float:
        if self.gpu_hours is not None:
            return float(self.gpu_hours)
        return float(self.gpus or 0) * float(self.days or 0.0) * 24.0


class Source(Strict):
    url: str = Field(min_length=1)
    where: str = Field(min_length=1)
    checked: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="the day the figure was read at the source")


class WholeRun(Strict):
    id: str = Field(pattern=RUN_ID)
    name: str = Field(min_length=1)
    cluster: str = Field(min_length=1, description="the run as a cluster.yaml, relative to this file")
    source_family: str = Field(min_length=1)
    split: Literal["fit", "holdout"]
    family: Literal[FAMILIES]    # type: ignore[valid-type]
    published: PublishedCompute
    sources: list[Source] = Field(min_length=1)
    assumed: list[str] = Field(default_factory=list)
    notes: str = ""


class WholeRunsFile(Strict):
    schema_: Literal["procure.whole-runs/v1"] = Field(alias="schema")
    runs: list[WholeRun] = Field(min_length=1)


def read_whole_runs(path: Path | str) -> list[tuple[WholeRun, Path]]:
    """Each run with its cluster file's path (validated; InputError with every problem's position,
    a missing cluster file or a duplicate id included)."""
    from procure.sources.validate import validate_document
    from procure.sources.yamlpos import read_yaml

    path = Path(path)
    doc = read_yaml(path)
    index = validate_document(doc, WholeRunsFile)
    problems: list[Diagnostic] = []
    seen: set[str] = set()
    out = []
    for i, run in enumerate(index.runs):
        if run.id in seen:
            problems.append(doc.diagnostic(("runs", i, "id"), "duplicate-id", f"run id {run.id!r} appears twice"))
        seen.add(run.id)
        cluster = (path.parent / run.cluster).resolve()
        if not cluster.is_relative_to(path.parent.resolve()) or not cluster.is_file():
            problems.append(doc.diagnostic(("runs", i, "cluster"), "not-found",
                                           f"no cluster file {run.cluster!r} next to {path.name}"))
        out.append((run, cluster))
    if problems:
        raise InputError(problems)
    return out


def is_whole_runs(path: Path | str) -> bool:
    """Whether a YAML file declares this schema (read from its first lines, not parsed)."""
    import os

    from procure.sources.files import open_regular

    try:
        fd = open_regular(path)             # never blocks on a pipe; the reader reports it
    except OSError:
        return False
    try:
        head = os.read(fd, 4096)
    except OSError:
        return False
    finally:
        os.close(fd)
    return SCHEMA.encode() in head


def band(median: float, sigma_log: float) -> tuple[float, float]:
    """P10 and P90 of a log-normal around ``median``."""
    return median * math.exp(-Z90 * sigma_log), median * math.exp(Z90 * sigma_log)


def shifted_band(hours: float, bias_log: float, sigma_log: float) -> tuple[float, float, float]:
    """A prediction's band: its median (shifted by the fitted bias, when there is one), P10, P90."""
    median = hours * math.exp(bias_log)
    return (median, *band(median, sigma_log))


def compare_run(run: WholeRun, predicted: dict[str, Any] | None, reason: str | None) -> dict[str, Any]:
    """One run's row: published and predicted GPU-hours, their ratio and the band."""
    row: dict[str, Any] = {"id": run.id, "name": run.name, "split": run.split, "family": run.family,
                           "source_family": run.source_family, "published_gpu_hours": run.published.hours,
                           "includes": list(run.published.includes), "sources": [s.url for s in run.sources]}
    if predicted is None:
        return {**row, "predicted_gpu_hours": None, "reason": reason}
    hours = predicted["gpu_hours"]
    median, p10, p90 = shifted_band(hours, predicted.get("bias_log", 0.0), predicted["sigma_log"])
    ratio = hours / run.published.hours
    peak = predicted.get("peak_gpu_hours")
    return {**row, **predicted, "predicted_gpu_hours": hours, "band_median_gpu_hours": median,
            "p10_gpu_hours": p10, "p90_gpu_hours": p90,
            "ratio": ratio, "error": ratio - 1.0, "inside_band": p10 <= run.published.hours <= p90,
            # whole-run MFU (every loss included) that the prediction and the published figure imply
            "run_mfu": None if peak is None else peak / hours,
            "published_mfu": None if peak is None else peak / run.published.hours}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """MAPE, median ratio, mean signed error and P10-P90 coverage of the predicted rows."""
    done = [r for r in rows if r.get("predicted_gpu_hours") is not None]
    if not done:
        return {"n": 0, "mape": None, "median_ratio": None, "bias": None, "coverage": None}
    errors = [r["error"] for r in done]
    return {"n": len(done), "mape": statistics.fmean(abs(e) for e in errors),
            "median_ratio": statistics.median(r["ratio"] for r in done), "bias": statistics.fmean(errors),
            "coverage": sum(1 for r in done if r["inside_band"]) / len(done)}


def source_family_spread(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per source family of two or more predicted runs: how far its published figures scatter
    around the model (the standard deviation of ln(published / predicted), which no correction
    shared by the family can remove) and the range of whole-run MFU the figures imply."""
    out = []
    for name in sorted({r["source_family"] for r in rows}):
        done = [r for r in rows if r["source_family"] == name and r.get("predicted_gpu_hours") is not None]
        if len(done) < 2:
            continue
        logs = [math.log(r["published_gpu_hours"] / r["predicted_gpu_hours"]) for r in done]
        implied = [r["published_mfu"] for r in done if r.get("published_mfu") is not None]
        out.append({"source_family": name, "split": done[0]["split"], "n": len(done),
                    "log_spread": statistics.stdev(logs),
                    "published_mfu_min": min(implied) if implied else None,
                    "published_mfu_max": max(implied) if implied else None})
    return out


def grouped(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary overall, per split, per split and family, and each source family's spread."""
    keys = sorted({(r["split"], r["family"]) for r in rows})
    return {"all": summary(rows),
            "by_split": {s: summary([r for r in rows if r["split"] == s]) for s in ("fit", "holdout")},
            "groups": [{"split": s, "family": f, **summary([r for r in rows if (r["split"], r["family"]) == (s, f)])}
                       for s, f in keys],
            "source_families": source_family_spread(rows)}
