"""Cost lines in Decimal, in the report currency, on three bases that are the same for every bid.

* ``present_value`` (the default ranking basis): the bid's dated cash over the quote's horizon,
  discounted at the cost of capital (``cashflow``; its lines are built in ``bid.basis_cost``,
  one per kind of flow).
* ``run``: what this job consumes. Rented GPU-hours used; or the owned cluster's straight-line
  depreciation, financing and opex for the hours used (the rest of its life serves other work).
* ``commitment``: the terms the buyer commits to, costed to the end of the run (not cash: no
  dates, no discounting; ``cashflow`` is the cash view). A reservation's terms in full (unused
  hours are shown as an idle-commitment line); or capex plus opex plus financing minus the cash
  of selling at the end of the run (the market value of the same hardware, less the used-market
  haircut and the transaction cost).

For an on-demand rental with no minimum both bases are the same lines. Every line obeys one
rule, so a spreadsheet can rebuild it from the exposed inputs::

    amount = cents(quantity × rate × Π factors / divisor)

Physics (hours, kW) enters money once, through ``money.D`` at this boundary. Hours are
rounded UP to 0.01 h (36 s) before they are billed, so quantities have few digits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal, localcontext
from typing import Any

from procure.economics.inputs import Assumptions, Pricing
from procure.economics.tax import Tax
from procure.money import CONVERTED_QUANTUM, MONEY_CONTEXT, D, cents, money_sum, quantize, rate

BASES = ("present_value", "run", "commitment")
DEFAULT_BASIS = "present_value"
COMMITTED_BASES = ("present_value", "commitment")   # bill a reservation's whole commitment
HOURS_PER_YEAR = Decimal(8760)
HOUR_QUANTUM = Decimal("0.01")
DEFAULT_PUE = Decimal(1)  # IT energy only, when neither the book nor the workload gives a PUE
CAPEX_KEYS = ("capex", "node_capex", "network_capex", "fabric_capex")


@dataclass(frozen=True)
class CostLine:
    key: str
    label: str
    quantity: Decimal
    unit: str
    rate: Decimal
    amount: Decimal
    formula: str
    factors: dict[str, Decimal] = field(default_factory=dict)  # multiplied in, in this order
    divisor: Decimal = Decimal(1)


def make_line(key: str, label: str, quantity: Decimal, unit: str, rate: Decimal, formula: str,
              factors: dict[str, Decimal] | None = None, divisor: Decimal = Decimal(1)) -> CostLine:
    """A line whose amount is the one rule of this module applied to its own fields."""
    factors = dict(factors or {})
    with localcontext(MONEY_CONTEXT):
        value = quantity * rate
        for factor in factors.values():
            value *= factor
        value /= divisor
    return CostLine(key, label, quantity, unit, rate, cents(value), formula, factors, divisor)


# --- power -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class PowerBasis:
    """What energy and the facility lines need; resolved once from the bid and the workload."""

    kw_per_gpu: Decimal | None               # IT power per GPU; None: neither system spec nor TDP
    source: str                              # "system:<id>", "given" or "tdp"
    utilisation: Decimal                     # average draw / maximum IT power
    pue: Decimal
    pue_given: bool                          # False: the assumed rental PUE, or 1 (IT energy only)
    price_per_kwh: Decimal | None
    conflicts: tuple[str, ...] = ()          # the workload's figures the bid's own replaced (a flag names both)


def power_basis(pricing: Pricing, assumptions: Assumptions) -> PowerBasis:
    """A bid's own power price and PUE (inline, or its price book's) win over the workload's. A
    rental's PUE is its provider's: the book's, else the assumed ``rental_pue`` (the workload's
    PUE is the buyer's own facility, for purchases)."""
    workload_pue = None if pricing.kind == "rental" else assumptions.pue
    pue = pricing.pue if pricing.pue is not None else workload_pue
    pue_given = pue is not None
    if pue is None and pricing.kind == "rental":
        pue = assumptions.rental_pue
    price = pricing.power_per_kwh if pricing.power_per_kwh is not None else assumptions.power_price_per_kwh
    kw = pricing.it_kw_per_gpu
    source = pricing.power_source or ("tdp" if kw is not None else "")
    return PowerBasis(
        kw_per_gpu=kw, source=source, utilisation=D(assumptions.gpu_utilisation_power),
        pue=DEFAULT_PUE if pue is None else D(pue), pue_given=pue_given,
        price_per_kwh=None if price is None else D(price),
        conflicts=_conflicts(pricing, workload_pue, assumptions.power_price_per_kwh))


def _conflicts(pricing: Pricing, workload_pue: Any, workload_price: Any) -> tuple[str, ...]:
    """Where the bid and the workload both state a figure and they differ: both, and which is used."""
    found = []
    if pricing.power_per_kwh is not None and workload_price is not None \
            and D(pricing.power_per_kwh) != D(workload_price):
        found.append(f"power price: the bid's {_plain(pricing.power_per_kwh)} {pricing.currency}/kWh is used, "
                     f"not the workload's {_plain(workload_price)} {pricing.currency}/kWh (converted from USD)")
    if pricing.pue is not None and workload_pue is not None and D(pricing.pue) != D(workload_pue):
        found.append(f"PUE: the bid's {_plain(pricing.pue)} is used, not the workload's {_plain(workload_pue)}")
    return tuple(found)


def _plain(value: Any) -> str:
    return format(D(value).normalize(), "f")


def hours_from_seconds(seconds: float) -> Decimal:
    """Wall-clock hours as Decimal, rounded up to 0.01 h (a started hundredth is billed)."""
    with localcontext(MONEY_CONTEXT):
        return (D(seconds) / 3600).quantize(HOUR_QUANTUM, rounding=ROUND_CEILING)


def energy_mwh(gpus: int, power: PowerBasis, hours: Decimal) -> Decimal | None:
    """GPUs × IT kW × utilisation × PUE × hours, in MWh; None without any power figure."""
    if power.kw_per_gpu is None:
        return None
    with localcontext(MONEY_CONTEXT):
        return gpus * power.kw_per_gpu * power.utilisation * power.pue * hours / 1000


def missing_price_reason(pricing: Pricing) -> str | None:
    """Why this bid cannot be costed, or None when it can."""
    if pricing.kind == "rental":
        if pricing.price_per_gpu_hour is None:
            return pricing.missing_reason or "no price per GPU-hour for this accelerator and term"
        return None
    if pricing.kind == "purchase":
        if pricing.capex_per_gpu is None:
            return pricing.missing_reason or "no capex per GPU for this accelerator"
        if pricing.life_years is None or pricing.life_years <= 0:
            return pricing.missing_reason or "no depreciation life for this purchase"
        return None
    raise ValueError(f"unknown pricing kind {pricing.kind!r}")


# --- the resolved terms of one bid -------------------------------------------------------------

@dataclass(frozen=True)
class Terms:
    pricing: Pricing
    gpus: int
    power: PowerBasis
    months_hours: Decimal
    cost_of_capital: Decimal
    resale_decline_per_year: Decimal
    resale_haircut: Decimal = Decimal(0)           # used-market discount off the market value
    resale_transaction_cost: Decimal = Decimal(0)  # share of the sale spent selling
    horizon_hours: Decimal = Decimal(0)            # the quote's horizon (0: the bid's own commitment or run)
    months_to_sell: int = 0
    reuse_share: Decimal = Decimal(0)              # reserved hours left over: share of their price recovered
    tax: Tax | None = None                         # workload.tax: duty, VAT and the tax shield as dated flows

    @property
    def term_hours(self) -> Decimal:
        """A reservation's term, in hours (0 on demand)."""
        return self.pricing.min_commit_months * self.months_hours

    @property
    def min_commit_hours(self) -> Decimal:
        """Hours paid whether used or not: the committed share of the term."""
        with localcontext(MONEY_CONTEXT):
            return self.term_hours * D(self.pricing.committed_share)

    @property
    def life_hours(self) -> Decimal:
        return D(self.pricing.life_years) * HOURS_PER_YEAR

    @property
    def depreciable_fraction(self) -> Decimal:
        return 1 - D(self.pricing.residual_fraction or 0)

    @property
    def nodes(self) -> int:
        return math.ceil(self.gpus / max(self.pricing.gpus_per_node, 1))

    @property
    def price_factor(self) -> Decimal:
        return 1 - D(self.pricing.discount_fraction)


def terms(pricing: Pricing, gpus: int, assumptions: Assumptions) -> Terms:
    coc = pricing.cost_of_capital if pricing.cost_of_capital is not None else assumptions.cost_of_capital
    decline = (pricing.resale_decline_per_year if pricing.resale_decline_per_year is not None
               else assumptions.resale_decline_per_year)
    return Terms(pricing, gpus, power_basis(pricing, assumptions), D(assumptions.months_hours),
                 D(coc), D(decline), D(assumptions.resale_haircut), D(assumptions.resale_transaction_cost),
                 _horizon(assumptions), assumptions.resale_months_to_sell,
                 D(assumptions.leftover_hours_reuse_share), assumptions.tax)


def _horizon(assumptions: Assumptions) -> Decimal:
    """The quote's horizon in hours: pinned by the comparison, else ``horizon_months``, else 0
    (the bid's own commitment or run, whichever ends later)."""
    if assumptions.horizon_hours is not None:
        return D(assumptions.horizon_hours)
    with localcontext(MONEY_CONTEXT):
        return Decimal(assumptions.horizon_months or 0) * D(assumptions.months_hours)


def billed_hours(t: Terms, used_hours: Decimal, basis: str) -> Decimal:
    """Hours paid for: a reservation's whole commitment on the commitment and present-value
    bases, else the hours used."""
    check_basis(basis)
    if basis in COMMITTED_BASES and t.pricing.kind == "rental":
        return max(used_hours, t.min_commit_hours)
    return used_hours


def check_basis(basis: str) -> None:
    if basis not in BASES:
        raise ValueError(f"unknown cost basis {basis!r}; use one of {', '.join(BASES)}")


# --- rental ----------------------------------------------------------------------------------

def _gpu_hours_line(t: Terms, key: str, label: str, hours: Decimal, formula: str) -> CostLine:
    p = t.pricing
    factors = {"discount_factor": t.price_factor} if p.discount_fraction else {}
    return make_line(key, label, t.gpus * hours, "GPU-h", D(p.price_per_gpu_hour), formula, factors)


def _one_time_lines(p: Pricing) -> list[CostLine]:
    lines = []
    if p.setup_fee:
        lines.append(make_line("setup", "One-time setup", Decimal(1), "fee", D(p.setup_fee), "setup fee"))
    if p.egress_tb and p.egress_per_tb:
        lines.append(make_line("egress", "Data egress", D(p.egress_tb), "TB", D(p.egress_per_tb),
                               "TB moved out × price per TB"))
    return lines


def rental_lines(t: Terms, used_hours: Decimal, basis: str) -> list[CostLine]:
    p = t.pricing
    billed = billed_hours(t, used_hours, basis)
    used = _gpu_hours_line(t, "gpu_hours", "GPU-hours", used_hours,
                           "gpus × hours used × price per GPU-hour" + (" × (1 − discount)" if p.discount_fraction else ""))
    lines, paid = [used], [used]
    if billed > used_hours:
        idle = _gpu_hours_line(t, "idle_commitment", "Idle commitment", billed - used_hours,
                               "gpus × (committed − used hours) × price per GPU-hour"
                               + (" × (1 − discount)" if p.discount_fraction else ""))
        lines.append(idle)
        paid.append(idle)
    for key, label, per_gpu_hour in (("storage", "Storage", p.storage_per_gpu_hour),
                                     ("network", "Network", p.network_per_gpu_hour)):
        if per_gpu_hour:
            lines.append(make_line(key, label, t.gpus * billed, "GPU-h", D(per_gpu_hour),
                                   f"gpus × billed hours × {label.lower()} per GPU-hour"))
    paid_amount = money_sum(line.amount for line in paid)
    if p.support_fraction:
        lines.append(make_line("support", "Support", paid_amount, p.currency, D(p.support_fraction),
                               "GPU-hours amount × support fraction"))
    if basis == "commitment" and p.prepay_fraction:
        lines.append(make_line("prepay_financing", "Prepayment financing", paid_amount, p.currency,
                               t.cost_of_capital,
                               "GPU-hours amount × prepaid fraction × cost of capital × (billed hours / 2) / 8760",
                               {"prepay_fraction": D(p.prepay_fraction), "held_hours": billed / 2},
                               HOURS_PER_YEAR))
    return lines + _one_time_lines(p)


# --- purchase --------------------------------------------------------------------------------

def _capex_items(t: Terms) -> list[tuple[str, str, Decimal, str, Decimal]]:
    """(key, what, quantity, unit, price) of every capital item of the purchase."""
    p, items = t.pricing, []
    items.append(("capex", "Hardware", Decimal(t.gpus), "GPU", D(p.capex_per_gpu)))
    if p.capex_per_node:
        items.append(("node_capex", "Nodes", Decimal(t.nodes), "node", D(p.capex_per_node)))
    if p.network_capex_per_gpu:
        items.append(("network_capex", "Network", Decimal(t.gpus), "GPU", D(p.network_capex_per_gpu)))
    if p.network_capex:
        items.append(("fabric_capex", "Fabric", Decimal(1), "fabric", D(p.network_capex)))
    return items


def capex_total(t: Terms) -> Decimal:
    """The upfront capex: every capital item bought outright, to the cent."""
    return money_sum(cents(qty * price) for _, _, qty, _, price in _capex_items(t))


def market_reference(t: Terms) -> Decimal | None:
    """The market's price of the same hardware new, to the cent, from a purchase book's reference
    price per GPU (its share of the server included, as the books state it): the GPUs and their
    nodes at that, the network at its reference (else what was paid), a whole fabric at what was
    paid. None without a reference."""
    p = t.pricing
    if p.market_capex_per_gpu is None:
        return None
    network = p.market_network_capex_per_gpu if p.market_network_capex_per_gpu is not None \
        else p.network_capex_per_gpu
    per_gpu = D(p.market_capex_per_gpu) + D(network or 0)
    return cents(t.gpus * per_gpu) + cents(D(p.network_capex or 0))


def market_value_new(t: Terms) -> Decimal:
    """What resale is a share of: the market's price new or the capex paid, whichever is lower.
    Overpaying raises the cost and not the resale; a bargain is not assumed to resell above what
    it cost."""
    reference = market_reference(t)
    paid = capex_total(t)
    return paid if reference is None else min(reference, paid)


def _depreciation_lines(t: Terms, used_hours: Decimal) -> list[CostLine]:
    factors = {"used_hours": min(used_hours, t.life_hours), "depreciable_fraction": t.depreciable_fraction}
    return [make_line(key, f"{what} depreciation", qty, unit, price,
                      f"{unit}s × capex per {unit} × used hours × (1 − book residual) / (life years × 8760)",
                      factors, t.life_hours)
            for key, what, qty, unit, price in _capex_items(t)]


def _capex_lines(t: Terms) -> list[CostLine]:
    return [make_line(key, f"{what} capex", qty, unit, price, f"{unit}s × capex per {unit}")
            for key, what, qty, unit, price in _capex_items(t)]


def resale_fraction(t: Terms, used_hours: Decimal) -> Decimal:
    """Cash from selling at the end of the run as a fraction of the market price new: (1 − decline)^years × (1 −
    haircut) × (1 − transaction cost), to 1e-6 (the used market's discount and the cost of selling
    are paid however short the run)."""
    with localcontext(MONEY_CONTEXT):
        years = used_hours / HOURS_PER_YEAR
        net = (1 - t.resale_haircut) * (1 - t.resale_transaction_cost)
        return quantize((1 - t.resale_decline_per_year) ** years * net, CONVERTED_QUANTUM)


def _financing_line(t: Terms, used_hours: Decimal) -> CostLine:
    return make_line("financing", "Financing", capex_total(t), t.pricing.currency, t.cost_of_capital,
                     "capex × cost of capital × used hours / 8760", {"used_hours": used_hours}, HOURS_PER_YEAR)


def _facility_lines(t: Terms, used_hours: Decimal) -> list[CostLine]:
    power, p, lines = t.power, t.pricing, list[CostLine]()
    if power.kw_per_gpu is None:
        return lines
    if power.price_per_kwh is not None:
        lines.append(make_line(
            "power", "Power", t.gpus * used_hours, "GPU-h", power.price_per_kwh,
            "GPU-hours × IT kW per GPU × average draw × PUE × price per kWh",
            {"kw_per_gpu": power.kw_per_gpu, "utilisation": power.utilisation, "pue": power.pue}))
    if p.colo_per_kw_month is not None:
        # colocation is priced per kW of IT load provisioned: no PUE, no average-draw factor
        lines.append(make_line(
            "colocation", "Colocation", Decimal(t.gpus), "GPU", D(p.colo_per_kw_month),
            "gpus × IT kW per GPU × price per kW-month × used hours / hours per month",
            {"kw_per_gpu": power.kw_per_gpu, "used_hours": used_hours}, t.months_hours))
    return lines


def _people_lines(t: Terms, used_hours: Decimal) -> list[CostLine]:
    p, lines = t.pricing, list[CostLine]()
    if p.support_per_gpu_year:
        lines.append(make_line("support", "Support", Decimal(t.gpus), "GPU", D(p.support_per_gpu_year),
                               "gpus × support per GPU-year × used hours / 8760",
                               {"used_hours": used_hours}, HOURS_PER_YEAR))
    if p.staff_per_year:
        lines.append(make_line("staff", "Staff", Decimal(1), "team", D(p.staff_per_year),
                               "staff per year × used hours / 8760", {"used_hours": used_hours}, HOURS_PER_YEAR))
    return lines


def purchase_lines(t: Terms, used_hours: Decimal, basis: str) -> list[CostLine]:
    check_basis(basis)
    owned = _capex_lines(t) if basis == "commitment" else _depreciation_lines(t, used_hours)
    lines = owned
    if t.cost_of_capital:
        lines.append(_financing_line(t, used_hours))
    lines += _facility_lines(t, used_hours) + _people_lines(t, used_hours)
    if basis == "commitment":
        lines.append(make_line("resale", "Resale at the end of the run", market_value_new(t), t.pricing.currency,
                               -resale_fraction(t, used_hours),
                               "− market price new × (1 − resale decline per year)^(used hours / 8760)"
                               " × (1 − haircut) × (1 − transaction cost)"))
    return lines + _one_time_lines(t.pricing)


def cost_lines(t: Terms, used_hours: Decimal, basis: str = DEFAULT_BASIS) -> list[CostLine]:
    if t.pricing.kind == "rental":
        return rental_lines(t, used_hours, basis)
    return purchase_lines(t, used_hours, basis)


def total_cost(lines: list[CostLine]) -> Decimal:
    return money_sum(line.amount for line in lines)


def per_million_tokens(total: Decimal, train_tokens: float) -> Decimal:
    """Cost per million training tokens, to 1e-4 (``money.rate``)."""
    with localcontext(MONEY_CONTEXT):
        return rate(total / D(train_tokens) * 10**6)


def book_value_left(t: Terms, run: list[CostLine]) -> Decimal | None:
    """Purchase: book value left after this run (capex not yet depreciated by its run lines)."""
    if t.pricing.kind != "purchase":
        return None
    depreciation = money_sum(line.amount for line in run if line.key in CAPEX_KEYS)
    return capex_total(t) - depreciation


def upfront_capex(t: Terms) -> Decimal | None:
    return capex_total(t) if t.pricing.kind == "purchase" else None


def cost_notes(t: Terms) -> list[str]:
    """Caveats a reader needs when a line is absent or a default was used."""
    notes, power = [], t.power
    if t.pricing.kind == "purchase" and t.pricing.market_capex_per_gpu is None:
        notes.append("no purchase book prices this accelerator: resale is a share of the price paid, "
                     "not of a market price")
    if power.kw_per_gpu is None:
        notes.append("no system power spec or TDP: energy, power and colocation are not computed")
    elif power.source == "tdp":
        notes.append("no system power spec for this accelerator: IT power is the GPU's TDP only, "
                     "which leaves out CPUs, NICs, fans and switches")
    if power.kw_per_gpu is not None and not power.pue_given:
        notes.append(f"the provider states no PUE: energy uses the assumed PUE {power.pue} of a rented cluster"
                     if t.pricing.kind == "rental" else f"no PUE given: energy uses PUE {power.pue} (IT energy only)")
    if t.pricing.kind == "purchase" and power.kw_per_gpu is not None:
        if power.price_per_kwh is None:
            notes.append("no power price given: no power line")
        if t.pricing.colo_per_kw_month is None:
            notes.append("no colocation price given: no colocation line")
    return notes


# --- the same totals in floats, over arrays of hours (Monte Carlo only, never reported) ------

@dataclass(frozen=True)
class DrawnRates:
    """Per-sample scales of the financial terms (Monte Carlo only): each multiplies the term's own."""

    cost_of_capital: Any = 1.0
    resale_decline: Any = 1.0
    resale_haircut: Any = 1.0


NO_DRAWS = DrawnRates()     # every financial term at its own value


def total_cost_float(t: Terms, used_hours: Any, price_scale: Any = 1.0, power_scale: Any = 1.0,
                     basis: str = "run", rates: DrawnRates = DrawnRates()) -> Any:
    """The run or commitment total in floats (the present value's is ``cashflow.present_value_float``)."""
    check_basis(basis)
    if basis == "present_value":
        raise ValueError("the present value in floats is cashflow.present_value_float")
    if t.pricing.kind == "rental":
        return _rental_float(t, used_hours, price_scale, basis, rates)
    return _purchase_float(t, used_hours, price_scale, power_scale, basis, rates)


def _rental_float(t: Terms, used_hours: Any, price_scale: Any, basis: str, rates: DrawnRates) -> Any:
    import numpy as np

    p, gpus = t.pricing, t.gpus
    billed = np.maximum(used_hours, float(t.min_commit_hours)) if basis == "commitment" else used_hours
    gpu_amount = gpus * billed * float(p.price_per_gpu_hour or 0) * float(t.price_factor) * price_scale
    adders = gpus * billed * float(p.storage_per_gpu_hour + p.network_per_gpu_hour)
    total = gpu_amount * (1.0 + float(p.support_fraction)) + adders
    if basis == "commitment" and p.prepay_fraction:
        total = total + (gpu_amount * float(p.prepay_fraction * t.cost_of_capital) * rates.cost_of_capital
                         * billed / 2 / 8760.0)
    return total + _one_time_float(p)


def _one_time_float(p: Pricing) -> float:
    return float(p.setup_fee) + float(p.egress_tb * p.egress_per_tb)


def _purchase_float(t: Terms, used_hours: Any, price_scale: Any, power_scale: Any, basis: str,
                    rates: DrawnRates) -> Any:
    import numpy as np

    capex = float(capex_total(t)) * price_scale
    if basis == "commitment":
        years = used_hours / 8760.0
        haircut = np.clip(float(t.resale_haircut) * rates.resale_haircut, 0.0, 1.0)
        decline = np.clip(float(t.resale_decline_per_year) * rates.resale_decline, 0.0, 1.0)
        net = (1.0 - haircut) * float(1 - t.resale_transaction_cost)
        total = capex - market_float(t, price_scale) * (1.0 - decline) ** years * net
    else:
        life_h = float(t.life_hours)
        total = capex * float(t.depreciable_fraction) * np.minimum(used_hours, life_h) / life_h
    total = total + capex * float(t.cost_of_capital) * rates.cost_of_capital * used_hours / 8760.0
    return total + _opex_float(t, used_hours, power_scale) + _one_time_float(t.pricing)


def market_float(t: Terms, price_scale: Any = 1.0) -> Any:
    """``market_value_new`` with the capex moved by ``price_scale`` (floats, Monte Carlo only)."""
    import numpy as np

    paid = float(capex_total(t)) * price_scale
    reference = market_reference(t)
    return paid if reference is None else np.minimum(float(reference), paid)


def _opex_float(t: Terms, used_hours: Any, power_scale: Any) -> Any:
    p, gpus, power, total = t.pricing, t.gpus, t.power, 0.0
    if power.kw_per_gpu is not None:
        kw = float(power.kw_per_gpu)
        if power.price_per_kwh is not None:
            total = total + (gpus * used_hours * kw * float(power.utilisation) * float(power.pue)
                             * float(power.price_per_kwh) * power_scale)
        if p.colo_per_kw_month is not None:
            total = total + gpus * kw * float(p.colo_per_kw_month) * used_hours / float(t.months_hours)
    if p.support_per_gpu_year:
        total = total + gpus * float(p.support_per_gpu_year) * used_hours / 8760.0
    if p.staff_per_year:
        total = total + float(p.staff_per_year) * used_hours / 8760.0
    return total


__all__ = ["BASES", "COMMITTED_BASES", "DEFAULT_BASIS", "CostLine", "DrawnRates", "PowerBasis", "Terms", "billed_hours", "book_value_left",
           "capex_total", "cost_lines", "cost_notes", "energy_mwh", "hours_from_seconds", "make_line",
           "market_float", "market_reference", "market_value_new", "missing_price_reason", "per_million_tokens", "power_basis", "resale_fraction", "terms",
           "total_cost", "total_cost_float", "upfront_capex"]
