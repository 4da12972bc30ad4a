"""The XLSX report for finance: inputs in named cells, totals as live formulas over them.

Every input the economics used is a named cell on ``Assumptions`` (per bid where per bid);
``Cost lines`` rebuilds each line as quantity × rate × factors from those names wherever the
document's figures agree with them (else the figure itself is the input cell); ``Summary``
sums the lines and divides by the training tokens. Change a price and every total follows.
``Ratios`` and ``Time to target`` (``xlsx_target``) rebuild the committee's ratios over the
``Step time`` terms and the days and cost to the target tokens, the token penalty apart.
Sheet names and the Summary header are a contract (docs/result-document.md, product.md).
"""

from __future__ import annotations

import io
import re
from decimal import Decimal

from procure.money import D
from procure.report.document import ordered_bids
from procure.report.pdf_report import as_of_datetime
from procure.report.xlsx_cells import (FMT, INPUT_FILL, add_table, bar_chart, column_letter, define_name,
                                       fit_columns, header, money_format, new_workbook, put, put_formula,
                                       stable_zip)
from procure.report.xlsx_sheets import (BIDS_HEADER, bids_sheet, measurements_sheet, sensitivity_sheet,
                                        sources_sheet, step_time_sheet)
from procure.report.xlsx_target import ratios_sheet, target_sheet

SUMMARY_HEADER = ["Rank", "Bid", "Vendor", "Accelerator", "GPUs", "Step time (s)", "Time to train (days)",
                  "Total cost", "USD per million tokens", "MFU", "Flags"]
COST_HEADER = ["Bid", "Line", "Quantity", "Unit", "Rate", "Factors", "Divisor", "Amount", "How"]
ASSUMPTION_HEADER = ["Name", "Item", "Value", "Unit", "Bid", "Origin", "Source"]
REL_TOL = Decimal("1e-4")


def render_xlsx(doc: dict) -> bytes:
    wb = new_workbook()
    summary = wb.active
    summary.title = "Summary"
    names = Names()
    bids = ordered_bids(doc)
    assumptions_sheet(wb.create_sheet("Assumptions"), doc, bids, names)
    bids_sheet(wb.create_sheet("Bids"), bids, doc)
    totals = cost_lines_sheet(wb.create_sheet("Cost lines"), bids, doc, names)
    summary_sheet(summary, bids, doc, names, totals)
    term_cols = step_time_sheet(wb.create_sheet("Step time"), bids)
    ratios_sheet(wb.create_sheet("Ratios"), bids, term_cols, BIDS_HEADER.index("Goodput") + 1, names)
    cost_rows = {b["id"]: i for i, b in enumerate(bids, start=2) if b["id"] in totals and b.get("total_cost") is not None}
    target_sheet(wb.create_sheet("Time to target"), bids, doc, names, cost_rows, Names.global_("train_tokens"))
    measurements_sheet(wb.create_sheet("Measurements"), bids)
    sensitivity_sheet(wb.create_sheet("Sensitivity"), bids, doc)
    sources_sheet(wb.create_sheet("Sources"), doc)
    names.install(wb)
    _properties(wb, doc)
    buffer = io.BytesIO()
    wb.save(buffer)
    return stable_zip(buffer.getvalue(), as_of_datetime(doc["as_of"]))


def _properties(wb, doc: dict) -> None:
    stamp = as_of_datetime(doc["as_of"]).replace(tzinfo=None)
    props = wb.properties
    props.creator = props.lastModifiedBy = "procure"
    props.title = str(doc["title"])[:250]
    props.created = props.modified = stamp


class Names:
    """Defined names of input cells: ``in_<key>``, ``fx_<CCY>``, ``bid_<id>_<field>``."""

    def __init__(self):
        self.cells: dict[str, str] = {}
        self.slugs: dict[str, str] = {}

    def bid(self, bid_id: str, field: str) -> str:
        if bid_id not in self.slugs:
            slug = re.sub(r"[^A-Za-z0-9_]", "_", str(bid_id)).lower()[:40] or "bid"
            taken = set(self.slugs.values())
            candidate, n = slug, 2
            while candidate in taken:
                candidate, n = f"{slug}_{n}", n + 1
            self.slugs[bid_id] = candidate
        return f"bid_{self.slugs[bid_id]}_{field}"

    @staticmethod
    def global_(key: str) -> str:
        return "in_" + re.sub(r"[^A-Za-z0-9_]", "_", str(key)).lower()

    def define(self, name: str, sheet: str, row: int, col: int) -> None:
        self.cells[name] = f"'{sheet}'!${column_letter(col)}${row}"

    def has(self, name: str) -> bool:
        return name in self.cells

    def install(self, wb) -> None:
        for name, ref in sorted(self.cells.items()):
            define_name(wb, name, ref)


def assumptions_sheet(ws, doc: dict, bids: list[dict], names: Names) -> None:
    header(ws, 1, ASSUMPTION_HEADER)
    rows = _global_inputs(doc) + [r for b in bids for r in _bid_inputs(b, doc, names)]
    for i, (name, label, value, unit, bid_id, origin, source) in enumerate(rows, start=2):
        put(ws, i, 1, name)
        put(ws, i, 2, label)
        put(ws, i, 3, value, _value_format(value), fill=INPUT_FILL)
        for col, text in ((4, unit), (5, bid_id), (6, origin), (7, source)):
            put(ws, i, col, text or "")
        names.define(name, ws.title, i, 3)
    add_table(ws, "AssumptionsTable", 1, len(rows) + 1, len(ASSUMPTION_HEADER))
    ws.freeze_panes = "A2"
    fit_columns(ws)


def _value_format(value) -> str | None:
    if value is None or isinstance(value, str):
        return None
    v = D(value)
    if v == v.to_integral_value() and abs(v) >= 1:
        return FMT["int"]
    return "General"


def _global_inputs(doc: dict) -> list[tuple]:
    w = doc.get("workload") or {}
    rows = [(Names.global_("train_tokens"), "Training tokens", w.get("train_tokens"), "tokens", "", "workload", "")]
    for a in doc.get("assumptions") or []:
        rows.append((Names.global_(a.get("key")), a.get("label") or a.get("key"), a.get("value"), a.get("unit"), "",
                     a.get("origin"), a.get("source")))
    fx = doc.get("fx") or {}
    for ccy, value in sorted((fx.get("rates") or {}).items()):
        rows.append(("fx_" + re.sub(r"[^A-Za-z0-9_]", "_", ccy), f"FX rate {ccy}", value,
                     f"{ccy} per {fx.get('base') or doc['currency']}", "", f"fx {fx.get('as_of') or ''}".strip(),
                     fx.get("source")))
    return _unique(rows)


def _unique(rows: list[tuple]) -> list[tuple]:
    seen: set[str] = set()
    out = []
    for row in rows:
        if row[0] not in seen:
            seen.add(row[0])
            out.append(row)
    return out


def _bid_inputs(bid: dict, doc: dict, names: Names) -> list[tuple]:
    p, gp = bid.get("pricing") or {}, bid.get("goodput") or {}
    book = p.get("book_currency") or doc["currency"]
    book_name = p.get("price_book") or ""
    fields = [
        ("gpus", "GPUs", bid.get("gpus"), "GPU", "bid"),
        ("billed_hours", "Billed hours", bid.get("billed_hours"), "h", "economics"),
        ("price_per_gpu_hour", "Price per GPU-hour", p.get("price_per_gpu_hour"), f"{book}/GPU-h", book_name),
        ("fx_rate", "FX rate of the price book", p.get("fx_rate"), f"{book} → {doc['currency']}", book_name),
        ("min_commit_months", "Minimum commitment", p.get("min_commit_months"), "months", book_name),
        ("failures_per_gpu_hour", "Interruption rate", gp.get("failures_per_gpu_hour"), "1/GPU-h", "goodput"),
    ]
    return [(names.bid(bid["id"], field), label, value, unit, bid["id"], origin, "") for field, label, value, unit, origin in fields]


def cost_lines_sheet(ws, bids: list[dict], doc: dict, names: Names) -> dict[str, tuple[int, int]]:
    """One row per cost line with live formulas; returns each bid's first and last row."""
    header(ws, 1, COST_HEADER)
    row, spans = 2, {}
    for bid in bids:
        ccy = bid.get("currency") or doc["currency"]
        first = row
        earlier: list[tuple[int, dict]] = []
        for line in bid.get("cost_lines") or []:
            _cost_row(ws, row, bid, line, earlier, names, ccy, doc)
            earlier.append((row, line))
            row += 1
        if row > first:
            spans[bid["id"]] = (first, row - 1)
    add_table(ws, "CostLinesTable", 1, row - 1, len(COST_HEADER))
    ws.freeze_panes = "A2"
    fit_columns(ws)
    return spans


def _cost_row(ws, row: int, bid: dict, line: dict, earlier, names: Names, ccy: str, doc: dict) -> None:
    put(ws, row, 1, bid["id"])
    put(ws, row, 2, line.get("label") or line.get("key") or "")
    stem = f"{line.get('key') or 'line'}_{len(earlier) + 1}"
    _put_linked(ws, row, 3, _quantity_formula(bid, line, earlier, names, ccy), line.get("quantity"), FMT["num2"],
                names, names.bid(bid["id"], f"{stem}_quantity"))
    put(ws, row, 4, line.get("unit") or "")
    rate_fmt = "General" if line.get("unit") == ccy else money_format(ccy, 4)
    _put_linked(ws, row, 5, _rate_formula(bid, line, names, doc), line.get("rate"), rate_fmt,
                names, names.bid(bid["id"], f"{stem}_rate"))
    factors = _factor_formula(bid, line, names, doc)
    if factors and not _is_number(factors):
        put_formula(ws, row, 6, factors, "General")
    else:
        _put_linked(ws, row, 6, None, D(factors) if factors else 1, "General",
                    names, names.bid(bid["id"], f"{stem}_factor"))
    divisor = line.get("divisor")
    _put_linked(ws, row, 7, None, 1 if divisor is None else divisor, "General",
                names, names.bid(bid["id"], f"{stem}_divisor"))
    put_formula(ws, row, 8, f"ROUND(C{row}*E{row}*F{row}/G{row},2)", money_format(ccy))
    put(ws, row, 9, line.get("formula") or "")


def _put_linked(ws, row: int, col: int, formula: str | None, value, fmt: str, names: Names, name: str) -> None:
    """A formula when the figure follows from named inputs, else the figure as a named input cell."""
    if formula:
        put_formula(ws, row, col, formula, fmt)
    else:
        put(ws, row, col, value, fmt, fill=INPUT_FILL)
        names.define(name, ws.title, row, col)


def _is_number(text: str) -> bool:
    try:
        D(text)
    except ValueError:
        return False
    return True


def close(a, b) -> bool:
    if a is None or b is None:
        return False
    a, b = D(a), D(b)
    scale = max(abs(a), abs(b))
    return scale == 0 or abs(a - b) <= REL_TOL * scale


def _quantity_formula(bid: dict, line: dict, earlier, names: Names, ccy: str) -> str | None:
    q = line.get("quantity")
    gpus, hours = bid.get("gpus"), bid.get("billed_hours")
    per_gpu_hour = line.get("key") == "gpu_hours" or line.get("unit") == "GPU-h"
    if per_gpu_hour and gpus is not None and hours is not None and close(q, D(gpus) * D(hours)):
        return f"{names.bid(bid['id'], 'gpus')}*{names.bid(bid['id'], 'billed_hours')}"
    for prev_row, prev in earlier:
        if line.get("unit") == ccy and close(q, prev.get("amount")):
            return f"H{prev_row}"
        if line.get("unit") == prev.get("unit") and close(q, prev.get("quantity")):
            return f"C{prev_row}"
    if line.get("unit") == "GPU" and gpus is not None and close(q, gpus):
        return names.bid(bid["id"], "gpus")
    return None


def _rate_formula(bid: dict, line: dict, names: Names, doc: dict) -> str | None:
    r, p = line.get("rate"), bid.get("pricing") or {}
    price, fx = p.get("price_per_gpu_hour"), p.get("fx_rate")
    if line.get("key") == "gpu_hours" and price is not None and fx not in (None, 0):
        n_price, n_fx = names.bid(bid["id"], "price_per_gpu_hour"), names.bid(bid["id"], "fx_rate")
        for expr, exact in ((f"{n_price}*{n_fx}", D(price) * D(fx)), (f"{n_price}/{n_fx}", D(price) / D(fx))):
            if close(r, exact):
                return _rounded_like(expr, exact, r)
    key = line.get("rate_key") or _assumption_named_like(doc, str(line.get("key") or ""), r)
    if key and _assumption_value(doc, key) is not None and close(r, _assumption_value(doc, key)):
        return Names.global_(key)
    return None


def _assumption_named_like(doc: dict, line_key: str, value) -> str | None:
    """The assumption whose key contains the line's key and holds the same value (power -> power_usd_per_kwh)."""
    if not line_key:
        return None
    return next((a["key"] for a in doc.get("assumptions") or []
                 if line_key in str(a.get("key")) and close(a.get("value"), value)), None)


def _rounded_like(expr: str, exact: Decimal, shown) -> str:
    """Round the formula the way the document rounded the figure, when it did."""
    places = max(0, -D(shown).as_tuple().exponent)
    if D(shown) != exact and exact.quantize(Decimal(1).scaleb(-places)) == D(shown):
        return f"ROUND({expr},{places})"
    return expr


def _assumption_value(doc: dict, key: str):
    return next((a.get("value") for a in doc.get("assumptions") or [] if a.get("key") == key), None)


def _factor_formula(bid: dict, line: dict, names: Names, doc: dict) -> str | None:
    """The product of a line's factors; a factor that is an input (PUE, billed hours) is its named cell."""
    terms = []
    for name, value in sorted((line.get("factors") or {}).items()):
        known = _assumption_value(doc, name)
        if known is not None and close(value, known):
            terms.append(Names.global_(name))
        elif "hours" in name and close(value, bid.get("billed_hours")):
            terms.append(names.bid(bid["id"], "billed_hours"))
        else:
            terms.append(str(D(value)))
    return "*".join(terms) if terms else None


def summary_sheet(ws, bids: list[dict], doc: dict, names: Names, spans: dict) -> None:
    header(ws, 1, SUMMARY_HEADER)
    for i, bid in enumerate(bids, start=2):
        ccy = bid.get("currency") or doc["currency"]
        acc = bid.get("accelerator") or {}
        put(ws, i, 1, bid.get("rank"), FMT["int"])
        put(ws, i, 2, bid["id"])
        put(ws, i, 3, bid["vendor"])
        put(ws, i, 4, acc.get("name") or acc.get("id") or "")
        put(ws, i, 5, bid.get("gpus"), FMT["int"])
        put(ws, i, 6, bid.get("step_time_s"), FMT["num3"])
        put(ws, i, 7, bid.get("time_to_train_days"), FMT["days"])
        if bid["id"] in spans and bid.get("total_cost") is not None:
            first, last = spans[bid["id"]]
            put_formula(ws, i, 8, f"SUM('Cost lines'!H{first}:H{last})", money_format(ccy))
            put_formula(ws, i, 9, f"ROUND(H{i}/{Names.global_('train_tokens')}*1000000,4)", money_format(ccy, 4))
            names.define(names.bid(bid["id"], "total_cost"), ws.title, i, 8)
        else:
            put(ws, i, 8, "n/a")
            put(ws, i, 9, "n/a")
        put(ws, i, 10, bid.get("mfu"), FMT["pct"])
        put(ws, i, 11, ", ".join(str(f.get("code")) for f in bid.get("flags") or []))
    last = len(bids) + 1
    add_table(ws, "SummaryTable", 1, last, len(SUMMARY_HEADER))
    ws.freeze_panes = "C2"
    fit_columns(ws)
    _summary_chart(ws, last)


def _summary_chart(ws, last: int) -> None:
    bar_chart(ws, title="USD per million tokens", data_cols=(9, 9), last_row=last, anchor=f"A{last + 3}",
              legend=False)
