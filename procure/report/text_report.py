"""The terminal report: the ranked table and the flags explained (see ``terminal`` for the layout rules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from procure.report import generated
from procure.report.commercial_view import ranking_basis_line
from procure.report.document import flags_explained, ranking_row
from procure.report.formatting import Formatter
from procure.report.order import ranked_bids
from procure.report.target_view import RATIO_KEYS, ratio_rows
from procure.report.terminal import Column, print_line, print_table, text

if TYPE_CHECKING:
    from rich.console import Console

    from procure.document import QuoteDocument
    from procure.document.bid import BidResult

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
RANKING = (("col.rank", "rank", False), ("col.bid", "id", False), ("col.vendor", "vendor", True),
           ("col.accel_gpus", "accel_gpus", True), ("col.step_time", "step_time", False),
           ("col.time_to_train", "days", False), ("col.real_run_days", "real_days", False),
           ("col.total_cost", "total_cost", False),
           ("col.usd_mtok", "usd_mtok", False), ("col.mfu", "mfu", False))


def print_terminal(doc: QuoteDocument, console: Console, lang: str = "en") -> None:
    f = Formatter(lang, doc.currency)
    m = f.msg
    columns = [Column(m(key), justify="left" if wraps or key == "col.bid" else "right", wrap=wraps)
               for key, _, wraps in RANKING] + [Column(m("col.flags"), justify="left", wrap=True)]
    rows, bids = [], ranked_bids(doc)
    for bid in bids:
        flags = text(*[part for i, flag in enumerate(bid.flags)
                       for part in ((" ",) if i else ()) + ((f.text(flag.code), SEVERITY_STYLE[flag.severity]),)])
        row = ranking_row(bid, f)
        rows.append([row[field] for _, field, _ in RANKING] + [flags])
    print_table(console, columns, rows, title=(f"{doc.title} — {f.date(doc.as_of)}", "bold"), key=(0, 1))
    recommended = generated.recommended_line(doc, f)
    if recommended:                                      # the same decision the document and workbook name
        print_line(console, (recommended, "bold"))
    after = generated.constraints_line(doc, f)
    if after:                                            # constraints first: who ranks after, and why
        print_line(console, after)
    warning = generated.fx_warning(doc, f)
    if warning:
        print_line(console, (warning, "yellow"))
    basis = ranking_basis_line(doc, f)
    if basis:                                            # the one line naming the ranking basis
        print_line(console, basis)
    _print_ratios(bids, f, console)
    groups = flags_explained(bids, f, doc)
    if not groups:
        print_line(console, m("summary.no_flags"))
        return
    print_line(console, (m("summary.flags_explained"), "bold"))
    for group_view in groups:
        style = SEVERITY_STYLE[group_view["instances"][0]["severity"]]
        print_line(console, (group_view["code"], style), f": {group_view['meaning']}", indent=2)
        for instance_view in group_view["instances"]:
            print_line(console, (instance_view["bid"], "bold"),
                       f" ({instance_view['severity_text']}): {instance_view['reason']}", indent=4)


def _print_ratios(bids: list[BidResult], f: Formatter, console: Console) -> None:
    """The committee's ratios and each bid's batch and token penalty (the main phase's plan when
    the workload has phases); the terminal layer switches to one block per bid when narrow."""
    rows = ratio_rows(bids, f)
    if not rows:
        return
    m = f.msg
    columns = [Column(m("col.bid"), justify="left")] + [
        Column(label) for label in [m("target.col.batch_tokens"), m("target.col.penalty")]
        + [m(f"ratio.{key}") for key in RATIO_KEYS]]
    print_table(console, columns, [[row["id"], row["batch"], row["penalty"], *row["ratios"]] for row in rows],
                title=(m("compare.ratios"), "bold"), key=(0,))
