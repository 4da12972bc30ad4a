"""The sheets around the model: README (how to use it, and its check against the document), Step
time (the breakdown and its chart), Measurements, Sensitivity and Sources.

Step time and Measurements point at the Inputs and Model cells for the figures the chain uses;
the rest is what procure computed and is shown as values (the Monte Carlo band and the
one-at-a-time sensitivity are not spreadsheet formulas).
"""

from __future__ import annotations

from typing import Callable

from procure.document import QuoteDocument
from procure.document.bid import Band, BidResult, MoneyBand, Negotiation, NegotiationLever
from procure.report.bid_view import PLAN_KEYS, STACKED_TERMS, SUBTOTAL_TERMS
from procure.report.messages import catalog
from procure.report.xlsx_cells import (FMT, HEADER, INPUT_FILL, NOTE, SECTION, WHATIF_FILL, Book, Chart, Series,
                                       Content, Sheet, Style, money_format, style, wrap_rows)
from procure.report.xlsx_check import CheckResult
from procure.report.xlsx_formula import Name, Range
from procure.report.xlsx_inputs import Names, further_phases
from procure.report.xlsx_chain import Chain

README_SHEET = "README"


def readme_sheet(book: Book, doc: QuoteDocument, result: CheckResult, counts: dict[str, int]) -> Sheet:
    sheet = book.sheet(README_SHEET)
    ccy = doc.currency
    lines: list[tuple[str, Style]] = [
        (doc.title or "procure quote", Style(bold=True)),
        (f"Report currency {ccy}; as of {doc.as_of}; procure {doc.procure_version}.", NOTE),
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


def _phase_lines(doc: QuoteDocument) -> list[tuple[str, Style]]:
    """A workload in phases: say plainly how the chain takes them."""
    phases = further_phases(doc)
    if not phases:
        return []
    names = ", ".join(p.name for p in phases)
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


def term_keys(bids: list[BidResult]) -> list[str]:
    """The Step time sheet's term columns, in order (the Ratios sheet reads them)."""
    keys = list(STACKED_TERMS) + list(SUBTOTAL_TERMS)
    return keys + sorted({k for b in bids for k in b.step_time_terms if k not in keys})


def step_time_sheet(book: Book, chains: list[Chain], names: Names) -> Sheet:
    sheet = book.sheet(STEP_SHEET)
    bids = [c.bid for c in chains]
    keys = term_keys(bids)
    labels = catalog("en")
    sheet.header(0, ["Bid", "Plan", "Step-time basis", "Modeled step time (s)", "Step time used (s)"]
                 + [labels.get(f"term.{k}", k) + " (s)" for k in keys])
    for r, chain in enumerate(chains, start=1):
        bid = chain.bid
        bid_id = bid.id
        plan = bid.plan
        sheet.put(r, 0, bid_id)
        sheet.put(r, 1, " ".join(f"{k}={getattr(plan, k)}" for k in PLAN_KEYS) if plan is not None else "")
        sheet.put(r, 2, Name(names.bid(bid_id, "step_time_basis")))
        sheet.put(r, STEP_MODELED_COL, Name(names.bid(bid_id, "modeled_step_time_s")), style(FMT["num3"]))
        used = chain.get("base", "step_time_s")
        sheet.put(r, STEP_USED_COL, used if used is not None else "n/a", style(FMT["num3"]))
        terms = bid.step_time_terms
        for c, key in enumerate(keys, start=STEP_FIRST_TERM_COL):
            sheet.put(r, c, terms.get(key), style(FMT["num3"]))
    last = len(chains)
    sheet.freeze = (1, 1)
    sheet.max_width = 100
    series = [Series(labels.get(f"term.{key}", key), Range(sheet.name, 1, c, last, c, absolute=True),
                     Range(sheet.name, 1, 0, last, 0, absolute=True))
              for c, key in enumerate(keys, start=STEP_FIRST_TERM_COL) if key in STACKED_TERMS
              and any(b.step_time_terms.get(key) for b in bids)]
    if series:
        sheet.charts.append(Chart("bar", "Step-time breakdown (s), modeled", series, last + 3, 0, stacked=True,
                                  value_axis="seconds per step", number_format="0.0",
                                  size=(760, max(320, 80 + 50 * last))))
    return sheet


MEAS_HEADER = ["Bid", "Logs", "Format", "Steps", "Warm-up excluded", "Mean (s)", "P50 (s)", "P95 (s)", "P99 (s)",
               "Max (s)", "Std (s)", "CV"]
HIST_HEADER = ["Bid", "From (s)", "To (s)", "Steps"]


def measurements_sheet(book: Book, bids: list[BidResult], names: Names) -> Sheet:
    sheet = book.sheet(MEASUREMENTS_SHEET)
    sheet.header(0, MEAS_HEADER)
    r = 1
    for bid in bids:
        meas = bid.measured
        if meas is None or not meas.sources:
            continue
        stats, sources = meas.step_time_s, meas.sources
        sheet.put(r, 0, bid.id)
        sheet.put(r, 1, ", ".join(s.path for s in sources))
        sheet.put(r, 2, ", ".join(sorted({s.format for s in sources})))
        sheet.put(r, 3, sum(s.steps or 0 for s in sources), style(FMT["int"]))
        sheet.put(r, 4, sum(s.warmup_excluded or 0 for s in sources), style(FMT["int"]))
        if stats is not None:
            sheet.put(r, 5, Name(names.bid(bid.id, "measured_step_time_s")), style(FMT["num3"]))
        spread = (stats.p50, stats.p95, stats.p99, stats.max, stats.std) if stats is not None else (None,) * 5
        for c, figure in enumerate(spread, start=6):
            sheet.put(r, c, figure, style(FMT["num3"]))
        sheet.put(r, 11, stats.cv if stats is not None else None, style(FMT["pct"]))
        r += 1
    start = max(r, 2) + 2
    sheet.header(start, HIST_HEADER)
    h = start + 1
    for bid in bids:
        hist = bid.measured.histogram if bid.measured is not None else None
        edges, counts = (hist.edges_s, hist.counts) if hist is not None else ([], [])
        for a, b, n in zip(edges, edges[1:], counts):
            cells: list[tuple[Content, str]] = [(bid.id, "General"), (a, FMT["num3"]), (b, FMT["num3"]),
                                                (n, FMT["int"])]
            for c, (value, fmt) in enumerate(cells):
                sheet.put(h, c, value, style(fmt))
            h += 1
    sheet.freeze = (1, 1)
    return sheet


SENS_HEADER = ["Bid", "Factor", "Change", "per million tokens", "Time to train (days)", "Rank",
               "Recommendation changes", "Recommended", "Gap to runner-up", "Step", "Currency moved"]
UNC_HEADER = ["Bid", "Measure", "P10", "P50", "P90", "Samples", "Seed"]


def sensitivity_sheet(book: Book, bids: list[BidResult], doc: QuoteDocument) -> Sheet:
    sheet = book.sheet(SENSITIVITY_SHEET)
    ccy = doc.currency
    sheet.put(0, 0, "Computed by procure (one input at a time, each a fresh quote: a bid's own input or an "
                    "assumption every bid shares; a seeded Monte Carlo band): values, not formulas. Step: days of "
                    "delivery slip, or the share of leftover reserved hours reused. Use the Scenario columns on "
                    "Model to ask your own.", NOTE)
    sheet.header(1, [h if h not in ("per million tokens", "Gap to runner-up") else f"{h} ({ccy})"
                     for h in SENS_HEADER])
    r = 2
    for bid in bids:
        for e in bid.sensitivity:
            cells: list[tuple[Content, str]] = [
                (bid.id, "General"), (e.factor, "General"), (e.change, "+0%;-0%;0%"),
                (e.cost_per_million_tokens, money_format(ccy, 4)),
                (e.time_to_train_days, FMT["days"]), (e.rank, FMT["int"]),
                ("yes" if e.winner_changes else "no", "General"), (e.recommended, "General"),
                (e.gap, money_format(ccy, 4)), (e.step, "General"), (e.subject, "General")]
            for c, (value, fmt) in enumerate(cells):
                sheet.put(r, c, value, style(fmt))
            r += 1
    start = max(r, 3) + 1
    sheet.header(start, UNC_HEADER)
    u = start + 1
    for bid in bids:
        unc = bid.uncertainty
        if unc is None:
            continue
        bands: tuple[tuple[str, MoneyBand | Band | None, str], ...] = (
            ("cost_per_million_tokens", unc.cost_per_million_tokens, money_format(ccy, 4)),
            ("time_to_train_days", unc.time_to_train_days, FMT["days"]))
        for measure, band, fmt in bands:
            if band is None:
                continue
            cells = [(bid.id, "General"), (measure, "General"), (band.p10, fmt), (band.p50, fmt),
                     (band.p90, fmt), (unc.samples, FMT["int"]), (unc.seed, "0")]
            for c, (value, f) in enumerate(cells):
                sheet.put(u, c, value, style(f))
            u += 1
    summary = doc.sensitivity_summary
    sheet.put(u + 1, 0, "Recommended")
    sheet.put(u + 1, 1, summary.winner or "")
    sheet.put(u + 2, 0, "Recommendation changes under")
    sheet.put(u + 2, 1, "; ".join(map(str, summary.winner_changes_under)) or "none tested")
    sheet.freeze = (2, 1)
    return sheet


def _unless_reserved(n: Negotiation, value: Content) -> Content:
    """A reservation is negotiated on its term and committed share, not a price cut: its price cells stay empty."""
    return None if n.kind == "reservation" else value


# (header, the cell of a bid's negotiation, number format: a name of the sheet's money formats, or the format)
NEGOTIATION_COLUMNS: tuple[tuple[str, Callable[[Negotiation], Content], str], ...] = (
    ("Basis", lambda n: n.basis, "General"), ("Target bid", lambda n: n.target_bid, "General"),
    ("Target per million tokens", lambda n: n.target_cost_per_million_tokens, "money4"),
    ("Price term", lambda n: n.price_key, "General"),
    ("Current price", lambda n: n.current_price, "money6"),
    ("Break-even price", lambda n: _unless_reserved(n, n.break_even_price), "money6"),
    ("Break-even price as quoted", lambda n: _unless_reserved(n, n.break_even_quoted), "quoted"),
    ("Quoted currency", lambda n: n.quoted_currency, "General"),
    ("Change to tie", lambda n: _unless_reserved(n, n.break_even_change), "+0.0%;-0.0%;0.0%"),
    ("Step time (s)", lambda n: n.step_time_s, FMT["num3"]),
    ("Step time to win (s)", lambda n: n.step_time_to_win_s, FMT["num3"]),
    ("MFU to win", lambda n: n.step_time_to_win_mfu, FMT["pct"]),
    ("Credible step time (s)", lambda n: n.credible_step_time_s, FMT["num3"]),
    ("Credible bound", lambda n: n.credible_bound, "General"),
    ("Idle commitment (h)", lambda n: n.idle_commitment_hours, FMT["num2"]),
    ("Idle commitment cost", lambda n: n.idle_commitment_cost, "money2"),
    ("Notes", lambda n: "; ".join(map(str, n.notes)), "General"), ("Kind of bid", lambda n: n.kind, "General"),
    ("Levers (proposed, as bid)", lambda n: _levers_text(n.levers), "General"))
LEVER_WORDS = {"price_per_gpu_hour": "price per GPU-hour", "capex_per_gpu": "capex per GPU",
               "term_months": "term (months)", "committed_share": "committed share of the term",
               "lead_time_days": "delivery (days after the RFQ date)"}


def _levers_text(levers: list[NegotiationLever]) -> str:
    """"term (months) 1 (bid 12); committed share of the term 0.139 (bid 1)"; n/a where none ties."""
    return "; ".join(f"{LEVER_WORDS.get(x.key, x.key)} {'n/a' if x.proposed is None else x.proposed} (bid {x.current})"
                     for x in levers)


def negotiation_sheet(book: Book, bids: list[BidResult], doc: QuoteDocument) -> Sheet | None:
    """A negotiator's figures per bid, as procure computed them (values: they do not follow edits)."""
    rows = [(b, b.negotiation) for b in bids if b.negotiation is not None]
    if not rows:
        return None
    sheet = book.sheet(NEGOTIATION_SHEET)
    ccy = doc.currency
    sheet.put(0, 0, "Computed by procure at the base inputs on the ranking basis: values, not formulas. To test a "
                    "price, type it in the bid's Scenario column on Model.", NOTE)
    sheet.header(1, ["Bid"] + [label for label, _, _ in NEGOTIATION_COLUMNS])
    for r, (bid, n) in enumerate(rows, start=2):
        formats = {"money4": money_format(ccy, 4), "money6": money_format(ccy, 2, 4), "money2": money_format(ccy),
                   "quoted": money_format(n.quoted_currency or ccy, 2, 4)}
        sheet.put(r, 0, bid.id, style("General"))
        for c, (_, cell, fmt) in enumerate(NEGOTIATION_COLUMNS, start=1):
            sheet.put(r, c, cell(n), style(formats.get(fmt, fmt)))
    sheet.freeze = (2, 1)
    return sheet


SOURCES_HEADER = ["Key", "Kind", "Item", "Source", "As of", "Verified"]
INPUTS_HEADER = ["Input file", "Role", "SHA-256", "Bytes"]


def sources_sheet(book: Book, doc: QuoteDocument) -> Sheet:
    sheet = book.sheet(SOURCES_SHEET)
    sheet.header(0, SOURCES_HEADER)
    for r, s in enumerate(doc.sources, start=1):
        cells = [s.key, s.kind, s.label, "; ".join(map(str, s.source)), s.as_of, "yes" if s.verified else "no"]
        for c, value in enumerate(cells):
            sheet.put(r, c, value)
    start = len(doc.sources) + 3
    sheet.header(start, INPUTS_HEADER)
    for r, i in enumerate(doc.inputs, start=start + 1):
        for c, value in enumerate((i.path, i.role, i.sha256)):
            sheet.put(r, c, value)
        sheet.put(r, 3, i.bytes, style(FMT["int"]))
    sheet.freeze = (1, 1)
    sheet.max_width = 70
    return sheet


__all__ = ["HEADER", "README_SHEET", "measurements_sheet", "negotiation_sheet", "readme_sheet", "sensitivity_sheet",
           "sources_sheet", "step_time_sheet"]
