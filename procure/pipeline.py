"""The quote pipeline: wiring only. Inputs -> measure -> model -> economics -> compare -> the
typed result document. Every decision is made by the layer that owns it; this module connects
their results and reads the clock once, to report how long a plan search took.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from procure.catalog.knobs import Knobs
from procure.catalog.software import SoftwareStack
from procure.inputs.bundle import Inputs
from procure.inputs.resolve import ResolvedBid
from procure.model.types import Estimate, PlanSpec, Workload

if TYPE_CHECKING:   # only `quote` needs the economics and the document: `estimate` starts without them
    from procure.document.quote import QuoteDocument
    from procure.economics.inputs import Assumptions, BidCase, Performance
    from procure.inputs.schema import PhaseSpec
    from procure.measure.bid import MeasuredBid

Progress = Callable[[int, int], None]


def model_workload(inputs: Inputs, phase: PhaseSpec | None = None) -> Workload:
    """The model's workload of the main phase, or of a further ``phase`` (its sequence and batch)."""
    w = inputs.cluster.workload
    seq, batch = (w.seq_len, w.global_batch_seqs) if phase is None else (phase.seq_len, phase.global_batch_seqs)
    return Workload(seq_len=seq, global_batch=batch, precision=w.precision,
                    moe_imbalance=w.moe_imbalance, fp8_dispatch=w.fp8_dispatch)


def plan_spec(rb: ResolvedBid, phase: PhaseSpec | None = None) -> PlanSpec | None:
    """The bid's plan; a phase's ``plan`` overrides its fields (dp then follows the GPUs unless
    the phase states it)."""
    plan = rb.bid.plan
    fields = {} if plan == "auto" else plan.model_dump()
    if phase is not None and phase.plan is not None:
        given = {k: v for k, v in phase.plan.model_dump().items() if v is not None}
        if fields and "dp" not in given:
            fields["dp"] = None
        fields.update(given)
    return PlanSpec(**fields) if fields else None


def measure(rb: ResolvedBid) -> MeasuredBid | None:
    from procure.measure.bid import measure_bid

    return measure_bid(list(rb.measured_paths), rb.accelerator.scale_up_domain, rb.network.scale_out_bw_gbs,
                       rb.network.id)


def software(inputs: Inputs, rb: ResolvedBid) -> SoftwareStack:
    """The software release the bid runs (its own, else the workload's, else mainstream at as_of)."""
    from procure.catalog.software import software_for

    return software_for(rb.bid.software, inputs.cluster.workload.software, inputs.cluster.as_of, rb.accelerator)


def estimate_bid(inputs: Inputs, rb: ResolvedBid, measured: MeasuredBid | None, knobs: Knobs,
                 phase: PhaseSpec | None = None) -> Estimate:
    from procure.model import estimate

    # A log's step-time CV is the job's (already the max over GPUs): only the assumption overrides
    # the per-GPU variation, or the tail would be counted twice.
    start = time.perf_counter()
    est = estimate(inputs.arch, rb.accelerator, rb.network, rb.bid.gpus, model_workload(inputs, phase),
                   plan=plan_spec(rb, phase), knobs=knobs,
                   measured_busbw_gbs=measured.scale_out.busbw_gbs if measured else None,
                   step_time_cv=inputs.cluster.assumptions.step_time_cv, elapsed_s=None,
                   software=software(inputs, rb))
    if est.search is not None and est.search.get("seconds") is None:
        est.search["seconds"] = round(time.perf_counter() - start, 4)
    return est


def scaling(inputs: Inputs, rb: ResolvedBid, est: Estimate, knobs: Knobs) -> dict[str, Any] | None:
    from procure.model import scaling_curve

    if not est.feasible:
        return None
    return scaling_curve(inputs.arch, rb.accelerator, rb.network, rb.bid.gpus, model_workload(inputs),
                         est.plan, knobs=knobs, software=software(inputs, rb))


class TunedRecipes:
    """The published vendor-tuned recipes (hardware_catalog/published_runs/), read once per quote,
    and their comparison with a bid's plan; the recipe side is computed once per recipe."""

    def __init__(self, inputs: Inputs, knobs: Knobs) -> None:
        self.inputs, self.knobs = inputs, knobs
        self._runs: list[dict[str, Any]] | None = None
        self._by_recipe: dict[str, dict[str, Any]] = {}

    def runs(self) -> list[dict[str, Any]]:
        if self._runs is None:
            from procure.backtest.runs import read_runs
            from procure.resources import catalog_dir

            self._runs = [run for path in sorted((catalog_dir() / "published_runs").glob("*.yaml"))
                          for run in read_runs(path) if run.get("tuned_recipe")]
        return self._runs

    def compare(self, rb: ResolvedBid, est: Estimate) -> dict[str, Any] | None:
        from procure.backtest import Unpredictable
        from procure.backtest.recipes import compare_with_recipe, nearest_tuned_recipe

        if not est.feasible:
            return None
        run = nearest_tuned_recipe(self.inputs.arch, rb.accelerator, rb.bid.gpus, model_workload(self.inputs),
                                   self.runs())
        if run is None:
            return None
        if run["id"] not in self._by_recipe:
            try:
                self._by_recipe[run["id"]] = compare_with_recipe(est, run, self.inputs.catalog.accelerators,
                                                                 self.knobs)
            except Unpredictable:         # a recipe the model cannot time yet: nothing to compare with
                self._by_recipe[run["id"]] = {}
        if not self._by_recipe[run["id"]]:
            return None
        recipe = dict(self._by_recipe[run["id"]])
        recipe.update(bid_plan=est.plan, bid_step_time_s=est.step_time_s)
        return recipe


def phase_estimates(inputs: Inputs, rb: ResolvedBid, knobs: Knobs) -> list[tuple[PhaseSpec, Estimate]]:
    """The model's estimate of every further phase of the workload (long-context extensions)."""
    return [(phase, estimate_bid(inputs, rb, None, knobs, phase)) for phase in inputs.cluster.workload.phases]


def gemm_ceiling_mfu(rb: ResolvedBid, precision: str) -> float | None:
    """The accelerator's measured matmul ceiling over its peak at the workload precision."""
    ceiling = rb.accelerator.matmul_ceiling_tflops.get(precision)
    return None if ceiling is None else ceiling * 1e12 / rb.accelerator.peak_flops(precision)


def _performance(inputs: Inputs, rb: ResolvedBid, est: Estimate, tokens_per_step: int,
                 measured: MeasuredBid | None, knobs: Knobs | None) -> Performance:
    """One phase's Performance: the model's estimate (or the measured step time), with the
    model's error and the accelerator's GEMM ceiling attached."""
    from procure.economics.basis import Modeled, performance, step_time_error, with_error

    w = inputs.cluster.workload
    modeled = Modeled(feasible=est.feasible, step_time_s=est.step_time_s if est.feasible else None,
                      p99_step_time_s=(est.percentiles_s or {}).get("p99"),
                      model_flops_per_step=est.model_flops_per_step,
                      hardware_flops_per_step=est.hardware_flops_per_step, terms=dict(est.terms), reason=est.reason)
    perf = performance(modeled, tokens_per_step=tokens_per_step, gpus=rb.bid.gpus,
                       peak_flops_per_gpu=rb.accelerator.peak_flops(w.precision),
                       measured_mean_s=measured.mean_s if measured else None,
                       measured_p99_s=measured.p99_s if measured else None)
    # the model's calibration record (issue 10) when it gives one; else whether knobs were fitted
    fitted = knobs is not None and rb.accelerator.id in knobs.by_accelerator
    error = step_time_error(getattr(est, "calibration", None), fitted)
    return with_error(perf, error, gemm_ceiling_mfu(rb, w.precision))


def bid_case(inputs: Inputs, rb: ResolvedBid, est: Estimate, measured: MeasuredBid | None,
             scaling_result: dict[str, Any] | None, knobs: Knobs | None = None,
             phases: list[tuple[PhaseSpec, Estimate]] | None = None) -> BidCase:
    """The economics' view of one bid; ``phases`` are the workload's further phases with their
    estimates (``phase_estimates``): each is timed at its own step time, all are billed."""
    from procure.economics.inputs import BidCase, Commitment, Phase, Pricing
    from procure.inputs.resolve import price_terms
    from procure.model import param_count

    w, c = inputs.cluster.workload, rb.bid.committed
    perf = _performance(inputs, rb, est, w.tokens_per_step, measured, knobs)
    further = tuple(Phase(spec.name, _performance(inputs, rb, e, spec.tokens_per_step, None, knobs), spec.tokens)
                    for spec, e in phases or [])
    return BidCase(id=rb.bid.id, vendor=rb.bid.vendor, performance=perf,
                   pricing=Pricing(**price_terms(rb, inputs.cluster.currency)),
                   commitment=Commitment(c.step_time_s, c.p99_step_time_s, c.scaling_efficiency),
                   train_tokens=float(w.train_tokens), params=param_count(inputs.arch),
                   deadline_days=inputs.cluster.deadline_days,
                   scaling_efficiency=(scaling_result or {}).get("efficiency"),
                   lead_time_days=rb.lead_time_days or 0.0, main_phase=w.name, phases=further)


def economics_assumptions(inputs: Inputs) -> Assumptions:
    from procure.economics.inputs import Assumptions
    from procure.inputs.resolve import assumption_overrides

    known = set(Assumptions.__dataclass_fields__)
    return Assumptions(**assumption_overrides(inputs.cluster, inputs.catalog, known))


def ranking_basis(inputs: Inputs, basis: str | None) -> str:
    """The cost basis that ranks: ``--basis``, else workload.cost_basis, else the economics' default."""
    from procure.economics.cost import DEFAULT_BASIS

    return basis or inputs.cluster.workload.cost_basis or DEFAULT_BASIS


def build_document(inputs: Inputs, progress: Progress | None = None, basis: str | None = None) -> QuoteDocument:
    from procure.catalog.calibration import load_knobs
    from procure.compare import compare
    from procure.document.assemble import BidOutcome, quote_document

    knobs, assumptions = load_knobs(), economics_assumptions(inputs)
    recipes = TunedRecipes(inputs, knobs)
    outcomes, cases = [], []
    for done, rb in enumerate(inputs.bids, start=1):
        measured = measure(rb)
        est = estimate_bid(inputs, rb, measured, knobs)
        curve = scaling(inputs, rb, est, knobs)
        phases = phase_estimates(inputs, rb, knobs)
        outcomes.append(BidOutcome(rb, est, measured, curve, recipes.compare(rb, est), phases))
        cases.append(bid_case(inputs, rb, est, measured, curve, knobs, phases))
        if progress:
            progress(done, len(inputs.bids))
    comparison = compare(cases, assumptions, ranking_basis(inputs, basis))
    return quote_document(inputs, outcomes, comparison, assumptions, knobs)


def run_backtest(path: Path) -> dict[str, Any]:
    from procure.backtest import backtest
    from procure.catalog.calibration import load_knobs
    from procure.catalog.load import default_catalog
    from procure.backtest.runs import load_runs_file

    cat = default_catalog()
    runs = load_runs_file(path)     # validated: a broken file is file:line:col diagnostics
    result = backtest(runs, cat.accelerators, knobs=load_knobs())
    if any(run.get("group") for run in result["runs"]):
        from procure.backtest import spearman_by_group

        result["spearman"] = spearman_by_group(result)   # ranking fidelity within (model, GPUs, batch)
    return result
