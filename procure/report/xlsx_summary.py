"""The Summary sheet (the contract: ``Bid``, ``Total cost``, ``<CCY> per million tokens``, ``Time to
train (days)``, one row per bid) and its charts.

Totals sum the bid's lines on Cost lines; cost per million tokens divides by the training tokens
(of every phase, when the workload has several);
rank is a RANK formula over a rank key (constraints missed × RANK_OFFSET + cost per million
tokens), so a changed input re-ranks the bids and a bid that misses the deadline, the cash budget
or the net-cost limit ranks after those that miss fewer, as in the document. When the document
carries the cost bases, each has its own total and cost per million tokens, and the contract
columns take the basis named by the ``in_cost_basis`` input (so finance can rank on any). The
present value is the document's figure (the dated cash is not rebuilt on this sheet). The
Scenario columns do the same over the what-if chain. Bids without a cost rank after the costed.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Collection, Final

from procure.document import QuoteDocument
from procure.document.bid import BidResult
from procure.report.xlsx_cells import FMT, PLAIN, Book, Chart, Series, Sheet, Style, money_format, style
from procure.report.xlsx_cash import cash_bids, cash_name
from procure.report.xlsx_formula import Expr, Name, Range, Ref, call, lift
from procure.report.xlsx_inputs import Names, train_tokens_expr
from procure.report.xlsx_lines import A, BASES, LINES_SHEET, Blocks, bases_of
from procure.report.xlsx_chain import Chain

SUMMARY_SHEET = "Summary"
BASIS_INPUT = "in_cost_basis"
RANK_OFFSET = 10**12         # per missed constraint, above any cost per million tokens
LIMIT_CODES = ("over-budget", "over-net-cost")    # constraints the sheet takes from the document
PV: Final = "present_value"


@dataclass(frozen=True)
class Layout:
    """Summary's columns: key -> (index, header)."""

    headers: tuple[str, ...]
    keys: tuple[str, ...]
    bases: tuple[str, ...]
    present_value: bool = False

    def col(self, key: str) -> int:
        return self.keys.index(key)


def layout(currency: str, bases: tuple[str, ...], timed: bool = False, present_value: bool = False) -> Layout:
    """``timed``: a value of time can be given, so the rank is on cost plus the value of the days."""
    per_mtok = f"{currency} per million tokens"
    ranked = [("ranked", "Ranked on (per million tokens, with the value of time)")] if timed else []
    columns = [("rank", "Rank"), ("bid", "Bid"), ("vendor", "Vendor"), ("accelerator", "Accelerator"),
               ("gpus", "GPUs"), ("step", "Step time (s)"), ("mfu", "MFU"), ("goodput", "Goodput"),
               ("days", "Time to train (days)"), ("real_days", "Time to train as published runs went (days)"),
               ("lead", "Lead time (days)"), ("finish", "Days to finish"),
               ("deadline", "Deadline (days)"), ("meets", "Meets deadline"),
               ("billed", "Billed hours"), ("total", "Total cost"), ("per_mtok", per_mtok)] + ranked
    columns += [("missed", "Constraints missed"),
                ("rank_key", "Rank key (constraints missed × 10^12 + what ranks)")]
    if present_value:
        columns += [(f"total:{PV}", "Present value: total cost"), (f"per_mtok:{PV}", f"Present value: {per_mtok}")]
    for basis in bases if bases != ("",) else ():
        title = basis.capitalize()
        columns += [(f"total:{basis}", f"{title} basis: total cost"), (f"per_mtok:{basis}", f"{title} basis: {per_mtok}")]
    columns += [("flags", "Flags (procure)"), ("scn_step", "Scenario step time (s)"),
                ("scn_days", "Scenario time to train (days)"), ("scn_finish", "Scenario days to finish"),
                ("scn_total", "Scenario total cost"),
                ("scn_per_mtok", f"Scenario {per_mtok}")]
    columns += [("scn_ranked", "Scenario ranked on")] if timed else []
    columns += [("scn_rank", "Scenario rank"), ("scn_meets", "Scenario meets deadline")]
    return Layout(tuple(h for _, h in columns), tuple(k for k, _ in columns), bases, present_value)


RECOMMENDED_FILL = "E2EFDA"      # light green: the recommended bid's row on the Summary sheet


def summary_layout(doc: QuoteDocument) -> Layout:
    timed = any(a.key == "value_of_time_per_day" for a in doc.assumptions)
    present_value = any(PV in b.cost_bases for b in doc.bids)
    return layout(doc.currency, bases_of(doc), timed, present_value)


def build_summary(book: Book, doc: QuoteDocument, chains: list[Chain], blocks: Blocks, names: Names,
                  defined: set[str]) -> Sheet:
    sheet = book.sheet(SUMMARY_SHEET)
    ccy = doc.currency
    lay = summary_layout(doc)
    sheet.header(0, list(lay.headers))
    first, last = 1, len(chains)
    deadline = Name(Names.global_("deadline_days")) if doc.workload.deadline_days is not None else None
    costed = [any((c.bid.id, b, "base") in blocks for b in lay.bases) for c in chains]
    money, rate = style(money_format(ccy)), style(money_format(ccy, 4))
    tokens = train_tokens_expr(doc)
    cash_names = {pv_name(names, c.bid.id) for c in cash_bids(chains)}   # the Cash flow sheet's
    for i, chain in enumerate(chains):
        row = first + i
        _bid_row(sheet, row, chain, lay, names, defined, deadline,
                 chain.bid.id == doc.recommendation.bid)
        for case, total_key, per_key in (("base", "total", "per_mtok"), ("scenario", "scn_total", "scn_per_mtok")):
            total = _total(sheet, row, chain, case, lay, blocks, money, rate, tokens, names, cash_names)
            if total is None:
                sheet.put(row, lay.col(total_key), "n/a")
                sheet.put(row, lay.col(per_key), "n/a")
                continue
            bold = case == "base"
            sheet.put(row, lay.col(total_key), total, money._replace(bold=bold))
            sheet.put(row, lay.col(per_key), _per_mtok(row, lay.col(total_key), tokens), rate._replace(bold=bold))
            ranked_key = "ranked" if case == "base" else "scn_ranked"
            time_value = chain.get(case, "time_value")
            if ranked_key in lay.keys and time_value is not None:
                sheet.put(row, lay.col(ranked_key), _per_mtok(row, lay.col(total_key), tokens, time_value), rate)
        per_col = lay.col("ranked" if "ranked" in lay.keys else "per_mtok")
        missed = _missed(chain.bid, row, lay, deadline is not None)
        sheet.put(row, lay.col("missed"), missed, style(FMT["int"]))
        if costed[i]:
            sheet.put(row, lay.col("rank_key"), Ref(SUMMARY_SHEET, row, lay.col("missed")) * RANK_OFFSET
                      + Ref(SUMMARY_SHEET, row, per_col), rate)
        for rank_key, per_key in (("rank", "rank_key"),
                                  ("scn_rank", "scn_ranked" if "scn_ranked" in lay.keys else "scn_per_mtok")):
            sheet.put(row, lay.col(rank_key), _rank(row, lay.col(per_key), first, last, costed, i),
                      style(FMT["int"], bold=True))
    sheet.freeze = (1, 2)
    sheet.autofilter = (0, 0, last, len(lay.headers) - 1)
    _charts(sheet, doc, lay, first, last, deadline is not None, any("days_to_finish" in c.base for c in chains))
    return sheet


def _missed(bid: BidResult, row: int, lay: Layout, has_deadline: bool) -> Expr:
    """Hard constraints the bid misses: the deadline by formula where the sheet has one (its lead
    time and time to train move it), else as the document found it; the cash budget and the
    net-cost limit as the document found them."""
    formula = has_deadline and bid.time_to_train_days is not None
    codes = LIMIT_CODES if formula else LIMIT_CODES + ("misses-deadline",)
    limits: Expr = lift(sum(1 for f in bid.flags if f.code in codes))
    if not formula:
        return limits
    return call("IF", Ref(SUMMARY_SHEET, row, lay.col("meets")).eq("no"), 1, 0) + limits


def _per_mtok(row: int, total_col: int, tokens: Expr, plus: Expr | None = None) -> Expr:
    """ROUND(total / tokens × 10^6, 4); ``tokens``: every phase's (train_tokens_expr)."""
    total: Expr = Ref(SUMMARY_SHEET, row, total_col)
    if plus is not None:
        total = total + plus
    return call("ROUND", total / tokens * 1000000, 4)


def pv_name(names: Names, bid_id: str) -> str:
    """The defined name of a bid's present value on the Cash flow sheet."""
    return cash_name(names, bid_id, "present_value")


def _total(sheet: Sheet, row: int, chain: Chain, case: str, lay: Layout, blocks: Blocks, money: Style,
           rate: Style, tokens: Expr, names: Names, book_names: Collection[str]) -> Expr | None:
    """The total on the ranking basis; with two bases, each gets its columns and the input picks one."""
    bid_id = chain.bid.id
    sums: dict[str, Expr] = {}
    for basis in lay.bases:
        block = blocks.get((bid_id, basis, case))
        if block is not None:
            sums[basis] = call("SUM", Range(LINES_SHEET, block.first, A, block.last, A))
    if not sums:
        return None
    if lay.bases == ("",):
        return next(iter(sums.values()))          # the document's one unnamed basis
    pv_basis = chain.bid.cost_bases.get(PV)
    pv = pv_basis.total_cost if pv_basis is not None else None
    pv_cell: Expr | None = None
    if lay.present_value and pv is not None:
        col = lay.col(f"total:{PV}")
        if case == "base":      # live: the Cash flow sheet's discounted total (its own check: 1e-6 of the JSON)
            live = pv_name(names, bid_id)
            sheet.put(row, col, Name(live) if live in book_names else Decimal(str(pv)), money)
            sheet.put(row, lay.col(f"per_mtok:{PV}"), _per_mtok(row, col, tokens), rate)
        pv_cell = Ref(SUMMARY_SHEET, row, col)
    cells: dict[str, Expr] = {}
    for basis, total in sums.items():
        if case == "base":          # each basis' own total has a column; the scenario picks directly
            col = lay.col(f"total:{basis}")
            sheet.put(row, col, total, money)
            sheet.put(row, lay.col(f"per_mtok:{basis}"), _per_mtok(row, col, tokens), rate)
            total = Ref(SUMMARY_SHEET, row, col)
        cells[basis] = total
    picked = next(iter(cells.values())) if len(cells) == 1 else _pick_basis(cells)
    return picked if pv_cell is None else call("IF", Name(BASIS_INPUT).eq(PV), pv_cell, picked)


def case_total(chain: Chain, case: str, lay: Layout, blocks: Blocks) -> Expr | None:
    """The total of one case on the ranking basis (the basis input picks it when there are two),
    summed straight from Cost lines: the cost at the target tokens, say."""
    bid_id = chain.bid.id
    sums = {basis: call("SUM", Range(LINES_SHEET, block.first, A, block.last, A))
            for basis in lay.bases if (block := blocks.get((bid_id, basis, case))) is not None}
    if not sums:
        return None
    if len(sums) == 1:
        return next(iter(sums.values()))
    return _pick_basis(sums)


def _pick_basis(by_basis: dict[str, Expr]) -> Expr:
    """The cell of the basis the input names: run, else commitment."""
    run, commitment = (by_basis[basis] for basis in BASES)
    return call("IF", Name(BASIS_INPUT).eq("run"), run, commitment)


def _rank(row: int, per_col: int, first: int, last: int, costed: list[bool], index: int) -> Expr:
    """RANK over the costed bids; a bid without a cost ranks after them, in the document's order."""
    pool = Range(SUMMARY_SHEET, first, per_col, last, per_col, absolute=True)
    if costed[index]:
        return call("RANK", Ref(SUMMARY_SHEET, row, per_col), pool, 1)
    first_uncosted = first + costed.index(False)
    return call("COUNT", pool) + call("ROWS", Range(SUMMARY_SHEET, first_uncosted, per_col, row, per_col,
                                                    absolute=True))


def _bid_row(sheet: Sheet, row: int, chain: Chain, lay: Layout, names: Names, defined: set[str],
             deadline: Expr | None, recommended: bool = False) -> None:
    bid = chain.bid
    bid_id = bid.id
    acc = bid.accelerator
    # the recommended bid's row is marked (the same bid the document, the PDF and the terminal name)
    sheet.put(row, lay.col("bid"), bid_id, Style(bold=True, fill=RECOMMENDED_FILL if recommended else None))
    sheet.put(row, lay.col("vendor"), bid.vendor)
    sheet.put(row, lay.col("accelerator"), acc.name or acc.id)
    sheet.put(row, lay.col("gpus"), Name(names.bid(bid_id, "gpus")), style(FMT["int"]))
    flags = [f.code for f in bid.flags if f.code != "misses-deadline"]
    sheet.put(row, lay.col("flags"), ", ".join((["recommended"] if recommended else []) + flags),
              Style(fill=RECOMMENDED_FILL) if recommended else PLAIN)
    cells = [("step", "base", "step_time_s", FMT["num3"]), ("mfu", "base", "mfu", FMT["pct"]),
             ("goodput", "base", "goodput", FMT["pct"]), ("days", "base", "time_to_train_days", FMT["days"]),
             ("real_days", "base", "real_run_days", FMT["days"]),
             ("scn_step", "scenario", "step_time_s", FMT["num3"]),
             ("scn_days", "scenario", "time_to_train_days", FMT["days"])]
    for key, case, chain_key, fmt in cells:
        expr = chain.get(case, chain_key)
        sheet.put(row, lay.col(key), expr if expr is not None else "n/a", style(fmt) if expr is not None else PLAIN)
    billed, used = chain.get("base", "billed_hours"), chain.get("base", "used_hours")
    if bid.total_cost is None:
        billed = None                # nothing is billed without a price
    elif billed is not None and used is not None and lay.bases != ("",):
        billed = call("IF", Name(BASIS_INPUT).eq("run"), used, billed)
    sheet.put(row, lay.col("billed"), billed if billed is not None else "n/a",
              style(FMT["num2"]) if billed is not None else PLAIN)
    lead = Name(names.bid(bid_id, "lead_time_days")) if names.bid(bid_id, "lead_time_days") in defined else None
    if lead is not None:
        sheet.put(row, lay.col("lead"), lead, style(FMT["days"]))
    for key, case in (("finish", "base"), ("scn_finish", "scenario")):
        finish = chain.get(case, "days_to_finish")
        if finish is not None:
            sheet.put(row, lay.col(key), finish, style(FMT["days"]))
    if deadline is None:
        return
    sheet.put(row, lay.col("deadline"), deadline, style(FMT["days"]))
    for key, case in (("meets", "base"), ("scn_meets", "scenario")):
        days = chain.get(case, "time_to_train_days")
        if days is not None:        # capacity comes after its lead time; then the training runs
            sheet.put(row, lay.col(key), call("IF", (days if lead is None else lead + days).le(deadline), "yes", "no"))


def _charts(sheet: Sheet, doc: QuoteDocument, lay: Layout, first: int, last: int, has_deadline: bool,
            has_finish: bool) -> None:
    ccy = doc.currency
    bids = Range(SUMMARY_SHEET, first, lay.col("bid"), last, lay.col("bid"), absolute=True)

    def column(key: str) -> Range:
        return Range(SUMMARY_SHEET, first, lay.col(key), last, lay.col(key), absolute=True)

    anchor = last + 3
    height = max(300, 60 + 45 * (last - first + 1))
    cost = Chart("bar", f"{ccy} per million tokens", [
        Series("As quoted", column("per_mtok"), bids, color="1F3F66"),
        Series("Scenario", column("scn_per_mtok"), bids, color="70AD47")],
        anchor, 0, value_axis=f"{ccy} per million tokens", number_format=money_format(ccy, 2), size=(620, height))
    days_key, scn_key, title = ("days", "scn_days", "Time to train against the deadline (days)")
    if has_finish:
        days_key, scn_key, title = ("finish", "scn_finish", "Lead time + time to train against the deadline (days)")
    days = [Series("As quoted", column(days_key), bids, color="1F3F66"),
            Series("Scenario", column(scn_key), bids, color="70AD47")]
    if has_deadline:
        days.append(Series("Deadline", column("deadline"), bids, line=True, color="C00000"))
    time = Chart("column", title, days, anchor, 6, value_axis="days", number_format="#,##0", size=(620, height))
    sheet.charts += [cost, time]


__all__ = ["BASIS_INPUT", "SUMMARY_SHEET", "Layout", "build_summary", "case_total", "layout", "summary_layout"]
