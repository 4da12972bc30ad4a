"""The Cost lines sheet: every line of every bid, as quoted (Base) and with the what-ifs (Scenario).

Each line follows the economics' one rule, ``amount = ROUND(quantity × rate × factors / divisor,
2)``, and each of its parts is a formula over the Model's named cells and the inputs. A line the
workbook does not know how to rebuild is written with the document's figures as values (the
README's check lists it), so an unknown line never breaks the totals.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Callable, Optional

from procure.document import QuoteDocument
from procure.document.bid import BidResult, CostLine
from procure.money import D
from procure.report.xlsx_cells import FMT, INPUT_FILL, NOTE, Book, Sheet, Style, money_format, style
from procure.report.xlsx_formula import Expr, Name, Num, Ref, call, product
from procure.report.xlsx_inputs import Names
from procure.report.xlsx_chain import Chain, Missing
from procure.report.xlsx_model import ExtraRow

LINES_SHEET = "Cost lines"
HEADER = ["Bid", "Case", "Line", "Unit", "Quantity", "Rate", "Factors", "Divisor", "Amount", "How"]
Q, R, F, DV, A = 4, 5, 6, 7, 8
CASES = ("base", "scenario")
CASE_LABELS = {"base": "Base", "scenario": "Scenario", "target": "At the target tokens"}
BASES = ("run", "commitment")
CAPEX_LINES = ("capex", "node_capex", "network_capex", "fabric_capex")        # issue 12: what the job consumes, and the terms committed to, to the end of the run


def cost_bases(bid: BidResult) -> list[tuple[str, list[CostLine]]]:
    """The bid's cost lines per basis; a document without bases has one unnamed basis."""
    given = bid.cost_bases
    if given:
        return [(basis, list(given[basis].cost_lines)) for basis in BASES if basis in given]
    return [("", list(bid.cost_lines))]


def bases_of(doc: QuoteDocument) -> tuple[str, ...]:
    """The bases the workbook shows side by side ("" alone: the document has one)."""
    return BASES if any(b.cost_bases for b in doc.bids) else ("",)


@dataclass(frozen=True)
class Parts:
    quantity: Expr
    rate: Expr
    factors: Optional[Expr] = None
    divisor: Optional[Expr] = None


@dataclass
class Block:
    """The rows one bid's lines take on one basis, in one case."""

    bid: str
    basis: str
    case: str
    first: int
    last: int
    rows: list[tuple[CostLine, int, bool]]           # (document line, row, rebuilt from the chain)


@dataclass
class LineContext:
    chain: Chain
    case: str
    basis: str
    names: Names
    defined: set[str]
    earlier: dict[str, int]                           # line key -> row, in this block

    def m(self, key: str) -> Expr:
        if self.basis == "run" and key == "billed_hours":
            key = "used_hours"                        # the run basis pays for the hours used
        expr = self.chain.get(self.case, key)
        if expr is None:
            raise Missing(key)
        return expr

    def inp(self, field: str) -> Expr:
        return self._named(self.names.bid(self.chain.bid.id, field))

    def g(self, key: str) -> Expr:
        return self._named(Names.global_(key))

    def _named(self, name: str) -> Expr:
        if name not in self.defined:
            raise Missing(name)
        return Name(name)

    def cell(self, key: str, col: int) -> Expr:
        if key not in self.earlier:
            raise Missing(key)
        return Ref(LINES_SHEET, self.earlier[key], col)


Builder = Callable[[LineContext, CostLine], Parts]
HOURS_PER_YEAR = Num(Decimal(8760))          # a unit conversion: the economics' year of hours


def _discounted(c: LineContext, line: CostLine) -> Expr | None:
    return c.m("discount_factor") if "discount_factor" in line.factors else None


def _gpu_hours(c: LineContext, line: CostLine) -> Parts:
    return Parts(c.inp("gpus") * c.m("used_hours"), c.m("price_per_gpu_hour"), _discounted(c, line))


def _idle(c: LineContext, line: CostLine) -> Parts:
    return Parts(c.inp("gpus") * c.m("idle_hours"), c.m("price_per_gpu_hour"), _discounted(c, line))


def _adder(term: str) -> Builder:
    def build(c: LineContext, line: CostLine) -> Parts:
        return Parts(c.inp("gpus") * c.m("billed_hours"), c.m(term))
    return build


def _paid(c: LineContext) -> Expr:
    """The GPU-hours bill of this block: used hours, plus the idle commitment where there is one."""
    paid = c.cell("gpu_hours", A)
    return paid + c.cell("idle_commitment", A) if "idle_commitment" in c.earlier else paid


def _support(c: LineContext, line: CostLine) -> Parts:
    if c.chain.bid.pricing.kind == "purchase":
        return Parts(c.inp("gpus"), c.m("support_per_gpu_year"), c.m("used_hours"), HOURS_PER_YEAR)
    return Parts(_paid(c), c.inp("support_fraction"))


def _prepay(c: LineContext, line: CostLine) -> Parts:
    return Parts(_paid(c), c.m("cost_of_capital"), c.inp("prepay_fraction") * (c.m("billed_hours") / 2),
                 HOURS_PER_YEAR)


def _one(c: LineContext, term: str) -> Parts:
    return Parts(Num(Decimal(1)), c.m(term))


def _capex(term: str, quantity: str) -> Builder:
    """Run basis: depreciation for the hours used; commitment basis: the item bought outright."""
    def build(c: LineContext, line: CostLine) -> Parts:
        qty = Num(Decimal(1)) if not quantity else c.inp("gpus") if quantity == "gpus" else c.m(quantity)
        if line.factors:
            return Parts(qty, c.m(term), c.m("depreciated_hours") * c.m("depreciable_fraction"), c.m("life_hours"))
        return Parts(qty, c.m(term))
    return build


def _financing(c: LineContext, line: CostLine) -> Parts:
    return Parts(c.m("capex_total"), c.m("cost_of_capital"), c.m("used_hours"), HOURS_PER_YEAR)


def _power(c: LineContext, line: CostLine) -> Parts:
    return Parts(c.inp("gpus") * c.m("used_hours"), c.m("power_per_kwh"),
                 product([c.m("kw_per_gpu"), c.g("gpu_utilisation_power"), c.m("pue")]))


def _colocation(c: LineContext, line: CostLine) -> Parts:
    """Colocation is priced per kW of IT load provisioned: no PUE, no average-draw factor."""
    return Parts(c.inp("gpus"), c.m("colo_per_kw_month"), c.m("kw_per_gpu") * c.m("used_hours"), c.g("months_hours"))


def _staff(c: LineContext, line: CostLine) -> Parts:
    return Parts(Num(Decimal(1)), c.m("staff_per_year"), c.m("used_hours"), HOURS_PER_YEAR)


def _resale(c: LineContext, line: CostLine) -> Parts:
    return Parts(c.m("market_value"), -c.m("resale_fraction"))


BUILDERS: dict[str, Builder] = {
    "gpu_hours": _gpu_hours,
    "idle_commitment": _idle,
    "storage": _adder("storage_per_gpu_hour"),
    "network": _adder("network_per_gpu_hour"),
    "support": _support,
    "prepay_financing": _prepay,
    "setup": lambda c, line: _one(c, "setup_fee"),
    "egress": lambda c, line: Parts(c.inp("egress_tb"), c.m("egress_per_tb")),
    "capex": _capex("capex_per_gpu", "gpus"),
    "node_capex": _capex("capex_per_node", "nodes"),
    "network_capex": _capex("network_capex_per_gpu", "gpus"),
    "fabric_capex": _capex("network_capex", ""),
    "financing": _financing,
    "power": _power,
    "colocation": _colocation,
    "staff": _staff,
    "resale": _resale,
}


Blocks = dict[tuple[str, str, str], Block]          # (bid, basis, case) -> rows


def build_lines(book: Book, doc: QuoteDocument, chains: list[Chain], names: Names,
                defined: set[str]) -> tuple[Blocks, list[ExtraRow]]:
    """Write the Cost lines sheet; return each (bid, basis, case) block and the Model rows it implies."""
    sheet = book.sheet(LINES_SHEET)
    sheet.header(0, HEADER)
    ccy = doc.currency
    row, blocks = 1, {}
    for chain in chains:
        for basis, lines in cost_bases(chain.bid):
            if not lines:
                continue
            # a chain that stops short (a document without the inputs it needs) keeps its lines as given
            cases = (CASES if chain.feasible else CASES[:1]) + (("target",) if chain.target else ())
            for case in cases:
                block = Block(chain.bid.id, basis, case, row, row, [])
                context = LineContext(chain, case, basis, names, defined, {})
                for line in lines:
                    rebuilt = _write_line(sheet, row, line, context, ccy)
                    block.rows.append((line, row, rebuilt))
                    context.earlier.setdefault(line.key, row)
                    row += 1
                block.last = row - 1
                blocks[(block.bid, basis, case)] = block
    sheet.freeze = (1, 3)
    sheet.autofilter = (0, 0, max(row - 1, 1), len(HEADER) - 1)
    return blocks, [_book_value_row(chains, blocks)]


def _write_line(sheet: Sheet, row: int, line: CostLine, c: LineContext, ccy: str) -> bool:
    key, unit = line.key, line.unit
    sheet.put(row, 0, c.chain.bid.id)
    sheet.put(row, 1, CASE_LABELS[c.case] + (f", {c.basis} basis" if c.basis else ""))
    sheet.put(row, 2, line.label or key)
    sheet.put(row, 3, unit)
    builder = BUILDERS.get(key)
    parts: Parts | None = None
    try:
        parts = builder(c, line) if builder else None
    except Missing:
        parts = None
    rate_fmt = "0.00##%" if unit == ccy else money_format(ccy, 2, 4)
    if parts is None:
        parts = _as_given(sheet, row, line, rate_fmt)
    else:
        sheet.put(row, Q, parts.quantity, style(FMT["num2"]))
        sheet.put(row, R, parts.rate, style(rate_fmt))
        if parts.factors is not None:
            sheet.put(row, F, parts.factors, style("0.######"))
        if parts.divisor is not None:
            sheet.put(row, DV, parts.divisor, style(FMT["num2"]))
    terms: list[Expr] = [Ref(LINES_SHEET, row, Q), Ref(LINES_SHEET, row, R)]
    if parts.factors is not None:
        terms.append(Ref(LINES_SHEET, row, F))
    amount = product(terms)
    if parts.divisor is not None:
        amount = amount / Ref(LINES_SHEET, row, DV)
    sheet.put(row, A, call("ROUND", amount, 2), Style(num_format=money_format(ccy), bold=c.case == "base"))
    sheet.put(row, len(HEADER) - 1, line.formula, NOTE)
    return builder is not None and parts is not None and not isinstance(parts, _Given)


class _Given(Parts):
    """The document's own figures, for a line the workbook cannot rebuild."""


def _as_given(sheet: Sheet, row: int, line: CostLine, rate_fmt: str) -> Parts:
    factor = Decimal(1)
    for value in line.factors.values():
        factor *= D(value)
    divisor = D(line.divisor)
    given = Style(num_format=FMT["num2"], fill=INPUT_FILL)
    sheet.put(row, Q, D(line.quantity or 0), given)
    sheet.put(row, R, D(line.rate or 0), Style(num_format=rate_fmt, fill=INPUT_FILL))
    has_factors, has_divisor = bool(line.factors), divisor != 1
    if has_factors:
        sheet.put(row, F, factor, Style(num_format="0.######", fill=INPUT_FILL))
    if has_divisor:
        sheet.put(row, DV, divisor, given)
    return _Given(Num(D(line.quantity or 0)), Num(D(line.rate or 0)),
                  Num(factor) if has_factors else None, Num(divisor) if has_divisor else None)


def _book_value_row(chains: list[Chain], blocks: Blocks) -> ExtraRow:
    """A purchase's book value after the run: its capex less what the run depreciated (not in the total)."""
    cells: dict[str, Expr] = {}
    for chain in chains:
        bid_id = chain.bid.id
        block = blocks.get((bid_id, "", "base")) or blocks.get((bid_id, "run", "base"))
        if block is None or chain.bid.residual_value is None:
            continue
        capex = [r for line, r, _ in block.rows if line.key in CAPEX_LINES]
        if not capex:
            continue
        total = chain.get("base", "capex_total")
        value: Expr = total if total is not None else call("ROUND", Ref(LINES_SHEET, capex[0], Q)
                                                            * Ref(LINES_SHEET, capex[0], R), 2)
        if total is None:           # an older document: one item per line, bought at quantity × rate
            for r in capex[1:]:
                value = value + call("ROUND", Ref(LINES_SHEET, r, Q) * Ref(LINES_SHEET, r, R), 2)
        for r in capex:
            value = value - Ref(LINES_SHEET, r, A)
        cells[bid_id] = value
    return ExtraRow("book_value", "Book value left after the run (not in the total)", "{ccy}", "money2",
                    "upfront capex − the run basis' depreciation lines", cells)
