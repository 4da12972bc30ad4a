"""What a negotiator needs for one bid: the price at which it ties its target on the ranking
basis, the step time it would need to win, the step time its commitment must reach to be
credible, and the idle commitment it carries.

Pure and exact: totals are affine in the price (every price-driven line is quantity × price ×
factors), so two evaluations give the line, and the break-even price is solved on it, then
rounded to 1e-6 of a unit (``money.CONVERTED_QUANTUM``). The step time to win is found by
bisection: the ranking total never falls when the step time grows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal, localcontext
from typing import Any

from procure.economics.bid import BidEconomics, evaluate_core, ranking_totals
from procure.economics.inputs import Assumptions, BidCase
from procure.economics.throughput import flops_utilisation, physical_floor_s
from procure.money import CONVERTED_QUANTUM, MONEY_CONTEXT, D, quantize, trim

BISECTION_STEPS = 48
SEARCH_RANGE = 1024.0        # the step time to win is searched within current / 1024 .. current × 1024


@dataclass(frozen=True)
class Negotiation:
    basis: str
    target_bid: str | None                   # the bid to tie: the winner, or the runner-up for the winner
    target_cost_per_million_tokens: Decimal | None
    price_key: str | None                    # price_per_gpu_hour (rental) | capex_per_gpu (purchase)
    current_price: Decimal | None            # report currency
    break_even_price: Decimal | None         # report currency, to 1e-6
    break_even_quoted: Decimal | None        # in the quoted currency, to 1e-6
    quoted_currency: str
    break_even_change: float | None          # break-even / current − 1
    step_time_s: float | None
    step_time_to_win_s: float | None
    step_time_to_win_mfu: float | None
    credible_step_time_s: float | None
    credible_bound: str | None               # mfu-record | model-tolerance
    idle_commitment_hours: Decimal
    idle_commitment_cost: Decimal
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def ranking_total(case: BidCase, assumptions: Assumptions, basis: str) -> Decimal | None:
    """What ranks, as a total: the basis cost plus the value of time when one is given."""
    econ = evaluate_core(case, assumptions, basis)
    found = econ.on(basis)
    if found is None:
        return None
    return found.total_cost + (found.time_value or Decimal(0))


def price_key(case: BidCase) -> str:
    return "price_per_gpu_hour" if case.pricing.kind == "rental" else "capex_per_gpu"


def _priced(case: BidCase, key: str, value: Decimal) -> BidCase:
    if key == "price_per_gpu_hour":
        return replace(case, pricing=replace(case.pricing, price_per_gpu_hour=value))
    return replace(case, pricing=replace(case.pricing, capex_per_gpu=value))


def break_even_price(case: BidCase, assumptions: Assumptions, basis: str,
                     target_total: Decimal) -> Decimal | None:
    """The price (per GPU-hour, or capex per GPU) at which this bid's ranking total equals
    ``target_total``; None when no price reaches it (its other costs alone exceed it)."""
    key = price_key(case)
    current = getattr(case.pricing, key)
    if current is None:
        return None
    probe = current if current > 0 else Decimal(1)
    at_zero = ranking_total(_priced(case, key, Decimal(0)), assumptions, basis)
    at_probe = ranking_total(_priced(case, key, probe), assumptions, basis)
    if at_zero is None or at_probe is None or at_probe <= at_zero:
        return None
    with localcontext(MONEY_CONTEXT):
        price = (target_total - at_zero) * probe / (at_probe - at_zero)
    return None if price < 0 else trim(quantize(price, CONVERTED_QUANTUM))


def at_step_time(case: BidCase, step_s: float) -> BidCase:
    """The bid at a main-phase step time of ``step_s``; a workload's further phases move by the
    same factor (the same cluster and software, so the same speed-up or slow-down)."""
    perf = case.performance
    scale = step_s / perf.step_time_s
    phases = tuple(replace(p, performance=replace(p.performance, step_time_s=p.performance.step_time_s * scale))
                   for p in case.phases)
    return replace(case, performance=replace(perf, step_time_s=step_s), phases=phases)


def step_time_to_win(case: BidCase, assumptions: Assumptions, basis: str,
                     target_total: Decimal) -> float | None:
    """The slowest step time at which this bid's ranking total does not exceed ``target_total``."""
    perf = case.performance
    current = perf.step_time_s
    if not perf.feasible or current <= 0:
        return None
    total_of = ranking_totals(case, assumptions, basis)

    def fits(step_s: float) -> bool:
        total = total_of(at_step_time(case, step_s))
        return total is not None and total <= target_total

    lo, hi = (current, current * SEARCH_RANGE) if fits(current) else (current / SEARCH_RANGE, current)
    if not fits(lo):
        return None           # even a far faster step leaves fixed costs above the target
    if fits(hi):
        return None           # it stays ahead at any step time in range: speed does not decide
    for _ in range(BISECTION_STEPS):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def credible_step_time(case: BidCase, assumptions: Assumptions) -> tuple[float | None, str | None]:
    """The fastest commitment that raises neither `implausible` nor `optimistic`."""
    perf = case.performance
    floor_s = physical_floor_s(perf)
    bounds = []
    if floor_s is not None and assumptions.mfu_ceiling > 0:
        bounds.append((floor_s / assumptions.mfu_ceiling, "mfu-record"))
    if perf.modeled_step_time_s:
        bounds.append((perf.modeled_step_time_s * (1.0 - assumptions.committed_tolerance), "model-tolerance"))
    if not bounds:
        return None, None
    value, bound = max(bounds)
    return value, bound


def _idle(econ: BidEconomics) -> tuple[Decimal, Decimal]:
    commitment = econ.on("commitment")
    if commitment is None:
        return Decimal(0), Decimal(0)
    cost = sum((line.amount for line in commitment.lines if line.key == "idle_commitment"), Decimal(0))
    return commitment.idle_commitment_hours, cost


def negotiate(case: BidCase, econ: BidEconomics, target: BidEconomics | None,
              assumptions: Assumptions, basis: str) -> Negotiation:
    """The negotiator's figures for ``case`` against ``target`` on ``basis``."""
    notes: list[str] = []
    key = price_key(case)
    current = getattr(case.pricing, key)
    target_found = None if target is None else target.on(basis)
    target_total = (None if target_found is None
                    else target_found.total_cost + (target_found.time_value or Decimal(0)))
    price = win_s = None
    if target_total is not None and econ.on(basis) is not None:
        price = break_even_price(case, assumptions, basis, target_total)
        win_s = step_time_to_win(case, assumptions, basis, target_total)
        if price is None:
            notes.append("no price ties: its other costs alone exceed the target")
        if win_s is None:
            notes.append("the step time does not decide the race within a factor of 1,024")
    credible_s, bound = credible_step_time(case, assumptions)
    perf = case.performance
    win_mfu = None if win_s is None else flops_utilisation(perf.model_flops_per_step, win_s, perf.gpus,
                                                           perf.peak_flops_per_gpu)
    if win_mfu is not None and perf.gemm_ceiling_mfu and win_mfu > perf.gemm_ceiling_mfu:
        notes.append(f"winning on speed needs {win_mfu:.0%} MFU, above the GEMM ceiling: out of reach")
    idle_hours, idle_cost = _idle(econ)
    fx = D(case.pricing.fx_rate) or Decimal(1)
    with localcontext(MONEY_CONTEXT):
        quoted = None if price is None else trim(quantize(price / fx, CONVERTED_QUANTUM))
    change = None if price is None or not current else float(price / D(current) - 1)
    return Negotiation(
        basis=basis, target_bid=None if target is None else target.id,
        target_cost_per_million_tokens=None if target_found is None else target_found.ranking_cost_per_million_tokens,
        price_key=key if current is not None else None, current_price=current,
        break_even_price=price, break_even_quoted=quoted,
        quoted_currency=case.pricing.quoted_currency or case.pricing.currency,
        break_even_change=change, step_time_s=perf.step_time_s if perf.feasible else None,
        step_time_to_win_s=win_s, step_time_to_win_mfu=win_mfu,
        credible_step_time_s=credible_s, credible_bound=bound,
        idle_commitment_hours=idle_hours, idle_commitment_cost=idle_cost, notes=tuple(notes))
