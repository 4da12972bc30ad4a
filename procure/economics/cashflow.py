"""Every bid as dated cash over one horizon: what leaves the buyer's account, and when.

Pure: Decimal money in the report currency, months counted from ``as_of`` (month 0 is signing).
The horizon is the same for every bid of a quote: by default the longest commitment among the
bids (a reservation's term from its delivery), or the latest end of a run where none is longer
(``default_horizon_hours``); ``workload.horizon_months`` sets it.

Conventions (docs/economics.md, "Cash over one horizon"):

* A flow is ``(month, amount, kind)``; a positive amount is cash out, a negative one cash in.
* Signing (month 0): capex (paid at order), a rental's prepayment and setup fee.
* Usage is invoiced at the end of each month for the hours of that month (month k pays the
  hours in (k-1, k] × hours per month); the prepaid share of a committed month is not invoiced
  again. Egress is paid at the end of the run.
* An owned cluster is held from delivery to the horizon end (or the end of its run when that is
  later): colocation, support and staff are paid for every held month, power for the run only.
  It is sold ``resale_months_to_sell`` after the hold ends, at its market value for its age
  (the market price of the same hardware new × (1 − resale decline)^years: not the price this
  bid paid), less the used-market haircut and the transaction cost.
* Reserved hours left over after the run are credited at ``leftover_hours_reuse_share`` of
  their price (default 0: nobody is assumed to use them), in the months they fall in.
* Present value: every flow discounted at the cost of capital with monthly compounding of the
  annual rate, ``amount × (1 + rate)^(−month / 12)``, each discounted flow to the cent. The
  nominal total is the plain sum. Neither carries a financing line: discounting is the time
  value of the money.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Any, Iterable

from procure.economics.cost import Terms, capex_total, market_value_new
from procure.economics.cost_float import NO_DRAWS, DrawnRates, market_float
from procure.economics.tax import bid_tax_flows
from procure.money import CONVERTED_QUANTUM, MONEY_CONTEXT, D, cents, money_sum, quantize

HOURS_PER_YEAR = Decimal(8760)
UPFRONT_KINDS = ("capex", "prepayment", "setup", "import-duty", "vat")
OPEX_KINDS = ("power", "colocation", "support", "staff")


@dataclass(frozen=True)
class Leftover:
    """What leftover value assumes: the resale of owned hardware and the reuse of reserved hours."""

    haircut: Decimal = Decimal(0)             # used-market discount off the market value
    transaction_cost: Decimal = Decimal(0)    # broker, de-installation, shipping: share of the sale
    months_to_sell: int = 0                   # from the end of the hold to the cash
    reuse_share: Decimal = Decimal(0)         # reserved hours left over: share of their price recovered


@dataclass(frozen=True)
class CashFlow:
    month: int
    amount: Decimal                           # cash out > 0, cash in < 0
    kind: str


@dataclass(frozen=True)
class CashSummary:
    """One bid over the quote's horizon."""

    horizon_months: int
    cost_of_capital: Decimal
    flows: tuple[CashFlow, ...]
    nominal_total: Decimal
    present_value: Decimal
    upfront_cash: Decimal                     # at signing: capex, prepayment, setup fee
    peak_cash_out: Decimal                    # the most the buyer is out of pocket at any month end
    resale_fraction: Decimal | None           # purchase: net of haircut and transaction cost

    def monthly(self) -> list[Decimal]:
        """Net cash out per month, month 0 to the last flow's month."""
        last = max((f.month for f in self.flows), default=0)
        out = [Decimal(0)] * (last + 1)
        for f in self.flows:
            out[f.month] += f.amount
        return out


def commitment_end_hours(t: Terms, lead_time_days: float, used_hours: Decimal) -> Decimal:
    """Hours from as_of to the end of what the bid commits to: delivery, then the run or the term."""
    with localcontext(MONEY_CONTEXT):
        return D(lead_time_days) * 24 + max(used_hours, t.term_hours if t.pricing.kind == "rental"
                                              else Decimal(0))


def default_horizon_hours(ends: Iterable[Decimal]) -> Decimal:
    """The quote's horizon: the latest commitment or run end among the bids."""
    return max(ends, default=Decimal(0))


def horizon_months(hours: Decimal, months_hours: Decimal) -> int:
    """Whole months covering ``hours`` (at least one)."""
    return max(1, math.ceil(hours / months_hours))


MAX_MONTHLY_FLOWS = 1200       # a century of monthly invoices; what is left is one flow at the end


def _month_hours(start: Decimal, end: Decimal, months_hours: Decimal) -> list[tuple[int, Decimal]]:
    """(month, hours) of the span (start, end] in hours from as_of, by end-of-month invoice. A span
    longer than MAX_MONTHLY_FLOWS months (a run of 1e18 tokens) bills its remainder in its last
    month: the flows stay few, the hours and the total exact."""
    spans: list[tuple[int, Decimal]] = []
    if end <= start:
        return spans
    month = max(1, math.ceil(start / months_hours)) if start > 0 else 1
    while True:
        lo, hi = max(start, (month - 1) * months_hours), min(end, month * months_hours)
        if len(spans) == MAX_MONTHLY_FLOWS - 1 and month * months_hours < end:
            spans.append((max(month, math.ceil(end / months_hours)), end - lo))
            return spans
        if hi > lo:
            spans.append((month, hi - lo))
        if month * months_hours >= end:
            return spans
        month += 1


def _month_of(hours: Decimal, months_hours: Decimal) -> int:
    return max(0, math.ceil(hours / months_hours))


def rental_flows(t: Terms, lead_hours: Decimal, used_hours: Decimal, leftover: Leftover) -> list[CashFlow]:
    p, mh = t.pricing, t.months_hours
    assert p.price_per_gpu_hour is not None
    with localcontext(MONEY_CONTEXT):
        gpu_rate = t.gpus * D(p.price_per_gpu_hour) * t.price_factor            # per wall-clock hour
        billed = max(used_hours, t.min_commit_hours)
        committed = t.min_commit_hours
        per_hour = gpu_rate * (1 + D(p.support_fraction)) + t.gpus * (D(p.storage_per_gpu_hour)
                                                                      + D(p.network_per_gpu_hour))
        prepaid_share = D(p.prepay_fraction) if committed > 0 else Decimal(0)
        flows: list[CashFlow] = []
        if p.setup_fee:
            flows.append(CashFlow(0, cents(D(p.setup_fee)), "setup"))
        if prepaid_share:
            flows.append(CashFlow(0, cents(gpu_rate * committed * prepaid_share), "prepayment"))
        start = lead_hours
        for month, hours in _month_hours(start, start + billed, mh):
            lo = max(start, (month - 1) * mh) - start              # hours into the term
            in_commit = max(Decimal(0), min(lo + hours, committed) - lo)
            flows.append(CashFlow(month, cents(per_hour * hours - gpu_rate * in_commit * prepaid_share),
                                  "invoice"))
        if p.egress_tb and p.egress_per_tb:
            flows.append(CashFlow(_month_of(start + used_hours, mh), cents(D(p.egress_tb) * D(p.egress_per_tb)),
                                  "egress"))
        if leftover.reuse_share and billed > used_hours:
            for month, hours in _month_hours(start + used_hours, start + billed, mh):
                flows.append(CashFlow(month, -cents(gpu_rate * hours * leftover.reuse_share), "leftover-hours"))
    return flows


def resale_net_fraction(t: Terms, age_hours: Decimal, leftover: Leftover) -> Decimal:
    """Cash from selling owned hardware of this age, as a fraction of its market price new, to 1e-6."""
    with localcontext(MONEY_CONTEXT):
        market = (1 - t.resale_decline_per_year) ** (age_hours / HOURS_PER_YEAR)
        return quantize(market * (1 - leftover.haircut) * (1 - leftover.transaction_cost), CONVERTED_QUANTUM)


def purchase_flows(t: Terms, lead_hours: Decimal, used_hours: Decimal, horizon_hours: Decimal,
                   leftover: Leftover) -> tuple[list[CashFlow], Decimal]:
    p, power, mh = t.pricing, t.power, t.months_hours
    capex = capex_total(t)
    flows = [CashFlow(0, capex, "capex")]
    if p.setup_fee:
        flows.append(CashFlow(0, cents(D(p.setup_fee)), "setup"))
    with localcontext(MONEY_CONTEXT):
        hold_end = max(horizon_hours, lead_hours + used_hours)
        run = _month_hours(lead_hours, lead_hours + used_hours, mh)
        held = _month_hours(lead_hours, hold_end, mh)
        if power.kw_per_gpu is not None and power.price_per_kwh is not None:
            per_hour = t.gpus * power.kw_per_gpu * power.utilisation * power.pue * power.price_per_kwh
            flows += [CashFlow(m, cents(per_hour * h), "power") for m, h in run]
        per_held_hour = {
            "colocation": (t.gpus * power.kw_per_gpu * D(p.colo_per_kw_month) / mh
                           if power.kw_per_gpu is not None and p.colo_per_kw_month is not None else None),
            "support": t.gpus * D(p.support_per_gpu_year) / HOURS_PER_YEAR if p.support_per_gpu_year else None,
            "staff": D(p.staff_per_year) / HOURS_PER_YEAR if p.staff_per_year else None}
        for kind, per_hour_held in per_held_hour.items():
            if per_hour_held is not None:
                flows += [CashFlow(m, cents(per_hour_held * h), kind) for m, h in held]
        if p.egress_tb and p.egress_per_tb:
            flows.append(CashFlow(_month_of(lead_hours + used_hours, mh),
                                  cents(D(p.egress_tb) * D(p.egress_per_tb)), "egress"))
        sold = _month_of(hold_end, mh) + leftover.months_to_sell
        fraction = resale_net_fraction(t, sold * mh - lead_hours, leftover)
        flows.append(CashFlow(sold, -cents(market_value_new(t) * fraction), "resale"))
    return flows, fraction


def discount_factor(rate: Decimal, month: int) -> Decimal:
    """(1 + rate)^(−month / 12), to 1e-6."""
    with localcontext(MONEY_CONTEXT):
        return quantize((1 + rate) ** (Decimal(-month) / 12), CONVERTED_QUANTUM)


def present_value(flows: Iterable[CashFlow], rate: Decimal) -> Decimal:
    return money_sum(cents(f.amount * discount_factor(rate, f.month)) for f in flows)


def peak_cash_out(flows: Iterable[CashFlow]) -> Decimal:
    """The largest cumulative net cash out at the end of any month (0 when never out)."""
    by_month: dict[int, Decimal] = {}
    for f in flows:
        by_month[f.month] = by_month.get(f.month, Decimal(0)) + f.amount
    running, peak = Decimal(0), Decimal(0)
    for month in sorted(by_month):
        running += by_month[month]
        peak = max(peak, running)
    return peak


def leftover_of(t: Terms) -> Leftover:
    """What the leftover value assumes, from the resolved terms."""
    return Leftover(haircut=t.resale_haircut, transaction_cost=t.resale_transaction_cost,
                    months_to_sell=t.months_to_sell, reuse_share=t.reuse_share)


def cash_summary(t: Terms, lead_time_days: float, used_hours: Decimal, horizon_hours: Decimal | None = None,
                 leftover: Leftover | None = None) -> CashSummary:
    """The bid's dated cash over the horizon (the terms' own unless given: the quote's, or the
    bid's commitment or run when that ends later), its nominal total, present value and cash needs."""
    leftover = leftover_of(t) if leftover is None else leftover
    with localcontext(MONEY_CONTEXT):
        lead_hours = D(lead_time_days) * 24
        horizon_hours = max(t.horizon_hours if horizon_hours is None else horizon_hours,
                            commitment_end_hours(t, lead_time_days, used_hours))
    if t.pricing.kind == "rental":
        flows, fraction = rental_flows(t, lead_hours, used_hours, leftover), None
    else:
        flows, fraction = purchase_flows(t, lead_hours, used_hours, horizon_hours, leftover)
    tax = t.tax
    if tax is not None:                  # economics.tax: duty, VAT and the tax shield as more flows
        life = t.life_hours if t.pricing.kind == "purchase" else None
        flows += [CashFlow(f.month, f.amount, f.kind) for f in bid_tax_flows(
            flows, tax, t.months_hours, lead_hours, max(horizon_hours, lead_hours + used_hours), life)]
    ordered = tuple(sorted(flows, key=lambda f: f.month))
    return CashSummary(
        horizon_months=horizon_months(horizon_hours, t.months_hours), cost_of_capital=t.cost_of_capital,
        flows=ordered, nominal_total=money_sum(f.amount for f in ordered),
        present_value=present_value(ordered, t.cost_of_capital),
        upfront_cash=money_sum(f.amount for f in ordered if f.month == 0 and f.kind in UPFRONT_KINDS),
        peak_cash_out=peak_cash_out(ordered), resale_fraction=fraction)


# --- the same present value in floats, over arrays of hours (Monte Carlo only, never reported) ---

def _span_pv(lo: Any, hi: Any, months: Any, mh: float, factors: Any) -> Any:
    """Σ over month-end invoices of the hours of (lo, hi] in each month × that month's discount
    factor, per sample; the last month of the grid takes whatever runs past it."""
    import numpy as np

    lo, hi = np.asarray(lo, dtype=float)[..., None], np.asarray(hi, dtype=float)[..., None]
    upper = np.where(months == months[-1], np.inf, months * mh)
    hours = np.clip(np.minimum(hi, upper) - np.maximum(lo, (months - 1) * mh), 0.0, None)
    return (hours * factors).sum(axis=-1)


def present_value_float(t: Terms, used_hours: Any, price_scale: Any = 1.0, power_scale: Any = 1.0,
                        lead_hours: float = 0.0, rates: DrawnRates = NO_DRAWS) -> Any:
    """``cash_summary(...).present_value`` in floats for arrays of hours used and of price and
    power scales (the band's samples): the same flows, months and discount factors, without cents.
    ``rates``: per-sample scales of the cost of capital and of the resale decline and haircut."""
    import numpy as np

    mh = float(t.months_hours)
    rate = np.asarray(float(t.cost_of_capital) * np.asarray(rates.cost_of_capital, dtype=float))
    used = np.asarray(used_hours, dtype=float)
    billed = np.maximum(used, float(t.min_commit_hours)) if t.pricing.kind == "rental" else used
    hold_end = np.maximum(float(t.horizon_hours), lead_hours + used)
    last = float(np.max(hold_end if t.pricing.kind == "purchase" else lead_hours + billed))
    months = np.arange(1, min(max(1, math.ceil(last / mh)), MAX_MONTHLY_FLOWS) + 1, dtype=float)
    factors = (1.0 + rate[..., None]) ** (-months / 12.0)     # (months) or (samples, months)

    def at(month: Any) -> Any:
        return (1.0 + rate) ** (-np.asarray(month, dtype=float) / 12.0)
    p = t.pricing
    one_time = float(p.setup_fee) + float(p.egress_tb * p.egress_per_tb) * at(np.ceil((lead_hours + used) / mh))
    if p.kind == "rental":
        return _rental_pv_float(t, used, billed, lead_hours, months, factors, price_scale) + one_time
    power, total = t.power, float(capex_total(t)) * price_scale + one_time
    if power.kw_per_gpu is not None and power.price_per_kwh is not None:
        per_hour = t.gpus * float(power.kw_per_gpu * power.utilisation * power.pue * power.price_per_kwh)
        total = total + per_hour * power_scale * _span_pv(lead_hours, lead_hours + used, months, mh, factors)
    held = 0.0
    if power.kw_per_gpu is not None and p.colo_per_kw_month is not None:
        held += t.gpus * float(power.kw_per_gpu * p.colo_per_kw_month) / mh
    held += t.gpus * float(p.support_per_gpu_year or 0) / 8760.0 + float(p.staff_per_year or 0) / 8760.0
    total = total + held * _span_pv(lead_hours, hold_end, months, mh, factors)
    sold = np.ceil(hold_end / mh) + t.months_to_sell
    market = market_float(t, price_scale)
    haircut = np.clip(float(t.resale_haircut) * np.asarray(rates.resale_haircut, dtype=float), 0.0, 1.0)
    decline = np.clip(float(t.resale_decline_per_year) * np.asarray(rates.resale_decline, dtype=float), 0.0, 1.0)
    net = (1.0 - haircut) * float(1 - t.resale_transaction_cost)
    resale = market * (1.0 - decline) ** ((sold * mh - lead_hours) / 8760.0) * net
    return total - resale * at(sold)


def _rental_pv_float(t: Terms, used: Any, billed: Any, lead_hours: float, months: Any, factors: Any,
                     price_scale: Any) -> Any:
    p, mh = t.pricing, float(t.months_hours)
    gpu_rate = t.gpus * float(p.price_per_gpu_hour or 0) * float(t.price_factor) * price_scale
    per_hour = gpu_rate * (1.0 + float(p.support_fraction)) + t.gpus * float(p.storage_per_gpu_hour
                                                                             + p.network_per_gpu_hour)
    committed = float(t.min_commit_hours)
    prepaid = float(p.prepay_fraction) if committed > 0 else 0.0
    total = per_hour * _span_pv(lead_hours, lead_hours + billed, months, mh, factors)
    total = total + gpu_rate * committed * prepaid - gpu_rate * prepaid * _span_pv(
        lead_hours, lead_hours + committed, months, mh, factors)
    if t.reuse_share:
        total = total - gpu_rate * float(t.reuse_share) * _span_pv(lead_hours + used, lead_hours + billed,
                                                                 months, mh, factors)
    return total


__all__ = ["CashFlow", "CashSummary", "Leftover", "cash_summary", "commitment_end_hours",
           "default_horizon_hours", "discount_factor", "horizon_months", "leftover_of", "peak_cash_out",
           "present_value", "present_value_float", "resale_net_fraction"]
