"""Assemble the typed ``procure.quote/v2`` document from what the cores produced.

Each field is filled once, from its producer; nothing is merged by ``dict.update``. The pure
results come in as typed objects (inputs, estimates, measurements, the comparison) and leave as
one frozen QuoteDocument whose floats are at the declared precision.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

from procure import __version__
from procure.assumptions import ASSUMPTIONS, held_as
from procure.catalog.types import family_of
from procure.catalog.knobs import AccelKnobs, Knobs
from procure.catalog.software import SoftwareStack
from procure.catalog.types import Sourced
from procure.compare import Comparison
from procure.document import bid as B
from procure.document import quote as Q
from procure.document.base import Frozen
from procure.backtest.run_losses import RealRun
from procure.economics.bid import BidEconomics
from procure.sources.once import file_digest
from procure.errors import Diagnostic, InputError
from procure.money import FX_STALE_DAYS
from procure.economics.commitment import MAX_FACTOR, MAX_SEQ_RATIO
from procure.economics.cost import BASES, market_reference
from procure.economics.inputs import Assumptions, Commitment
from procure.economics.ratios import DEFINITIONS as RATIO_DEFINITIONS
from procure.economics.uncertainty import CHECKPOINT_INTERVAL, PERCENTILES, Uncertainty
from procure.economics.statistical import (MAX_CANDIDATES, MAX_MODEL_PARALLEL, PENALTY_FLAG, TIE_TOLERANCE,
                                           BatchChoice, CriticalBatch)
from procure.inputs.bundle import Inputs
from procure.inputs.resolve import ResolvedBid
from procure.measure.bid import MeasuredBid
from procure.model import MFU_CONVENTION, active_param_count, model_flops_per_token, param_count
from procure.model.flops import MFU_CAUSAL
from procure.model.types import Estimate
from procure.sources.bounds import days_after

M = TypeVar("M", bound=Frozen)

CHECKPOINT_NOTE = "checkpoint writes are charged in goodput (lost fraction), not in the I/O term"
ATTENTION_CONVENTION = ("causal (the work a causal kernel does; Megatron/PaLM count twice that)" if MFU_CAUSAL
                        else "non-causal (Megatron/PaLM)")
MODEL_NAME = "procure step-time model v2 (docs: procure/model/README.md)"


@dataclass(frozen=True)
class BidOutcome:
    """What the pipeline learned about one bid before the economics."""

    resolved: ResolvedBid
    estimate: Estimate
    measured: MeasuredBid | None
    scaling: dict[str, Any] | None
    tuned_recipe: dict[str, Any] | None = None
    batch: BatchChoice | None = None
    commitment: Commitment | None = None
    phases: list[tuple[Any, Estimate]] = field(default_factory=list)   # (PhaseSpec, its estimate)
    real_run: RealRun | None = None     # the run as published whole runs went (modeled bids)


def quote_document(inputs: Inputs, outcomes: list[BidOutcome], comparison: Comparison,
                   assumptions: Assumptions, knobs: Knobs, critical: CriticalBatch | None = None) -> Q.QuoteDocument:
    cluster = inputs.cluster
    econ_by_id = {e.id: e for e in comparison.bids}
    return Q.QuoteDocument(
        schema_=Q.SCHEMA, procure_version=__version__, title=cluster.title, as_of=cluster.as_of,
        currency=cluster.currency, mfu_convention=MFU_CONVENTION,
        inputs=_fingerprints(inputs, outcomes), workload=_workload(inputs, critical),
        assumptions=_assumptions(inputs, assumptions),
        fx=_fx(inputs, outcomes),
        bids=[_bid(inputs, o, econ_by_id[o.resolved.bid.id]) for o in outcomes],
        ranking=list(comparison.ranking), cost_basis=comparison.basis,
        rankings={k: list(v) for k, v in comparison.rankings.items()},
        recommendation=Q.Recommendation(**comparison.recommendation,
                                        facts=_read(Q.RecommendationFacts, comparison.facts)),
        sensitivity_summary=Q.SensitivitySummary.model_validate(comparison.sensitivity_summary),
        sources=_sources(inputs), methodology=_methodology(inputs, knobs, critical))


# --- header sections -------------------------------------------------------------------------

def _fingerprints(inputs: Inputs, outcomes: list[BidOutcome]) -> list[Q.InputFingerprint]:
    """cluster.yaml, the user's price books and the measured files procure parsed (a file of a
    measured folder skipped as no known log format is not an input: neither listed nor attached)."""
    rows = [Q.InputFingerprint(path=Path(inputs.path).name, role="cluster",
                               sha256=hashlib.sha256(inputs.raw).hexdigest(), bytes=len(inputs.raw))]
    used_books = sorted({rb.price.book.id for rb in inputs.bids if rb.price.book is not None
                         and rb.price.book.id in inputs.catalog.user_price_books})
    for book_id in used_books:                  # the user's own price books are inputs too
        book_path = Path(inputs.catalog.files[f"price book:{book_id}"])
        digest, size = file_digest(book_path)
        rows.append(Q.InputFingerprint(path=book_path.name, role="price-book", sha256=digest, bytes=size))
    rows += [Q.InputFingerprint(path=r.path.name, role="response", sha256=r.sha256, bytes=r.bytes)
             for r in inputs.responses]
    parsed = list(dict.fromkeys(path for o in outcomes if o.measured is not None for path in o.measured.files))
    for path in parsed:
        digest, size = file_digest(path)      # the bytes parsed, when the command kept them
        rows.append(Q.InputFingerprint(path=path.name, role="measured", sha256=digest, bytes=size))
    return rows


def _batch_range(inputs: Inputs) -> Q.BatchRange | None:
    w = inputs.cluster.workload
    span = w.batch_range_seqs
    if span is None:
        return None
    return Q.BatchRange(min_seqs=span[0], max_seqs=span[1], min_tokens=span[0] * w.seq_len,
                        max_tokens=span[1] * w.seq_len)


def _critical(critical: CriticalBatch | None) -> Q.CriticalBatch | None:
    """The law's solution in the document's words (B_eff is the run's critical batch)."""
    if critical is None:
        return None
    return Q.CriticalBatch(family=critical.family, params=critical.params,
                           reference_batch_tokens=int(critical.reference_batch_tokens),
                           critical_batch_tokens=critical.effective_tokens,
                           final_critical_batch_tokens=critical.final_tokens, min_tokens=critical.min_tokens,
                           final_loss_nats=critical.final_loss_nats, b_star_sigma_log=critical.sigma_log)


def _workload(inputs: Inputs, critical: CriticalBatch | None = None) -> Q.WorkloadSummary:
    w, arch = inputs.cluster.workload, inputs.arch
    moe = None if arch.moe is None else Q.MoESummary(
        experts=arch.moe.experts, top_k=arch.moe.top_k, expert_ffn_hidden=arch.moe.expert_ffn_hidden,
        shared_experts=arch.moe.shared_experts, dense_layers=arch.moe.dense_layers)
    model = Q.ModelSummary(id=arch.id, name=arch.name, params=param_count(arch),
                           active_params=active_param_count(arch), layers=arch.layers, hidden=arch.hidden,
                           heads=arch.heads, kv_heads=arch.kv_heads, ffn_hidden=arch.ffn_hidden,
                           vocab=arch.vocab, gated_mlp=arch.gated_mlp, moe=moe)
    phases = [Q.PhaseSummary(name=w.name, seq_len=w.seq_len, global_batch_seqs=w.global_batch_seqs,
                             train_tokens=float(w.train_tokens))] + [
        Q.PhaseSummary(name=p.name, seq_len=p.seq_len, global_batch_seqs=p.global_batch_seqs, train_tokens=p.tokens)
        for p in w.phases]
    return Q.WorkloadSummary(
        model=model, seq_len=w.seq_len, global_batch_seqs=w.global_batch_seqs,
        global_batch_tokens=w.tokens_per_step, train_tokens=sum(p.train_tokens for p in phases),
        precision=w.precision, phases=phases if w.phases else [],
        deadline_days=inputs.cluster.deadline_days, model_flops_per_token=model_flops_per_token(arch, w.seq_len),
        attention_flops_convention=ATTENTION_CONVENTION, global_batch_range=_batch_range(inputs),
        critical_batch=_critical(critical), horizon_months=w.horizon_months,
        tax=None if w.tax is None else _read(Q.TaxSummary, w.tax))


def _assumptions(inputs: Inputs, effective: Assumptions) -> list[Q.AssumptionRow]:
    given = {k for k, v in inputs.cluster.assumptions.model_dump().items() if v is not None}
    origin = Path(inputs.path).name
    rows = []
    for spec in ASSUMPTIONS:
        if not hasattr(effective, held_as(spec.key)):
            continue                 # a model assumption (step_time_cv): reported with the knobs
        set_here = spec.key in given
        value = getattr(effective, held_as(spec.key))
        if spec.key == "power_usd_per_kwh" and set_here:     # as given, in USD (the economics converted it)
            value = inputs.cluster.assumptions.power_usd_per_kwh
        rows.append(Q.AssumptionRow(key=spec.key, label=spec.label, value=value,
                                    unit=spec.unit, origin=origin if set_here else "default",
                                    source="given in the input" if set_here else spec.source))
    return rows


def _fx(inputs: Inputs, outcomes: list[BidOutcome]) -> Q.FxSummary | None:
    table = inputs.catalog.fx_for(inputs.cluster.as_of)
    if table is None:
        return None
    age = (inputs.cluster.as_of - table.as_of).days
    currency = inputs.cluster.currency
    converted = any(o.resolved.price.book_currency != currency or any(q.currency != currency
                                                                      for q in o.resolved.price.quoted)
                    for o in outcomes)
    reasons = []
    if age > FX_STALE_DAYS:
        reasons.append(f"the FX table is dated {table.as_of.isoformat()}, {age} days before the report date "
                       f"(more than {FX_STALE_DAYS})")
    if not table.sourced.verified:
        reasons.append(f"the rates of the {table.as_of.isoformat()} table are unverified (some carried forward "
                       "from an earlier date)")
    warning = (f"Exchange rates: {'; '.join(reasons)}; amounts converted from other currencies may not hold."
               if converted and reasons else None)
    return Q.FxSummary(base=table.base, as_of=table.as_of, rates=dict(sorted(table.rates.items())),
                       source="; ".join(table.sourced.source), verified=table.sourced.verified, age_days=age,
                       warning=warning)


def _sources(inputs: Inputs) -> list[Q.SourceRow]:
    rows: dict[str, Q.SourceRow] = {}

    def add(key: str, kind: str, label: str, sourced: Sourced | None) -> None:
        if sourced is not None:
            rows[key] = Q.SourceRow(key=key, kind=kind, label=label, source=list(sourced.source),
                                    as_of=str(sourced.as_of), verified=sourced.verified)

    arch, cat = inputs.arch, inputs.catalog
    add(f"model:{arch.id}", "model", arch.name, arch.sourced)
    for rb in inputs.bids:
        add(f"accelerator:{rb.accelerator.id}", "accelerator", rb.accelerator.name, rb.accelerator.sourced)
        add(f"network:{rb.network.id}", "network", rb.network.name, rb.network.sourced)
        choice = rb.price
        if choice.book is not None and choice.line is not None and choice.source_key:
            line = choice.line
            add(choice.source_key, "price", f"{choice.book.provider} {line.accelerator} {line.term}"
                + (f" ({line.sku})" if line.sku else ""), line.sourced)
            if choice.kind == "purchase":
                add(f"price-book:{choice.book.id}", "price book", f"{choice.book.provider} facility figures",
                    choice.book.sourced)
        if rb.system is not None:
            add(f"system:{rb.system.id}", "system", f"{rb.system.name} power", rb.system.sourced)
    law = cat.batch_scaling.get(family_of(arch))
    if law is not None:
        add(f"batch-scaling:{law.family}", "batch scaling", f"{law.name}: critical batch and loss law", law.sourced)
    fx = cat.fx_for(inputs.cluster.as_of)
    if fx is not None and any(rb.price.fx_rate != 1 for rb in inputs.bids):
        add(f"fx:{fx.as_of.isoformat()}", "fx", f"FX rates {fx.as_of.isoformat()}", fx.sourced)
    return [rows[k] for k in sorted(rows)]


CANDIDATES_TEXT = (f"the workload's batch when in range; every power of two in range; and d × 2^j in range for every "
                   f"data-parallel size d = GPUs / m, m a divisor of the GPU count up to {MAX_MODEL_PARALLEL:,} "
                   f"(the model-parallel group); at most {MAX_CANDIDATES} batches, spread evenly in log. The plan "
                   "search runs at each; the batch with the shortest time to target after the token penalty wins "
                   f"(times within {TIE_TOLERANCE:.0%} of the shortest are a tie, won by the smallest batch).")
CONVERSION_TEXT = ("converted = committed × T_model(bid's conditions) / T_model(stated conditions), both on the bid's "
                   "hardware, software and GPU count (the bid's plan, or the search where it does not divide the "
                   f"stated batch); not comparable when either condition has no plan, the factor is beyond "
                   f"{MAX_FACTOR:g}x either way, or the sequence length changes more than {MAX_SEQ_RATIO:g}x.")


def _statistical_efficiency(inputs: Inputs) -> Q.StatisticalEfficiency | None:
    law = inputs.catalog.batch_scaling.get(family_of(inputs.arch))
    if law is None:
        return None
    return Q.StatisticalEfficiency(family=law.family, name=law.name, form=law.form, parameters=law.values(),
                                   sources={k: list(v) for k, v in law.sources.items()}, notes=law.notes,
                                   penalty_flag=PENALTY_FLAG, candidate_batches=CANDIDATES_TEXT,
                                   commitment_conversion=CONVERSION_TEXT)


def _methodology(inputs: Inputs, knobs: Knobs, critical: CriticalBatch | None = None) -> Q.Methodology:
    """The fitted knobs of the accelerators this quote uses, one row each."""
    rows = []
    for accel_id in sorted({rb.accelerator.id for rb in inputs.bids}):
        fitted = accel_id in knobs.by_accelerator
        rows.append(Q.KnobRow(label=accel_id if fitted else f"{accel_id} (default knobs)",
                              values=_knob_values(knobs.for_accelerator(accel_id))))
    return Q.Methodology(model=MODEL_NAME, fitted_on=list(knobs.fitted_on), fitted_at=knobs.fitted_at,
                         fit_mape=dict(knobs.fit_mape), knobs=rows,
                         notes=[CHECKPOINT_NOTE, MFU_CONVENTION],
                         ratios=[Q.RatioDefinition(key=k, label=label, formula=formula,
                                                   description=text + _main_phase_note(inputs))
                                 for k, label, formula, text in RATIO_DEFINITIONS],
                         statistical_efficiency=_statistical_efficiency(inputs))


def _main_phase_note(inputs: Inputs) -> str:
    """With workload phases, the ratios (and the batch a range chooses) are the main phase's."""
    w = inputs.cluster.workload
    if not w.phases:
        return ""
    return (f" The workload trains in phases: this is the main phase's ({w.name}) plan; the batch and its token "
            "penalty are the main phase's too, while time and cost to target count every phase.")


def _knob_values(k: AccelKnobs) -> dict[str, float | str]:
    values: dict[str, float | str] = {name: value for name, value in vars(k).items()
                                      if isinstance(value, (int, float)) and not isinstance(value, bool)}
    values["gemm_curve"] = ", ".join(f"{x:.0e} s → {y:.2f}" for x, y in k.gemm_curve)
    return values


# --- one bid ---------------------------------------------------------------------------------

def _bid(inputs: Inputs, outcome: BidOutcome, econ: BidEconomics) -> B.BidResult:
    rb, est = outcome.resolved, outcome.estimate
    bid, accel, net = rb.bid, rb.accelerator, rb.network
    w = inputs.cluster.workload
    feasible = est.feasible
    tp = econ.throughput
    return B.BidResult(
        id=bid.id, vendor=bid.vendor,
        accelerator=B.AcceleratorRef(id=accel.id, name=accel.name,
                                     peak_tflops=accel.peak_flops(w.precision) / 1e12, hbm_gb=accel.hbm_gb,
                                     tdp_w=accel.tdp_w),
        gpus=bid.gpus,
        network=B.NetworkRef(id=net.id, name=net.name, scale_out_gbps_per_gpu=net.scale_out_gbps_per_gpu),
        pricing=_pricing(rb), committed=_committed(outcome.commitment, bid.committed.figures()),
        sources=sorted(filter(None, [f"accelerator:{accel.id}", f"network:{net.id}", rb.price.source_key,
                                     f"system:{rb.system.id}" if rb.system else None])),
        plan=B.Plan(**est.plan) if feasible else None,
        plan_origin="auto" if bid.plan == "auto" else "given",
        search=B.Search(plans_evaluated=(est.search or {}).get("plans_evaluated", 0),
                        feasible=(est.search or {}).get("feasible", 0)),
        runners_up=[B.RunnerUp(plan=B.Plan(**r["plan"]), step_time_s=r["step_time_s"]) for r in est.runners_up],
        software=_software(est.software),
        calibration=est.calibration and _read(B.Calibration, est.calibration),
        tuned_recipe=B.TunedRecipe.model_validate(outcome.tuned_recipe) if outcome.tuned_recipe else None,
        expert_parallel=_expert_parallel(inputs, est, accel.scale_up_domain),
        idle_gpus=getattr(est, "idle_gpus", 0) if feasible else 0,
        phases=_phases(outcome, econ),
        step_time_terms=dict(est.terms) if feasible else {},
        modeled=(B.Modeled(step_time_s=est.step_time_s, **{f"{k}_s": v for k, v in (est.percentiles_s or {}).items()})
                 if feasible else None),
        infeasible_reason=None if feasible else est.reason,
        memory=_memory(est, accel.hbm_gb),
        flops=B.Flops(model_per_step=est.model_flops_per_step, hardware_per_step=est.hardware_flops_per_step),
        tokens_per_step=outcome.batch.tokens_per_step if outcome.batch else w.tokens_per_step,
        scaling=B.Scaling.model_validate(outcome.scaling) if outcome.scaling else None,
        measured=_measured(outcome.measured),
        step_time_basis=econ.step_time_basis, step_time_s=econ.step_time_s,
        tokens_per_s=tp and tp.tokens_per_s, tokens_per_s_per_gpu=tp and tp.tokens_per_s_per_gpu,
        mfu=tp and tp.mfu, hfu=tp and tp.hfu,
        goodput=econ.goodput and _read(B.Goodput, econ.goodput),
        time_to_train_days=econ.time_to_train_days, billed_hours=econ.billed_hours, energy_mwh=econ.energy_mwh,
        real_run=outcome.real_run and _read(B.RealRun, outcome.real_run),
        currency=econ.currency,
        cost_lines=[_read(B.CostLine, line) for line in econ.cost_lines],
        total_cost=econ.total_cost, residual_value=econ.residual_value,
        cost_per_million_tokens=econ.cost_per_million_tokens,
        flags=[_read(B.Flag, flag) for flag in econ.flags],
        uncertainty=econ.uncertainty and _uncertainty(econ.uncertainty),
        sensitivity=[_read(B.SensitivityRow, row) for row in econ.sensitivity],
        notes=list(econ.notes) + _delivery_notes(rb, econ, inputs.cluster.as_of), rank=econ.rank or 0,
        cost_basis=econ.basis,
        cost_bases=_cost_bases(econ),
        upfront_capex=econ.upfront_capex, idle_commitment_hours=econ.idle_commitment_hours,
        used_hours=econ.used_hours, delivery=_delivery(inputs, rb, econ), power=_power(rb, econ),
        finance=_finance(econ),
        negotiation=econ.negotiation and _read(B.Negotiation, econ.negotiation),
        batch=_batch(outcome.batch, econ), ratios=econ.ratios and _read(B.Ratios, econ.ratios),
        time_to_target=econ.time_to_target and _read(B.TimeToTarget, econ.time_to_target),
        cash=_cash(inputs, econ))


def _read(model: type[M], record: object) -> M:
    """The document's model of a core's record, read by attribute (the names agree)."""
    return model.model_validate(record, from_attributes=True)


def _software(stack: SoftwareStack | None) -> B.SoftwareRef | None:
    """The release the plan search ran on: its features sorted, its date as written."""
    if stack is None:
        return None
    return B.SoftwareRef(stack=stack.stack, version=stack.version, released=stack.released.isoformat(),
                         features=sorted(stack.features), attention_kernel=stack.attention_kernel)


def _percentiles(values: tuple[Any, ...]) -> dict[str, Any]:
    """A band's (P10, P50, P90) by name."""
    return {f"p{p}": value for p, value in zip(PERCENTILES, values)}


def _uncertainty(band: Uncertainty) -> B.Uncertainty:
    """The band's percentile triples named, with the precision the sample supports."""
    cost = band.cost_per_million_tokens
    return B.Uncertainty(seed=band.seed, samples=band.samples, basis=band.basis,
                         cost_per_million_tokens=cost and B.MoneyBand(**_percentiles(cost)),
                         time_to_train_days=B.Band(**_percentiles(band.time_to_train_days)),
                         precision=B.BandPrecision(cost_per_million_tokens=band.cost_quantum,
                                                   time_to_train_days=band.days_quantum),
                         distributions=band.distributions, checkpoint_interval=CHECKPOINT_INTERVAL,
                         step_time_error=_read(B.StepTimeError, band.step_error))


def _cash(inputs: Inputs, econ: BidEconomics) -> B.Cash | None:
    """The bid's dated cash, each flow dated from as_of by the hours of its months."""
    cash = econ.cash
    if cash is None or econ.terms is None:
        return None
    month_h = float(econ.terms.months_hours)
    flows = [B.CashFlow(month=f.month, paid_on=_paid_on(inputs.cluster.as_of, f.month * month_h), amount=f.amount,
                        kind=f.kind) for f in cash.flows]
    return B.Cash(horizon_months=cash.horizon_months, cost_of_capital=cash.cost_of_capital,
                  nominal_total=cash.nominal_total, present_value=cash.present_value, upfront_cash=cash.upfront_cash,
                  peak_cash_out=cash.peak_cash_out, resale_fraction=cash.resale_fraction, flows=flows)


def _paid_on(as_of: date, hours: float) -> date:
    """The flow's date; one past the calendar (a run of 1e18 tokens) is held at its last day."""
    try:
        return as_of + timedelta(hours=hours)
    except OverflowError:
        return date.max


def _committed(promised: Commitment | None, given: dict[str, Any]) -> B.Committed:
    """The commitment at the bid's conditions, and (when the vendor stated its own) its words."""
    if promised is None or promised.stated is None:
        return B.Committed(**given)
    return B.Committed(step_time_s=promised.step_time_s, p99_step_time_s=promised.p99_step_time_s,
                       scaling_efficiency=promised.scaling_efficiency,
                       stated=_read(B.StatedCommitment, promised.stated))


def _batch(batch: BatchChoice | None, econ: BidEconomics) -> B.BatchSection | None:
    if batch is None:
        return None
    critical = batch.critical
    return B.BatchSection(
        global_batch_seqs=batch.global_batch_seqs, global_batch_tokens=batch.tokens_per_step, origin=batch.origin,
        reference_batch_tokens=int(critical.reference_batch_tokens) if critical else batch.tokens_per_step,
        token_factor=batch.token_factor, token_penalty=batch.token_penalty,
        critical_batch_tokens=critical.effective_tokens if critical else None, note=batch.note or None,
        candidates=[_read(B.BatchCandidate, row) for row in econ.batch_candidates])


def _expert_parallel(inputs: Inputs, est: Estimate, gpus_per_domain: int) -> B.ExpertParallel | None:
    from procure.model.expert import expert_layout

    if inputs.arch.moe is None or not est.feasible:
        return None
    from procure.model.problem import load_factor

    load, origin = load_factor(inputs.arch.moe.capacity_factor, inputs.cluster.workload.moe_imbalance)
    return B.ExpertParallel(**expert_layout(est.plan, gpus_per_domain),
                            a2a_total_s=est.terms.get("ep_comm_total_s", 0.0),
                            a2a_exposed_s=est.terms.get("ep_comm_s", 0.0),
                            load_imbalance=load, load_imbalance_origin=origin)


def _phases(outcome: BidOutcome, econ: BidEconomics) -> list[B.PhaseResult]:
    days = {p.name: p.time_to_train_days for p in econ.phases}
    return [B.PhaseResult(name=spec.name, seq_len=spec.seq_len, global_batch_seqs=spec.global_batch_seqs,
                          train_tokens=spec.tokens, plan=B.Plan(**est.plan) if est.feasible else None,
                          step_time_s=est.step_time_s if est.feasible else None,
                          time_to_train_days=days.get(spec.name), infeasible_reason=None if est.feasible else est.reason)
            for spec, est in outcome.phases]


def _pricing(rb: ResolvedBid) -> B.PricingRef:
    choice, line = rb.price, rb.price.line
    quoted = [B.QuotedPrice(key=q.key, label=q.label, unit=q.unit, quoted=q.quoted, currency=q.currency,
                            fx_rate=q.fx_rate, converted=q.converted, origin=q.origin) for q in choice.quoted]
    terms = {k: Decimal(v) if isinstance(v, int) else v for k, v in sorted(choice.plain.items())}
    return B.PricingRef(kind=choice.kind, price_book=choice.book.id if choice.book else None,
                        term=line.term if line else rb.bid.pricing.term,
                        price_per_gpu_hour=choice.converted("price_per_gpu_hour"),
                        book_currency=choice.book_currency, fx_rate=choice.fx_rate,
                        min_commit_months=int(choice.plain.get("min_commit_months") or 0),
                        capex_per_gpu=choice.converted("capex_per_gpu"),
                        missing_reason=choice.missing_reason, quoted=quoted, fx_as_of=choice.fx_as_of, terms=terms)


def _cost_bases(econ: BidEconomics) -> dict[Any, B.BasisCost]:
    """Both bases, always: a bid without a cost gets null figures and no lines."""
    found = {b.basis: _read(B.BasisCost, b) for b in econ.bases}
    for basis in BASES:
        found.setdefault(basis, B.BasisCost(basis=basis, cost_lines=[], total_cost=None,
                                            cost_per_million_tokens=None, billed_hours=None,
                                            idle_commitment_hours=Decimal(0), time_value=None,
                                            ranking_cost_per_million_tokens=None, resale_fraction=None))
    return {basis: found[basis] for basis in BASES}


def _delivery(inputs: Inputs, rb: ResolvedBid, econ: BidEconomics) -> B.Delivery:
    as_of = inputs.cluster.as_of
    lead = rb.lead_time_days or 0.0
    deadline = inputs.cluster.deadline_days
    finish = econ.days_to_finish
    available = days_after(as_of, lead)
    if available is None:
        raise InputError([Diagnostic(str(inputs.path), *inputs.doc.position(("as_of",)), "beyond-calendar",
                                     f"bid {rb.bid.id!r}: as_of {as_of} plus a lead time of {lead:g} days "
                                     f"({rb.lead_time_origin}) is past {date.max}")])
    return B.Delivery(lead_time_days=lead, lead_time_origin=rb.lead_time_origin,
                      available_from=available,
                      days_to_finish=finish,
                      finish_date=None if finish is None else days_after(as_of, finish),
                      deadline_date=None if deadline is None else days_after(as_of, math.floor(deadline)))


def _delivery_notes(rb: ResolvedBid, econ: BidEconomics, as_of: date) -> list[str]:
    notes: list[str] = []
    if rb.lead_time_days is None and econ.upfront_capex is not None:
        notes.append("no lead time given for this purchase: it is assumed usable on the RFQ date "
                     "(give `lead_time_days` or `available_from`)")
    finish = econ.days_to_finish
    if finish is not None and days_after(as_of, finish) is None:
        notes.append(f"it would finish {finish:,.0f} days after the RFQ date, past {date.max}: no finish "
                     "date is given")
    return notes


def _power(rb: ResolvedBid, econ: BidEconomics) -> B.PowerRef | None:
    terms = econ.terms
    if terms is None:
        return None
    power, system = terms.power, rb.system if terms.power.source.startswith("system:") else None
    return B.PowerRef(it_kw_per_gpu=power.kw_per_gpu, source=power.source, system=system and system.id,
                      node_power_kw=system and system.node_power_kw, gpus_per_node=system and system.gpus_per_node,
                      fabric_w_per_gpu=system and system.fabric_w_per_gpu, utilisation=power.utilisation,
                      pue=power.pue, pue_given=power.pue_given, price_per_kwh=power.price_per_kwh)


def _finance(econ: BidEconomics) -> B.Finance | None:
    terms = econ.terms
    if terms is None:
        return None
    purchase = terms.pricing.kind == "purchase"
    return B.Finance(cost_of_capital=terms.cost_of_capital, resale_decline_per_year=terms.resale_decline_per_year,
                     months_hours=terms.months_hours, nodes=terms.nodes, gpus_per_node=terms.pricing.gpus_per_node,
                     market_value_new=market_reference(terms) if purchase and terms.pricing.capex_per_gpu is not None
                     else None,
                     market_source=terms.pricing.market_source or None if purchase else None)


def _measured(measured: MeasuredBid | None) -> B.Measured | None:
    if measured is None:
        return None
    return B.Measured(sources=[_read(B.MeasuredSource, s) for s in measured.sources],
                      step_time_s=measured.summary and B.StepTimeSummary.model_validate(measured.summary),
                      histogram=measured.histogram and B.Histogram.model_validate(measured.histogram),
                      busbw_gbs=measured.busbw_gbs, busbw_used=measured.scale_out.busbw_gbs is not None,
                      busbw_note=measured.scale_out.note, ranks_compared=measured.ranks_compared,
                      stragglers=[B.MeasuredStraggler(source=r.source, rank=r.rank, steps=r.steps,
                                                      times_slowest=r.times_slowest, slow_steps=r.slow_steps,
                                                      slowdown=r.slowdown) for r in measured.stragglers],
                      outlier_steps=[B.OutlierStep(source=o.source, step=o.step, step_time_s=o.step_time_s)
                                     for o in measured.outlier_steps])


def _memory(est: Estimate, hbm_gb: float) -> B.Memory:
    mem = dict(est.memory_gib or {})
    capacity = mem.pop("capacity", hbm_gb * 1e9 / 2**30)
    used = mem.pop("total", None)
    return B.Memory(fits=bool(est.feasible), hbm_gib=capacity, used_gib=used, parts_gib=mem)
