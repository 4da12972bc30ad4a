"""The Cost lines sheet: every line of every bid, as quoted (Base) and with the what-ifs (Scenario).

Each line follows the economics' one rule, ``amount = ROUND(quantity × rate × factors / divisor,
2)``, and each of its parts is a formula over the Model's named cells and the inputs: the
economics' own rule for the line (``economics.cost_rules``), each term read from its cell. A line the
workbook does not know how to rebuild is written with the document's figures as values (the
README's check lists it), so an unknown line never breaks the totals.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Optional

from procure.document import QuoteDocument
from procure.document.bid import BidResult, CostLine
from procure.economics.cost_rules import PAID_LINES, rule_carried, parts as cost_rule_parts
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


# where a cost term lives in the workbook: an input of the bid, a global input, else the bid's Model cell
BID_INPUTS = ("gpus", "support_fraction", "prepay_fraction", "egress_tb")
GLOBAL_INPUTS = {"utilisation": "gpu_utilisation_power", "months_hours": "months_hours"}


def _term(c: LineContext, name: str) -> Expr:
    if name == "paid_amount":
        return _paid(c)
    if name in BID_INPUTS:
        return c.inp(name)
    if name in GLOBAL_INPUTS:
        return c.g(GLOBAL_INPUTS[name])
    return c.m(name)


def _paid(c: LineContext) -> Expr:
    """The GPU-hours bill of this block: the amounts of its paid lines (used hours, and the idle
    commitment where there is one)."""
    cells = [c.cell(key, A) for key in PAID_LINES if key in c.earlier]
    if not cells:
        raise Missing(PAID_LINES[0])
    total = cells[0]
    for cell in cells[1:]:
        total = total + cell
    return total


def rule_parts(c: LineContext, key: str, factor_names: set[str]) -> Parts | None:
    """A line's parts as formulas: the economics' rule for a line of ``key`` carrying these
    factors, each term read from its cell; None when no rule fits (the line is written as given)."""
    found = rule_carried(key, factor_names)
    if found is None:
        return None
    p = cost_rule_parts(found, lambda name: _term(c, name), Num, lambda f: f.name in factor_names)
    factors = [value for _, value in p.factors]
    return Parts(p.quantity, p.rate, product(factors) if factors else None, p.divisor)


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
    parts: Parts | None = None
    try:
        parts = rule_parts(c, key, set(line.factors))
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
    return not isinstance(parts, _Given)


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
