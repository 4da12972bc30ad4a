"""One-at-a-time changes to the inputs of a quote, for the sensitivity table.

A trial moves one input and nothing else: either one bid's own input (its price, its model
efficiency, its lead time, a delivery slip), the other bids held at base, or one assumption
that every bid shares, as a change in cluster.yaml's ``assumptions`` (or in the FX table) would
(failure rate, power price, cost of capital, resale decline and haircut, reuse of leftover
reserved hours, one currency's exchange rate). Deciding what a trial changes is
``procure.compare``'s job: it re-runs the whole decision of a quote on the moved inputs.

The steps tried, and why (docs/architecture.md, "Sensitivity: a fresh quote per moved input"):

* ±10 % and ±20 % of the base value for every factor with a non-zero base: a procure
  convention, wide enough to cover a negotiated price, a calibration miss of the step time
  (the model's backtest spread is about 10-20 %) or a year's swing of a major currency pair.
* A delivery slip of +30 and +60 days on every bid (a relative change of a lead time of 0
  means nothing): the slips integrators quote for a large cluster are weeks to months.
* Leftover reserved hours reused at 25 % and 50 % of their price (the default is 0).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Sequence

from procure.economics.inputs import Assumptions, BidCase, Performance, Pricing
from procure.economics.throughput import step_time_at_efficiency
from procure.money import D, convert, fx

# factors that move one bid's own input (the other bids at base)
BID_FACTORS = {
    "price": "price",                    # price per GPU-hour (rental) or every capex item (purchase)
    "efficiency": "model efficiency",    # compute term of the step time scaled by 1/(1+x)
    "lead_time": "lead time",            # days until the capacity is usable (deadline, cash dates)
    "lead_time_slip": "delivery slip",   # the same lead time, later by a stated number of days
}
# factors that move an assumption every bid shares (what cluster.yaml's assumptions block sets)
QUOTE_FACTORS = {
    "failure_rate": "failure rate",      # interruptions per GPU-hour
    "power_price": "power price",        # per kWh (moves owned clusters: rent includes power)
    "cost_of_capital": "cost of capital",
    "resale_decline": "resale decline",  # yearly decline of the market value of owned hardware
    "resale_haircut": "resale haircut",  # used-market discount off that market value
    "leftover_reuse": "reuse of leftover reserved hours",
    "fx": "exchange rate",               # one quoted currency against the report currency
}
FACTOR_LABELS = {**BID_FACTORS, **QUOTE_FACTORS}
BASIS_FACTOR = "cost_basis"              # the other cost basis ranks every bid (one row per bid)
SENSITIVITY_CHANGES = (-0.2, -0.1, 0.1, 0.2)
SLIP_DAYS = (30.0, 60.0)                 # delivery later by this many days
REUSE_SHARES = (0.25, 0.5)               # share of the price of leftover reserved hours recovered

CAPEX_FIELDS = ("capex_per_gpu", "network_capex_per_gpu", "capex_per_node", "network_capex")
MONEY_FIELDS = ("price_per_gpu_hour", "storage_per_gpu_hour", "network_per_gpu_hour", "setup_fee",
                "egress_per_tb", "capex_per_gpu", "capex_per_node", "network_capex_per_gpu", "network_capex",
                "power_per_kwh", "colo_per_kw_month", "staff_per_year", "support_per_gpu_year")


@dataclass(frozen=True)
class Trial:
    """One moved input: ``change`` relative to base, or ``step`` an absolute value (days of slip,
    share of leftover hours reused); ``bid`` the index of the bid moved (None: every bid);
    ``subject`` the currency an exchange-rate trial moves."""

    factor: str
    change: float = 0.0
    step: float | None = None
    bid: int | None = None
    subject: str | None = None

    def describe(self, bid_id: str | None) -> str:
        label = FACTOR_LABELS[self.factor]
        if self.factor == "lead_time_slip":
            text = f"delivery {self.step:g} days later"
        elif self.factor == "leftover_reuse":
            text = f"leftover reserved hours reused at {self.step:.0%} of their price"
        elif self.factor == "fx":
            text = f"the {self.subject} {label} {self.change:+.0%}"
        else:
            text = f"{label} {self.change:+.0%}"
        return text if self.bid is None or bid_id is None else f"{text} on {bid_id}"


@dataclass(frozen=True)
class SensitivityRow:
    factor: str
    change: float
    cost_per_million_tokens: Decimal | None
    time_to_train_days: float | None
    rank: int                      # the bid's rank in the trial's ranking
    winner_changes: bool           # the trial recommends another bid than the base
    setting: str | None = None     # a setting instead of a change (the cost basis tried)
    step: float | None = None      # an absolute step instead of a change (days of slip, reuse share)
    subject: str | None = None     # the currency an exchange-rate trial moves
    scope: str = "bid"             # bid: this bid's own input; quote: an assumption of every bid
    recommended: str | None = None  # the bid the trial recommends
    gap: Decimal | None = None     # the trial's runner-up minus its recommended bid, per million tokens
    gap_change: Decimal | None = None  # that gap minus the base quote's

    def describe(self, bid_id: str) -> str:
        if self.factor == BASIS_FACTOR:
            return f"the {(self.setting or '').replace('_', ' ')} cost basis"   # "present value", "run"
        trial = Trial(self.factor, self.change, self.step, 0 if self.scope == "bid" else None, self.subject)
        return trial.describe(bid_id)


def bid_trials(index: int, case: BidCase) -> list[Trial]:
    """The trials that move bid ``index`` alone (a lead time of 0 is only slipped)."""
    trials = [Trial(f, c, bid=index) for f in ("price", "efficiency") for c in SENSITIVITY_CHANGES]
    if case.lead_time_days > 0:
        trials += [Trial("lead_time", c, bid=index) for c in SENSITIVITY_CHANGES]
    return trials + [Trial("lead_time_slip", step=days, bid=index) for days in SLIP_DAYS]


def _currencies(cases: Sequence[BidCase]) -> list[str]:
    """The quoted currencies other than the report currency, in order of first appearance."""
    found = [ccy for c in cases for ccy in [c.pricing.quoted_currency, *(q[2] for q in c.pricing.quoted_amounts)]
             if ccy and ccy != c.pricing.currency]
    return list(dict.fromkeys(found))


def quote_trials(cases: Sequence[BidCase], assumptions: Assumptions) -> list[Trial]:
    """The trials that move an assumption of every bid: only those that can move a figure."""
    owned = any(c.pricing.kind == "purchase" for c in cases)
    powered = any(c.pricing.kind == "purchase" and (c.pricing.power_per_kwh is not None
                                                    or assumptions.power_price_per_kwh is not None) for c in cases)
    reserved = any(c.pricing.kind == "rental" and c.pricing.min_commit_months > 0 for c in cases)
    factors = ["failure_rate"] + ["power_price"] * powered + ["cost_of_capital"]
    factors += ["resale_decline", "resale_haircut"] if owned else []
    trials = [Trial(f, c) for f in factors for c in SENSITIVITY_CHANGES]
    if reserved:
        trials += [Trial("leftover_reuse", step=share) for share in REUSE_SHARES
                   if D(share) != assumptions.leftover_hours_reuse_share]
    return trials + [Trial("fx", c, subject=ccy) for ccy in _currencies(cases) for c in SENSITIVITY_CHANGES]


def _scaled(value: Decimal | None, scale: Decimal) -> Decimal | None:
    return None if value is None else value * scale


def _moved_terms(pricing: Pricing, keys: Sequence[str], price_scale: Decimal = Decimal(1),
                 currency: str | None = None, rate_scale: Decimal = Decimal(1)) -> Pricing:
    """``pricing`` with the money terms ``keys`` quoted ``price_scale`` times higher, and those quoted
    in ``currency`` at its rate × ``rate_scale``: converted again from the quoted figures as the
    inputs convert them (a term without a quoted figure is scaled as converted)."""
    quoted = {q[0]: q for q in pricing.quoted_amounts}
    moved: dict[str, Any] = {}
    for key in keys:
        value = getattr(pricing, key)
        if value is None:
            continue
        found = quoted.get(key)
        scale = rate_scale if currency is not None and (found[2] if found else pricing.quoted_currency) == currency \
            else Decimal(1)
        if found is None:
            moved[key] = value * price_scale * scale
        else:
            moved[key] = convert(found[1] * price_scale, fx(found[3] * scale) if scale != 1 else found[3])
    amounts = tuple((k, v * price_scale if k in keys else v, c, fx(r * rate_scale) if c == currency else r)
                    for k, v, c, r in pricing.quoted_amounts)
    rate = fx(pricing.fx_rate * rate_scale) if pricing.quoted_currency == currency else pricing.fx_rate
    return replace(pricing, quoted_amounts=amounts, fx_rate=rate, **moved)


def _price(case: BidCase, scale: Decimal) -> BidCase:
    keys = ("price_per_gpu_hour",) if case.pricing.kind == "rental" else CAPEX_FIELDS
    return replace(case, pricing=_moved_terms(case.pricing, keys, price_scale=scale))


def _at_efficiency(perf: Performance, change: float) -> Performance:
    return replace(perf, step_time_s=float(step_time_at_efficiency(perf, 1.0 + change)))


def _efficiency(case: BidCase, change: float) -> BidCase:
    """Compute efficiency moves every phase of the workload (one model, one cluster)."""
    phases = tuple(replace(p, performance=_at_efficiency(p.performance, change)) for p in case.phases)
    return replace(case, performance=_at_efficiency(case.performance, change), phases=phases)


def _in_currency(pricing: Pricing, currency: str, scale: Decimal) -> Pricing:
    """Every amount of a bid quoted in ``currency``, at that currency's rate × ``scale``."""
    return _moved_terms(pricing, MONEY_FIELDS, currency=currency, rate_scale=scale)


def _bid_input(case: BidCase, trial: Trial) -> BidCase:
    scale = 1 + D(trial.change)
    if trial.factor == "price":
        return _price(case, scale)
    if trial.factor == "efficiency":
        return _efficiency(case, trial.change)
    if trial.factor == "lead_time":
        return replace(case, lead_time_days=case.lead_time_days * (1.0 + trial.change))
    assert trial.step is not None
    return replace(case, lead_time_days=case.lead_time_days + trial.step)


def _own_figures(cases: list[BidCase], scale: Decimal, field: str) -> list[BidCase]:
    """Each bid's own figure for a shared term (its price book's or inline) × ``scale``: it wins
    over the assumption, so moving the term moves it too."""
    moved: list[BidCase] = []
    for c in cases:
        if field in MONEY_FIELDS:               # a price: converted again from the quoted figure
            moved.append(replace(c, pricing=_moved_terms(c.pricing, (field,), price_scale=scale)))
            continue
        figure: dict[str, Any] = {field: _scaled(getattr(c.pricing, field), scale)}
        moved.append(replace(c, pricing=replace(c.pricing, **figure)))
    return moved


def _quote_input(cases: list[BidCase], a: Assumptions, trial: Trial) -> tuple[list[BidCase], Assumptions]:
    scale = 1 + D(trial.change)
    if trial.factor == "failure_rate":
        return cases, replace(a, failures_per_gpu_hour=a.failures_per_gpu_hour * (1.0 + trial.change))
    if trial.factor == "power_price":
        return (_own_figures(cases, scale, "power_per_kwh"),
                replace(a, power_price_per_kwh=_scaled(a.power_price_per_kwh, scale)))
    if trial.factor == "cost_of_capital":
        return _own_figures(cases, scale, "cost_of_capital"), replace(a, cost_of_capital=a.cost_of_capital * scale)
    if trial.factor == "resale_decline":
        return (_own_figures(cases, scale, "resale_decline_per_year"),
                replace(a, resale_decline_per_year=a.resale_decline_per_year * scale))
    if trial.factor == "resale_haircut":
        return cases, replace(a, resale_haircut=a.resale_haircut * scale)
    if trial.factor == "leftover_reuse":
        assert trial.step is not None
        return cases, replace(a, leftover_hours_reuse_share=D(trial.step))
    assert trial.subject is not None
    moved = [replace(c, pricing=_in_currency(c.pricing, trial.subject, scale)) for c in cases]
    if trial.subject == "USD":           # the workload's power price is given in USD
        a = replace(a, power_price_per_kwh=_scaled(a.power_price_per_kwh, scale))
    return moved, a


def apply(trial: Trial, cases: Sequence[BidCase],
          assumptions: Assumptions) -> tuple[list[BidCase], Assumptions]:
    """The bids and assumptions with ``trial``'s input moved, everything else at base."""
    if trial.factor not in FACTOR_LABELS:
        raise ValueError(f"unknown sensitivity factor {trial.factor!r}")
    if trial.change <= -1.0:
        raise ValueError(f"a change of {trial.change!r} leaves nothing")
    moved = list(cases)
    if trial.bid is not None:
        moved[trial.bid] = _bid_input(moved[trial.bid], trial)
        return moved, assumptions
    return _quote_input(moved, assumptions, trial)


