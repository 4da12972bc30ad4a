"""One chunk of points: the quote's plan search and economics, then one plain row per point.

Every figure comes from the code a quote runs: ``pipeline.estimate_bid`` (the plan search, and
``pipeline.phase_estimates`` for a workload's further phases), ``pipeline.bid_case`` (the BidCase), ``economics.evaluate_core`` (time, both cost bases, flags)
and ``economics.uncertainty.band`` (the seeded Monte-Carlo band, on the ranking basis). Nothing
here prices anything.

A row holds floats at the document's precision and money quantized as the economics left it,
so a row read back from a partial Parquet file is equal to the row computed here.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

from procure.catalog.types import Network
from procure.economics.bid import BidEconomics, commitment_end, evaluate_core, pinned
from procure.economics.inputs import Assumptions
from procure.economics.uncertainty import band
from procure.inputs.resolve import ResolvedBid
from procure.model.types import Estimate
from procure.precision import round_sig
from procure.recommendation import UNCOSTED_CODES
from procure.sweep.columns import PLAN_FIELDS, quantized
from procure.sweep.expand import Chunk, SweepContext, point_id

Row = dict[str, Any]


def _real(value: float | None) -> float | None:
    return None if value is None else round_sig(float(value))


def _point_bid(template: ResolvedBid, pid: str, gpus: int, network: Network) -> ResolvedBid:
    bid = template.bid.model_copy(update={"id": pid, "gpus": gpus, "network": network.id})
    return dataclasses.replace(template, bid=bid, network=network)


def _plan(est: Estimate) -> dict[str, Any] | None:
    return {k: est.plan[k] for k in PLAN_FIELDS} if est.feasible else None


def _band(econ: BidEconomics, case: Any, ctx: SweepContext, basis: str) -> dict[str, Any] | None:
    if not econ.has_cost:
        return None
    end = commitment_end(econ)      # the band's horizon, as a quote of this point alone pins it
    found = band(case, pinned(ctx.assumptions, [] if end is None else [end]), basis)
    if found is None or found.cost_per_million_tokens is None:
        return None
    return {"cost_per_million_tokens": [quantized("band_cost_p10", v) for v in found.cost_per_million_tokens],
            "time_to_train_days": [_real(v) for v in found.time_to_train_days]}


def _reason(econ: BidEconomics) -> str | None:
    for flag in econ.flags:
        if flag.code in UNCOSTED_CODES:
            return flag.reason
    return None


def _bases(econ: BidEconomics) -> Row:
    """Total and cost per million tokens on both bases (the ranking basis is in total_cost)."""
    out: Row = {}
    for basis in ("run", "commitment"):
        found = econ.on(basis)
        out[f"{basis}_total_cost"] = quantized(f"{basis}_total_cost", found.total_cost if found else None)
        out[f"{basis}_cost_per_million_tokens"] = quantized(f"{basis}_cost_per_million_tokens",
                                                            found.cost_per_million_tokens if found else None)
    return out


def point_cash(econ: BidEconomics, assumptions: Assumptions) -> BidEconomics:
    """The point with its dated cash, over ``horizon_months`` when given, else its own run or term
    (``evaluate_core`` computes it so; kept as the one place the sweep names it)."""
    return econ


def _cash(econ: BidEconomics) -> Row:
    cash = econ.cash
    return {name: quantized(name, None if cash is None else getattr(cash, name))
            for name in ("present_value", "upfront_cash", "peak_cash_out")}


def point_row(index: int, pid: str, workload: str, term: str, rb: ResolvedBid, est: Estimate,
              econ: BidEconomics, point_band: dict[str, Any] | None, feasible: bool,
              kw_per_gpu: Decimal | None = None) -> Row:
    """One point; ``feasible``: a plan fits the main phase and every further one. ``kw_per_gpu``:
    the IT power per GPU the quote's energy uses (the system's, else the GPU's TDP); the TDP when
    not given."""
    tp = econ.throughput
    if kw_per_gpu is None and rb.accelerator.tdp_w is not None:
        kw_per_gpu = Decimal(repr(rb.accelerator.tdp_w)) / 1000
    return {
        "index": index, "id": pid, "workload": workload, "accelerator": rb.accelerator.id,
        "network": rb.network.id, "gpus": rb.bid.gpus, "term": term,
        "pricing_kind": rb.price.kind, "feasible": feasible,
        "reason": _reason(econ),
        "plan": _plan(est), "plans_evaluated": int((est.search or {}).get("plans_evaluated", 0)),
        "step_time_s": _real(econ.step_time_s), "mfu": _real(tp.mfu if tp else None),
        "tokens_per_s": _real(tp.tokens_per_s if tp else None),
        "memory_gib": _real(est.memory_gib.get("total")) if est.feasible else None,
        "goodput": _real(econ.goodput.fraction if econ.goodput else None),
        "time_to_train_days": _real(econ.time_to_train_days),
        "days_to_finish": _real(econ.days_to_finish), "cost_basis": econ.basis,
        "billed_hours": quantized("billed_hours", econ.billed_hours),
        "energy_mwh": quantized("energy_mwh", econ.energy_mwh),
        "total_cost": quantized("total_cost", econ.total_cost),
        "cost_per_million_tokens": quantized("cost_per_million_tokens", econ.cost_per_million_tokens),
        **_bases(econ),
        "upfront_capex": quantized("upfront_capex", econ.upfront_capex),
        **_cash(econ),
        "currency": econ.currency,
        "it_power_mw": None if kw_per_gpu is None else _real(float(rb.bid.gpus * kw_per_gpu / 1000)),
        "flags": list(econ.flag_codes), "band": point_band,
    }


def evaluate_chunk(ctx: SweepContext, chunk: Chunk) -> list[Row]:
    """The rows of one chunk's points, in point order (infeasible counts dropped if asked)."""
    from procure.pipeline import bid_case, estimate_bid, phase_estimates, software

    inputs = ctx.inputs[chunk.workload]
    wid, basis = ctx.workload_ids[chunk.workload], ctx.bases[chunk.workload]
    network = ctx.networks[chunk.network]
    stack = software(inputs, ctx.templates[chunk.accelerator][0])   # the accelerator's release, any size
    rows: list[Row] = []
    index = chunk.first_index
    for gpus in chunk.gpus:
        base = _point_bid(ctx.templates[chunk.accelerator][0], "search", gpus, network)
        est = estimate_bid(inputs, base, stack, None, ctx.knobs)
        # the workload's further phases, if any (none to search where the main phase has no plan)
        phases = phase_estimates(inputs, base, stack, ctx.knobs) if est.feasible else []
        fits = est.feasible and all(e.feasible for _, e in phases)
        keep = fits or not ctx.feasible_only.get(chunk.accelerator, False)
        for term, template in zip(ctx.terms, ctx.templates[chunk.accelerator]):
            pid = point_id(index, ctx.id_width)
            if keep:
                rb = _point_bid(template, pid, gpus, network)
                case = bid_case(inputs, rb, est, None, None, ctx.knobs, phases)
                econ = point_cash(evaluate_core(case, ctx.assumptions, basis), ctx.assumptions)
                rows.append(point_row(index, pid, wid, term, rb, est, econ, _band(econ, case, ctx, basis), fits,
                                      case.pricing.it_kw_per_gpu))
            index += 1
    return rows
