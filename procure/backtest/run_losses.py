"""Run-level losses and the whole-run band, fitted on the whole-run corpus's FIT split only.

The fit (``fit_run_losses``, run by benchmarks/refit_runs.py) sets two free parameters and the band:
- the restart cost, the largest that keeps the published effective-training-time figures (Llama 3:
  >90% at 16,384 H100; MegaScale: >90% ETTR at 12,288 GPUs with asynchronous checkpoints);
- the instability share, the fit runs' median log error that is left after the other terms, capped
  so that a 128-GPU run keeps 99% goodput (what small runs report);
- the real-run gap: the median log error still left, ln(published / predicted). The step model is
  calibrated on vendor-tuned benchmark recipes; a lab's whole run, losses included, takes longer
  than those steps say (its own stack and plan, data loading, logging, evaluation pauses, warm-up).
  The median keeps figures whose scope is unclear (model cards that fold in other work) from
  setting it; the hold-out split measures whether it generalises;
- the band: each run family's error from cross-validation that leaves out one source family at a
  time (its mean shifts the band's median, its root mean square is the band's spread, so the
  spread also covers the shift being wrong), and a term for a stack and era (stack, year) that no
  fit run used.

``apply_run_losses`` turns a prediction made with the quote's goodput into one with the run-level
goodput and the fitted band; the goodput's own uncertainty (the interruption rate between a
production fleet and a research cluster) is added to the band per run.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from procure.assumptions import RUN_LOSS_BY_KEY
from procure.backtest.whole_runs import Z90
from procure.economics.goodput import RunLossParams, run_goodput
from procure.sources.fields import Finite, Strict

SCHEMA = "procure.whole-run-losses/v1"
FITTED_FILE = "fitted_run_losses.yaml"
SMALL_RUN_GPUS = 128                 # the size at which goodput must stay at SMALL_RUN_GOODPUT
SMALL_RUN_PARAMS = 8_000_000_000
SMALL_RUN_GOODPUT = 0.99
MIN_FAMILY_RUNS = 3                  # fewer fit runs in a run family: its band takes the pooled error
# The software-catalog feature that says a release checkpoints asynchronously (GPU state copied to
# host memory, then written in the background). No catalog release states it yet, so every whole
# run is costed with synchronous checkpoints; MegaScale's ETTR figure is asynchronous by its source.
ASYNC_CHECKPOINT_FEATURE = "async_checkpoint"


@dataclass(frozen=True)
class RealRun:
    """A run as published whole pre-training runs went (``pipeline.real_run``)."""
    time_to_train_days: float
    gpu_hours: float
    p10_gpu_hours: float
    p90_gpu_hours: float
    goodput: float
    real_run_factor: float          # published runs' time over the model's, losses apart (fitted)
    fit_runs: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def checkpoints_asynchronously(predicted: dict[str, Any]) -> bool:
    return ASYNC_CHECKPOINT_FEATURE in predicted.get("stack_features", ())


@dataclass(frozen=True)
class EttrFigure:
    """A published effective-training-time figure: the run and the share it reached at least."""
    name: str
    gpus: int
    params: int
    at_least: float
    asynchronous: bool
    source: str


ETTR_FIGURES = (
    EttrFigure("Llama 3 405B", 16_384, 405_000_000_000, 0.90, False,
               "Llama 3 Herd of Models, sec 3.3.4: higher than 90% effective training time, 16,384 H100"),
    EttrFigure("MegaScale 175B", 12_288, 175_000_000_000, 0.90, True,
               "MegaScale (NSDI 2024, arXiv 2402.15627): over 90% effective training time, 12,288 GPUs, "
               "asynchronous two-stage checkpoints"),
)


def default_params() -> RunLossParams:
    """The sourced defaults and priors of procure.assumptions.RUN_LOSS_ASSUMPTIONS."""
    names = RunLossParams.__dataclass_fields__
    return RunLossParams(**{k: float(RUN_LOSS_BY_KEY[k].default or 0.0) for k in names})


def stack_era(stack: str | None, year: int) -> str:
    return f"{stack or 'mainstream'}/{year}"


@dataclass(frozen=True)
class FitRow:
    """One fit run as the fit sees it: published hours and the model's compute-only hours."""
    id: str
    source_family: str
    family: str
    published_gpu_hours: float
    compute_gpu_hours: float        # predicted GPU-hours at 100% goodput
    gpus: int
    gpus_per_node: int
    params: int
    stack_era: str
    asynchronous: bool


def predicted_hours(row: FitRow, p: RunLossParams) -> float:
    gp = run_goodput(row.gpus, row.gpus_per_node, row.params, p, row.asynchronous)
    return row.compute_gpu_hours / gp.fraction


def fit_restart_min(p: RunLossParams, figures: tuple[EttrFigure, ...] = ETTR_FIGURES) -> float:
    """The largest restart cost (bisection, minutes) that keeps every ETTR figure's interruption and
    checkpoint losses within 1 - at_least."""
    def worst_margin(restart_min: float) -> float:
        q = replace(p, restart_min=restart_min, eval_fraction=0.0, data_stall_fraction=0.0,
                    instability_fraction=0.0)
        return min(run_goodput(f.gpus, 8, f.params, q, f.asynchronous).fraction - f.at_least for f in figures)

    lo, hi = 0.0, 120.0
    if worst_margin(lo) < 0:
        return lo
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if worst_margin(mid) >= 0 else (lo, mid)
    return lo


def instability_cap(p: RunLossParams) -> float:
    """The largest instability share that keeps a small run at SMALL_RUN_GOODPUT."""
    base = run_goodput(SMALL_RUN_GPUS, 8, SMALL_RUN_PARAMS, replace(p, instability_fraction=0.0)).fraction
    return max(0.0, 1.0 - SMALL_RUN_GOODPUT / base)


def fit_instability(rows: list[FitRow], p: RunLossParams) -> float:
    """The instability share that zeroes the rows' median log error, within [0, instability_cap]."""
    if not rows:
        return 0.0
    base = replace(p, instability_fraction=0.0)
    residual = statistics.median(math.log(r.published_gpu_hours / predicted_hours(r, base)) for r in rows)
    return min(max(0.0, 1.0 - math.exp(-residual)), instability_cap(p))


def fitted_params(rows: list[FitRow], p: RunLossParams) -> RunLossParams:
    p = replace(p, restart_min=fit_restart_min(p))
    return replace(p, instability_fraction=fit_instability(rows, p))


def fit_real_run_gap(rows: list[FitRow], p: RunLossParams) -> float:
    """The rows' median ln(published / predicted) under the fitted losses (0 without rows)."""
    if not rows:
        return 0.0
    return statistics.median(math.log(r.published_gpu_hours / predicted_hours(r, p)) for r in rows)


def real_run_hours(row: FitRow, p: RunLossParams, gap: float) -> float:
    return predicted_hours(row, p) * math.exp(gap)


def rms(values: list[float]) -> float:
    return math.sqrt(statistics.fmean(v * v for v in values)) if values else 0.0


def family_sigma(errors: list[float], pooled: float) -> float:
    """A run family's cross-validated error; the pooled one when it has too few runs to say."""
    return rms(errors) if len(errors) >= MIN_FAMILY_RUNS else pooled


def family_bias(errors: list[float], pooled: float) -> float:
    """A run family's mean cross-validated log error (the band's median shift); pooled when too few."""
    return statistics.fmean(errors) if len(errors) >= MIN_FAMILY_RUNS else pooled


def leave_family_out(rows: list[FitRow], p: RunLossParams) -> dict[str, float]:
    """Each fit run's log error (published / predicted) when its whole source family was left out
    of the fit."""
    out: dict[str, float] = {}
    for fam in sorted({r.source_family for r in rows}):
        rest = [r for r in rows if r.source_family != fam]
        q = fitted_params(rest, p)
        gap = fit_real_run_gap(rest, q)
        for r in rows:
            if r.source_family == fam:
                out[r.id] = math.log(r.published_gpu_hours / real_run_hours(r, q, gap))
    return out


def unseen_sigma(rows: list[FitRow], lofo: dict[str, float]) -> float:
    """How far one stack and era's mean error sits from another's: the spread of the per-(stack,
    year) mean cross-validated errors (0 with fewer than two)."""
    means = [statistics.fmean(lofo[r.id] for r in rows if r.stack_era == key)
             for key in sorted({r.stack_era for r in rows})]
    return statistics.pstdev(means) if len(means) > 1 else 0.0


class FittedRunLosses(Strict):
    schema_: Literal["procure.whole-run-losses/v1"] = Field(alias="schema")
    restart_min: Finite = Field(ge=0)
    instability_fraction: Finite = Field(ge=0, lt=1)
    real_run_gap_log: Finite = Field(ge=-2, le=2)
    bias_by_family: dict[str, Finite]
    bias_pooled: Finite
    sigma_by_family: dict[str, Finite]
    sigma_pooled: Finite = Field(ge=0)
    sigma_unseen_stack: Finite = Field(ge=0)
    seen_stack_eras: list[str]
    fit_runs: list[str]
    cross_validated_log_error: dict[str, Finite]
    provenance: dict[str, Any]

    def params(self) -> RunLossParams:
        return replace(default_params(), restart_min=float(self.restart_min),
                       instability_fraction=float(self.instability_fraction))

    def summary(self) -> dict[str, Any]:
        return {"restart_min": self.restart_min, "instability_fraction": self.instability_fraction,
                "real_run_gap_log": self.real_run_gap_log, "bias_by_family": dict(self.bias_by_family), "bias_pooled": self.bias_pooled,
                "sigma_by_family": dict(self.sigma_by_family), "sigma_pooled": self.sigma_pooled,
                "sigma_unseen_stack": self.sigma_unseen_stack, "fit_runs": list(self.fit_runs)}


def fit_run_losses(rows: list[FitRow], provenance: dict[str, Any]) -> FittedRunLosses:
    """The fitted file's content from the fit rows only (the caller passes no hold-out run)."""
    p = fitted_params(rows, default_params())
    gap = fit_real_run_gap(rows, p)
    lofo = leave_family_out(rows, default_params())
    pooled = rms(list(lofo.values()))
    pooled_bias = statistics.fmean(lofo.values()) if lofo else 0.0
    families = sorted({r.family for r in rows})
    errors = {fam: [lofo[r.id] for r in rows if r.family == fam] for fam in families}
    by_family = {fam: family_sigma(errors[fam], pooled) for fam in families}
    bias = {fam: family_bias(errors[fam], pooled_bias) for fam in families}
    return FittedRunLosses.model_validate({
        "schema": SCHEMA, "restart_min": p.restart_min, "instability_fraction": p.instability_fraction,
        "real_run_gap_log": gap, "bias_by_family": bias, "bias_pooled": pooled_bias, "sigma_by_family": by_family, "sigma_pooled": pooled,
        "sigma_unseen_stack": unseen_sigma(rows, lofo), "seen_stack_eras": sorted({r.stack_era for r in rows}),
        "fit_runs": [r.id for r in rows], "cross_validated_log_error": lofo, "provenance": provenance})


def read_fitted(path: Path) -> FittedRunLosses:
    from procure.sources.validate import validate_document
    from procure.sources.yamlpos import read_yaml

    return validate_document(read_yaml(path), FittedRunLosses)


def fitted_next_to(index: Path) -> FittedRunLosses | None:
    """The fitted file next to a whole-run index, when there is one."""
    path = Path(index).parent / FITTED_FILE
    return read_fitted(path) if path.is_file() else None


def goodput_sigma(gpus: int, gpus_per_node: int, params: int, p: RunLossParams, asynchronous: bool) -> float:
    """The log spread of goodput when the interruption rate lies between the production fleet's
    (P90 goodput) and the research cluster's (P10)."""
    high = float(RUN_LOSS_BY_KEY["failures_per_gpu_hour_high"].default or 0.0)
    best = run_goodput(gpus, gpus_per_node, params, p, asynchronous).fraction
    worst = run_goodput(gpus, gpus_per_node, params, replace(p, failures_per_gpu_hour=high), asynchronous).fraction
    return abs(math.log(best / worst)) / (2 * Z90)


def apply_run_losses(predicted: dict[str, Any], fitted: FittedRunLosses,
                     family: str | None = None) -> dict[str, Any]:
    """A whole-run prediction with the run-level goodput in place of the quote's, and the band's
    sigma: the family's cross-validated error, the unseen stack term, the goodput's spread."""
    p = fitted.params()
    asynchronous = checkpoints_asynchronously(predicted)
    gpus, per_node, params = int(predicted["gpus"]), int(predicted["gpus_per_node"]), int(predicted["params"])
    gp = run_goodput(gpus, per_node, params, p, asynchronous)
    compute_hours = predicted["gpu_hours"] * predicted["goodput"]
    era = stack_era(predicted.get("stack"), int(predicted["year"]))
    fam_sigma = fitted.sigma_by_family.get(family or "", fitted.sigma_pooled)
    bias = fitted.bias_by_family.get(family or "", fitted.bias_pooled)
    unseen = 0.0 if era in fitted.seen_stack_eras else float(fitted.sigma_unseen_stack)
    gp_sigma = goodput_sigma(gpus, per_node, params, p, asynchronous)
    sigma = math.sqrt(float(fam_sigma) ** 2 + unseen ** 2 + gp_sigma ** 2)
    gap = math.exp(float(fitted.real_run_gap_log))
    return {**predicted, "gpu_hours": compute_hours * gap / gp.fraction, "model_gpu_hours": compute_hours / gp.fraction,
            "time_to_train_days": predicted["time_to_train_days"] * predicted["goodput"] * gap / gp.fraction,
            "goodput": gp.fraction, "goodput_terms": gp.to_dict(), "real_run_factor": gap, "stack_era": era,
            "bias_log": float(bias), "sigma_log": sigma, "sigma_parts": {"family": float(fam_sigma), "unseen_stack": unseen,
                                                "goodput": gp_sigma}}
