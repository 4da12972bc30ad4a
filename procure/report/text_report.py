"""The terminal report: the ranked table and the flags explained, printed with rich."""

from __future__ import annotations

from typing import Any

from procure.report.commercial_view import ranking_basis_line
from procure.report.document import flags_explained, ordered_bids, ranking_row
from procure.report.formatting import Formatter
from procure.report.target_view import RATIO_KEYS, ratio_rows

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def print_terminal(doc: dict, console, lang: str = "en") -> None:
    from rich.markup import escape
    from rich.table import Table

    f = Formatter(lang, doc["currency"])
    m = f.msg
    bids = ordered_bids(doc)
    table = Table(title=escape(f"{doc['title']} — {f.date(doc['as_of'])}"), title_justify="left")
    if console.width < 110:   # too narrow for the table: one line per bid, figures unbroken
        console.print(f"[bold]{escape(doc['title'])} — {escape(f.date(doc['as_of']))}[/]")
        for bid in bids:
            r = ranking_row(bid, f)
            flags = " ".join(f"[{SEVERITY_STYLE[fl['severity']]}]{escape(fl['code'])}[/]" for fl in r["flags"])
            console.print(f"{escape(r['rank'])}. [bold]{escape(r['id'])}[/]  {escape(r['usd_mtok'])}/Mtok  "
                          f"{escape(r['total_cost'])}  {escape(r['days'])}  {escape(r['step_time'])}  "
                          f"MFU {escape(r['mfu'])}  {flags}", soft_wrap=False, overflow="fold")
    else:
        for key, justify in (("col.rank", "right"), ("col.bid", "left"), ("col.vendor", "left"),
                             ("col.accel_gpus", "left"), ("col.step_time", "right"),
                             ("col.time_to_train", "right"), ("col.total_cost", "right"),
                             ("col.usd_mtok", "right"), ("col.mfu", "right"), ("col.flags", "left")):
            wraps = key in ("col.vendor", "col.accel_gpus", "col.flags")   # figures and ids never wrap
            table.add_column(m(key), justify=justify, overflow="fold", no_wrap=not wraps,
                             min_width=12 if wraps else None)
        for bid in bids:
            r = ranking_row(bid, f)
            flags = " ".join(f"[{SEVERITY_STYLE[fl['severity']]}]{escape(fl['code'])}[/]" for fl in r["flags"])
            table.add_row(*(escape(r[k]) for k in ("rank", "id", "vendor", "accel_gpus", "step_time", "days",
                                                   "total_cost", "usd_mtok", "mfu")), flags)
        console.print(table)
    if ranking_basis_line(doc, f):                      # the one line naming the ranking basis
        console.print(escape(ranking_basis_line(doc, f)))
    _print_ratios(bids, f, console)
    groups = flags_explained(bids, f)
    if not groups:
        console.print(m("summary.no_flags"))
        return
    console.print(f"[bold]{escape(m('summary.flags_explained'))}[/]")
    for g in groups:
        style = SEVERITY_STYLE[g["instances"][0]["severity"]]
        console.print(f"  [{style}]{escape(g['code'])}[/]: {escape(g['meaning'])}")
        for i in g["instances"]:
            console.print(f"    {escape(i['bid'])} ({escape(i['severity_text'])}): {escape(i['reason'])}")


def _print_ratios(bids: list[dict[str, Any]], f: Formatter, console: Any) -> None:
    """The committee's ratios and each bid's batch and token penalty: a table, or one line per bid
    in a narrow terminal."""
    from rich.markup import escape
    from rich.table import Table

    rows = ratio_rows(bids, f)
    if not rows:
        return
    m = f.msg
    labels = [m(f"ratio.{key}") for key in RATIO_KEYS]
    if console.width < 110:
        console.print(f"[bold]{escape(m('compare.ratios'))}[/]")
        for r in rows:
            parts = [f"{m('target.col.batch_tokens')} {r['batch']} ({m('target.col.penalty')} {r['penalty']})"]
            parts += [f"{label} {value}" for label, value in zip(labels, r["ratios"])]
            console.print(f"  [bold]{escape(r['id'])}[/]: " + escape("; ".join(parts)))
        return
    table = Table(title=escape(m("compare.ratios")), title_justify="left")
    table.add_column(m("col.bid"), no_wrap=True)
    for label in [m("target.col.batch_tokens"), m("target.col.penalty")] + labels:
        table.add_column(label, justify="right", overflow="fold", min_width=8)
    for r in rows:
        table.add_row(escape(r["id"]), escape(r["batch"]), escape(r["penalty"]), *(escape(v) for v in r["ratios"]))
    console.print(table)
