"""The sweep in the terminal: per workload the suggested ask, the frontier and the best point
per accelerator, printed with rich from the view model's strings. A terminal narrower than the
table gets one line per point, figures unbroken."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from procure.report.sweep.view import SweepView
from procure.sweep.document import SweepDocument

if TYPE_CHECKING:
    from rich.console import Console

WIDE = 130
Justify = Literal["left", "right"]
COLUMNS: tuple[tuple[str, str, Justify], ...] = (("#", "label", "right"), ("point", "id", "left"), ("accelerator", "accelerator", "left"),
           ("GPUs", "gpus", "right"), ("term", "term", "left"), ("days", "days", "right"),
           ("total cost", "cost", "right"), ("per Mtok", "per_mtok", "right"),
           ("P10–P90", "per_mtok_band", "right"), ("constraints", "meets", "left"))


def _plain(row: dict[str, str]) -> dict[str, str]:
    return {k: v.replace("\u200b", "") for k, v in row.items()}


def _frontier(rows: list[dict[str, str]], console: Console) -> None:
    """``rows``: the view model's frontier rows (strings), printed as a table or one line each."""
    from rich.markup import escape
    from rich.table import Table

    if console.width < WIDE:
        console.print("[bold]frontier (fastest first)[/]")
        for row in rows:
            console.print(f"  {escape(row['label'])}. [bold]{escape(row['id'])}[/] {escape(row['gpus'])} x "
                          f"{escape(row['accelerator'])} on {escape(row['term'])}: {escape(row['days'])}, "
                          f"{escape(row['cost'])}, {escape(row['per_mtok'])}/Mtok ({escape(row['per_mtok_band'])})"
                          f"{'' if row['meets'] == 'yes' else ' — ' + escape(row['meets'])}", soft_wrap=True)
        return
    table = Table(title="frontier (fastest first)", title_justify="left")
    for label, _, justify in COLUMNS:
        table.add_column(label, justify=justify, no_wrap=label not in ("term", "constraints", "accelerator"))
    for row in rows:
        table.add_row(*(escape(row[key]) for _, key, _ in COLUMNS))
    console.print(table)


def print_sweep(doc: SweepDocument, console: Console) -> None:
    from rich.markup import escape

    view = SweepView(doc)
    console.print(f"[bold]{escape(doc.title)}[/] — {escape(view.f.date(doc.as_of))}: "
                  f"{view.f.integer(len(doc.points))} points")
    for findings in doc.findings:
        workload_view = view.workload(findings)
        console.print(f"\n[bold]{escape(workload_view['id'])}[/]  {escape(workload_view['counts'])}")
        console.print(f"[green]{escape(workload_view['ask'])}[/]")
        _frontier([_plain(row) for row in workload_view["frontier"]], console)
        console.print("[bold]best per accelerator[/] (cheapest meeting every constraint)")
        for row in map(_plain, workload_view["best_accelerator"]):
            line = (f"{row['key']}: {row['id']} ({row['gpus']} GPUs, {row['term']}, {row['days']}, {row['per_mtok']}/Mtok)"
                    if not row["missing"] else f"{row['key']}: {row['missing']}")
            console.print("  " + escape(line), soft_wrap=True)
