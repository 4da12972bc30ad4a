"""The descriptive sheets of the workbook: Bids, Step time, Measurements, Sensitivity, Sources."""

from __future__ import annotations

from procure.report.bid_view import PLAN_KEYS, STACKED_TERMS, SUBTOTAL_TERMS
from procure.report.xlsx_cells import FMT, add_table, bar_chart, fit_columns, header, money_format, put

BIDS_HEADER = ["Bid", "Vendor", "Accelerator", "GPUs", "Network", "Pricing", "Price book", "Term",
               "Price per GPU-hour", "Book currency", "FX rate", "Plan", "Plan origin", "Step-time basis",
               "Step time (s)", "Tokens per second", "MFU", "HFU", "Goodput", "Time to train (days)",
               "Billed hours", "Energy (MWh)", "Total cost", "USD per million tokens", "Residual value"]


def bids_sheet(ws, bids: list[dict], doc: dict) -> None:
    header(ws, 1, BIDS_HEADER)
    for r, bid in enumerate(bids, start=2):
        p, acc, net = bid.get("pricing") or {}, bid.get("accelerator") or {}, bid.get("network") or {}
        ccy = bid.get("currency") or doc["currency"]
        plan = bid.get("plan") or {}
        plan_text = " ".join(f"{k}={plan[k]}" for k in PLAN_KEYS if k in plan)
        values = [
            (bid["id"], None), (bid["vendor"], None), (acc.get("name") or acc.get("id") or "", None),
            (bid.get("gpus"), FMT["int"]), (net.get("name") or net.get("id") or "", None),
            (p.get("kind") or "", None), (p.get("price_book") or "", None), (p.get("term") or "", None),
            (p.get("price_per_gpu_hour"), money_format(p.get("book_currency") or ccy, 4)),
            (p.get("book_currency") or "", None), (p.get("fx_rate"), "General"), (plan_text, None),
            (bid.get("plan_origin") or "", None), (bid.get("step_time_basis") or "", None),
            (bid.get("step_time_s"), FMT["num3"]), (bid.get("tokens_per_s"), FMT["int"]),
            (bid.get("mfu"), FMT["pct"]), (bid.get("hfu"), FMT["pct"]),
            ((bid.get("goodput") or {}).get("fraction"), FMT["pct"]), (bid.get("time_to_train_days"), FMT["days"]),
            (bid.get("billed_hours"), FMT["int"]), (bid.get("energy_mwh"), FMT["num2"]),
            (bid.get("total_cost"), money_format(ccy)), (bid.get("cost_per_million_tokens"), money_format(ccy, 4)),
            (bid.get("residual_value"), money_format(ccy)),
        ]
        for c, (value, fmt) in enumerate(values, start=1):
            put(ws, r, c, value, fmt)
    add_table(ws, "BidsTable", 1, len(bids) + 1, len(BIDS_HEADER))
    ws.freeze_panes = "B2"
    fit_columns(ws, maximum=40)


def step_time_sheet(ws, bids: list[dict]) -> dict[str, int]:
    """The terms of every bid, one row each; returns each term's column (the Ratios sheet reads them)."""
    keys = list(STACKED_TERMS) + list(SUBTOTAL_TERMS)
    extra = sorted({k for b in bids for k in (b.get("step_time_terms") or {}) if k not in keys})
    keys += extra
    header(ws, 1, ["Bid", "Modeled step time (s)", "Step time used (s)", "Basis"] + keys)
    for r, bid in enumerate(bids, start=2):
        terms = bid.get("step_time_terms") or {}
        put(ws, r, 1, bid["id"])
        put(ws, r, 2, (bid.get("modeled") or {}).get("step_time_s"), FMT["num3"])
        put(ws, r, 3, bid.get("step_time_s"), FMT["num3"])
        put(ws, r, 4, bid.get("step_time_basis") or "")
        for c, key in enumerate(keys, start=5):
            put(ws, r, c, terms.get(key), FMT["num3"])
    last = len(bids) + 1
    add_table(ws, "StepTimeTable", 1, last, 4 + len(keys))
    ws.freeze_panes = "B2"
    fit_columns(ws)
    _stacked_chart(ws, last, 5, 4 + len(STACKED_TERMS))
    return {key: c for c, key in enumerate(keys, start=5)}


def _stacked_chart(ws, last: int, first_col: int, last_col: int) -> None:
    bar_chart(ws, title="Step-time breakdown (s)", data_cols=(first_col, last_col), last_row=last,
              anchor=f"A{last + 3}", stacked=True, size=(8, 18))


MEAS_HEADER = ["Bid", "Log", "Format", "Steps", "Warm-up excluded", "Mean (s)", "P50 (s)", "P95 (s)",
               "P99 (s)", "Max (s)", "Std (s)", "CV"]
HIST_HEADER = ["Bid", "From (s)", "To (s)", "Steps"]


def measurements_sheet(ws, bids: list[dict]) -> None:
    header(ws, 1, MEAS_HEADER)
    r = 2
    for bid in bids:
        meas = bid.get("measured") or {}
        stats = meas.get("step_time_s") or {}
        for src in meas.get("sources") or []:
            cells = [bid["id"], src.get("path") or "", src.get("format") or "", src.get("steps"),
                     src.get("warmup_excluded")] + [stats.get(k) for k in ("mean", "p50", "p95", "p99", "max", "std")]
            for c, value in enumerate(cells, start=1):
                put(ws, r, c, value, FMT["num3"] if c >= 6 else (FMT["int"] if c in (4, 5) else None))
            put(ws, r, 12, stats.get("cv"), FMT["pct"])
            r += 1
    add_table(ws, "MeasurementsTable", 1, r - 1, len(MEAS_HEADER))
    start = max(r, 3) + 2
    header(ws, start, HIST_HEADER)
    h = start + 1
    for bid in bids:
        hist = (bid.get("measured") or {}).get("histogram") or {}
        edges, counts = hist.get("edges_s") or [], hist.get("counts") or []
        for a, b, n in zip(edges, edges[1:], counts):
            for c, (value, fmt) in enumerate(((bid["id"], None), (a, FMT["num3"]), (b, FMT["num3"]), (n, FMT["int"])), 1):
                put(ws, h, c, value, fmt)
            h += 1
    add_table(ws, "HistogramTable", start, h - 1, len(HIST_HEADER))
    ws.freeze_panes = "A2"
    fit_columns(ws)


SENS_HEADER = ["Bid", "Factor", "Change", "USD per million tokens", "Time to train (days)", "Rank", "Winner changes"]
UNC_HEADER = ["Bid", "Measure", "P10", "P50", "P90", "Samples", "Seed"]


def sensitivity_sheet(ws, bids: list[dict], doc: dict) -> None:
    header(ws, 1, SENS_HEADER)
    r = 2
    for bid in bids:
        ccy = bid.get("currency") or doc["currency"]
        for e in bid.get("sensitivity") or []:
            cells = [(bid["id"], None), (str(e.get("factor") or ""), None), (e.get("change"), "+0%;-0%;0%"),
                     (e.get("cost_per_million_tokens"), money_format(ccy, 4)), (e.get("time_to_train_days"), FMT["days"]),
                     (e.get("rank"), FMT["int"]), ("yes" if e.get("winner_changes") else "no", None)]
            for c, (value, fmt) in enumerate(cells, start=1):
                put(ws, r, c, value, fmt)
            r += 1
    add_table(ws, "SensitivityTable", 1, r - 1, len(SENS_HEADER))
    start = max(r, 3) + 2
    header(ws, start, UNC_HEADER)
    u = start + 1
    for bid in bids:
        unc = bid.get("uncertainty") or {}
        for key, fmt in (("cost_per_million_tokens", money_format(bid.get("currency") or doc["currency"], 4)),
                         ("time_to_train_days", FMT["days"])):
            band = unc.get(key) or {}
            if not band:
                continue
            cells = [(bid["id"], None), (key, None), (band.get("p10"), fmt), (band.get("p50"), fmt), (band.get("p90"), fmt),
                     (unc.get("samples"), FMT["int"]), (unc.get("seed"), "0")]
            for c, (value, f) in enumerate(cells, start=1):
                put(ws, u, c, value, f)
            u += 1
    add_table(ws, "UncertaintyTable", start, u - 1, len(UNC_HEADER))
    summary = doc.get("sensitivity_summary") or {}
    note = u + 1
    put(ws, note, 1, "Winner")
    put(ws, note, 2, str(summary.get("winner") or ""))
    put(ws, note + 1, 1, "Winner changes under")
    put(ws, note + 1, 2, "; ".join(map(str, summary.get("winner_changes_under") or [])) or "none tested")
    ws.freeze_panes = "A2"
    fit_columns(ws)


SOURCES_HEADER = ["Key", "Kind", "Item", "Source", "As of", "Verified"]
INPUTS_HEADER = ["Input file", "Role", "SHA-256", "Bytes"]


def sources_sheet(ws, doc: dict) -> None:
    header(ws, 1, SOURCES_HEADER)
    sources = doc.get("sources") or []
    for r, s in enumerate(sources, start=2):
        cells = [s.get("key"), s.get("kind"), s.get("label"), "; ".join(map(str, s.get("source") or [])),
                 s.get("as_of"), "yes" if s.get("verified") else "no"]
        for c, value in enumerate(cells, start=1):
            put(ws, r, c, "" if value is None else str(value))
    add_table(ws, "SourcesTable", 1, len(sources) + 1, len(SOURCES_HEADER))
    start = max(len(sources) + 1, 2) + 3
    header(ws, start, INPUTS_HEADER)
    inputs = doc.get("inputs") or []
    for r, i in enumerate(inputs, start=start + 1):
        for c, value in enumerate((i.get("path"), i.get("role"), i.get("sha256")), start=1):
            put(ws, r, c, "" if value is None else str(value))
        put(ws, r, 4, i.get("bytes"), FMT["int"])
    add_table(ws, "InputsTable", start, start + len(inputs), len(INPUTS_HEADER))
    ws.freeze_panes = "A2"
    fit_columns(ws, maximum=70)
