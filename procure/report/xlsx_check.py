"""The workbook checks its own result before it is written: every figure its formulas compute is
compared with the result document (money to the cent, ranks exactly, floats at the document's
six significant digits). The README sheet prints the outcome, so a reader knows whether the
live model reproduces the report they were sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Callable, Optional, Union

from procure.document import QuoteDocument
from procure.document.bid import BasisCost, BidResult, Cash, CostLine, TimeToTarget
from procure.money import D
from procure.report.xlsx_cells import Book
from procure.report.xlsx_formula import Scalar, XlError
from procure.report.xlsx_inputs import Names
from procure.report.xlsx_lines import LINES_SHEET, A, Blocks, Q, R, cost_bases
from procure.report.xlsx_chain import Chain
from procure.report.xlsx_cash import cash_name
from procure.report.xlsx_summary import SUMMARY_SHEET, Layout, summary_layout

FLOAT_REL_TOL = Decimal("5e-6")      # half a unit in the sixth significant digit
MFU_REL_TOL = Decimal("2e-5")        # MFU is rebuilt from model FLOPs kept at six digits
REAL_RUN_REL_TOL = Decimal("2e-5")   # the model's days and the pace, each kept at six digits
RATE_REL_TOL = Decimal("1e-15")      # converted rates: 28 digits in the document, 34 here
EXACT = Decimal(0)
# the Cash flow sheet discounts each month's net cash to the cent, the economics each flow: a cent a flow
PV_REL_TOL = Decimal("1e-6")
# cost per million tokens of a live present value: its 4 decimals may round the other way
PV_PER_MTOK_TOL = Decimal("2e-4")
Figure = Optional[Union[Decimal, float]]     # a figure of the document (None: it has none)
# (the workbook's cell, the document's field as the README names it, its value, tolerance)
CASH_FIGURES: tuple[tuple[str, str, Callable[[Cash], Figure], Decimal], ...] = (
    ("nominal_total", "nominal_total", lambda cash: cash.nominal_total, EXACT),
    ("present_value", "present_value", lambda cash: cash.present_value, PV_REL_TOL),
    ("upfront", "upfront_cash", lambda cash: cash.upfront_cash, EXACT),
    ("peak", "peak_cash_out", lambda cash: cash.peak_cash_out, EXACT))
CHAIN_FIGURES: tuple[tuple[str, str, Callable[[BidResult], Figure], Decimal], ...] = (
    ("step_time_s", "step_time_s", lambda b: b.step_time_s, FLOAT_REL_TOL),
    ("tokens_per_s", "tokens_per_s", lambda b: b.tokens_per_s, FLOAT_REL_TOL),
    ("mfu", "mfu", lambda b: b.mfu, MFU_REL_TOL),
    ("goodput", "goodput.fraction", lambda b: b.goodput.fraction if b.goodput is not None else None, FLOAT_REL_TOL),
    ("time_to_train_days", "time_to_train_days", lambda b: b.time_to_train_days, FLOAT_REL_TOL),
    # rebuilt from two six-digit figures (the model's days and the pace): three roundings
    ("real_run_days", "real_run.time_to_train_days",
     lambda b: b.real_run.time_to_train_days if b.real_run is not None else None, REAL_RUN_REL_TOL),
    ("billed_hours", "billed_hours", lambda b: b.billed_hours, EXACT),
    ("energy_mwh", "energy_mwh", lambda b: b.energy_mwh, EXACT),
    ("book_value", "residual_value", lambda b: b.residual_value, EXACT),
    ("used_hours", "used_hours", lambda b: b.used_hours, EXACT),
    ("days_to_finish", "delivery.days_to_finish",
     lambda b: b.delivery.days_to_finish if b.delivery is not None else None, FLOAT_REL_TOL),
    ("idle_hours", "idle_commitment_hours", lambda b: b.idle_commitment_hours, EXACT),
    ("capex_total", "upfront_capex", lambda b: b.upfront_capex, EXACT))
# (Summary's column, the document's field, its value) on the ranking basis
SUMMARY_FIGURES: tuple[tuple[str, str, Callable[[BidResult], Figure]], ...] = (
    ("total", "total_cost", lambda b: b.total_cost),
    ("per_mtok", "cost_per_million_tokens", lambda b: b.cost_per_million_tokens),
    ("rank", "rank", lambda b: b.rank), ("billed", "billed_hours", lambda b: b.billed_hours))
TARGET_FIGURES: tuple[tuple[str, str, Callable[[TimeToTarget], Figure]], ...] = (
    ("cost_to_target", "cost", lambda t: t.cost),
    ("cost_at_target_tokens", "cost_at_target_tokens", lambda t: t.cost_at_target_tokens))
BASIS_TOTALS: tuple[tuple[str, str, Callable[[BasisCost], Figure]], ...] = (
    ("total", "total_cost", lambda basis: basis.total_cost),
    ("per_mtok", "cost_per_million_tokens", lambda basis: basis.cost_per_million_tokens))
# per basis: the figure, and the chain cell it must equal (the run basis bills the hours used)
BASIS_FIGURES: tuple[tuple[str, dict[str, str], Callable[[BasisCost], Figure]], ...] = (
    ("billed_hours", {"run": "used_hours", "commitment": "billed_hours"}, lambda basis: basis.billed_hours),
    ("idle_commitment_hours", {"run": "", "commitment": "idle_hours"}, lambda basis: basis.idle_commitment_hours),
    ("time_value", {"run": "time_value", "commitment": "time_value"}, lambda basis: basis.time_value),
    ("resale_fraction", {"run": "", "commitment": "resale_fraction"}, lambda basis: basis.resale_fraction))
LINE_FIGURES: tuple[tuple[str, int, Callable[[CostLine], Figure], Decimal], ...] = (
    ("quantity", Q, lambda line: line.quantity, EXACT), ("rate", R, lambda line: line.rate, RATE_REL_TOL),
    ("amount", A, lambda line: line.amount, EXACT))


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


def check(book: Book, doc: QuoteDocument, chains: list[Chain], blocks: Blocks, names: Names) -> CheckResult:
    lay = summary_layout(doc)
    two_bases = lay.bases != ("",)
    checked, bad, given = 0, [], []

    def compare(figure: str, bid_id: str, got: Scalar | XlError, want: Figure, tol: Decimal) -> None:
        nonlocal checked
        checked += 1
        if not _close(got, want, tol):
            bad.append(Mismatch(figure, bid_id, str(want), _shown(got)))

    for i, chain in enumerate(chains):
        bid, bid_id = chain.bid, chain.bid.id
        for key, path, read, tol in CHAIN_FIGURES:
            want, name = read(bid), names.base(bid_id, key)
            if want is None or name not in book.names or (two_bases and key == "billed_hours"):
                continue
            compare(path, bid_id, book.value(*book.names[name]), want, tol)
        row = 1 + i
        on_pv = doc.cost_basis == "present_value"     # the Cash flow sheet's NPV: 1e-6 of the JSON
        for key, path, read in SUMMARY_FIGURES:
            if (want := read(bid)) is not None:
                tol = PV_PER_MTOK_TOL if on_pv and key == "per_mtok" else PV_REL_TOL if on_pv and key == "total" else EXACT
                compare(path, bid_id, book.value(SUMMARY_SHEET, row, lay.col(key)), want, tol)
        if (ttt := bid.time_to_target) is not None:
            for key, path, target in TARGET_FIGURES:
                if (want := target(ttt)) is not None and names.base(bid_id, key) in book.names:
                    compare(f"time_to_target {path}", bid_id, book.value(*book.names[names.base(bid_id, key)]), want,
                            PV_REL_TOL if on_pv else EXACT)
        if (cash := bid.cash) is not None:
            for key, path, flow, tol in CASH_FIGURES:
                name = cash_name(names, bid_id, f"table_{key}")
                if (want := flow(cash)) is not None and name in book.names:
                    compare(f"cash {path}", bid_id, book.value(*book.names[name]), want, tol)
        for basis, _ in cost_bases(bid):
            _check_basis(book, doc, bid, basis, row, lay, names, compare)
            block = blocks.get((bid_id, basis, "base"))
            for line, line_row, rebuilt in block.rows if block else []:
                label = f"{basis + ' ' if basis else ''}cost line {line.key}"
                if not rebuilt:
                    given.append(f"{bid_id}: {line.label or line.key}" + (f" ({basis})" if basis else ""))
                for field, col, part, tol in LINE_FIGURES:
                    compare(f"{label} {field}", bid_id, book.value(LINES_SHEET, line_row, col), part(line), tol)
    return CheckResult(checked, tuple(bad), tuple(given))


Compare = Callable[[str, str, Union[Scalar, XlError], Figure, Decimal], None]


def _check_basis(book: Book, doc: QuoteDocument, bid: BidResult, basis: str, row: int, lay: Layout, names: Names,
                 compare: Compare) -> None:
    """One cost basis of a bid: its totals on Summary and its figures in the chain."""
    costs = next((costs for name, costs in bid.cost_bases.items() if name == basis), None)
    if costs is None:
        return
    for key, path, read in BASIS_TOTALS:
        if (want := read(costs)) is not None:
            tol = EXACT if basis != "present_value" else PV_PER_MTOK_TOL if key == "per_mtok" else PV_REL_TOL
            compare(f"{basis} {path}", bid.id, book.value(SUMMARY_SHEET, row, lay.col(f"{key}:{basis}")), want, tol)
    for path, cells, read in BASIS_FIGURES:
        name = names.base(bid.id, cells.get(basis, "")) if cells.get(basis) else ""
        if (want := read(costs)) is not None and name in book.names:
            compare(f"{basis} {path}", bid.id, book.value(*book.names[name]), want, EXACT)
    ranking = costs.ranking_cost_per_million_tokens
    if basis == doc.cost_basis and "ranked" in lay.keys and ranking is not None:
        compare("ranking_cost_per_million_tokens", bid.id, book.value(SUMMARY_SHEET, row, lay.col("ranked")),
                ranking, EXACT)


def _close(got: Scalar | XlError, want: Figure, tol: Decimal) -> bool:
    if not isinstance(got, Decimal) or want is None:
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
