"""The sweep workbook: the ask, the frontier and the best points up front; every point (inputs
and results, one row each, filterable, header frozen) on ``Points``; prices and inputs after.

Values only: each point is the quote of a cluster.yaml (``--emit-cluster``), whose own workbook
carries the live formulas. Written like the quote's workbook (``xlsx_cells``: a Book of Sheets,
then ``write_xlsx``), so the bytes are the same for the same document.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from procure.report.pdf_report import as_of_datetime
from procure.report.xlsx_cells import FMT, Book, Sheet, Style, fit_columns, money_format, style, write_xlsx
from procure.sweep.columns import COLUMNS, flat_point
from procure.sweep.document import SweepDocument, SweepPoint

Doc = SweepDocument
POINTS_SHEET = "Points"
WRAPPED = Style(wrap=True, top=True)


def _value(value: Any) -> Any:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return value


def _formats(doc: Doc) -> dict[str, str]:
    ccy = doc.currency
    out = {}
    for c in COLUMNS:
        if c.name in ("total_cost",):
            out[c.name] = money_format(ccy, 0)
        elif c.name in ("cost_per_million_tokens",) or c.name.startswith("band_cost"):
            out[c.name] = money_format(ccy, 4)
        elif c.name in ("time_to_train_days",) or c.name.startswith("band_days"):
            out[c.name] = FMT["days"]
        elif c.name in ("mfu", "goodput"):
            out[c.name] = FMT["pct"]
        elif c.kind == "int":
            out[c.name] = FMT["int"]
        elif c.kind in ("float", "decimal"):
            out[c.name] = FMT["num2"]
    return out


def _table(ws: Sheet, labels: list[str], rows: list[list[Any]], formats: dict[int, str] | None = None,
           frozen_cols: int = 0, wrapped: frozenset[int] = frozenset()) -> None:
    """A header row and one row per record, filterable, header frozen; ``formats`` and ``wrapped``
    by 1-based column (as a spreadsheet user counts them). Text stays text (``Sheet.put``)."""
    ws.header(0, labels)
    styles = {col - 1: style(fmt) for col, fmt in (formats or {}).items()}
    for r, values in enumerate(rows, start=1):
        for c, value in enumerate(values):
            value = _value(value)
            if value is not None:
                ws.put(r, c, value, WRAPPED if c + 1 in wrapped else styles.get(c, style()))
    ws.freeze = (1, frozen_cols)
    if rows:
        ws.autofilter = (0, 0, len(rows), len(labels) - 1)


def points_sheet(ws: Sheet, doc: Doc) -> None:
    records = [flat_point(p) for p in doc.points]
    formats = _formats(doc)
    _table(ws, [c.label for c in COLUMNS], [[r.get(c.name) for c in COLUMNS] for r in records],
           {i: formats[c.name] for i, c in enumerate(COLUMNS, start=1) if c.name in formats}, frozen_cols=2)


def _point_values(p: SweepPoint) -> list[Any]:
    days: list[Any] = list(p.band.time_to_train_days) if p.band else [None] * 3
    cost: list[Any] = list(p.band.cost_per_million_tokens) if p.band else [None] * 3
    return [p.id, p.accelerator, p.gpus, p.network, p.term, p.time_to_train_days, days[0],
            days[2], p.total_cost, p.cost_per_million_tokens, cost[0], cost[2],
            "yes" if p.meets_constraints else ", ".join(p.constraint_failures)]


POINT_LABELS = ["Point", "Accelerator", "GPUs", "Network", "Term", "Time to train (days)", "Days P10",
                "Days P90", "Total cost", "Cost per million tokens", "Per Mtok P10", "Per Mtok P90",
                "Meets constraints"]


def _point_formats(doc: Doc, offset: int) -> dict[int, str]:
    ccy = doc.currency
    base = {3: FMT["int"], 6: FMT["days"], 7: FMT["days"], 8: FMT["days"], 9: money_format(ccy, 0),
            10: money_format(ccy, 4), 11: money_format(ccy, 4), 12: money_format(ccy, 4)}
    return {k + offset: v for k, v in base.items()}


def ask_sheet(ws: Sheet, doc: Doc) -> None:
    rows: list[list[Any]] = []
    for f in doc.findings:
        rows.append([f.workload, f.ask.text, None, None, None, None, None, None, None])
        for o in f.ask.options:
            rows.append([f.workload, None, o.accelerator, o.term, o.gpus_min, o.gpus_max,
                         o.point, o.total_cost, o.time_to_train_days])
    ccy = doc.currency
    _table(ws, ["Workload", "Suggested ask", "Accelerator", "Term", "GPUs from", "GPUs to", "Best point",
                "Best total cost", "Best days"], rows,
           {5: FMT["int"], 6: FMT["int"], 8: money_format(ccy, 0), 9: FMT["days"]}, wrapped=frozenset({2}))
    ws.widths[1] = 90


def frontier_sheet(ws: Sheet, doc: Doc) -> None:
    points = {p.id: p for p in doc.points}
    rows = [[f.workload, i + 1] + _point_values(points[pid])
            for f in doc.findings for i, pid in enumerate(f.frontier)]
    _table(ws, ["Workload", "#"] + POINT_LABELS, rows, _point_formats(doc, 2))


def best_sheet(ws: Sheet, doc: Doc) -> None:
    points = {p.id: p for p in doc.points}
    rows = []
    for f in doc.findings:
        for by, entries in (("accelerator", f.best_per_accelerator), ("term", f.best_per_term)):
            for e in entries:
                tail = _point_values(points[e.point]) if e.point else ["none meets every constraint"]
                rows.append([f.workload, by, e.key] + tail)
    _table(ws, ["Workload", "Best per", "Of"] + POINT_LABELS, rows, _point_formats(doc, 3))


def terms_sheet(ws: Sheet, doc: Doc) -> None:
    rows = [[t.id, t.kind, t.provider, t.price_book, t.term, p.accelerator,
             p.price_per_gpu_hour, p.capex_per_gpu, p.min_commit_months, p.missing_reason]
            for t in doc.terms for p in t.prices]
    ccy = doc.currency
    _table(ws, ["Term", "Kind", "Provider", "Price book", "Book term", "Accelerator",
                f"Price per GPU-hour ({ccy})", f"Capex per GPU ({ccy})", "Minimum commitment (months)",
                "Why no price"], rows, {7: money_format(ccy, 4), 8: money_format(ccy, 0)})


def inputs_sheet(ws: Sheet, doc: Doc) -> None:
    rows: list[list[Any]] = [["sweep", "title", doc.title], ["sweep", "as_of", str(doc.as_of)],
                             ["sweep", "currency", doc.currency], ["sweep", "cost_basis", doc.cost_basis],
                             ["sweep", "sweep.yaml sha256", doc.sweep_sha256]]
    for w in doc.workloads:
        rows += [[f"workload {w.id}", k, v] for k, v in _fields(w) if k not in ("id", "phases")]
        for phase in w.phases:
            rows += [[f"workload {w.id} phase {phase.name}", k, v] for k, v in _fields(phase) if k != "name"]
    for a in doc.accelerators:
        rows += [[f"accelerator {a.id}", k, _value(v)] for k, v in _fields(a) if k != "id"]
    rows += [["constraints", k, v] for k, v in _fields(doc.constraints)]
    u = doc.uncertainty
    rows += [["uncertainty", "scope", u.scope], ["uncertainty", "seed", u.seed], ["uncertainty", "samples", u.samples]]
    rows += [["uncertainty", k, v] for k, v in sorted(u.distributions.items())]
    _table(ws, ["Group", "Item", "Value"], rows)


def _fields(model: BaseModel) -> list[tuple[str, Any]]:
    """A row's fields in their declared order, by name (the workbook lists inputs as the JSON names them)."""
    return [(name, getattr(model, name)) for name in type(model).model_fields]


def render_sweep_xlsx(doc: Doc) -> bytes:
    book = Book()
    for name, fill in (("Ask", ask_sheet), ("Frontier", frontier_sheet), ("Best", best_sheet),
                       (POINTS_SHEET, points_sheet), ("Terms", terms_sheet), ("Inputs", inputs_sheet)):
        sheet = book.sheet(name)
        sheet.max_width = 40
        fill(sheet, doc)
        fit_columns(book, sheet)
    return write_xlsx(book, title=doc.title, stamp=as_of_datetime(str(doc.as_of)))
