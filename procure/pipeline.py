"""The quote pipeline: wiring only. Inputs -> gather (the files a quote reads besides its inputs)
-> model -> economics -> compare -> the typed result document. Every decision is made by the
layer that owns it; this module connects their results and reads the clock once, to report how
long a plan search took.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from procure.catalog.knobs import Knobs
from procure.catalog.software import SoftwareStack
from procure.inputs.bundle import Inputs
from procure.inputs.resolve import ResolvedBid
from procure.model.types import Estimate, PlanSpec, Workload

if TYPE_CHECKING:   # only `quote` needs the economics and the document: `estimate` starts without them
    from procure.backtest.published_run import PublishedRun
    from procure.backtest.run_losses import FittedRunLosses, RealRun
    from procure.document.quote import QuoteDocument
    from procure.economics.inputs import Assumptions, BidCase, Commitment, MemoryShortfall, Performance
    from procure.economics.runtime import RunTime
    from procure.economics.statistical import BatchChoice, CriticalBatch
    from procure.inputs.schema import PhaseSpec
    from procure.measure.bid import MeasuredBid

Progress = Callable[[int, int], None]


def model_workload(inputs: Inputs, phase: PhaseSpec | None = None, *, global_batch_seqs: int | None = None,
                   seq_len: int | None = None, precision: str | None = None) -> Workload:
    """The model's workload of the main phase, or of a further ``phase`` (its sequence and batch);
    the keywords put the main phase at another batch, length or precision (a batch range, a
    commitment stated at its own conditions)."""
    w = inputs.cluster.workload
    seq, batch = (w.seq_len, w.global_batch_seqs) if phase is None else (phase.seq_len, phase.global_batch_seqs)
    return Workload(seq_len=seq_len or seq, global_batch=global_batch_seqs or batch, precision=precision or w.precision,
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
    return PlanSpec.from_dict(fields) if fields else None


def measure(rb: ResolvedBid) -> MeasuredBid | None:
    from procure.measure.bid import measure_bid

    return measure_bid(list(rb.measured_paths), rb.accelerator.scale_up_domain, rb.network.scale_out_bw_gbs,
                       rb.network.id)


def software(inputs: Inputs, rb: ResolvedBid) -> SoftwareStack:
    """The software release the bid runs (its own, else the workload's, else mainstream at as_of)."""
    from procure.catalog.software import software_for

    return software_for(rb.bid.software, inputs.cluster.workload.software, inputs.cluster.as_of, rb.accelerator)


def estimate_at(inputs: Inputs, rb: ResolvedBid, stack: SoftwareStack, measured: MeasuredBid | None, knobs: Knobs,
                workload: Workload, plan: PlanSpec | None) -> Estimate:
    """The model's estimate of ``rb`` on its software release ``stack`` (gathered: ``software``)."""
    from procure.model import estimate
    from procure.model.memo import memoised, problem_key

    # A log's step-time CV is the job's (already the max over GPUs): only the assumption overrides
    # the per-GPU variation, or the tail would be counted twice.
    busbw_gbs, cv = measured.scale_out.busbw_gbs if measured else None, inputs.cluster.assumptions.step_time_cv
    if stack.attention_kernel == "unfused":    # a stack without a fused kernel materialises the scores
        workload = replace(workload, attention="unfused")
    return memoised("estimate", problem_key(rb.accelerator, rb.network, rb.bid.gpus, workload, plan, busbw_gbs, cv,
                                            stack),
                    lambda: estimate(inputs.arch, rb.accelerator, rb.network, rb.bid.gpus, workload, plan=plan,
                                     knobs=knobs, measured_busbw_gbs=busbw_gbs, step_time_cv=cv, elapsed_s=None,
                                     software=stack))


def _timed(est: Estimate, start: float) -> Estimate:
    """The estimate with the seconds its search took (a copy: a memoised estimate is shared)."""
    if est.search is not None and est.search.get("seconds") is None:
        return replace(est, search={**est.search, "seconds": round(time.perf_counter() - start, 4)})
    return est


def estimate_bid(inputs: Inputs, rb: ResolvedBid, stack: SoftwareStack, measured: MeasuredBid | None, knobs: Knobs,
                 phase: PhaseSpec | None = None) -> Estimate:
    """The bid's plan at the workload's batch (the main phase), or at a further ``phase``'s."""
    start = time.perf_counter()
    return _timed(estimate_at(inputs, rb, stack, measured, knobs, model_workload(inputs, phase),
                              plan_spec(rb, phase)), start)


def critical_batch(inputs: Inputs) -> CriticalBatch | None:
    """The workload's critical batch under its model family's law (None: the catalog has no law);
    the law is the main phase's (its batch is the one a range lets the search choose)."""
    from procure.catalog.types import family_of
    from procure.economics.statistical import critical_batch as solve, law_params
    from procure.model import active_param_count, param_count
    from procure.model.flops import embedding_params   # the parameters Kaplan's N leaves out

    law = inputs.catalog.batch_scaling.get(family_of(inputs.arch))
    if law is None:
        return None
    w = inputs.cluster.workload
    params = law_params(law, param_count(inputs.arch), active_param_count(inputs.arch), embedding_params(inputs.arch))
    return solve(law, params, float(w.train_tokens), float(w.tokens_per_step))


def estimate_bid_batch(inputs: Inputs, rb: ResolvedBid, stack: SoftwareStack, measured: MeasuredBid | None,
                       knobs: Knobs, critical: CriticalBatch | None = None) -> tuple[Estimate, BatchChoice]:
    """The main phase's plan at the workload's batch, or (with a batch range) at the batch with the
    shortest time to target after the statistical-efficiency penalty: the plan search is run at
    every candidate batch (``economics.statistical.candidate_batches``) and economics chooses."""
    from procure.economics.statistical import fixed_batch

    w = inputs.cluster.workload
    start = time.perf_counter()
    span = w.batch_range_seqs
    pinned = measured is not None and measured.mean_s and span and span[0] <= w.global_batch_seqs <= span[1]
    if span is None or critical is None or pinned:
        est = estimate_at(inputs, rb, stack, measured, knobs, model_workload(inputs), plan_spec(rb))
        batch = fixed_batch(w.global_batch_seqs, w.tokens_per_step, critical)
        if pinned:
            batch = replace(batch, note="measured at the workload's batch: the bid is held there")
    else:
        est, batch = _search_batches(inputs, rb, stack, measured, knobs, critical, span)
    return _timed(est, start), batch


def _search_batches(inputs: Inputs, rb: ResolvedBid, stack: SoftwareStack, measured: MeasuredBid | None,
                    knobs: Knobs, critical: CriticalBatch, span: tuple[int, int]) -> tuple[Estimate, BatchChoice]:
    from procure.economics.statistical import BatchOption, candidate_batches, choose_batch, chosen_batch

    w = inputs.cluster.workload
    batches = candidate_batches(span[0], span[1], rb.bid.gpus, w.global_batch_seqs)
    estimates = [estimate_at(inputs, rb, stack, measured, knobs, model_workload(inputs, global_batch_seqs=b),
                             plan_spec(rb)) for b in batches]
    options = [BatchOption(b, b * w.seq_len, e.step_time_s if e.feasible else None,
                           dict(e.terms) if e.feasible else {}, dict(e.plan) if e.feasible else {},
                           None if e.feasible else e.reason) for b, e in zip(batches, estimates)]
    best = choose_batch(options, critical)
    index = best if best is not None else (batches.index(w.global_batch_seqs) if w.global_batch_seqs in batches else 0)
    return estimates[index], chosen_batch(options, critical, index)


def scaling(inputs: Inputs, rb: ResolvedBid, stack: SoftwareStack, est: Estimate, knobs: Knobs,
            batch: BatchChoice | None = None) -> dict[str, Any] | None:
    from procure.model import scaling_curve

    if not est.feasible:
        return None
    from procure.model.memo import memoised, problem_key

    workload = model_workload(inputs, global_batch_seqs=batch.global_batch_seqs if batch else None)
    return memoised("scaling", problem_key(rb.accelerator, rb.network, rb.bid.gpus, workload, est.plan, None, None,
                                           stack),
                    lambda: scaling_curve(inputs.arch, rb.accelerator, rb.network, rb.bid.gpus, workload,
                                          est.plan, knobs=knobs, software=stack))


@dataclass(frozen=True)
class Gathered:
    """What a quote reads besides cluster.yaml and the catalog, read before anything is computed
    so that the rest of the pipeline works on data: the fitted knobs, the published vendor-tuned
    recipes (hardware_catalog/published_runs/), and per bid (in the order of ``inputs.bids``) its
    measured logs, parsed (None for a bid without logs), and the software release it runs."""

    knobs: Knobs
    tuned_recipes: tuple[PublishedRun, ...]
    measured: tuple[MeasuredBid | None, ...]
    software: tuple[SoftwareStack, ...]
    run_losses: FittedRunLosses | None = None      # fitted on published whole runs (the real-run view)


def gather(inputs: Inputs, *, logs: bool = True) -> Gathered:
    """Read what the quote needs (each file once: the API's commands run in a read-once scope).
    ``logs`` False: the bids' measured logs are not parsed (``procure estimate`` times the model
    alone, so it reads none)."""
    from procure.backtest.tuned import tuned_recipes
    from procure.catalog.calibration import load_knobs

    return Gathered(knobs=load_knobs(), tuned_recipes=tuple(tuned_recipes()),
                    measured=tuple(measure(rb) if logs else None for rb in inputs.bids),
                    software=tuple(software(inputs, rb) for rb in inputs.bids),
                    run_losses=shipped_run_losses())


def shipped_run_losses() -> FittedRunLosses | None:
    """The run-level losses and real-run gap fitted on the shipped whole-run corpus."""
    from procure.backtest.run_losses import fitted_next_to
    from procure.resources import catalog_dir

    return fitted_next_to(catalog_dir() / "whole_runs" / "runs.yaml")


class TunedRecipes:
    """The published vendor-tuned recipes and their comparison with a bid's plan; the recipe side
    is computed once per recipe."""

    def __init__(self, inputs: Inputs, knobs: Knobs, runs: tuple[PublishedRun, ...]) -> None:
        self.inputs, self.knobs = inputs, knobs
        self._runs = list(runs)
        self._by_recipe: dict[str, dict[str, Any]] = {}
        self._nearest: dict[tuple[str, int], PublishedRun | None] = {}

    def runs(self) -> list[PublishedRun]:
        return self._runs

    def compare(self, rb: ResolvedBid, est: Estimate) -> dict[str, Any] | None:
        from procure.backtest import Unpredictable
        from procure.backtest.recipes import compare_with_recipe, nearest_tuned_recipe

        if not est.feasible:
            return None
        near = (rb.accelerator.id, rb.bid.gpus)       # the model and workload are the quote's
        if near not in self._nearest:
            self._nearest[near] = nearest_tuned_recipe(self.inputs.arch, rb.accelerator, rb.bid.gpus,
                                                       model_workload(self.inputs), self.runs())
        run = self._nearest[near]
        if run is None:
            return None
        if run.id not in self._by_recipe:
            try:
                self._by_recipe[run.id] = compare_with_recipe(est, run, self.inputs.catalog.accelerators,
                                                              self.knobs)
            except Unpredictable:         # a recipe the model cannot time yet: nothing to compare with
                self._by_recipe[run.id] = {}
        if not self._by_recipe[run.id]:
            return None
        recipe = dict(self._by_recipe[run.id])
        recipe.update(bid_plan=est.plan, bid_step_time_s=est.step_time_s)
        return recipe


def phase_estimates(inputs: Inputs, rb: ResolvedBid, stack: SoftwareStack,
                    knobs: Knobs) -> list[tuple[PhaseSpec, Estimate]]:
    """The model's estimate of every further phase of the workload (long-context extensions)."""
    return [(phase, estimate_bid(inputs, rb, stack, None, knobs, phase)) for phase in inputs.cluster.workload.phases]


def gemm_ceiling_mfu(rb: ResolvedBid, precision: str) -> float | None:
    """The accelerator's measured matmul ceiling over its peak at the workload precision."""
    ceiling = rb.accelerator.matmul_ceiling_tflops.get(precision)
    return None if ceiling is None else ceiling * 1e12 / rb.accelerator.peak_flops(precision)


def commitment(inputs: Inputs, rb: ResolvedBid, stack: SoftwareStack, est: Estimate, batch: BatchChoice,
               measured: MeasuredBid | None, knobs: Knobs) -> Commitment:
    """The commitment at the bid's conditions: as given, or converted from the vendor's own
    conditions with the model's step times at both (``economics.commitment``)."""
    from procure.economics.commitment import Conditions, convert, seq_too_far
    from procure.economics.inputs import Commitment

    c, w = rb.bid.committed, inputs.cluster.workload
    if not c.has_conditions:
        return Commitment(**c.figures())
    seq = c.seq_len or w.seq_len
    tokens = c.global_batch_tokens or (c.global_batch * seq if c.global_batch else batch.tokens_per_step)
    stated = Conditions(c.global_batch or max(1, round(tokens / seq)), seq, c.precision or w.precision)
    at_bid = Conditions(batch.global_batch_seqs, w.seq_len, w.precision)
    modeled_at_bid = est.step_time_s if est.feasible else None
    modeled_at_stated = None                 # convert() takes the bid's own time when the conditions agree
    if stated != at_bid and not seq_too_far(stated, at_bid):
        workload = model_workload(inputs, global_batch_seqs=stated.global_batch_seqs, seq_len=stated.seq_len,
                                  precision=stated.precision)
        found = estimate_at(inputs, rb, stack, measured, knobs, workload, plan_spec(rb))
        if not found.feasible and plan_spec(rb) is not None:   # the given plan may not divide their batch
            found = estimate_at(inputs, rb, stack, measured, knobs, workload, None)
        modeled_at_stated = found.step_time_s if found.feasible else None
    converted = convert(c.step_time_s, c.p99_step_time_s, stated, at_bid, modeled_at_stated, modeled_at_bid)
    return Commitment(converted.converted(c.step_time_s), converted.converted(c.p99_step_time_s),
                      c.scaling_efficiency, converted)


def _memory_shortfall(est: Estimate) -> MemoryShortfall | None:
    """The numbers of a memory verdict (the least a plan needs, the capacity, the headroom kept)."""
    from procure.economics.inputs import MemoryShortfall
    from procure.precision import round_sig

    mem = est.memory_gib or {}
    if est.feasible or not est.memory_headroom_fraction or "total" not in mem or "capacity" not in mem:
        return None
    return MemoryShortfall(round_sig(mem["total"]), round_sig(mem["capacity"]), est.memory_headroom_fraction)


def _performance(inputs: Inputs, rb: ResolvedBid, est: Estimate, tokens_per_step: int,
                 measured: MeasuredBid | None, knobs: Knobs | None) -> Performance:
    """One phase's Performance: the model's estimate (or the measured step time), with the
    model's error and the accelerator's GEMM ceiling attached."""
    from procure.economics.basis import Modeled, performance, step_time_error, with_error

    w = inputs.cluster.workload
    modeled = Modeled(feasible=est.feasible, step_time_s=est.step_time_s if est.feasible else None,
                      p99_step_time_s=(est.percentiles_s or {}).get("p99"),
                      model_flops_per_step=est.model_flops_per_step,
                      hardware_flops_per_step=est.hardware_flops_per_step, terms=dict(est.terms), reason=est.reason,
                      memory_shortfall=_memory_shortfall(est))
    perf = performance(modeled, tokens_per_step=tokens_per_step, gpus=rb.bid.gpus,
                       peak_flops_per_gpu=rb.accelerator.peak_flops(w.precision),
                       measured_mean_s=measured.mean_s if measured else None,
                       measured_p99_s=measured.p99_s if measured else None,
                       measured_gpus=measured.gpus if measured else None,
                       measured_global_batch=measured.global_batch if measured else None,
                       measured_seq_len=measured.seq_len if measured else None,
                       seq_len=w.seq_len)
    # the model's calibration record (issue 10) when it gives one; else whether knobs were fitted
    fitted = knobs is not None and rb.accelerator.id in knobs.by_accelerator
    error = step_time_error(est.calibration, fitted)
    return with_error(perf, error, gemm_ceiling_mfu(rb, w.precision))


def bid_case(inputs: Inputs, rb: ResolvedBid, est: Estimate, measured: MeasuredBid | None,
             scaling_result: dict[str, Any] | None, knobs: Knobs | None = None,
             phases: list[tuple[PhaseSpec, Estimate]] | None = None, *,
             batch: BatchChoice | None = None, promised: Commitment | None = None) -> BidCase:
    """The economics' view of one bid; ``phases`` are the workload's further phases with their
    estimates (``phase_estimates``): each is timed at its own step time, all are billed. ``batch``
    is the main phase's (``estimate_bid_batch``; None: the workload's), ``promised`` the
    commitment at the bid's conditions (``commitment``)."""
    from procure.economics.inputs import BidCase, Commitment, Phase, Pricing
    from procure.economics.statistical import fixed_batch
    from procure.inputs.resolve import price_terms
    from procure.model import param_count

    w, c = inputs.cluster.workload, rb.bid.committed
    batch = batch or fixed_batch(w.global_batch_seqs, w.tokens_per_step, None)
    # logs were measured at the workload's batch: they drive the economics only at that batch
    measured_here = measured if batch.global_batch_seqs == w.global_batch_seqs else None
    perf = _performance(inputs, rb, est, batch.tokens_per_step, measured_here, knobs)
    further = tuple(Phase(spec.name, _performance(inputs, rb, e, spec.tokens_per_step, None, knobs), spec.tokens)
                    for spec, e in phases or [])
    return BidCase(id=rb.bid.id, vendor=rb.bid.vendor, performance=perf,
                   pricing=Pricing(**price_terms(rb, inputs.cluster.currency)),
                   commitment=promised or Commitment(**c.figures()),
                   train_tokens=float(w.train_tokens), params=param_count(inputs.arch),
                   deadline_days=inputs.cluster.deadline_days,
                   budget=inputs.cluster.workload.budget, max_net_cost=inputs.cluster.workload.max_net_cost,
                   scaling_efficiency=(scaling_result or {}).get("efficiency"),
                   lead_time_days=rb.lead_time_days or 0.0, batch=batch, main_phase=w.name, phases=further)


def economics_assumptions(inputs: Inputs) -> Assumptions:
    from procure.economics.inputs import Assumptions
    from procure.inputs.resolve import assumption_overrides

    known = set(Assumptions.__dataclass_fields__)
    found = Assumptions(**assumption_overrides(inputs.cluster, inputs.catalog, known))
    horizon, tax = inputs.cluster.workload.horizon_months, inputs.cluster.workload.tax
    if tax is not None:
        found = replace(found, tax=economics_tax(tax.model_dump()))
    return found if horizon is None else replace(found, horizon_months=horizon)


def economics_tax(spec: dict[str, Any]) -> Any:
    """workload.tax as the economics' Tax (rates exact, as Decimal)."""
    from procure.economics.tax import Tax

    return Tax(rate=Decimal(str(spec["rate"])), vat_rate=Decimal(str(spec["vat_rate"])),
               import_duty_rate=Decimal(str(spec["import_duty_rate"])),
               vat_recovered_after_months=spec.get("vat_recovered_after_months"))


def ranking_basis(inputs: Inputs, basis: str | None) -> str:
    """The cost basis that ranks: ``--basis``, else workload.cost_basis, else the economics' default."""
    from procure.economics.cost import DEFAULT_BASIS

    return basis or inputs.cluster.workload.cost_basis or DEFAULT_BASIS


def build_document(inputs: Inputs, progress: Progress | None = None, basis: str | None = None,
                   gathered: Gathered | None = None) -> QuoteDocument:
    """The quote document from the inputs and what was gathered for them (gathered here when the
    caller has not)."""
    from procure.compare import compare
    from procure.document.assemble import BidOutcome, quote_document
    from procure.model.memo import one_quote

    gathered = gathered or gather(inputs)
    knobs, assumptions = gathered.knobs, economics_assumptions(inputs)
    recipes = TunedRecipes(inputs, knobs, gathered.tuned_recipes)
    critical = critical_batch(inputs)
    outcomes, cases = [], []
    with one_quote():        # bids that pose the same problem share its estimate and scaling curve
        bids = zip(inputs.bids, gathered.software, gathered.measured, strict=True)
        for done, (rb, stack, measured) in enumerate(bids, start=1):
            est, batch = estimate_bid_batch(inputs, rb, stack, measured, knobs, critical)
            curve = scaling(inputs, rb, stack, est, knobs, batch)
            promised = commitment(inputs, rb, stack, est, batch, measured, knobs)
            phases = phase_estimates(inputs, rb, stack, knobs)
            case = bid_case(inputs, rb, est, measured, curve, knobs, phases, batch=batch, promised=promised)
            outcomes.append(BidOutcome(rb, est, measured, curve, recipes.compare(rb, est), batch, promised, phases,
                                       quote_real_run(inputs, rb, stack, est, case, assumptions, gathered)))
            cases.append(case)
            if progress:
                progress(done, len(inputs.bids))
    comparison = compare(cases, assumptions, ranking_basis(inputs, basis))
    return quote_document(inputs, outcomes, comparison, assumptions, knobs, critical)


def quote_real_run(inputs: Inputs, rb: ResolvedBid, stack: SoftwareStack, est: Estimate, case: BidCase,
                   assumptions: Assumptions, gathered: Gathered) -> RealRun | None:
    """A modeled bid's run as published whole runs went (a measured step time is a real run's own)."""
    from procure.economics.runtime import run_time

    if case.performance.basis != "modeled":
        return None
    return real_run(inputs, rb, stack, est, run_time(case, assumptions), gathered.run_losses)


def run_backtest(path: Path) -> dict[str, Any]:
    from procure.backtest import backtest
    from procure.catalog.calibration import load_knobs
    from procure.catalog.load import default_catalog
    from procure.backtest.files import load_runs_file

    cat = default_catalog()
    runs = load_runs_file(path)     # validated: a broken file is file:line:col diagnostics
    result = backtest(runs, cat.accelerators, knobs=load_knobs())
    if any(row.get("group") for row in result["runs"]):
        from procure.backtest import spearman_by_group

        result["spearman"] = spearman_by_group(result)   # ranking fidelity within (model, GPUs, batch)
    return result


def estimate_run(inputs: Inputs, rb: ResolvedBid, stack: SoftwareStack, knobs: Knobs,
                 critical: CriticalBatch | None) -> tuple[Estimate, BatchChoice, RunTime | None]:
    """What ``procure estimate`` shows of a bid: the model's estimate at its batch and the run it
    implies at the model's step time (the quote's goodput and phases; None when no plan fits)."""
    from procure.economics.runtime import run_time

    est, batch = estimate_bid_batch(inputs, rb, stack, None, knobs, critical)
    if not est.feasible:
        return est, batch, None
    case = bid_case(inputs, rb, est, None, None, knobs, phase_estimates(inputs, rb, stack, knobs), batch=batch)
    return est, batch, run_time(case, economics_assumptions(inputs))


def predict_whole_run(cluster: Path, knobs: Knobs) -> tuple[dict[str, Any] | None, str | None]:
    """A published run stated as a cluster.yaml (one bid), predicted as ``procure estimate`` would:
    the model's step time for the stated or searched plan, the goodput and phases of the quote,
    and the step-time error of the run's family (None and the reason when no plan fits)."""
    from procure.inputs.bundle import load_inputs

    inputs = load_inputs(cluster)
    rb = inputs.bids[0]
    stack = software(inputs, rb)
    est, _batch, run = estimate_run(inputs, rb, stack, knobs, critical_batch(inputs))
    if not est.feasible:
        return None, est.reason
    if run is None:
        return None, "a phase has no feasible plan"
    return whole_run_prediction(inputs, rb, stack, est, run), None


def whole_run_prediction(inputs: Inputs, rb: ResolvedBid, stack: SoftwareStack, est: Estimate,
                         run: RunTime) -> dict[str, Any]:
    """What the whole-run fit and band read of a bid's estimate and the run it implies."""
    from procure.catalog.knobs import UNCALIBRATED_ERROR
    from procure.model import param_count

    error = est.calibration.step_time_error if est.calibration is not None else None
    # The run's model FLOPs in GPU-hours at the accelerator's peak: what any GPU-hour figure for
    # this run is divided into to give the MFU it implies (goodput-free: losses add hours, not FLOPs).
    peak_hours = sum((p.mfu or 0.0) * p.gpu_hours for p in run.phases) * run.goodput.fraction
    return {"gpu_hours": run.gpu_hours, "peak_gpu_hours": peak_hours, "time_to_train_days": run.time_to_train_days,
            "goodput": run.goodput.fraction, "mfu": run.phases[0].mfu, "step_time_s": est.step_time_s,
            "gpus": rb.bid.gpus, "accelerator": rb.accelerator.id, "plan": dict(est.plan or {}),
            "step_family": None if error is None else error.family,
            "sigma_log": (error or UNCALIBRATED_ERROR).sigma_log,
            "params": param_count(inputs.arch), "stack": stack.stack, "stack_features": sorted(stack.features),
            "year": inputs.cluster.as_of.year,
            "gpus_per_node": rb.system.gpus_per_node if rb.system else rb.accelerator.scale_up_domain}


def real_run(inputs: Inputs, rb: ResolvedBid, stack: SoftwareStack, est: Estimate, run: RunTime | None,
             fitted: FittedRunLosses | None) -> RealRun | None:
    """The run as published whole runs go: the model's compute hours with the run-level goodput and
    the real-run gap fitted on the whole-run corpus, and the band (None without a run or a fit)."""
    from procure.backtest.run_losses import RealRun, apply_run_losses
    from procure.backtest.whole_runs import shifted_band

    if run is None or fitted is None or not est.feasible:
        return None
    real = apply_run_losses(whole_run_prediction(inputs, rb, stack, est, run), fitted)
    _median, p10, p90 = shifted_band(real["gpu_hours"], real["bias_log"], real["sigma_log"])
    return RealRun(time_to_train_days=real["time_to_train_days"], gpu_hours=real["gpu_hours"],
                   p10_gpu_hours=p10, p90_gpu_hours=p90, goodput=real["goodput"],
                   real_run_factor=real["real_run_factor"], fit_runs=len(fitted.fit_runs))


def run_whole_backtest(path: Path) -> dict[str, Any]:
    """Every run of a ``procure.whole-runs/v1`` index: published against predicted GPU-hours."""
    from procure.backtest.whole_runs import compare_run, grouped, read_whole_runs
    from procure.catalog.calibration import load_knobs

    from procure.backtest.run_losses import apply_run_losses, fitted_next_to

    knobs = load_knobs()
    fitted = fitted_next_to(path)           # the run-level losses and band refitted on the fit split
    rows = []
    for run, cluster in read_whole_runs(path):
        predicted, reason = predict_whole_run(cluster, knobs)
        if predicted is not None and fitted is not None:
            predicted = apply_run_losses(predicted, fitted, run.family)
        rows.append(compare_run(run, predicted, reason))
    out = {"schema": "procure.whole-backtest/v1", "runs": rows, **grouped(rows)}
    return out if fitted is None else {**out, "run_losses": fitted.summary()}
