"""The Model sheet: each bid's chain (xlsx_chain) written out in two columns, Base (as quoted) and
Scenario (the what-if cells at the top of the column; blank = as quoted). Every result cell is
named (``base_<bid>_<key>``, ``scn_<bid>_<key>``) so the Cost lines and Summary sheets read them
by name.
"""

from __future__ import annotations

from dataclasses import dataclass

from procure.document import QuoteDocument
from procure.report.xlsx_cells import (FMT, HEADER, NOTE, PLAIN, SECTION, WHATIF_FILL, Book, Sheet, Style, money_format,
                                       style)
from procure.report.xlsx_chain import (ROWS, TARGET_KEYS, Chain, Row, fx_formula, fx_name,
                                       target_name)
from procure.report.xlsx_formula import Expr
from procure.report.xlsx_inputs import Names

MODEL_SHEET = "Model"
FIRST_BID_COL = 3            # A item, B unit, C all bids, then Base | Scenario per bid
HEADER_ROWS = 2
WHATIFS = ("step_time_s", "mfu", "price", "discount")


@dataclass(frozen=True)
class ExtraRow:
    """A row another sheet adds to the Model (the book value a purchase leaves, say)."""

    key: str
    label: str
    unit: str
    num_format: str
    how: str
    cells: dict[str, Expr]                      # bid id -> base formula


def build_model(book: Book, doc: QuoteDocument, chains: list[Chain], names: Names, defined: set[str],
                extra: list[ExtraRow]) -> Sheet:
    sheet = book.sheet(MODEL_SHEET)
    ccy = doc.currency
    header = ["Item", "Unit", "All bids"]
    sheet.header(0, header)
    sheet.header(1, ["", "", ""])
    for i, chain in enumerate(chains):
        col = FIRST_BID_COL + 2 * i
        sheet.put(0, col, chain.bid.id, HEADER)
        sheet.put(0, col + 1, chain.bid.id, HEADER)
        sheet.put(1, col, "Base", Style(bold=True, fill="D9E1F2"))
        sheet.put(1, col + 1, "Scenario", Style(bold=True, fill=WHATIF_FILL))
    how_col = FIRST_BID_COL + 2 * len(chains)
    sheet.put(0, how_col, "How", HEADER)
    sheet.put(1, how_col, "", HEADER)
    row = HEADER_ROWS
    row = _pricing_row(sheet, row, chains)
    row = _whatif_rows(book, sheet, row, doc, chains, names, how_col)
    section(sheet, row, "Chain (Base: as quoted; Scenario: with the what-ifs above)", how_col)
    row += 1
    for currency in sorted(set().union(*(chain.currencies for chain in chains))):
        sheet.put(row, 0, f"FX rate, {ccy} per {currency}")
        sheet.put(row, 1, f"{ccy}/{currency}")
        sheet.put(row, 2, fx_formula(ccy, currency), style("0.00000000000"))
        sheet.put(row, how_col, "ROUND(FX report / FX quoted, to the policy's significant digits)", NOTE)
        book.define(fx_name(currency), MODEL_SHEET, row, 2)
        row += 1
    for spec in ROWS:
        if not _row_used(spec, chains):
            continue
        _write_chain_row(book, sheet, row, spec, doc, chains, names, defined, ccy, how_col)
        row += 1
    for e in extra:
        if not e.cells:
            continue
        sheet.put(row, 0, e.label)
        sheet.put(row, 1, e.unit.replace("{ccy}", ccy))
        for i, chain in enumerate(chains):
            formula = e.cells.get(chain.bid.id)
            if formula is not None:
                col = FIRST_BID_COL + 2 * i
                sheet.put(row, col, formula, style(_format(e.num_format, ccy)))
                book.define(names.base(chain.bid.id, e.key), MODEL_SHEET, row, col)
        sheet.put(row, how_col, e.how, NOTE)
        row += 1
    _target_rows(book, sheet, row, chains, names, ccy, how_col)
    sheet.freeze = (HEADER_ROWS, FIRST_BID_COL)
    sheet.max_width = 40
    return sheet


def _target_rows(book: Book, sheet: Sheet, row: int, chains: list[Chain], names: Names, ccy: str,
                 how_col: int) -> int:
    """A bid at a batch of its own: its chain again at the target tokens alone (token factor 1), which
    the Cost lines cost and Time to target reads as the cost at the target tokens."""
    if not any(chain.target for chain in chains):
        return row
    section(sheet, row, "At the target tokens alone (token factor 1): Time to target's cost at the target tokens",
            how_col)
    row += 1
    for spec in ROWS:
        if spec.key not in TARGET_KEYS or not any(("target", spec.key) in ch.formulas for ch in chains):
            continue
        sheet.put(row, 0, f"{spec.label}, at the target tokens")
        sheet.put(row, 1, spec.unit.replace("{ccy}", ccy))
        for i, chain in enumerate(chains):
            formula = chain.formulas.get(("target", spec.key))
            if formula is not None:
                col = FIRST_BID_COL + 2 * i
                sheet.put(row, col, formula, style(_format(spec.num_format, ccy)))
                book.define(target_name(names, chain.bid.id, spec.key), MODEL_SHEET, row, col)
        sheet.put(row, how_col, spec.how + " (train tokens without the token factor)", NOTE)
        row += 1
    return row


def _row_used(spec: Row, chains: list[Chain]) -> bool:
    return any(("base", spec.key) in ch.formulas for ch in chains)


def _format(num_format: str, ccy: str) -> str:
    if num_format == "money6":
        return money_format(ccy, 2, 4)
    if num_format == "money4":
        return money_format(ccy, 4)
    if num_format == "money2":
        return money_format(ccy, 2)
    return num_format


def _write_chain_row(book: Book, sheet: Sheet, row: int, spec: Row, doc: QuoteDocument, chains: list[Chain],
                     names: Names, defined: set[str], ccy: str, how_col: int) -> None:
    sheet.put(row, 0, spec.label)
    sheet.put(row, 1, spec.unit.replace("{ccy}", ccy))
    fmt = style(_format(spec.num_format, ccy))
    for i, chain in enumerate(chains):
        col = FIRST_BID_COL + 2 * i
        bid_id = chain.bid.id
        base = chain.formulas.get(("base", spec.key))
        if base is not None:
            sheet.put(row, col, base, fmt)
            book.define(names.base(bid_id, spec.key), MODEL_SHEET, row, col)
        elif spec.key == "step_time_s":
            sheet.put(row, col, "n/a", PLAIN)
        scenario = chain.formulas.get(("scenario", spec.key))
        if scenario is not None:
            sheet.put(row, col + 1, scenario, Style(num_format=fmt.num_format, bold=False))
            book.define(names.scenario(bid_id, spec.key), MODEL_SHEET, row, col + 1)
    sheet.put(row, how_col, spec.how, NOTE)


def _pricing_row(sheet: Sheet, row: int, chains: list[Chain]) -> int:
    sheet.put(row, 0, "Pricing")
    for i, chain in enumerate(chains):
        p = chain.bid.pricing
        text = " · ".join(str(x) for x in (p.kind, p.price_book or "inline", p.term) if x)
        sheet.put(row, FIRST_BID_COL + 2 * i, text, Style(italic=True, fit=False))
    return row + 1


WHATIF_LABELS = {
    "step_time_s": ("What if: step time", "s", FMT["num3"],
                    "a step time the vendor would reach; blank: as quoted"),
    "mfu": ("What if: MFU", "", FMT["pct"],
            "used when no step time is typed: step time = model FLOPs per step / (GPUs × peak × MFU)"),
    "price": ("What if: price", "quoted currency", "General",
              "per GPU-hour for a rental, capex per GPU for a purchase, in the currency it was quoted in"),
    "discount": ("What if: discount", "", FMT["pct"],
                 "taken off the price (and off a purchase's network capex), e.g. 10%"),
}


def section(sheet: Sheet, row: int, title: str, last_col: int) -> None:
    """A section title row, its band drawn across the sheet."""
    sheet.put(row, 0, title, SECTION)
    for col in range(1, last_col + 1):
        sheet.put(row, col, None, SECTION)


def _whatif_rows(book: Book, sheet: Sheet, row: int, doc: QuoteDocument, chains: list[Chain],
                 names: Names, last_col: int) -> int:
    section(sheet, row, "What if (type in the green cells of a Scenario column; blank = as quoted)", last_col)
    row += 1
    for key in WHATIFS:
        label, unit, num_format, how = WHATIF_LABELS[key]
        sheet.put(row, 0, label)
        sheet.put(row, 1, unit)
        sheet.put(row, last_col, how, NOTE)
        for i, chain in enumerate(chains):
            if "step_time_s" not in chain.base:
                continue
            col = FIRST_BID_COL + 2 * i + 1
            fmt = num_format
            if key == "price":
                fmt = money_format(chain.bid.pricing.book_currency or doc.currency, 4)
            sheet.put(row, col, None, Style(num_format=fmt, fill=WHATIF_FILL))
            book.define(names.whatif(chain.bid.id, key), MODEL_SHEET, row, col)
        row += 1
    return row

