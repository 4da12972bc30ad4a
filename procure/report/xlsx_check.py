"""The workbook checks its own result before it is written: every figure its formulas compute is
compared with the result document (money to the cent, ranks exactly, floats at the document's
six significant digits). The README sheet prints the outcome, so a reader knows whether the
live model reproduces the report they were sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from procure.money import D
from procure.report.xlsx_cells import Book
from procure.report.xlsx_formula import Scalar, XlError
from procure.report.xlsx_inputs import Names
from procure.report.xlsx_lines import LINES_SHEET, Q, R, A, Block
from procure.report.xlsx_model import Chain
from procure.report.xlsx_summary import COL, SUMMARY_SHEET

FLOAT_REL_TOL = Decimal("5e-6")      # half a unit in the sixth significant digit
MFU_REL_TOL = Decimal("2e-5")        # MFU is rebuilt from model FLOPs kept at six digits
RATE_REL_TOL = Decimal("1e-15")      # converted rates: 28 digits in the document, 34 here
EXACT = Decimal(0)
CHAIN_FIGURES = (("step_time_s", "step_time_s", FLOAT_REL_TOL), ("tokens_per_s", "tokens_per_s", FLOAT_REL_TOL),
                 ("mfu", "mfu", MFU_REL_TOL), ("goodput", "goodput.fraction", FLOAT_REL_TOL),
                 ("time_to_train_days", "time_to_train_days", FLOAT_REL_TOL), ("billed_hours", "billed_hours", EXACT),
                 ("energy_mwh", "energy_mwh", EXACT), ("book_value", "residual_value", EXACT))


@dataclass(frozen=True)
class Mismatch:
    figure: str
    bid: str
    document: str
    workbook: str


@dataclass(frozen=True)
class CheckResult:
    checked: int
    mismatches: tuple[Mismatch, ...]
    given_lines: tuple[str, ...]         # "bid: line" taken as given, not rebuilt


def check(book: Book, doc: dict[str, Any], chains: list[Chain], blocks: dict[tuple[str, str], Block],
          names: Names) -> CheckResult:
    checked, bad, given = 0, [], []
    for i, chain in enumerate(chains):
        bid, bid_id = chain.bid, str(chain.bid["id"])
        for key, path, tol in CHAIN_FIGURES:
            want = _at(bid, path)
            name = names.base(bid_id, key)
            if want is None or name not in book.names:
                continue
            checked += 1
            got = book.value(*book.names[name])
            if not _close(got, want, tol):
                bad.append(Mismatch(path, bid_id, str(want), _shown(got)))
        summary_row = 1 + i
        for column, path in (("Total cost", "total_cost"), ("per_mtok", "cost_per_million_tokens"), ("Rank", "rank")):
            want = bid.get(path)
            if want is None:
                continue
            checked += 1
            got = book.value(SUMMARY_SHEET, summary_row, COL[column])
            if not _close(got, want, EXACT):
                bad.append(Mismatch(path, bid_id, str(want), _shown(got)))
        block = blocks.get((bid_id, "base"))
        for line, row, rebuilt in block.rows if block else []:
            label = f"{line.get('key')}"
            if not rebuilt:
                given.append(f"{bid_id}: {line.get('label') or label}")
            for field, col, tol in (("quantity", Q, EXACT), ("rate", R, RATE_REL_TOL), ("amount", A, EXACT)):
                checked += 1
                got = book.value(LINES_SHEET, row, col)
                if not _close(got, line.get(field), tol):
                    bad.append(Mismatch(f"cost line {label} {field}", bid_id, str(line.get(field)), _shown(got)))
    return CheckResult(checked, tuple(bad), tuple(given))


def _at(bid: dict[str, Any], path: str) -> Any:
    value: Any = bid
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _close(got: Scalar | XlError, want: Any, tol: Decimal) -> bool:
    if not isinstance(got, Decimal) or want is None or isinstance(want, (str, bool)):
        return False
    w = D(want)
    if tol == EXACT:
        return got == w
    return abs(got - w) <= tol * max(abs(w), abs(got))


def _shown(value: Scalar | XlError) -> str:
    if isinstance(value, XlError):
        return value.code
    if isinstance(value, Decimal):
        return f"{float(value):.10g}"
    return "blank" if value is None else str(value)
