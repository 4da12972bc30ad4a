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
from procure.report.xlsx_lines import LINES_SHEET, A, Blocks, Q, R, cost_bases
from procure.report.xlsx_chain import Chain
from procure.report.xlsx_cash import cash_name
from procure.report.xlsx_summary import SUMMARY_SHEET, summary_layout

FLOAT_REL_TOL = Decimal("5e-6")      # half a unit in the sixth significant digit
MFU_REL_TOL = Decimal("2e-5")        # MFU is rebuilt from model FLOPs kept at six digits
RATE_REL_TOL = Decimal("1e-15")      # converted rates: 28 digits in the document, 34 here
EXACT = Decimal(0)
# the Cash flow sheet discounts each month's net cash to the cent, the economics each flow: a cent a flow
PV_REL_TOL = Decimal("1e-6")
# cost per million tokens of a live present value: its 4 decimals may round the other way
PV_PER_MTOK_TOL = Decimal("2e-4")
CASH_FIGURES = (("nominal_total", "nominal_total", EXACT), ("present_value", "present_value", PV_REL_TOL),
                ("upfront", "upfront_cash", EXACT), ("peak", "peak_cash_out", EXACT))
CHAIN_FIGURES = (("step_time_s", "step_time_s", FLOAT_REL_TOL), ("tokens_per_s", "tokens_per_s", FLOAT_REL_TOL),
                 ("mfu", "mfu", MFU_REL_TOL), ("goodput", "goodput.fraction", FLOAT_REL_TOL),
                 ("time_to_train_days", "time_to_train_days", FLOAT_REL_TOL), ("billed_hours", "billed_hours", EXACT),
                 ("energy_mwh", "energy_mwh", EXACT), ("book_value", "residual_value", EXACT),
                 ("used_hours", "used_hours", EXACT), ("days_to_finish", "delivery.days_to_finish", FLOAT_REL_TOL),
                 ("idle_hours", "idle_commitment_hours", EXACT), ("capex_total", "upfront_capex", EXACT))
# per basis: the figure, and the chain cell it must equal (the run basis bills the hours used)
BASIS_FIGURES = (("billed_hours", {"run": "used_hours", "commitment": "billed_hours"}),
                 ("idle_commitment_hours", {"run": "", "commitment": "idle_hours"}),
                 ("time_value", {"run": "time_value", "commitment": "time_value"}),
                 ("resale_fraction", {"run": "", "commitment": "resale_fraction"}))


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


def check(book: Book, doc: dict[str, Any], chains: list[Chain], blocks: Blocks, names: Names) -> CheckResult:
    lay = summary_layout(doc)
    two_bases = lay.bases != ("",)
    checked, bad, given = 0, [], []

    def compare(figure: str, bid_id: str, got: Scalar | XlError, want: Any, tol: Decimal) -> None:
        nonlocal checked
        checked += 1
        if not _close(got, want, tol):
            bad.append(Mismatch(figure, bid_id, str(want), _shown(got)))

    for i, chain in enumerate(chains):
        bid, bid_id = chain.bid, str(chain.bid["id"])
        for key, path, tol in CHAIN_FIGURES:
            want, name = _at(bid, path), names.base(bid_id, key)
            if want is None or name not in book.names or (two_bases and key == "billed_hours"):
                continue
            compare(path, bid_id, book.value(*book.names[name]), want, tol)
        row = 1 + i
        on_pv = doc.get("cost_basis") == "present_value"     # the Cash flow sheet's NPV: 1e-6 of the JSON
        for key, path in (("total", "total_cost"), ("per_mtok", "cost_per_million_tokens"), ("rank", "rank"),
                          ("billed", "billed_hours")):
            if bid.get(path) is not None:
                tol = PV_PER_MTOK_TOL if on_pv and key == "per_mtok" else PV_REL_TOL if on_pv and key == "total" else EXACT
                compare(path, bid_id, book.value(SUMMARY_SHEET, row, lay.col(key)), bid.get(path), tol)
        ttt = bid.get("time_to_target") or {}
        for key, path in (("cost_to_target", "cost"), ("cost_at_target_tokens", "cost_at_target_tokens")):
            if ttt.get(path) is not None and names.base(bid_id, key) in book.names:
                compare(f"time_to_target {path}", bid_id, book.value(*book.names[names.base(bid_id, key)]), ttt[path],
                        PV_REL_TOL if on_pv else EXACT)
        for key, path, tol in CASH_FIGURES:
            name = cash_name(names, bid_id, f"table_{key}")
            if (bid.get("cash") or {}).get(path) is not None and name in book.names:
                compare(f"cash {path}", bid_id, book.value(*book.names[name]), bid["cash"][path], tol)
        for basis, _ in cost_bases(bid):
            basis_doc = (bid.get("cost_bases") or {}).get(basis) or {}
            for key, path in (("total", "total_cost"), ("per_mtok", "cost_per_million_tokens")):
                if basis and basis_doc.get(path) is not None:
                    tol = EXACT if basis != "present_value" else PV_PER_MTOK_TOL if key == "per_mtok" else PV_REL_TOL
                    compare(f"{basis} {path}", bid_id, book.value(SUMMARY_SHEET, row, lay.col(f"{key}:{basis}")),
                            basis_doc[path], tol)
            for path, cells in BASIS_FIGURES:
                name = names.base(bid_id, cells.get(basis, "")) if cells.get(basis) else ""
                if basis_doc.get(path) is not None and name in book.names:
                    compare(f"{basis} {path}", bid_id, book.value(*book.names[name]), basis_doc[path], EXACT)
            if basis and basis == doc.get("cost_basis") and "ranked" in lay.keys and \
                    basis_doc.get("ranking_cost_per_million_tokens") is not None:
                compare("ranking_cost_per_million_tokens", bid_id, book.value(SUMMARY_SHEET, row, lay.col("ranked")),
                        basis_doc["ranking_cost_per_million_tokens"], EXACT)
            block = blocks.get((bid_id, basis, "base"))
            for line, line_row, rebuilt in block.rows if block else []:
                label = f"{basis + ' ' if basis else ''}cost line {line.get('key')}"
                if not rebuilt:
                    given.append(f"{bid_id}: {line.get('label') or line.get('key')}" + (f" ({basis})" if basis else ""))
                for field, col, tol in (("quantity", Q, EXACT), ("rate", R, RATE_REL_TOL), ("amount", A, EXACT)):
                    compare(f"{label} {field}", bid_id, book.value(LINES_SHEET, line_row, col), line.get(field), tol)
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
