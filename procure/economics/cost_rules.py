"""The cost rules, written once: each line's quantity, rate, factors and divisor as a small
expression over named terms. Every line obeys ``amount = quantity × rate × Π factors / divisor``
(``cost`` rounds it to the cent).

Three readers evaluate the same tree, each with its own values for the terms:

* ``cost`` in ``Decimal`` (the lines the report prints),
* ``cost_float.total_cost_float`` in floats over arrays of drawn hours and prices (the Monte Carlo band):
  each rule as one product of terms (``float_plan``), the lines moved by the same arrays summed as
  plain numbers before they meet the arrays,
* the workbook (``report.xlsx_lines``), which reads each term from its named cell and writes the
  formula the tree describes.

What a term means is stated in ``TERMS``; which lines a bid has is decided by ``cost.line_plan``.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import cached_property
from decimal import Decimal, localcontext
from typing import Any, Callable, Mapping, Sequence, Union

from procure.money import MONEY_CONTEXT

CURRENCY = "{currency}"        # a unit: the report currency

TERMS: dict[str, str] = {
    "gpus": "GPUs of the bid",
    "nodes": "nodes: GPUs / GPUs per node, rounded up",
    "used_hours": "hours the run uses (rounded up to 0.01 h)",
    "billed_hours": "hours paid for: a reservation's whole commitment on the committed bases, else the hours used",
    "idle_hours": "billed − used hours",
    "price_per_gpu_hour": "price per GPU-hour",
    "discount_factor": "1 − the bid's discount",
    "storage_per_gpu_hour": "storage price per GPU-hour",
    "network_per_gpu_hour": "network price per GPU-hour",
    "paid_amount": "the GPU-hours bill: the amounts of the lines in PAID_LINES",
    "support_fraction": "support as a share of the GPU-hours bill",
    "prepay_fraction": "share of the bill prepaid at signing",
    "cost_of_capital": "cost of capital per year",
    "setup_fee": "one-time setup fee",
    "egress_tb": "TB moved out",
    "egress_per_tb": "price per TB moved out",
    "capex_per_gpu": "capex per GPU",
    "capex_per_node": "capex per node",
    "network_capex_per_gpu": "network capex per GPU",
    "network_capex": "the whole fabric's capex",
    "capex_total": "upfront capex: Σ of every capital item, each to the cent",
    "depreciated_hours": "hours used, at most the depreciation life",
    "depreciable_fraction": "1 − book residual",
    "life_hours": "depreciation life in hours",
    "kw_per_gpu": "IT power per GPU, kW",
    "utilisation": "average draw / maximum IT power",
    "pue": "power usage effectiveness",
    "power_per_kwh": "power price per kWh",
    "colo_per_kw_month": "colocation price per kW-month",
    "months_hours": "hours per month",
    "support_per_gpu_year": "support per GPU-year",
    "staff_per_year": "staff per year",
    "market_value": "the market's price of the same hardware new, at most the capex paid",
    "resale_fraction": "cash from selling at the end of the run, as a share of the market price new",
}
PAID_LINES = ("gpu_hours", "idle_commitment")      # what ``paid_amount`` sums, in this order


# --- the expression tree -----------------------------------------------------------------------

class Node:
    """An expression over named terms: products and quotients only (a difference, such as the
    idle hours, is a term of its own), so each rule is one product of terms."""

    def __mul__(self, other: Operand) -> Node:
        return Op("*", self, lift(other))

    def __truediv__(self, other: Operand) -> Node:
        return Op("/", self, lift(other))

    def __neg__(self) -> Node:
        return Neg(self)

    def evaluate(self, leaf: Callable[[str], Any], const: Callable[[Decimal], Any]) -> Any:
        """The value with each term read by ``leaf`` and each constant by ``const``."""
        raise NotImplementedError

    def terms(self) -> set[str]:
        raise NotImplementedError


Operand = Union[Node, int, Decimal]


@dataclass(frozen=True, eq=False)
class Term(Node):
    name: str

    def __post_init__(self) -> None:
        if self.name not in TERMS:
            raise ValueError(f"unknown cost term {self.name!r}")

    def evaluate(self, leaf: Callable[[str], Any], const: Callable[[Decimal], Any]) -> Any:
        return leaf(self.name)

    def terms(self) -> set[str]:
        return {self.name}


@dataclass(frozen=True, eq=False)
class Const(Node):
    value: Decimal

    def evaluate(self, leaf: Callable[[str], Any], const: Callable[[Decimal], Any]) -> Any:
        return const(self.value)

    def terms(self) -> set[str]:
        return set()


_OPS: dict[str, Callable[[Any, Any], Any]] = {"*": operator.mul, "/": operator.truediv}


@dataclass(frozen=True, eq=False)
class Op(Node):
    op: str
    left: Node
    right: Node

    def evaluate(self, leaf: Callable[[str], Any], const: Callable[[Decimal], Any]) -> Any:
        return _OPS[self.op](self.left.evaluate(leaf, const), self.right.evaluate(leaf, const))

    def terms(self) -> set[str]:
        return self.left.terms() | self.right.terms()


@dataclass(frozen=True, eq=False)
class Neg(Node):
    operand: Node

    def evaluate(self, leaf: Callable[[str], Any], const: Callable[[Decimal], Any]) -> Any:
        return -self.operand.evaluate(leaf, const)

    def terms(self) -> set[str]:
        return self.operand.terms()


@dataclass(frozen=True)
class Monomial:
    """A product of terms: coefficient × Π over / Π under (every rule's amount is one)."""

    coefficient: float
    over: tuple[str, ...]
    under: tuple[str, ...]

    def __mul__(self, other: Monomial) -> Monomial:
        return Monomial(self.coefficient * other.coefficient, self.over + other.over, self.under + other.under)

    def inverse(self) -> Monomial:
        return Monomial(1.0 / self.coefficient, self.under, self.over)


def monomial(node: Node) -> Monomial:
    """The node as one product of terms."""
    if isinstance(node, Term):
        return Monomial(1.0, (node.name,), ())
    if isinstance(node, Const):
        return Monomial(float(node.value), (), ())
    if isinstance(node, Neg):
        return Monomial(-1.0, (), ()) * monomial(node.operand)
    assert isinstance(node, Op)
    right = monomial(node.right)
    return monomial(node.left) * (right if node.op == "*" else right.inverse())


def lift(value: Operand) -> Node:
    return value if isinstance(value, Node) else Const(Decimal(value))


# --- the rules ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Factor:
    name: str                   # its key among the line's factors
    node: Node
    optional: bool = False      # only where it moves the amount (a discount of 0 is left out)
    words: str = ""             # what the line's formula text adds when it is there


@dataclass(frozen=True)
class Rule:
    key: str
    variant: str                # "" where the line has one rule
    label: str
    unit: str
    quantity: Node
    rate: Node
    formula: str                # the reader's words for the rule (optional factors add theirs)
    factors: tuple[Factor, ...] = ()
    divisor: Node | None = None

    @cached_property
    def members(self) -> tuple[Node, ...]:
        """What is multiplied: the quantity, the rate and every factor."""
        return (self.quantity, self.rate, *(f.node for f in self.factors))

    @cached_property
    def terms(self) -> frozenset[str]:
        """Every term the rule reads."""
        nodes = self.members + (() if self.divisor is None else (self.divisor,))
        return frozenset(name for node in nodes for name in node.terms())

    @cached_property
    def monomial(self) -> Monomial:
        """The amount as one product of terms (what the float reader multiplies)."""
        product = Monomial(1.0, (), ())
        for node in self.members:
            product = product * monomial(node)
        return product if self.divisor is None else product * monomial(self.divisor).inverse()

    def carries(self, names: set[str]) -> bool:
        """Whether a line carrying factors ``names`` follows this rule."""
        required = {f.name for f in self.factors if not f.optional}
        return required <= names <= {f.name for f in self.factors}


T = {name: Term(name) for name in TERMS}
ONE, HOURS_PER_YEAR = Const(Decimal(1)), Const(Decimal(8760))
DISCOUNT = Factor("discount_factor", T["discount_factor"], optional=True, words=" × (1 − discount)")
USED_HOURS = Factor("used_hours", T["used_hours"])

# (key, what, quantity, unit, price) of each capital item, in the order they are listed
CAPEX_ITEMS = (("capex", "Hardware", T["gpus"], "GPU", "capex_per_gpu"),
               ("node_capex", "Nodes", T["nodes"], "node", "capex_per_node"),
               ("network_capex", "Network", T["gpus"], "GPU", "network_capex_per_gpu"),
               ("fabric_capex", "Fabric", ONE, "fabric", "network_capex"))


def _capex_rules() -> list[Rule]:
    """Each capital item bought outright (the commitment basis) or depreciated for the hours used."""
    rules = []
    for key, what, quantity, unit, price in CAPEX_ITEMS:
        rules.append(Rule(key, "bought", f"{what} capex", unit, quantity, T[price], f"{unit}s × capex per {unit}"))
        rules.append(Rule(
            key, "depreciation", f"{what} depreciation", unit, quantity, T[price],
            f"{unit}s × capex per {unit} × used hours × (1 − book residual) / (life years × 8760)",
            (Factor("used_hours", T["depreciated_hours"]), Factor("depreciable_fraction", T["depreciable_fraction"])),
            T["life_hours"]))
    return rules


_RULES = (
    Rule("gpu_hours", "", "GPU-hours", "GPU-h", T["gpus"] * T["used_hours"], T["price_per_gpu_hour"],
         "gpus × hours used × price per GPU-hour", (DISCOUNT,)),
    Rule("idle_commitment", "", "Idle commitment", "GPU-h", T["gpus"] * T["idle_hours"], T["price_per_gpu_hour"],
         "gpus × (committed − used hours) × price per GPU-hour", (DISCOUNT,)),
    Rule("storage", "", "Storage", "GPU-h", T["gpus"] * T["billed_hours"], T["storage_per_gpu_hour"],
         "gpus × billed hours × storage per GPU-hour"),
    Rule("network", "", "Network", "GPU-h", T["gpus"] * T["billed_hours"], T["network_per_gpu_hour"],
         "gpus × billed hours × network per GPU-hour"),
    Rule("support", "", "Support", CURRENCY, T["paid_amount"], T["support_fraction"],
         "GPU-hours amount × support fraction"),
    Rule("prepay_financing", "", "Prepayment financing", CURRENCY, T["paid_amount"], T["cost_of_capital"],
         "GPU-hours amount × prepaid fraction × cost of capital × (billed hours / 2) / 8760",
         (Factor("prepay_fraction", T["prepay_fraction"]), Factor("held_hours", T["billed_hours"] / 2)),
         HOURS_PER_YEAR),
    Rule("setup", "", "One-time setup", "fee", ONE, T["setup_fee"], "setup fee"),
    Rule("egress", "", "Data egress", "TB", T["egress_tb"], T["egress_per_tb"], "TB moved out × price per TB"),
    *_capex_rules(),
    Rule("financing", "", "Financing", CURRENCY, T["capex_total"], T["cost_of_capital"],
         "capex × cost of capital × used hours / 8760", (USED_HOURS,), HOURS_PER_YEAR),
    Rule("power", "", "Power", "GPU-h", T["gpus"] * T["used_hours"], T["power_per_kwh"],
         "GPU-hours × IT kW per GPU × average draw × PUE × price per kWh",
         (Factor("kw_per_gpu", T["kw_per_gpu"]), Factor("utilisation", T["utilisation"]), Factor("pue", T["pue"]))),
    # colocation is priced per kW of IT load provisioned: no PUE, no average-draw factor
    Rule("colocation", "", "Colocation", "GPU", T["gpus"], T["colo_per_kw_month"],
         "gpus × IT kW per GPU × price per kW-month × used hours / hours per month",
         (Factor("kw_per_gpu", T["kw_per_gpu"]), USED_HOURS), T["months_hours"]),
    Rule("support", "per_gpu_year", "Support", "GPU", T["gpus"], T["support_per_gpu_year"],
         "gpus × support per GPU-year × used hours / 8760", (USED_HOURS,), HOURS_PER_YEAR),
    Rule("staff", "", "Staff", "team", ONE, T["staff_per_year"], "staff per year × used hours / 8760",
         (USED_HOURS,), HOURS_PER_YEAR),
    Rule("resale", "", "Resale at the end of the run", CURRENCY, T["market_value"], -T["resale_fraction"],
         "− market price new × (1 − resale decline per year)^(used hours / 8760) × (1 − haircut) × (1 − transaction cost)"),
)
RULES: dict[tuple[str, str], Rule] = {(rule.key, rule.variant): rule for rule in _RULES}


def rule(key: str, variant: str = "") -> Rule:
    return RULES[(key, variant)]


def rule_carried(key: str, factor_names: set[str]) -> Rule | None:
    """The rule a line of ``key`` carrying factors ``factor_names`` follows (the workbook's reading
    of a document line); None when no rule fits."""
    fits = [r for r in _RULES if r.key == key and r.carries(factor_names)]
    return fits[0] if len(fits) == 1 else None


# --- the readers ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Parts:
    """One line's parts in one reader's values (Decimal, float arrays or workbook formulas)."""

    quantity: Any
    rate: Any
    factors: tuple[tuple[str, Any], ...]
    divisor: Any | None
    formula: str


def parts(r: Rule, leaf: Callable[[str], Any], const: Callable[[Decimal], Any],
          keep: Callable[[Factor], bool]) -> Parts:
    """The rule's parts with terms read by ``leaf``; an optional factor is kept where ``keep`` says."""
    factors = [f for f in r.factors if not f.optional or keep(f)]
    return Parts(r.quantity.evaluate(leaf, const), r.rate.evaluate(leaf, const),
                 tuple((f.name, f.node.evaluate(leaf, const)) for f in factors),
                 None if r.divisor is None else r.divisor.evaluate(leaf, const),
                 r.formula + "".join(f.words for f in factors if f.optional))


def decimal_parts(r: Rule, leaf: Callable[[str], Decimal]) -> Parts:
    """In Decimal (the money context); an optional factor is kept where it is not 1."""
    with localcontext(MONEY_CONTEXT):
        return parts(r, leaf, lambda value: value, lambda f: f.node.evaluate(leaf, Decimal) != 1)


@dataclass(frozen=True)
class Group:
    """Lines multiplied by the same arrays: Σ coefficient × Π over / Π under of their plain
    numbers, then × Π arrays over / Π arrays under, once."""

    arrays_over: tuple[str, ...]
    arrays_under: tuple[str, ...]
    members: tuple[tuple[float, tuple[str, ...], tuple[str, ...]], ...]

    def value(self, values: Mapping[str, Any]) -> Any:
        summed: Any = 0.0
        for coefficient, over, under in self.members:
            number = coefficient
            for name in over:
                number = number * values[name]
            for name in under:
                number = number / values[name]
            summed = summed + number
        for name in self.arrays_over:
            summed = values[name] * summed
        for name in self.arrays_under:
            summed = summed / values[name]
        return summed


@dataclass(frozen=True)
class FloatPlan:
    """A bid's rules regrouped for floats over arrays of draws: the GPU-hours bill (the PAID_LINES)
    first, then every other line; each group touches its arrays once."""

    paid: tuple[Group, ...]
    rest: tuple[Group, ...]
    numbers: frozenset[str]           # the plain terms read
    arrays: frozenset[str]            # the varying terms read (the bill aside)

    def total(self, values: dict[str, Any]) -> Any:
        """Σ of the lines' amounts; ``values`` gives every term and each varying one's array."""
        total: Any = None
        for group in self.paid:
            amount = group.value(values)
            total = amount if total is None else total + amount
        values["paid_amount"] = 0.0 if total is None else total
        for group in self.rest:
            amount = group.value(values)
            total = amount if total is None else total + amount
        return 0.0 if total is None else total


def float_plan(rules: Sequence[Rule], varying: frozenset[str], moved: Mapping[str, str]) -> FloatPlan:
    """Regroup ``rules`` for floats: ``varying`` terms may be arrays (the hours, the bill, each
    draw); a ``moved`` term is multiplied by its draw (term -> the draw's name)."""
    varying = varying | {"paid_amount"}
    paid: dict[tuple[tuple[str, ...], tuple[str, ...]], list[tuple[float, tuple[str, ...], tuple[str, ...]]]] = {}
    rest: dict[tuple[tuple[str, ...], tuple[str, ...]], list[tuple[float, tuple[str, ...], tuple[str, ...]]]] = {}
    for r in rules:
        m = r.monomial
        over = m.over + tuple(moved[name] for name in m.over if name in moved)
        under = m.under + tuple(moved[name] for name in m.under if name in moved)
        key = (tuple(sorted(n for n in over if n in varying)), tuple(sorted(n for n in under if n in varying)))
        member = (m.coefficient, tuple(n for n in over if n not in varying), tuple(n for n in under if n not in varying))
        (paid if r.key in PAID_LINES else rest).setdefault(key, []).append(member)
    numbers = frozenset(n for groups in (paid, rest) for members in groups.values()
                        for _, over, under in members for n in over + under)
    arrays = frozenset(n for groups in (paid, rest) for over, under in groups for n in over + under)
    return FloatPlan(tuple(Group(*key, tuple(members)) for key, members in paid.items()),
                     tuple(Group(*key, tuple(members)) for key, members in rest.items()), numbers,
                     arrays - {"paid_amount"})


__all__ = ["CAPEX_ITEMS", "CURRENCY", "PAID_LINES", "RULES", "TERMS", "Const", "Factor", "FloatPlan", "Group", "Monomial",
           "Node", "Op", "Parts", "Rule", "Term", "decimal_parts", "float_plan", "monomial", "parts", "rule",
           "rule_carried"]
