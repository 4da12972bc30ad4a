"""The workbook's Ratios and Time to target sheets (issue 18), live formulas over other cells.

``Ratios`` computes the committee's ratios from the ``Step time`` sheet's term cells (same row
per bid as every per-bid sheet) and the effective throughput from the step time used and the
goodput of the Model chain, the GPUs and tokens per step (named inputs) and the token factor.
``Time to target`` takes the days and total cost from the Model chain and Summary (they already
count every phase and the token factor of the bid's batch), and splits off the statistical-
efficiency penalty: the main phase's train tokens × (token factor − 1), at the bid's throughput
and goodput. With workload phases the batch (and the ratios) are the main phase's. The cost at
the target tokens is the Cost lines at the target tokens alone (the Model's target rows), and the
cost to target follows the basis that ranks. A figure no formula can rebuild from the workbook's
cells (the critical batch) is a value whose source is named in the last column. Definitions:
``procure.economics.ratios``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Callable

from procure.document import QuoteDocument
from procure.document.bid import BidResult, Ratios, TimeToTarget
from procure.economics.ratios import EXPOSED_COMM_TERMS   # a constant of the definition, no computation
from procure.report.xlsx_cells import FMT, INPUT_FILL, Book, Sheet, money_format, style
from procure.report.xlsx_chain import Chain
from procure.report.xlsx_formula import Expr, Name, Num, Ref, call
from procure.report.xlsx_inputs import Names, train_tokens_expr
from procure.report.xlsx_sheets import STEP_FIRST_TERM_COL, STEP_MODELED_COL, STEP_SHEET, STEP_USED_COL
from procure.report.xlsx_lines import Blocks
from procure.report.xlsx_summary import BASIS_INPUT, SUMMARY_SHEET, Layout, case_total, summary_layout

RATIOS_SHEET = "Ratios"
TARGET_SHEET = "Time to target"
RATIOS_HEADER = ["Bid", "Bubble ratio", "Communication-to-computation", "Overlap efficiency",
                 "Exposed-communication share", "Effective tokens/s per GPU", "Exposed communication (s)",
                 "Hidden communication (s)", "Tokens per step", "Step time used (s)", "GPUs", "Goodput",
                 "Token factor", "How"]
TARGET_HEADER = ["Bid", "Global batch (tokens)", "Workload batch (tokens)", "Critical batch (tokens)", "Token factor",
                 "Token penalty", "Target tokens", "Equivalent tokens", "Penalty tokens", "Days to target",
                 "Days at target tokens", "Penalty days", "Cost to target", "Cost at target tokens",
                 "Penalty cost", "Source of the values", "Cost at target tokens on present value (from the JSON)"]
PV_AT_TARGET_COL = 16
RATIO_HOW = ("bubble ratio = bubble_s / modeled step time; communication-to-computation = (exposed + hidden) / "
             "compute_s; overlap efficiency = hidden / comm_overlappable_s; exposed share = exposed / modeled step "
             "time; effective = tokens per step / step time used / GPUs × goodput / token factor (the main phase's "
             "plan when the workload has phases).")
TARGET_HOW = ("critical batch: the statistical-efficiency law (methodology) via workload.critical_batch; days and "
              "cost to target: the Model chain and Summary (every phase); penalty: the main phase's train tokens × "
              "(token factor − 1) at the bid's throughput and goodput; cost to target: Summary's total on the basis that "
              "ranks; cost at target tokens: the Cost lines at the target tokens alone (Model: 'at the target "
              "tokens'), or the cost to target where the batch is the workload's")
NA = "n/a"
# the Step time sheet's terms the ratios read: bubble, compute, overlappable and exposed communication
NEEDED_TERMS = ("bubble_s", "compute_s", "comm_overlappable_s", "comm_exposed_s")


def _defined(book: Book, name: str) -> Name | None:
    return Name(name) if name in book.names else None


def token_factor(book: Book, names: Names, bid_id: str) -> Expr:
    """The bid's token factor: its input when its batch is its own, else exactly 1."""
    return _defined(book, names.bid(bid_id, "token_factor")) or Num(Decimal(1))


def tokens_per_step(book: Book, names: Names, bid_id: str) -> Expr:
    return (_defined(book, names.bid(bid_id, "tokens_per_step"))
            or Name(Names.global_("tokens_per_step")))


def ratios_sheet(book: Book, chains: list[Chain], names: Names, term_keys: list[str]) -> Sheet:
    """One row per bid (the row of every per-bid sheet); formulas where the document has a value."""
    sheet = book.sheet(RATIOS_SHEET)
    sheet.header(0, RATIOS_HEADER)
    term_col = {key: c for c, key in enumerate(term_keys, start=STEP_FIRST_TERM_COL)}
    for r, chain in enumerate(chains, start=1):
        bid = chain.bid
        bid_id = bid.id
        ratios = bid.ratios
        sheet.put(r, 0, bid_id)
        if _terms_present(bid) and all(k in term_col for k in NEEDED_TERMS):
            term = {key: Ref(STEP_SHEET, r, col) for key, col in term_col.items()}
            bubble, compute, overlappable, comm_exposed = (term[k] for k in NEEDED_TERMS)
            modeled = Ref(STEP_SHEET, r, STEP_MODELED_COL)
            parts = [term[k] for k in EXPOSED_COMM_TERMS if k in term]
            exposed: Expr = parts[0] if parts else Num(Decimal(0))
            for part in parts[1:]:
                exposed = exposed + part
            sheet.put(r, 6, exposed, style(FMT["num4"]))
            sheet.put(r, 7, call("MAX", overlappable - comm_exposed, 0), style(FMT["num4"]))
            cells: list[tuple[int, Expr, str, Callable[[Ratios], float | None]]] = [
                (1, bubble / modeled, FMT["pct"], lambda x: x.bubble_ratio),
                (2, (Ref(RATIOS_SHEET, r, 6) + Ref(RATIOS_SHEET, r, 7)) / compute, FMT["num2"],
                 lambda x: x.comm_to_compute),
                (3, Ref(RATIOS_SHEET, r, 7) / overlappable, FMT["pct"], lambda x: x.overlap_efficiency),
                (4, Ref(RATIOS_SHEET, r, 6) / modeled, FMT["pct"], lambda x: x.exposed_comm_share)]
            for col, expr, fmt, given in cells:
                sheet.put(r, col, NA if ratios is None or given(ratios) is None else expr, style(fmt))
        else:
            for col in (1, 2, 3, 4, 6, 7):
                sheet.put(r, col, NA)
        step = _defined(book, names.base(bid_id, "step_time_s"))
        goodput = _defined(book, names.base(bid_id, "goodput"))
        sheet.put(r, 8, tokens_per_step(book, names, bid_id), style(FMT["int"]))
        sheet.put(r, 9, Ref(STEP_SHEET, r, STEP_USED_COL) if step is not None else NA, style(FMT["num3"]))
        sheet.put(r, 10, Name(names.bid(bid_id, "gpus")), style(FMT["int"]))
        sheet.put(r, 11, goodput if goodput is not None else NA, style(FMT["pct"]))
        sheet.put(r, 12, Ref(TARGET_SHEET, r, 4), style("0.000000"))
        if ratios is None or ratios.effective_tokens_per_s_per_gpu is None or step is None or goodput is None:
            sheet.put(r, 5, NA)
        else:
            row = [Ref(RATIOS_SHEET, r, c) for c in range(8, 13)]
            sheet.put(r, 5, row[0] / row[1] / row[2] * row[3] / row[4], style(FMT["num2"]))
        sheet.put(r, 13, RATIO_HOW if r == 1 else "")
    sheet.freeze = (1, 1)
    sheet.max_width = 40
    return sheet


def _terms_present(bid: BidResult) -> bool:
    return bool(bid.step_time_terms) and bid.modeled is not None and bool(bid.modeled.step_time_s)


def target_sheet(book: Book, doc: QuoteDocument, chains: list[Chain], names: Names, blocks: Blocks) -> Sheet:
    """Time and cost to the target tokens, the statistical-efficiency penalty in its own columns."""
    sheet = book.sheet(TARGET_SHEET)
    sheet.header(0, TARGET_HEADER)
    lay = summary_layout(doc)
    for r, chain in enumerate(chains, start=1):
        bid = chain.bid
        bid_id = bid.id
        batch, ttt = bid.batch, bid.time_to_target
        ccy = bid.currency or doc.currency
        sheet.put(r, 0, bid_id)
        sheet.put(r, 1, tokens_per_step(book, names, bid_id), style(FMT["int"]))
        sheet.put(r, 2, Name(Names.global_("tokens_per_step")), style(FMT["int"]))
        critical = batch.critical_batch_tokens if batch is not None else None
        sheet.put(r, 3, critical if critical is not None else NA, style(FMT["int"], fill=INPUT_FILL))
        sheet.put(r, 4, token_factor(book, names, bid_id), style("0.000000"))
        factor = Ref(TARGET_SHEET, r, 4)
        sheet.put(r, 5, factor - 1, style("+0.0%;-0.0%;0.0%"))
        main_tokens = Name(Names.global_("train_tokens"))
        sheet.put(r, 6, train_tokens_expr(doc), style(FMT["sci"]))
        sheet.put(r, 7, Ref(TARGET_SHEET, r, 6) + main_tokens * (factor - 1), style(FMT["sci"]))
        sheet.put(r, 8, Ref(TARGET_SHEET, r, 7) - Ref(TARGET_SHEET, r, 6), style(FMT["sci"]))
        days = _defined(book, names.base(bid_id, "time_to_train_days"))
        speed = _defined(book, names.base(bid_id, "tokens_per_s"))
        goodput = _defined(book, names.base(bid_id, "goodput"))
        if ttt is not None and days is not None and speed is not None and goodput is not None:
            sheet.put(r, 9, days, style(FMT["days"]))
            sheet.put(r, 11, main_tokens * (factor - 1) / speed / goodput / 86400, style(FMT["days"]))
            sheet.put(r, 10, Ref(TARGET_SHEET, r, 9) - Ref(TARGET_SHEET, r, 11), style(FMT["days"]))
        else:
            for col in (9, 10, 11):
                sheet.put(r, col, NA)
        _costs(sheet, r, ttt, ccy, chain, lay, blocks, doc.cost_basis == "present_value")
        if ttt is not None and ttt.cost is not None and isinstance(sheet.cells[(r, COST_AT_TARGET_COL)].content, Expr):
            for key, col in (("cost_to_target", COST_TO_TARGET_COL), ("cost_at_target_tokens", COST_AT_TARGET_COL)):
                book.define(names.base(bid_id, key), TARGET_SHEET, r, col)
        sheet.put(r, 15, TARGET_HOW if r == 1 else "")
    sheet.freeze = (1, 1)
    sheet.max_width = 40
    return sheet


COST_TO_TARGET_COL, COST_AT_TARGET_COL = 12, 13


def _costs(sheet: Sheet, r: int, ttt: TimeToTarget | None, ccy: str, chain: Chain, lay: Layout, blocks: Blocks,
           present_value: bool = False) -> None:
    """Cost to target: the Summary's live total on the basis that ranks (the basis input); at the
    target tokens: the same without the token factor (the target case of the Cost lines), or the
    same cell when the bid's batch is the workload's (no penalty)."""
    if ttt is None or ttt.cost is None or "total" not in lay.keys:
        for col in (12, 13, 14):
            sheet.put(r, col, NA)
        return
    money = style(money_format(ccy))
    sheet.put(r, COST_TO_TARGET_COL, Ref(SUMMARY_SHEET, r, lay.col("total")), money)
    at_target: Expr | None = (case_total(chain, "target", lay, blocks) if chain.target
                                        else Ref(TARGET_SHEET, r, COST_TO_TARGET_COL))
    if chain.target and present_value and ttt.cost_at_target_tokens is not None and at_target is not None:
        # on present value the workbook holds no dated cash at the target tokens: the JSON's figure,
        # beside; the run and commitment bases rebuild it from the Cost lines
        sheet.put(r, PV_AT_TARGET_COL, Decimal(str(ttt.cost_at_target_tokens)), money)
        at_target = call("IF", Name(BASIS_INPUT).eq("present_value"), Ref(TARGET_SHEET, r, PV_AT_TARGET_COL),
                         at_target)
    sheet.put(r, COST_AT_TARGET_COL, at_target if at_target is not None else NA, money)
    sheet.put(r, 14, Ref(TARGET_SHEET, r, COST_TO_TARGET_COL) - Ref(TARGET_SHEET, r, COST_AT_TARGET_COL), money)
