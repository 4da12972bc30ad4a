"""The XLSX report for finance: a live model of the quote.

Inputs (every number the results depend on, named, with unit, source and as-of) feed one chain of
formulas on Model (step time to billed hours and prices), Cost lines (every line by the
economics' one rule) and Summary (totals, cost per million tokens, RANK). Each bid has a Scenario
column for what-ifs. Ratios and Time to target (``xlsx_target``) rebuild the committee's
ratios over the Step time terms and split the statistical-efficiency penalty off the days and cost
to the target. Every formula is stored with its value, computed here from the same
expression tree that writes it, and checked against the result document before writing.
Sheet names and the Summary header are a contract (docs/result-document.md, product.md).
"""

from __future__ import annotations

from datetime import date, datetime, timezone

from procure.document import QuoteDocument
from procure.report.order import ranked_bids
from procure.report.xlsx_cash import CASH_SHEET, build_cash
from procure.report.xlsx_cells import Book, fit_columns, write_xlsx
from procure.report.xlsx_check import CheckResult, check
from procure.report.xlsx_formula import Expr
from procure.report.xlsx_inputs import INPUTS_SHEET, Names, build_inputs
from procure.report.xlsx_lines import LINES_SHEET, build_lines
from procure.report.xlsx_chain import plan_chain
from procure.report.xlsx_model import MODEL_SHEET, build_model
from procure.report.xlsx_sheets import (MEASUREMENTS_SHEET, NEGOTIATION_SHEET, README_SHEET, SENSITIVITY_SHEET,
                                        SOURCES_SHEET, STEP_SHEET, measurements_sheet, negotiation_sheet, readme_sheet,
                                        sensitivity_sheet, sources_sheet, step_time_sheet, term_keys)
from procure.report.xlsx_summary import SUMMARY_SHEET, build_summary
from procure.report.xlsx_target import RATIOS_SHEET, TARGET_SHEET, ratios_sheet, target_sheet

SHEETS = [SUMMARY_SHEET, README_SHEET, INPUTS_SHEET, MODEL_SHEET, LINES_SHEET, CASH_SHEET, STEP_SHEET, RATIOS_SHEET, TARGET_SHEET,
          MEASUREMENTS_SHEET, NEGOTIATION_SHEET, SENSITIVITY_SHEET, SOURCES_SHEET]


def render_xlsx(doc: QuoteDocument) -> bytes:
    book, _ = build_book(doc)
    return write_xlsx(book, title=doc.title, stamp=_stamp(doc.as_of))


def build_book(doc: QuoteDocument) -> tuple[Book, CheckResult]:
    """The whole workbook as data, evaluated and checked (nothing written)."""
    book, names = Book(), Names()
    bids = ranked_bids(doc)
    defined = build_inputs(book, doc, bids, names)
    chains = [plan_chain(doc, bid, names, defined) for bid in bids]
    blocks, extra = build_lines(book, doc, chains, names, defined)
    build_model(book, doc, chains, names, defined, extra)
    build_summary(book, doc, chains, blocks, names, defined)
    build_cash(book, doc, chains, names, defined)
    step_time_sheet(book, chains, names)
    ratios_sheet(book, chains, names, term_keys(bids))
    target_sheet(book, doc, chains, names, blocks)
    measurements_sheet(book, bids, names)
    negotiation_sheet(book, bids, doc)
    sensitivity_sheet(book, bids, doc)
    sources_sheet(book, doc)
    result = check(book, doc, chains, blocks, names)
    readme_sheet(book, doc, result, counts(book))
    book.sheets.sort(key=lambda s: SHEETS.index(s.name))
    for sheet in book.sheets:
        if sheet.name != README_SHEET:
            fit_columns(book, sheet)
    return book, result


def counts(book: Book) -> dict[str, int]:
    formulas = sum(1 for s in book.sheets for c in s.cells.values() if isinstance(c.content, Expr))
    inputs = sum(1 for sheet, _, _ in book.names.values() if sheet == INPUTS_SHEET)
    return {"formulas": formulas, "inputs": inputs, "names": len(book.names)}


def _stamp(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
