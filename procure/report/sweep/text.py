"""The sweep in the terminal: per workload the suggested ask, the frontier and the best point
per accelerator, printed with rich from the view model's strings. A terminal narrower than the
table gets one line per point, figures unbroken."""

from __future__ import annotations

from typing import Any, Literal

from procure.report.sweep.view import SweepView
from procure.sweep.document import SweepDocument

WIDE = 130
Justify = Literal["left", "right"]
COLUMNS: tuple[tuple[str, str, Justify], ...] = (("#", "label", "right"), ("point", "id", "left"), ("accelerator", "accelerator", "left"),
           ("GPUs", "gpus", "right"), ("term", "term", "left"), ("days", "days", "right"),
           ("total cost", "cost", "right"), ("per Mtok", "per_mtok", "right"),
           ("P10–P90", "per_mtok_band", "right"), ("constraints", "meets", "left"))


def _plain(row: dict[str, str]) -> dict[str, str]:
    return {k: v.replace("\u200b", "") for k, v in row.items()}


def _frontier(rows: list[dict[str, str]], console: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    if console.width < WIDE:
        console.print("[bold]frontier (fastest first)[/]")
        for r in rows:
            console.print(f"  {escape(r['label'])}. [bold]{escape(r['id'])}[/] {escape(r['gpus'])} x "
                          f"{escape(r['accelerator'])} on {escape(r['term'])}: {escape(r['days'])}, "
                          f"{escape(r['cost'])}, {escape(r['per_mtok'])}/Mtok ({escape(r['per_mtok_band'])})"
                          f"{'' if r['meets'] == 'yes' else ' — ' + escape(r['meets'])}", soft_wrap=True)
        return
    table = Table(title="frontier (fastest first)", title_justify="left")
    for label, _, justify in COLUMNS:
        table.add_column(label, justify=justify, no_wrap=label not in ("term", "constraints", "accelerator"))
    for r in rows:
        table.add_row(*(escape(r[key]) for _, key, _ in COLUMNS))
    console.print(table)


def print_sweep(doc: SweepDocument, console: Any) -> None:
    from rich.markup import escape

    view = SweepView(doc)
    console.print(f"[bold]{escape(doc.title)}[/] — {escape(view.f.date(doc.as_of))}: "
                  f"{view.f.integer(len(doc.points))} points")
    for findings in doc.findings:
        w = view.workload(findings)
        console.print(f"\n[bold]{escape(w['id'])}[/]  {escape(w['counts'])}")
        console.print(f"[green]{escape(w['ask'])}[/]")
        _frontier([_plain(r) for r in w["frontier"]], console)
        console.print("[bold]best per accelerator[/] (cheapest meeting every constraint)")
        for r in map(_plain, w["best_accelerator"]):
            line = (f"{r['key']}: {r['id']} ({r['gpus']} GPUs, {r['term']}, {r['days']}, {r['per_mtok']}/Mtok)"
                    if not r["missing"] else f"{r['key']}: {r['missing']}")
            console.print("  " + escape(line), soft_wrap=True)
