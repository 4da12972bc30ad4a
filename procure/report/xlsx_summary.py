"""The Summary sheet (the contract: ``Bid``, ``Total cost``, ``<CCY> per million tokens``, ``Time to
train (days)``, one row per bid) and its charts.

Totals sum the bid's lines on Cost lines; cost per million tokens divides by the training tokens;
rank is a RANK formula over that column, so a changed input re-ranks the bids. The Scenario
columns do the same over the what-if chain. Bids without a cost rank after the costed ones.
"""

from __future__ import annotations

from typing import Any

from procure.report.xlsx_cells import FMT, HEADER, PLAIN, Book, Chart, Series, Sheet, Style, money_format, style
from procure.report.xlsx_formula import Expr, Name, Range, Ref, call
from procure.report.xlsx_inputs import Names
from procure.report.xlsx_lines import A, LINES_SHEET, Block
from procure.report.xlsx_model import Chain

SUMMARY_SHEET = "Summary"


def summary_header(currency: str) -> list[str]:
    per_mtok = f"{currency} per million tokens"
    return ["Rank", "Bid", "Vendor", "Accelerator", "GPUs", "Step time (s)", "MFU", "Goodput", "Time to train (days)",
            "Deadline (days)", "Meets deadline", "Billed hours", "Total cost", per_mtok, "Flags (procure)",
            "Scenario step time (s)", "Scenario time to train (days)", "Scenario total cost",
            f"Scenario {per_mtok}", "Scenario rank", "Scenario meets deadline"]


COL = {name: i for i, name in enumerate(summary_header("X"))}
COL["per_mtok"], COL["scn_per_mtok"] = 13, 18


def build_summary(book: Book, doc: dict[str, Any], chains: list[Chain], blocks: dict[tuple[str, str], Block],
                  names: Names, defined: set[str]) -> Sheet:
    sheet = book.sheet(SUMMARY_SHEET)
    ccy = str(doc["currency"])
    sheet.header(0, summary_header(ccy))
    first, last = 1, len(chains)
    deadline = Name(Names.global_("deadline_days")) if (doc.get("workload") or {}).get("deadline_days") is not None \
        else None
    costed = [_costed(chain, blocks) for chain in chains]
    for i, chain in enumerate(chains):
        row = first + i
        _bid_row(sheet, row, chain, doc, names, defined, deadline)
        for case, total_col, per_col in (("base", COL["Total cost"], COL["per_mtok"]),
                                         ("scenario", COL["Scenario total cost"], COL["scn_per_mtok"])):
            block = blocks.get((str(chain.bid["id"]), case))
            if block is None:
                sheet.put(row, total_col, "n/a")
                sheet.put(row, per_col, "n/a")
                continue
            total = call("SUM", Range(LINES_SHEET, block.first, A, block.last, A))
            sheet.put(row, total_col, total, Style(num_format=money_format(ccy), bold=case == "base"))
            per_mtok = call("ROUND", Ref(SUMMARY_SHEET, row, total_col) / Name(Names.global_("train_tokens"))
                            * 1000000, 4)
            sheet.put(row, per_col, per_mtok, Style(num_format=money_format(ccy, 4), bold=case == "base"))
        for rank_col, per_col in ((COL["Rank"], COL["per_mtok"]), (COL["Scenario rank"], COL["scn_per_mtok"])):
            sheet.put(row, rank_col, _rank(row, per_col, first, last, costed, i), style(FMT["int"], bold=True))
    sheet.freeze = (1, 2)
    sheet.autofilter = (0, 0, last, len(summary_header(ccy)) - 1)
    _charts(sheet, doc, first, last, deadline is not None)
    return sheet


def _costed(chain: Chain, blocks: dict[tuple[str, str], Block]) -> bool:
    return (str(chain.bid["id"]), "base") in blocks


def _rank(row: int, per_col: int, first: int, last: int, costed: list[bool], index: int) -> Expr:
    """RANK over the costed bids; a bid without a cost ranks after them, in the document's order."""
    pool = Range(SUMMARY_SHEET, first, per_col, last, per_col, absolute=True)
    if costed[index]:
        return call("RANK", Ref(SUMMARY_SHEET, row, per_col), pool, 1)
    first_uncosted = first + costed.index(False)
    return call("COUNT", pool) + call("ROWS", Range(SUMMARY_SHEET, first_uncosted, per_col, row, per_col,
                                                    absolute=True))


def _bid_row(sheet: Sheet, row: int, chain: Chain, doc: dict[str, Any], names: Names, defined: set[str],
             deadline: Expr | None) -> None:
    bid = chain.bid
    bid_id = str(bid["id"])
    acc = bid.get("accelerator") or {}
    sheet.put(row, COL["Bid"], bid_id, Style(bold=True))
    sheet.put(row, COL["Vendor"], str(bid.get("vendor") or ""))
    sheet.put(row, COL["Accelerator"], str(acc.get("name") or acc.get("id") or ""))
    sheet.put(row, COL["GPUs"], Name(names.bid(bid_id, "gpus")), style(FMT["int"]))
    flags = [str(f.get("code")) for f in bid.get("flags") or [] if f.get("code") != "misses-deadline"]
    sheet.put(row, COL["Flags (procure)"], ", ".join(flags))
    cells = [("Step time (s)", "base", "step_time_s", FMT["num3"]), ("MFU", "base", "mfu", FMT["pct"]),
             ("Goodput", "base", "goodput", FMT["pct"]),
             ("Time to train (days)", "base", "time_to_train_days", FMT["days"]),
             ("Billed hours", "base", "billed_hours", FMT["num2"]),
             ("Scenario step time (s)", "scenario", "step_time_s", FMT["num3"]),
             ("Scenario time to train (days)", "scenario", "time_to_train_days", FMT["days"])]
    for column, case, key, fmt in cells:
        expr = chain.get(case, key)
        sheet.put(row, COL[column], expr if expr is not None else "n/a", style(fmt) if expr is not None else PLAIN)
    if deadline is None:
        return
    sheet.put(row, COL["Deadline (days)"], deadline, style(FMT["days"]))
    for column, case in (("Meets deadline", "base"), ("Scenario meets deadline", "scenario")):
        days = chain.get(case, "time_to_train_days")
        if days is not None:
            sheet.put(row, COL[column], call("IF", days.le(deadline), "yes", "no"))


def _charts(sheet: Sheet, doc: dict[str, Any], first: int, last: int, has_deadline: bool) -> None:
    ccy = str(doc["currency"])
    bids = Range(SUMMARY_SHEET, first, COL["Bid"], last, COL["Bid"], absolute=True)

    def column(name: str) -> Range:
        return Range(SUMMARY_SHEET, first, COL[name], last, COL[name], absolute=True)

    anchor = last + 3
    height = max(300, 60 + 45 * (last - first + 1))
    cost = Chart("bar", f"{ccy} per million tokens", [
        Series("As quoted", column("per_mtok"), bids, color="1F3F66"),
        Series("Scenario", column("scn_per_mtok"), bids, color="70AD47")],
        anchor, 0, value_axis=f"{ccy} per million tokens", number_format=money_format(ccy, 2), size=(620, height))
    days = [Series("As quoted", column("Time to train (days)"), bids, color="1F3F66"),
            Series("Scenario", column("Scenario time to train (days)"), bids, color="70AD47")]
    if has_deadline:
        days.append(Series("Deadline", column("Deadline (days)"), bids, line=True, color="C00000"))
    time = Chart("column", "Time to train against the deadline (days)", days, anchor, 6, value_axis="days",
                 number_format="#,##0", size=(620, height))
    sheet.charts += [cost, time]


__all__ = ["HEADER", "SUMMARY_SHEET", "build_summary", "summary_header"]
