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

Each line's parts are written once, in ``cost_rules``; here they are read in Decimal (the lines),
in ``cost_float`` in floats (the Monte Carlo band), and the workbook writes them as formulas.

Physics (hours, kW) enters money once, through ``money.D`` at this boundary. Hours are
rounded UP to 0.01 h (36 s) before they are billed, so quantities have few digits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from decimal import ROUND_CEILING, Decimal, localcontext
from typing import Any, Callable, Iterable

from procure.economics.cost_rules import CAPEX_ITEMS, CURRENCY, PAID_LINES, Node, Rule, Term, decimal_parts, rule
from procure.economics.inputs import Assumptions, Pricing
from procure.economics.tax import Tax
from procure.money import CONVERTED_QUANTUM, MONEY_CONTEXT, D, cents, money_sum, quantize, rate

BASES = ("present_value", "run", "commitment")
DEFAULT_BASIS = "present_value"
COMMITTED_BASES = ("present_value", "commitment")   # bill a reservation's whole commitment
HOURS_PER_YEAR = Decimal(8760)
HOUR_QUANTUM = Decimal("0.01")
DEFAULT_PUE = Decimal(1)  # IT energy only, when neither the book nor the workload gives a PUE
CAPEX_KEYS = tuple(key for key, *_ in CAPEX_ITEMS)


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
    return CostLine(key, label, quantity, unit, rate, line_amount(quantity, rate, factors.values(), divisor),
                    formula, factors, divisor)


def line_amount(quantity: Decimal, rate: Decimal, factors: Iterable[Decimal], divisor: Decimal) -> Decimal:
    """cents(quantity × rate × Π factors / divisor), multiplied in this order."""
    with localcontext(MONEY_CONTEXT):
        value = quantity * rate
        for factor in factors:
            value *= factor
        value /= divisor
    return cents(value)


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

    @cached_property
    def capex(self) -> Decimal:
        """``capex_total``, worked out once (the band, the cash view and the lines all ask)."""
        bought = _DecimalTerms(self, Decimal(0), "commitment")
        return money_sum([bought.amount(rule(key, "bought")) for key in _capex_keys(self.pricing)])

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


# --- the lines: which rules a bid has, and their terms in Decimal ----------------------------

def line_plan(t: Terms, basis: str, used_hours: Decimal | None = None) -> list[Rule]:
    """The rules of this bid's lines on ``basis``, in the order they are listed. The idle
    commitment is planned wherever the hours used may fall short of it (``used_hours`` given:
    only where they do)."""
    check_basis(basis)
    p, rules = t.pricing, list[Rule]()
    if p.kind == "rental":
        rules.append(rule("gpu_hours"))
        if basis in COMMITTED_BASES and t.min_commit_hours > 0 and (used_hours is None or used_hours < t.min_commit_hours):
            rules.append(rule("idle_commitment"))
        rules += [rule(key) for key, price in (("storage", p.storage_per_gpu_hour),
                                               ("network", p.network_per_gpu_hour)) if price]
        rules += [rule("support")] if p.support_fraction else []
        rules += [rule("prepay_financing")] if basis == "commitment" and p.prepay_fraction else []
    else:
        owned = "bought" if basis == "commitment" else "depreciation"
        rules += [rule(key, owned) for key in _capex_keys(p)]
        rules += [rule("financing")] if t.cost_of_capital else []
        if t.power.kw_per_gpu is not None:
            rules += [rule("power")] if t.power.price_per_kwh is not None else []
            rules += [rule("colocation")] if p.colo_per_kw_month is not None else []
        rules += [rule("support", "per_gpu_year")] if p.support_per_gpu_year else []
        rules += [rule("staff")] if p.staff_per_year else []
        rules += [rule("resale")] if basis == "commitment" else []
    rules += [rule("setup")] if p.setup_fee else []
    rules += [rule("egress")] if p.egress_tb and p.egress_per_tb else []
    return rules


def _capex_keys(p: Pricing) -> list[str]:
    """The capital items a purchase has: the GPUs always, the rest where priced."""
    priced = {"capex": True, "node_capex": bool(p.capex_per_node),
              "network_capex": bool(p.network_capex_per_gpu), "fabric_capex": bool(p.network_capex)}
    return [key for key, *_ in CAPEX_ITEMS if priced[key]]


class _DecimalTerms:
    """The terms of one bid in Decimal, for the hours used on one basis; ``paid_amount`` sums the
    lines already made."""

    def __init__(self, t: Terms, used_hours: Decimal, basis: str) -> None:
        self.t, self.used, self.basis = t, used_hours, basis
        self.made: list[CostLine] = []
        self.known: dict[str, Decimal | None] = {}

    def __call__(self, name: str) -> Decimal:
        value = self.get(name)
        if value is None:
            raise ValueError(f"cost term {name!r} has no value for this bid")
        return value

    def get(self, name: str) -> Decimal | None:
        """The term's value (None: the bid has no such term), each worked out once; the bill so
        far (``paid_amount``) every time, as lines are made."""
        if name == "paid_amount":
            return money_sum(line.amount for line in self.made if line.key in PAID_LINES)
        if name not in self.known:
            of_hours = _DECIMAL_TERMS.get(name)
            self.known[name] = of_hours(self) if of_hours else _d(TERM_ON_BID[name](self.t))
        return self.known[name]

    def line(self, r: Rule) -> CostLine:
        parts = decimal_parts(r, self)
        unit = self.t.pricing.currency if r.unit == CURRENCY else r.unit
        made = make_line(r.key, r.label, parts.quantity, unit, parts.rate, parts.formula, dict(parts.factors),
                         Decimal(1) if parts.divisor is None else parts.divisor)
        self.made.append(made)
        return made

    def amount(self, r: Rule) -> Decimal:
        """The rule's amount to the cent, without the line (an optional factor left in is 1: no cent moves)."""
        quantity, rate, *factors = [self(node.name) if type(node) is Term else self.evaluate(node) for node in r.members]
        return line_amount(quantity, rate, factors, Decimal(1) if r.divisor is None else self.evaluate(r.divisor))

    def evaluate(self, node: Node) -> Decimal:
        with localcontext(MONEY_CONTEXT):
            value: Decimal = node.evaluate(self, Decimal)
        return value

    @property
    def billed(self) -> Decimal:
        return billed_hours(self.t, self.used, self.basis)


def _d(value: Any) -> Decimal | None:
    return None if value is None else D(value)


# where each term is read on the bid's terms (both readers read it there); the terms of the hours are below
TERM_ON_BID = {name: attrgetter(path) for name, path in {
    "gpus": "gpus", "nodes": "nodes", "price_per_gpu_hour": "pricing.price_per_gpu_hour",
    "discount_factor": "price_factor", "storage_per_gpu_hour": "pricing.storage_per_gpu_hour",
    "network_per_gpu_hour": "pricing.network_per_gpu_hour", "support_fraction": "pricing.support_fraction",
    "prepay_fraction": "pricing.prepay_fraction", "cost_of_capital": "cost_of_capital",
    "setup_fee": "pricing.setup_fee", "egress_tb": "pricing.egress_tb", "egress_per_tb": "pricing.egress_per_tb",
    "capex_per_gpu": "pricing.capex_per_gpu", "capex_per_node": "pricing.capex_per_node",
    "network_capex_per_gpu": "pricing.network_capex_per_gpu", "network_capex": "pricing.network_capex",
    "capex_total": "capex", "depreciable_fraction": "depreciable_fraction", "life_hours": "life_hours",
    "kw_per_gpu": "power.kw_per_gpu", "utilisation": "power.utilisation", "pue": "power.pue",
    "power_per_kwh": "power.price_per_kwh", "colo_per_kw_month": "pricing.colo_per_kw_month",
    "months_hours": "months_hours", "support_per_gpu_year": "pricing.support_per_gpu_year",
    "staff_per_year": "pricing.staff_per_year"}.items()}

_DECIMAL_TERMS: dict[str, Callable[[_DecimalTerms], Decimal | None]] = {
    "used_hours": lambda e: e.used,
    "billed_hours": lambda e: e.billed,
    "idle_hours": lambda e: e.billed - e.used,
    "depreciated_hours": lambda e: min(e.used, e.t.life_hours),
    "market_value": lambda e: market_value_new(e.t),
    "resale_fraction": lambda e: resale_fraction(e.t, e.used),
}


def cost_lines(t: Terms, used_hours: Decimal, basis: str = DEFAULT_BASIS) -> list[CostLine]:
    """Every line of the bid on ``basis``, each its rule applied to the bid's terms."""
    decimal_terms = _DecimalTerms(t, used_hours, basis)
    return [decimal_terms.line(r) for r in line_plan(t, basis, used_hours)]


# --- purchase --------------------------------------------------------------------------------

def capex_total(t: Terms) -> Decimal:
    """The upfront capex: every capital item bought outright, to the cent."""
    return t.capex


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


def resale_fraction(t: Terms, used_hours: Decimal) -> Decimal:
    """Cash from selling at the end of the run as a fraction of the market price new: (1 − decline)^years × (1 −
    haircut) × (1 − transaction cost), to 1e-6 (the used market's discount and the cost of selling
    are paid however short the run)."""
    with localcontext(MONEY_CONTEXT):
        years = used_hours / HOURS_PER_YEAR
        net = (1 - t.resale_haircut) * (1 - t.resale_transaction_cost)
        return quantize((1 - t.resale_decline_per_year) ** years * net, CONVERTED_QUANTUM)


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


__all__ = ["BASES", "COMMITTED_BASES", "DEFAULT_BASIS", "CostLine", "PowerBasis", "Terms", "billed_hours", "book_value_left",
           "capex_total", "cost_lines", "cost_notes", "line_plan", "energy_mwh", "hours_from_seconds", "make_line",
           "TERM_ON_BID", "market_reference", "market_value_new", "missing_price_reason", "per_million_tokens", "power_basis", "resale_fraction", "terms",
           "total_cost", "upfront_capex"]
