"""One bid's economics: throughput, goodput, time to train, its dated cash, the three cost bases,
flags, band."""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal, localcontext
from typing import Any, Callable

from procure.economics import flags as checks
from procure.economics.cashflow import (CashSummary, Leftover, cash_summary, commitment_end_hours,
                                        discount_factor)
from procure.economics.cost import (BASES, DEFAULT_BASIS, CostLine, Terms, billed_hours,
                                    book_value_left, check_basis, cost_lines, cost_notes, energy_mwh,
                                    hours_from_seconds, make_line, missing_price_reason, per_million_tokens,
                                    resale_fraction, terms, total_cost, upfront_capex)
from procure.economics.flags import Flag, in_order
from procure.economics.goodput import Goodput, goodput
from procure.economics.inputs import Assumptions, BidCase
from procure.economics.ratios import Ratios, ratios
from procure.economics.sensitivity import SensitivityRow
from procure.economics.throughput import Throughput, throughput
from procure.economics.uncertainty import Uncertainty, band
from procure.money import MONEY_CONTEXT, D, cents

ENERGY_QUANTUM = Decimal("0.001")  # MWh, i.e. 1 kWh
HOURS_PER_DAY = Decimal(24)


@dataclass(frozen=True)
class BasisCost:
    """The cost of one bid on one basis; every figure follows from ``cost_lines``."""

    basis: str                               # present_value | run | commitment
    cost_lines: tuple[CostLine, ...]
    total_cost: Decimal
    cost_per_million_tokens: Decimal
    billed_hours: Decimal                    # wall-clock hours paid for (per GPU)
    idle_commitment_hours: Decimal           # billed but not used (per GPU)
    time_value: Decimal | None               # value of time × days to finish, when a value is given
    ranking_cost_per_million_tokens: Decimal  # what ranks: cost, plus the time value when given
    resale_fraction: Decimal | None          # purchase, commitment and present value: net share of the market price new


@dataclass(frozen=True)
class PhaseEconomics:
    """One phase of the workload: its step time, tokens and share of the time to train."""

    name: str
    step_time_s: float
    tokens_per_step: int
    train_tokens: float
    tokens_per_s: float
    time_to_train_days: float


@dataclass(frozen=True)
class BidEconomics:
    id: str
    vendor: str
    currency: str
    step_time_basis: str
    step_time_s: float | None
    throughput: Throughput | None
    goodput: Goodput | None
    time_to_train_days: float | None
    billed_hours: Decimal | None             # on the ranking basis
    energy_mwh: Decimal | None
    cost_lines: tuple[CostLine, ...]         # on the ranking basis
    total_cost: Decimal | None               # on the ranking basis
    residual_value: Decimal | None           # purchase: book value left after this run
    cost_per_million_tokens: Decimal | None  # on the ranking basis
    flags: tuple[Flag, ...]
    notes: tuple[str, ...] = ()
    deadline_days: float | None = None
    uncertainty: Uncertainty | None = None
    sensitivity: tuple[SensitivityRow, ...] = ()   # set by procure.compare
    rank: int | None = None                        # set by procure.compare
    basis: str = DEFAULT_BASIS                     # the basis the figures above are on
    bases: tuple[BasisCost, ...] = ()              # run, commitment (empty when not costed)
    upfront_capex: Decimal | None = None           # purchase: cash out before the run
    lead_time_days: float = 0.0
    days_to_finish: float | None = None            # lead time + time to train, from as_of
    used_hours: Decimal | None = None              # wall-clock hours of the run (every phase)
    terms: Terms | None = None                     # the resolved terms: power, financing, resale
    negotiation: Any = None                        # procure.economics.negotiation.Negotiation
    ratios: Ratios | None = None                   # the committee's ratios of the bid's (main phase's) plan
    time_to_target: Any = None                     # procure.economics.target.TimeToTarget (set by compare)
    batch_candidates: tuple[Any, ...] = ()         # procure.economics.target.CandidateRow (set by compare)
    phases: tuple[PhaseEconomics, ...] = ()        # only for a workload with further phases
    cash: CashSummary | None = None                # dated cash over the quote's horizon (its own alone)

    @property
    def has_cost(self) -> bool:
        return self.cost_per_million_tokens is not None

    @property
    def flag_codes(self) -> tuple[str, ...]:
        return tuple(flag.code for flag in self.flags)

    def on(self, basis: str) -> BasisCost | None:
        """The cost on ``basis``, or None when the bid has no cost."""
        check_basis(basis)
        return next((b for b in self.bases if b.basis == basis), None)

    @property
    def idle_commitment_hours(self) -> Decimal:
        commitment = self.on("commitment")
        return Decimal(0) if commitment is None else commitment.idle_commitment_hours

    def ranking_value(self, basis: str | None = None) -> Decimal | None:
        found = self.on(basis or self.basis)
        return None if found is None else found.ranking_cost_per_million_tokens



def _infeasible(case: BidCase, found: list[Flag | None], basis: str) -> BidEconomics:
    """No plan fits: the bid is listed with its flags and no time or cost."""
    perf = case.performance
    return BidEconomics(case.id, case.vendor, case.pricing.currency, perf.basis, None, None,
                        None, None, None, None, (), None, None, None,
                        in_order(found + [checks.infeasible(perf)]),
                        deadline_days=case.deadline_days, basis=basis,
                        lead_time_days=case.lead_time_days)


def _goodput_notes(gp: Goodput) -> list[str]:
    if not gp.clamped:
        return []
    return ["the goodput formula left no useful time; "
            f"lost fraction clamped to {gp.lost_fraction:.2f}"]


def days_to_finish(lead_time_days: float, used_hours: Decimal) -> Decimal:
    """Days from as_of to the end of training: lead time, then the run's wall-clock hours."""
    with localcontext(MONEY_CONTEXT):
        return D(lead_time_days) + used_hours / HOURS_PER_DAY


#: What each kind of dated flow is called on the present-value basis, in the order shown.
FLOW_LABELS = {"capex": "Capex at signing", "setup": "One-time setup", "prepayment": "Prepayment at signing",
               "invoice": "Monthly invoices", "power": "Power", "colocation": "Colocation",
               "support": "Support", "staff": "Staff", "egress": "Data egress",
               "leftover-hours": "Leftover reserved hours reused", "resale": "Resale after the horizon",
               # the optional tax block (economics.tax)
               "import-duty": "Import duty", "vat": "VAT paid", "vat-refund": "VAT recovered",
               "tax-shield": "Income-tax shield", "tax-on-sale": "Income tax on the sale"}
PV_FORMULA = "Σ month-end amounts × (1 + cost of capital)^(−month / 12)"


def present_value_lines(cash: CashSummary) -> list[CostLine]:
    """One line per kind of flow (key ``pv_<kind>``): the sum of its discounted month-end amounts
    (each to the cent, as the present value adds them), so the lines add up to the present value;
    the dated flows themselves are in the bid's cash."""
    lines = []
    for kind, label in FLOW_LABELS.items():
        flows = [f for f in cash.flows if f.kind == kind]
        if not flows:
            continue
        discounted = sum((cents(f.amount * discount_factor(cash.cost_of_capital, f.month)) for f in flows),
                         Decimal(0))
        lines.append(make_line("pv_" + kind.replace("-", "_"), label, Decimal(1), "", discounted, PV_FORMULA))
    return lines


def basis_cost(case: BidCase, t: Terms, used_hours: Decimal, basis: str,
               assumptions: Assumptions, cash: CashSummary | None = None) -> BasisCost:
    """One basis: its lines, totals and (when a value of time is given) the time-adjusted figure.
    The present-value basis is the bid's dated cash (``cash``, computed when not given)."""
    if basis == "present_value":
        cash = cash or cash_summary(t, case.lead_time_days, used_hours)
        lines = tuple(present_value_lines(cash))
    else:
        lines = tuple(cost_lines(t, used_hours, basis))
    total = total_cost(list(lines))
    billed = billed_hours(t, used_hours, basis)
    vot = assumptions.value_of_time_per_day
    time_value = None
    tokens = case.total_tokens                # every phase is billed, so every phase's tokens count
    ranking = per_million_tokens(total, tokens)
    if vot is not None:
        with localcontext(MONEY_CONTEXT):
            time_value = cents(D(vot) * days_to_finish(case.lead_time_days, used_hours))
        ranking = per_million_tokens(total + time_value, tokens)
    resale = None
    if t.pricing.kind == "purchase" and basis != "run":
        resale = cash.resale_fraction if basis == "present_value" and cash is not None else resale_fraction(t, used_hours)
    return BasisCost(basis, lines, total, per_million_tokens(total, tokens), billed,
                     billed - used_hours, time_value, ranking, resale)


def phase_seconds(case: BidCase, gp: Goodput) -> list[float]:
    """Wall-clock seconds of every phase: the tokens to the target (the main phase's train tokens
    times its batch's statistical-efficiency factor, the batch chosen or grown being the main
    phase's; further phases keep their own batch) at the phase's throughput, over the goodput."""
    return [p.train_tokens * (case.token_factor if i == 0 else 1.0) / throughput(p.performance).tokens_per_s
            / gp.fraction for i, p in enumerate(case.all_phases())]


def ranking_totals(case: BidCase, assumptions: Assumptions,
                   basis: str = DEFAULT_BASIS) -> Callable[[BidCase], Decimal | None]:
    """What ranks (the basis cost plus the value of time, when given) of ``case`` moved to other
    step times: equal to evaluating the moved case in full, for searches that move only step
    times (the negotiator's step time to win). The terms and the goodput do not depend on step
    times and are resolved once; the total depends on them only through the hours used (rounded
    up to 0.01 h), so totals are kept per hours used. None when the bid has no cost."""
    check_basis(basis)
    if case.train_tokens <= 0:
        raise ValueError(f"bid {case.id!r}: train_tokens must be positive")
    perf = case.performance
    blocked = any(not p.performance.feasible for p in case.phases)
    if not perf.feasible or blocked or missing_price_reason(case.pricing):
        return lambda moved: None
    gp = goodput(perf.gpus, case.params, assumptions)
    t = terms(case.pricing, perf.gpus, assumptions)
    by_hours: dict[Decimal, Decimal] = {}

    def total(moved: BidCase) -> Decimal | None:
        used_hours = hours_from_seconds(sum(phase_seconds(moved, gp)))
        if used_hours not in by_hours:
            found = basis_cost(moved, t, used_hours, basis, assumptions)
            by_hours[used_hours] = found.total_cost + (found.time_value or Decimal(0))
        return by_hours[used_hours]
    return total


def leftover(assumptions: Assumptions) -> Leftover:
    """What the leftover value of a bid assumes, from the assumptions."""
    return Leftover(haircut=D(assumptions.resale_haircut), transaction_cost=D(assumptions.resale_transaction_cost),
                    months_to_sell=assumptions.resale_months_to_sell,
                    reuse_share=D(assumptions.leftover_hours_reuse_share))


def commitment_end(econ: BidEconomics) -> Decimal | None:
    """Hours from as_of to the end of the bid's run or commitment; None when it has no cost."""
    if econ.terms is None or econ.used_hours is None or not econ.has_cost:
        return None
    return commitment_end_hours(econ.terms, econ.lead_time_days, econ.used_hours)


def horizon_hours(assumptions: Assumptions, ends: list[Decimal]) -> Decimal:
    """The quote's horizon: ``horizon_months`` when given, else the latest commitment or run end."""
    if assumptions.horizon_months is not None:
        with localcontext(MONEY_CONTEXT):
            return assumptions.horizon_months * D(assumptions.months_hours)
    return max(ends, default=Decimal(0))


def pinned(assumptions: Assumptions, ends: list[Decimal]) -> Assumptions:
    """The assumptions with the quote's horizon pinned: every bid (and every trial of one bid in
    the sensitivity table or the negotiator's searches) is then costed over the same months."""
    return replace(assumptions, horizon_hours=horizon_hours(assumptions, ends))


def evaluate_core(case: BidCase, assumptions: Assumptions, basis: str = DEFAULT_BASIS, *,
                  ranking_only: bool = False) -> BidEconomics:
    """Everything but the Monte-Carlo band (what the sensitivity table re-evaluates).
    ``ranking_only``: only what ranks the bid (its cost on ``basis``, time to train, days to
    finish), without flags, the other basis, ratios or per-phase rows: the sensitivity table's
    twenty trials per bid."""
    check_basis(basis)
    perf = case.performance
    if case.train_tokens <= 0:
        raise ValueError(f"bid {case.id!r}: train_tokens must be positive")
    missing = missing_price_reason(case.pricing)
    found = [] if ranking_only else [*checks.commitment_flags(perf, case.commitment, assumptions),
                                     checks.price_missing(missing), checks.uncalibrated(perf, assumptions)]
    blocked = next((p for p in case.phases if not p.performance.feasible), None)
    if not perf.feasible or blocked is not None:
        if blocked is not None and perf.feasible:
            perf = replace(perf, feasible=False, infeasible_reason=f"phase {blocked.name}: "
                           f"{blocked.performance.infeasible_reason or 'no plan fits'}")
            case = replace(case, performance=perf)
        return _infeasible(case, found, basis)
    tp = throughput(perf)
    gp = goodput(perf.gpus, case.params, assumptions)
    phase_s = phase_seconds(case, gp)
    seconds = sum(phase_s)
    days = seconds / 86400.0
    used_hours = hours_from_seconds(seconds)
    t = terms(case.pricing, perf.gpus, assumptions)
    energy = energy_mwh(perf.gpus, t.power, used_hours)
    cash = None if missing else cash_summary(t, case.lead_time_days, used_hours)
    bases = () if missing else tuple(basis_cost(case, t, used_hours, b, assumptions, cash)
                                     for b in ((basis,) if ranking_only else BASES))
    ranked = next((b for b in bases if b.basis == basis), None)
    run = next((b for b in bases if b.basis == "run"), None)
    finish = float(days_to_finish(case.lead_time_days, used_hours))
    if not ranking_only:
        found.append(checks.misses_deadline(days, case.deadline_days, case.lead_time_days))
        found.append(checks.batch_beyond_critical(case.batch))
        found.append(checks.facility_conflict(t.power.conflicts))
    return BidEconomics(
        id=case.id, vendor=case.vendor, currency=case.pricing.currency,
        step_time_basis=perf.basis, step_time_s=perf.step_time_s, throughput=tp, goodput=gp,
        time_to_train_days=days,
        billed_hours=billed_hours(t, used_hours, basis) if ranked else None,
        energy_mwh=None if energy is None else energy.quantize(ENERGY_QUANTUM),
        cost_lines=ranked.cost_lines if ranked else (), total_cost=ranked.total_cost if ranked else None,
        residual_value=book_value_left(t, list(run.cost_lines)) if run else None,
        cost_per_million_tokens=ranked.cost_per_million_tokens if ranked else None,
        flags=in_order(found), notes=tuple(_goodput_notes(gp) + cost_notes(t)),
        deadline_days=case.deadline_days, basis=basis, bases=bases,
        upfront_capex=None if missing else upfront_capex(t), lead_time_days=case.lead_time_days,
        days_to_finish=finish, used_hours=used_hours, terms=t, cash=cash,
        ratios=None if ranking_only else ratios(
            perf.step_time_terms, perf.modeled_step_time_s, tokens_per_step=perf.tokens_per_step,
            step_time_s=perf.step_time_s, gpus=perf.gpus, goodput_fraction=gp.fraction,
            token_factor=case.token_factor),
        phases=_phases(case, phase_s) if case.phases and not ranking_only else (),
    )


def _phases(case: BidCase, seconds: list[float]) -> tuple[PhaseEconomics, ...]:
    """Every phase's time at its own throughput and the bid's goodput (same GPUs throughout)."""
    return tuple(PhaseEconomics(p.name, p.performance.step_time_s, p.performance.tokens_per_step,
                                p.train_tokens, throughput(p.performance).tokens_per_s, s / 86400.0)
                 for p, s in zip(case.all_phases(), seconds))


def evaluate_bid(case: BidCase, assumptions: Assumptions, basis: str = DEFAULT_BASIS) -> BidEconomics:
    """The economics of one bid, with its seeded uncertainty band (rank/sensitivity unset)."""
    econ = evaluate_core(case, assumptions, basis)
    return replace(econ, uncertainty=band(case, assumptions, basis))
