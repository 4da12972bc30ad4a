"""What a negotiator needs for one bid: the lever that matters for its kind, at the value where
it ties its target on the ranking basis, the step time it would need to win, the step time its
commitment must reach to be credible, and the idle commitment it carries.

Levers by kind of bid (``levers``):

* on demand: the price per GPU-hour;
* reservation: the term (whole months) and the committed share of the term's GPU-hours: the
  longest term, and the largest share (to 0.001), at which it still ties; a price cut is not
  the lever when what it pays for is idle hours;
* purchase: the capex per GPU at which it ties, and the latest delivery (lead time, to 0.1 day)
  at which it meets the deadline (constraints rank first).

Pure and exact: totals are affine in the price (every price-driven line is quantity × price ×
factors), so two evaluations give the line, and the break-even price is solved on it, then
rounded to 1e-6 of a unit (``money.CONVERTED_QUANTUM``). The step time to win is found by
bisection: the ranking total never falls when the step time grows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal, localcontext

from procure.economics.bid import BidEconomics, evaluate_core, ranking_totals
from procure.economics.inputs import Assumptions, BidCase
from procure.economics.throughput import flops_utilisation, physical_floor_s
from procure.money import CONVERTED_QUANTUM, MONEY_CONTEXT, D, quantize, trim

BISECTION_STEPS = 48
SEARCH_RANGE = 1024.0        # the step time to win is searched within current / 1024 .. current × 1024
SECANT_STEPS = 8                 # the break-even price: the line, then secant steps over a kink
TIE_CENTS = Decimal("0.01")
SHARE_STEP = Decimal("0.001")    # the committed share is proposed to this step
LEAD_STEP_DAYS = Decimal("0.1")  # the delivery is proposed to this step
MAX_TERM_MONTHS = 120            # a winning reservation's term is searched up to this


@dataclass(frozen=True)
class Lever:
    """One term the buyer can negotiate, at the value where the bid ties its target (or, for the
    delivery, meets the deadline)."""

    key: str                      # price_per_gpu_hour | capex_per_gpu | term_months | committed_share | lead_time_days
    current: Decimal
    proposed: Decimal | None      # None: no value in range does it (a note says why)
    unit: str
    aim: str                      # ties-target | meets-deadline


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
    kind: str = "on-demand"                  # on-demand | reservation | purchase
    levers: tuple[Lever, ...] = ()           # the levers of this kind of bid, the first the main one


def bid_kind(case: BidCase) -> str:
    if case.pricing.kind == "purchase":
        return "purchase"
    return "reservation" if case.pricing.min_commit_months > 0 else "on-demand"


def ranking_total(case: BidCase, assumptions: Assumptions, basis: str) -> Decimal | None:
    """What ranks, as a total: the basis cost plus the value of time when one is given."""
    econ = evaluate_core(case, assumptions, basis, ranking_only=True)
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
    ``target_total``; None when no price reaches it (its other costs alone exceed it).

    The total is affine in the price but for one kink (a purchase's resale follows the price paid
    up to the market price new, and stops there): the line through price 0 and the current price
    gives the answer on its segment, and SECANT_STEPS secant steps from it find the other segment."""
    key = price_key(case)
    current = getattr(case.pricing, key)
    if current is None:
        return None
    probe = current if current > 0 else Decimal(1)

    def total_at(price: Decimal) -> Decimal | None:
        return ranking_total(_priced(case, key, price), assumptions, basis)
    a, at_a, b, at_b = Decimal(0), total_at(Decimal(0)), probe, total_at(probe)
    if at_a is None or at_b is None or at_b <= at_a or at_a > target_total:
        return None
    price = a
    for _ in range(SECANT_STEPS):     # secant through the last two points: two on one segment are exact
        if at_b == at_a:
            break
        with localcontext(MONEY_CONTEXT):
            price = quantize(b + (target_total - at_b) * (b - a) / (at_b - at_a), CONVERTED_QUANTUM)
        found = total_at(max(price, Decimal(0)))
        if found is None or abs(found - target_total) <= TIE_CENTS or price in (a, b):
            break
        a, at_a, b, at_b = b, at_b, price, found
    return None if price < 0 else trim(price)


def _term(case: BidCase, months: int) -> BidCase:
    return replace(case, pricing=replace(case.pricing, min_commit_months=months))


def _share(case: BidCase, share: Decimal) -> BidCase:
    return replace(case, pricing=replace(case.pricing, committed_share=share))


def _ties(case: BidCase, assumptions: Assumptions, basis: str, target_total: Decimal) -> bool:
    total = ranking_total(case, assumptions, basis)
    return total is not None and total <= target_total


def term_to_tie(case: BidCase, assumptions: Assumptions, basis: str, target_total: Decimal) -> int | None:
    """The longest whole-month term at which the reservation still ties ``target_total`` (its
    cost never falls as the term grows); None when even no term ties."""
    lo, hi = 0, max(case.pricing.min_commit_months, MAX_TERM_MONTHS)
    if not _ties(_term(case, lo), assumptions, basis, target_total):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if _ties(_term(case, mid), assumptions, basis, target_total) else (lo, mid - 1)
    return lo


def share_to_tie(case: BidCase, assumptions: Assumptions, basis: str, target_total: Decimal) -> Decimal | None:
    """The largest committed share of the term (to SHARE_STEP) at which the reservation still ties
    ``target_total``; None when even no commitment ties."""
    steps = int(1 / SHARE_STEP)
    lo, hi = 0, steps
    if not _ties(_share(case, Decimal(0)), assumptions, basis, target_total):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if _ties(_share(case, mid * SHARE_STEP), assumptions, basis, target_total) else (lo, mid - 1)
    return lo * SHARE_STEP


def lead_time_to_meet(case: BidCase, time_to_train_days: float | None) -> Decimal | None:
    """The latest delivery (days after as_of, to LEAD_STEP_DAYS) at which the run still finishes
    by the deadline; None without a deadline or when even delivery today misses it."""
    if case.deadline_days is None or time_to_train_days is None:
        return None
    with localcontext(MONEY_CONTEXT):
        spare = D(case.deadline_days) - D(time_to_train_days)
        if spare < 0:
            return None
        return (spare / LEAD_STEP_DAYS).to_integral_value(rounding="ROUND_FLOOR") * LEAD_STEP_DAYS


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
    cost = sum((line.amount for line in commitment.cost_lines if line.key == "idle_commitment"), Decimal(0))
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
    kind = bid_kind(case)
    levers = _levers(case, econ, assumptions, basis, target_total, kind, price, notes)
    return Negotiation(
        basis=basis, target_bid=None if target is None else target.id,
        target_cost_per_million_tokens=None if target_found is None else target_found.ranking_cost_per_million_tokens,
        price_key=key if current is not None else None, current_price=current,
        break_even_price=price, break_even_quoted=quoted,
        quoted_currency=case.pricing.quoted_currency or case.pricing.currency,
        break_even_change=change, step_time_s=perf.step_time_s if perf.feasible else None,
        step_time_to_win_s=win_s, step_time_to_win_mfu=win_mfu,
        credible_step_time_s=credible_s, credible_bound=bound,
        idle_commitment_hours=idle_hours, idle_commitment_cost=idle_cost, notes=tuple(notes),
        kind=kind, levers=levers)


def _levers(case: BidCase, econ: BidEconomics, assumptions: Assumptions, basis: str,
            target_total: Decimal | None, kind: str, price: Decimal | None, notes: list[str]) -> tuple[Lever, ...]:
    """The levers of this kind of bid at the values where it ties its target (``notes`` gets why
    one has no value)."""
    p = case.pricing
    costed = target_total is not None and econ.on(basis) is not None
    if kind == "on-demand":
        current = p.price_per_gpu_hour
        return () if current is None else (Lever("price_per_gpu_hour", D(current), price, p.currency, "ties-target"),)
    if kind == "reservation":
        term = share = None
        if costed and basis == "run":
            notes.append("on the run basis only the hours used are costed: the term and the committed share "
                         "do not move it")
        elif costed:
            assert target_total is not None
            term = term_to_tie(case, assumptions, basis, target_total)
            share = share_to_tie(case, assumptions, basis, target_total)
            if term is None:
                notes.append("no term or committed share ties: the hours it uses alone cost more than the target")
        return (Lever("term_months", Decimal(p.min_commit_months), None if term is None else Decimal(term),
                      "months", "ties-target"),
                Lever("committed_share", D(p.committed_share), share, "of the term's GPU-hours", "ties-target"))
    levers = [Lever("capex_per_gpu", D(p.capex_per_gpu or 0), price, p.currency, "ties-target")]
    if case.deadline_days is not None:
        lead = lead_time_to_meet(case, econ.time_to_train_days)
        if lead is None:
            notes.append("no delivery date meets the deadline: training alone takes longer")
        levers.append(Lever("lead_time_days", D(case.lead_time_days), lead, "days", "meets-deadline"))
    return tuple(levers)
