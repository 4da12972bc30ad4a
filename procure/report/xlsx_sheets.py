"""The sheets around the model: README (how to use it, and its check against the document), Step
time (the breakdown and its chart), Measurements, Sensitivity and Sources.

Step time and Measurements point at the Inputs and Model cells for the figures the chain uses;
the rest is what procure computed and is shown as values (the Monte Carlo band and the
one-at-a-time sensitivity are not spreadsheet formulas).
"""

from __future__ import annotations

from typing import Any

from procure.report.bid_view import PLAN_KEYS, STACKED_TERMS, SUBTOTAL_TERMS
from procure.report.messages import catalog
from procure.report.xlsx_cells import (FMT, HEADER, INPUT_FILL, NOTE, SECTION, WHATIF_FILL, Book, Chart, Series,
                                       Sheet, Style, money_format, style, wrap_rows)
from procure.report.xlsx_check import CheckResult
from procure.report.xlsx_formula import Name, Range
from procure.report.xlsx_inputs import Names, further_phases
from procure.report.xlsx_chain import Chain

README_SHEET = "README"


def readme_sheet(book: Book, doc: dict[str, Any], result: CheckResult, counts: dict[str, int]) -> Sheet:
    sheet = book.sheet(README_SHEET)
    ccy = str(doc["currency"])
    lines: list[tuple[str, Style]] = [
        (str(doc.get("title") or "procure quote"), Style(bold=True)),
        (f"Report currency {ccy}; as of {doc['as_of']}; procure {doc.get('procure_version') or ''}.", NOTE),
        ("", NOTE),
        ("What is where", SECTION),
        ("Summary: the ranking. Total cost, cost per million tokens and rank are formulas; the Scenario columns "
         "show the same with your what-ifs.", Style()),
        ("Two cost bases: run (what this job consumes: rented hours used, or the owned cluster's depreciation, "
         "financing and opex for those hours) and commitment (the terms committed to, to the end of the run: a reservation in full, or capex "
         "plus costs minus resale). Both are on Summary; the one that ranks is the input in_cost_basis on Inputs "
         "(type run or commitment). With a value of time, the rank adds the value of the days to finish.", Style()),
        ("Inputs: every number the results depend on, one named cell each (yellow), with unit, source and "
         "as-of date. Prices are as quoted, in their own currency; the FX rates convert them.", Style()),
        ("Model: the chain per bid, from step time to tokens per second, goodput, time to train, billed hours "
         "and prices in the report currency. Two columns per bid: Base (as quoted) and Scenario.", Style()),
    ] + _phase_lines(doc) + [
        ("Cost lines: every line as amount = ROUND(quantity × rate × factors / divisor, 2), for each basis, "
         "Base and Scenario; the totals on Summary add them up.", Style()),
        ("Cash flow: every bid as dated cash, one column per month (capex, prepayment, invoices, power, "
         "colocation, support, staff, egress, resale, reused hours; and taxes when the workload gives them), each "
         "a formula over Inputs and Model; present value at the cost of capital, (1 + rate)^(−month / 12), "
         "nominal total, upfront and peak cash out, and the rank on present value.", Style()),
        ("Step time, Measurements, Negotiation, Sensitivity, Sources: the breakdown, the logs, the negotiator's "
         "figures, procure's stress tests and band (values: they do not follow edits), and where every number "
         "comes from.", Style()),
        ("", NOTE),
        ("How to ask \"what if\" (the Scenario column)", SECTION),
        ("On Model, each bid has a Scenario column whose first four cells are green. Blank means as quoted.",
         Style(fill=WHATIF_FILL)),
        ("Step time (s): the step time the vendor would reach. Or MFU (e.g. 45%): the step time that MFU "
         "implies for the bid's model FLOPs, GPUs and peak (used when no step time is typed).", Style()),
        ("Price: a price in the quoted currency (per GPU-hour for a rental, capex per GPU for a purchase). "
         "Discount (e.g. 10%): taken off the price (and off the network capex of a purchase).", Style()),
        ("Summary's Scenario columns then show the days, total cost, cost per million tokens, rank and "
         "deadline for every bid, next to the Base figures; the charts show both.", Style()),
        ("To change the base case itself, edit a yellow cell on Inputs (a price as quoted, an FX rate, a step "
         "time or which one drives, a minimum commitment, the utilisation, the cost of capital, a lead time, the "
         "basis that ranks): every result that depends on it follows.", Style(fill=INPUT_FILL)),
        ("", NOTE),
        ("Check against the result document", SECTION),
        (_check_text(result), Style(bold=True)),
    ]
    for line in result.given_lines:
        lines.append((f"Taken as given (not rebuilt from the inputs): {line}", NOTE))
    for m in result.mismatches:
        lines.append((f"{m.bid} {m.figure}: document {m.document}, workbook {m.workbook}", NOTE))
    lines += [("", NOTE), ("This workbook", SECTION),
              (f"{counts['formulas']} formulas; {counts['inputs']} named inputs; {counts['names']} defined names. "
               "Numbers in formulas are unit conversions only (24, 60, 3,600, 86,400, 1,000, 10^6, 10^9, 10^12, "
               "8,760 h per year, 12 months per year), 0, 1 and 2 of the formulas themselves, and rounding digits (money policy: "
               "cents, 1e-4 per million tokens, 1e-6 for a converted price, FX rates at a named number of "
               "significant digits); hours per month is a named input.", NOTE)]
    for row, (text, cell_style) in enumerate(lines):
        sheet.put(row, 0, text, cell_style._replace(wrap=True, top=True))
    sheet.widths[0] = 110
    wrap_rows(sheet)
    return sheet


def _phase_lines(doc: dict[str, Any]) -> list[tuple[str, Style]]:
    """A workload in phases: say plainly how the chain takes them."""
    phases = further_phases(doc)
    if not phases:
        return []
    names = ", ".join(str(p.get("name")) for p in phases)
    return [(f"Phases: the workload trains further after its main phase ({names}). Time to train adds every phase "
             "at its own step time and tokens per step (Inputs: each phase's tokens and tokens per step, each bid's "
             "phase step times; Model: 'Further phases, compute time'), so hours and every cost cover all phases; "
             "cost per million tokens divides by the tokens of all phases.", Style())]


def _check_text(result: CheckResult) -> str:
    if not result.mismatches:
        return (f"The workbook recomputes {result.checked} figures of the result document from the inputs; "
                "every one agrees (money to the cent, floats to the document's six digits).")
    return (f"The workbook recomputes {result.checked} figures of the result document; {len(result.mismatches)} "
            "differ (listed below): the document was made by another version of the economics, or by hand.")


STEP_SHEET = "Step time"
MEASUREMENTS_SHEET, SENSITIVITY_SHEET, NEGOTIATION_SHEET, SOURCES_SHEET = (
    "Measurements", "Sensitivity", "Negotiation", "Sources")
STEP_MODELED_COL, STEP_USED_COL, STEP_FIRST_TERM_COL = 3, 4, 5     # the Ratios sheet's formulas read these


def term_keys(bids: list[dict[str, Any]]) -> list[str]:
    """The Step time sheet's term columns, in order (the Ratios sheet reads them)."""
    keys = list(STACKED_TERMS) + list(SUBTOTAL_TERMS)
    return keys + sorted({k for b in bids for k in (b.get("step_time_terms") or {}) if k not in keys})


def step_time_sheet(book: Book, chains: list[Chain], names: Names) -> Sheet:
    sheet = book.sheet(STEP_SHEET)
    bids = [c.bid for c in chains]
    keys = term_keys(bids)
    labels = catalog("en")
    sheet.header(0, ["Bid", "Plan", "Step-time basis", "Modeled step time (s)", "Step time used (s)"]
                 + [labels.get(f"term.{k}", k) + " (s)" for k in keys])
    for r, chain in enumerate(chains, start=1):
        bid = chain.bid
        bid_id = str(bid["id"])
        plan = bid.get("plan") or {}
        sheet.put(r, 0, bid_id)
        sheet.put(r, 1, " ".join(f"{k}={plan[k]}" for k in PLAN_KEYS if k in plan))
        sheet.put(r, 2, Name(names.bid(bid_id, "step_time_basis")))
        sheet.put(r, STEP_MODELED_COL, Name(names.bid(bid_id, "modeled_step_time_s")), style(FMT["num3"]))
        used = chain.base.get("step_time_s")
        sheet.put(r, STEP_USED_COL, used if used is not None else "n/a", style(FMT["num3"]))
        terms = bid.get("step_time_terms") or {}
        for c, key in enumerate(keys, start=STEP_FIRST_TERM_COL):
            sheet.put(r, c, terms.get(key), style(FMT["num3"]))
    last = len(chains)
    sheet.freeze = (1, 1)
    sheet.max_width = 100
    series = [Series(labels.get(f"term.{key}", key), Range(sheet.name, 1, c, last, c, absolute=True),
                     Range(sheet.name, 1, 0, last, 0, absolute=True))
              for c, key in enumerate(keys, start=STEP_FIRST_TERM_COL) if key in STACKED_TERMS
              and any((b.get("step_time_terms") or {}).get(key) for b in bids)]
    if series:
        sheet.charts.append(Chart("bar", "Step-time breakdown (s), modeled", series, last + 3, 0, stacked=True,
                                  value_axis="seconds per step", number_format="0.0",
                                  size=(760, max(320, 80 + 50 * last))))
    return sheet


MEAS_HEADER = ["Bid", "Logs", "Format", "Steps", "Warm-up excluded", "Mean (s)", "P50 (s)", "P95 (s)", "P99 (s)",
               "Max (s)", "Std (s)", "CV"]
HIST_HEADER = ["Bid", "From (s)", "To (s)", "Steps"]


def measurements_sheet(book: Book, bids: list[dict[str, Any]], names: Names) -> Sheet:
    sheet = book.sheet(MEASUREMENTS_SHEET)
    sheet.header(0, MEAS_HEADER)
    r = 1
    for bid in bids:
        meas = bid.get("measured") or {}
        stats = meas.get("step_time_s") or {}
        sources = meas.get("sources") or []
        if not sources:
            continue
        sheet.put(r, 0, str(bid["id"]))
        sheet.put(r, 1, ", ".join(str(s.get("path")) for s in sources))
        sheet.put(r, 2, ", ".join(sorted({str(s.get("format")) for s in sources})))
        sheet.put(r, 3, sum(int(s.get("steps") or 0) for s in sources), style(FMT["int"]))
        sheet.put(r, 4, sum(int(s.get("warmup_excluded") or 0) for s in sources), style(FMT["int"]))
        if stats:
            sheet.put(r, 5, Name(names.bid(str(bid["id"]), "measured_step_time_s")), style(FMT["num3"]))
        for c, key in enumerate(("p50", "p95", "p99", "max", "std"), start=6):
            sheet.put(r, c, stats.get(key), style(FMT["num3"]))
        sheet.put(r, 11, stats.get("cv"), style(FMT["pct"]))
        r += 1
    start = max(r, 2) + 2
    sheet.header(start, HIST_HEADER)
    h = start + 1
    for bid in bids:
        hist = (bid.get("measured") or {}).get("histogram") or {}
        edges, counts = hist.get("edges_s") or [], hist.get("counts") or []
        for a, b, n in zip(edges, edges[1:], counts):
            for c, (value, fmt) in enumerate(((str(bid["id"]), "General"), (a, FMT["num3"]), (b, FMT["num3"]),
                                              (n, FMT["int"]))):
                sheet.put(h, c, value, style(fmt))
            h += 1
    sheet.freeze = (1, 1)
    return sheet


SENS_HEADER = ["Bid", "Factor", "Change", "per million tokens", "Time to train (days)", "Rank",
               "Recommendation changes", "Recommended", "Gap to runner-up", "Step", "Currency moved"]
UNC_HEADER = ["Bid", "Measure", "P10", "P50", "P90", "Samples", "Seed"]


def sensitivity_sheet(book: Book, bids: list[dict[str, Any]], doc: dict[str, Any]) -> Sheet:
    sheet = book.sheet(SENSITIVITY_SHEET)
    ccy = str(doc["currency"])
    sheet.put(0, 0, "Computed by procure (one input at a time, each a fresh quote: a bid's own input or an "
                    "assumption every bid shares; a seeded Monte Carlo band): values, not formulas. Step: days of "
                    "delivery slip, or the share of leftover reserved hours reused. Use the Scenario columns on "
                    "Model to ask your own.", NOTE)
    sheet.header(1, [h if h not in ("per million tokens", "Gap to runner-up") else f"{h} ({ccy})"
                     for h in SENS_HEADER])
    r = 2
    for bid in bids:
        for e in bid.get("sensitivity") or []:
            cells = [(str(bid["id"]), "General"), (str(e.get("factor") or ""), "General"), (e.get("change"), "+0%;-0%;0%"),
                     (e.get("cost_per_million_tokens"), money_format(ccy, 4)),
                     (e.get("time_to_train_days"), FMT["days"]), (e.get("rank"), FMT["int"]),
                     ("yes" if e.get("winner_changes") else "no", "General"), (e.get("recommended"), "General"),
                     (e.get("gap"), money_format(ccy, 4)), (e.get("step"), "General"), (e.get("subject"), "General")]
            for c, (value, fmt) in enumerate(cells):
                sheet.put(r, c, value, style(fmt))
            r += 1
    start = max(r, 3) + 1
    sheet.header(start, UNC_HEADER)
    u = start + 1
    for bid in bids:
        unc = bid.get("uncertainty") or {}
        for key, fmt in (("cost_per_million_tokens", money_format(ccy, 4)), ("time_to_train_days", FMT["days"])):
            band = unc.get(key) or {}
            if not band:
                continue
            cells = [(str(bid["id"]), "General"), (key, "General"), (band.get("p10"), fmt), (band.get("p50"), fmt),
                     (band.get("p90"), fmt), (unc.get("samples"), FMT["int"]), (unc.get("seed"), "0")]
            for c, (value, f) in enumerate(cells):
                sheet.put(u, c, value, style(f))
            u += 1
    summary = doc.get("sensitivity_summary") or {}
    sheet.put(u + 1, 0, "Recommended")
    sheet.put(u + 1, 1, str(summary.get("winner") or ""))
    sheet.put(u + 2, 0, "Recommendation changes under")
    sheet.put(u + 2, 1, "; ".join(map(str, summary.get("winner_changes_under") or [])) or "none tested")
    sheet.freeze = (2, 1)
    return sheet


NEGOTIATION_COLUMNS = (
    ("Bid", "", "General"), ("Basis", "basis", "General"), ("Target bid", "target_bid", "General"),
    ("Target per million tokens", "target_cost_per_million_tokens", "money4"), ("Price term", "price_key", "General"),
    ("Current price", "current_price", "money6"), ("Break-even price", "break_even_price", "money6"),
    ("Break-even price as quoted", "break_even_quoted", "quoted"), ("Quoted currency", "quoted_currency", "General"),
    ("Change to tie", "break_even_change", "+0.0%;-0.0%;0.0%"), ("Step time (s)", "step_time_s", FMT["num3"]),
    ("Step time to win (s)", "step_time_to_win_s", FMT["num3"]), ("MFU to win", "step_time_to_win_mfu", FMT["pct"]),
    ("Credible step time (s)", "credible_step_time_s", FMT["num3"]), ("Credible bound", "credible_bound", "General"),
    ("Idle commitment (h)", "idle_commitment_hours", FMT["num2"]),
    ("Idle commitment cost", "idle_commitment_cost", "money2"), ("Notes", "notes", "General"),
    ("Kind of bid", "kind", "General"), ("Levers (proposed, as bid)", "levers", "General"))
#: A reservation is negotiated on its term and committed share, not a price cut: its price cells stay empty.
PRICE_KEYS = ("break_even_price", "break_even_quoted", "break_even_change")
LEVER_WORDS = {"price_per_gpu_hour": "price per GPU-hour", "capex_per_gpu": "capex per GPU",
               "term_months": "term (months)", "committed_share": "committed share of the term",
               "lead_time_days": "delivery (days after the RFQ date)"}


def _levers_text(levers: list[dict[str, Any]]) -> str:
    """"term (months) 1 (bid 12); committed share of the term 0.139 (bid 1)"; n/a where none ties."""
    return "; ".join(f"{LEVER_WORDS.get(str(x.get('key')), str(x.get('key')))} "
                     f"{'n/a' if x.get('proposed') is None else x.get('proposed')} (bid {x.get('current')})"
                     for x in levers)


def negotiation_sheet(book: Book, bids: list[dict[str, Any]], doc: dict[str, Any]) -> Sheet | None:
    """A negotiator's figures per bid, as procure computed them (values: they do not follow edits)."""
    rows: list[tuple[dict[str, Any], dict[str, Any]]] = [(b, b["negotiation"]) for b in bids if b.get("negotiation")]
    if not rows:
        return None
    sheet = book.sheet(NEGOTIATION_SHEET)
    ccy = str(doc["currency"])
    sheet.put(0, 0, "Computed by procure at the base inputs on the ranking basis: values, not formulas. To test a "
                    "price, type it in the bid's Scenario column on Model.", NOTE)
    sheet.header(1, [label for label, _, _ in NEGOTIATION_COLUMNS])
    for r, (bid, n) in enumerate(rows, start=2):
        formats = {"money4": money_format(ccy, 4), "money6": money_format(ccy, 2, 4), "money2": money_format(ccy),
                   "quoted": money_format(str(n.get("quoted_currency") or ccy), 2, 4)}
        for c, (_, key, fmt) in enumerate(NEGOTIATION_COLUMNS):
            value = bid["id"] if not key else n.get(key)
            if key == "notes":
                value = "; ".join(map(str, value or []))
            elif key == "levers":
                value = _levers_text(list(value or []))
            elif key in PRICE_KEYS and n.get("kind") == "reservation":
                value = None
            sheet.put(r, c, value if not isinstance(value, (list, dict)) else str(value), style(formats.get(fmt, fmt)))
    sheet.freeze = (2, 1)
    return sheet


SOURCES_HEADER = ["Key", "Kind", "Item", "Source", "As of", "Verified"]
INPUTS_HEADER = ["Input file", "Role", "SHA-256", "Bytes"]


def sources_sheet(book: Book, doc: dict[str, Any]) -> Sheet:
    sheet = book.sheet(SOURCES_SHEET)
    sheet.header(0, SOURCES_HEADER)
    sources = doc.get("sources") or []
    for r, s in enumerate(sources, start=1):
        cells = [s.get("key"), s.get("kind"), s.get("label"), "; ".join(map(str, s.get("source") or [])),
                 s.get("as_of"), "yes" if s.get("verified") else "no"]
        for c, value in enumerate(cells):
            sheet.put(r, c, "" if value is None else str(value))
    start = len(sources) + 3
    sheet.header(start, INPUTS_HEADER)
    for r, i in enumerate(doc.get("inputs") or [], start=start + 1):
        for c, value in enumerate((i.get("path"), i.get("role"), i.get("sha256"))):
            sheet.put(r, c, "" if value is None else str(value))
        sheet.put(r, 3, i.get("bytes"), style(FMT["int"]))
    sheet.freeze = (1, 1)
    sheet.max_width = 70
    return sheet


__all__ = ["HEADER", "README_SHEET", "measurements_sheet", "negotiation_sheet", "readme_sheet", "sensitivity_sheet",
           "sources_sheet", "step_time_sheet"]
