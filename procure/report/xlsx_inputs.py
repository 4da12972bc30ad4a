"""The Inputs sheet: every number the workbook's results depend on, one named cell each, with its
unit, source and as-of date.

Names: ``in_<key>`` for the workload and the assumptions, ``fx_<CCY>`` for the FX table,
``bid_<bid>_<field>`` for one bid's inputs. Prices are the quoted figures in their own currency;
the Model sheet converts them with the FX cells. A term the document does not carry is not
invented: the line that needs it is then taken as given (and the README's check says so).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Callable, Protocol

from procure.document import QuoteDocument
from procure.document.bid import BidResult, CostLine
from procure.document.quote import PhaseSummary, SourceRow, TaxSummary
from procure.economics.goodput import MAX_LOST_FRACTION
from procure.money import FX_SIGNIFICANT_DIGITS, D
from procure.precision import round_sig
from procure.report.xlsx_cells import FMT, INPUT_FILL, NOTE, PLAIN, Book, Content, Sheet, Style, money_format, style
from procure.report.xlsx_formula import Expr, Name

INPUTS_SHEET = "Inputs"
HEADER = ["Name", "Item", "Bid", "Value", "Unit", "Source", "As of"]
VALUE_COL = 3
BASIS_CHOICES = ["modeled", "measured", "committed"]
# the assumptions the chain reads (the others drive flags and bands, computed by procure only)
CHAIN_ASSUMPTIONS = ("failures_per_gpu_hour", "restart_min", "checkpoint_bytes_per_param", "checkpoint_write_gbs",
                     "checkpoint_write_gbs_per_gpu", "storage_write_cap_gbs", "eval_fraction", "data_stall_fraction",
                     "checkpoint_interval_min", "gpu_utilisation_power", "power_usd_per_kwh", "pue", "rental_pue",
                     "months_hours",
                     "cost_of_capital", "resale_decline_per_year", "resale_haircut", "resale_transaction_cost",
                     "resale_months_to_sell", "leftover_hours_reuse_share", "value_of_time_per_day")
MONEY_TERMS = {"price_per_gpu_hour": 4, "storage_per_gpu_hour": 4, "network_per_gpu_hour": 4, "capex_per_gpu": 2,
               "network_capex_per_gpu": 2, "support_per_gpu_year": 2, "power_per_kwh": 4, "colo_per_kw_month": 2,
               "setup_fee": 2, "egress_per_tb": 2, "capex_per_node": 2, "network_capex": 2, "staff_per_year": 2}
PLAIN_LABELS = {
    "min_commit_months": ("Minimum commitment", "months", FMT["int"]),
    "discount_fraction": ("Discount off the price per GPU-hour", "fraction", FMT["pct"]),
    "prepay_fraction": ("Prepaid share of the commitment", "fraction", FMT["pct"]),
    "support_fraction": ("Support, fraction of the GPU-hours bill", "fraction", FMT["pct"]),
    "egress_tb": ("Data moved out", "TB", FMT["num2"]),
    "life_years": ("Depreciation life", "years", "General"),
    "residual_fraction": ("Book residual at end of life", "fraction of capex", FMT["pct"]),
    "resale_decline_per_year": ("Resale value decline (this bid)", "per year", FMT["pct"]),
    "cost_of_capital": ("Cost of capital (this bid)", "per year", FMT["pct"]),
    "pue": ("PUE of the price book", "", "0.00"),
}
TERM_LABELS = {
    "price_per_gpu_hour": ("Price per GPU-hour, as quoted", "/GPU-h"),
    "storage_per_gpu_hour": ("Storage per GPU-hour, as quoted", "/GPU-h"),
    "network_per_gpu_hour": ("Network per GPU-hour, as quoted", "/GPU-h"),
    "support_fraction": ("Support, fraction of the GPU-hours bill", "fraction"),
    "capex_per_gpu": ("Capex per GPU, as quoted", "/GPU"),
    "network_capex_per_gpu": ("Network capex per GPU, as quoted", "/GPU"),
    "life_years": ("Depreciation life", "years"),
    "residual_fraction": ("Residual value at end of life", "fraction of capex"),
    "support_per_gpu_year": ("Support per GPU-year, as quoted", "/GPU-year"),
    "power_per_kwh": ("Power price of the price book", "/kWh"),
    "pue": ("PUE of the price book", ""),
    "colo_per_kw_month": ("Colocation per kW-month, as quoted", "/kW-month"),
    "setup_fee": ("One-time setup fee, as quoted", "fee"),
    "egress_per_tb": ("Egress per TB, as quoted", "/TB"),
    "capex_per_node": ("Capex per node, as quoted", "/node"),
    "network_capex": ("Fabric capex, as quoted", "fabric"),
    "staff_per_year": ("Staff per year, as quoted", "/year"),
}


@dataclass(frozen=True)
class InputRow:
    name: str | None           # None: shown for reference, not an input of any formula
    label: str
    bid: str
    value: Content
    unit: str
    source: str
    as_of: str
    num_format: str = "General"
    choices: tuple[str, ...] = ()


class Names:
    """Defined names: one slug per bid id, unique and valid in every spreadsheet."""

    def __init__(self) -> None:
        self.slugs: dict[str, str] = {}

    def slug(self, bid_id: str) -> str:
        if bid_id not in self.slugs:
            base = re.sub(r"[^A-Za-z0-9_]", "_", str(bid_id)).lower()[:40] or "bid"
            taken = set(self.slugs.values())
            candidate, n = base, 2
            while candidate in taken:
                candidate, n = f"{base}_{n}", n + 1
            self.slugs[bid_id] = candidate
        return self.slugs[bid_id]

    def bid(self, bid_id: str, field: str) -> str:
        return f"bid_{self.slug(bid_id)}_{field}"

    def base(self, bid_id: str, key: str) -> str:
        return f"base_{self.slug(bid_id)}_{key}"

    def scenario(self, bid_id: str, key: str) -> str:
        return f"scn_{self.slug(bid_id)}_{key}"

    def whatif(self, bid_id: str, key: str) -> str:
        return f"whatif_{self.slug(bid_id)}_{key}"

    @staticmethod
    def global_(key: str) -> str:
        return "in_" + re.sub(r"[^A-Za-z0-9_]", "_", str(key)).lower()

    @staticmethod
    def fx(currency: str) -> str:
        return "fx_" + re.sub(r"[^A-Za-z0-9_]", "_", str(currency))


def number_or_none(value: Decimal | float | None) -> Decimal | None:
    return None if value is None else D(value)


def build_inputs(book: Book, doc: QuoteDocument, bids: list[BidResult], names: Names) -> set[str]:
    """Write the Inputs sheet; return the names defined (what formulas may reference)."""
    sheet = book.sheet(INPUTS_SHEET)
    sheet.header(0, HEADER)
    rows = workload_rows(doc) + basis_rows(doc) + assumption_rows(doc) + fx_rows(doc)
    for bid in bids:
        rows += bid_rows(doc, bid, names)
    row = 1
    defined: set[str] = set()
    for item in rows:
        _write_row(sheet, row, item)
        if item.name:
            book.define(item.name, INPUTS_SHEET, row, VALUE_COL)
            defined.add(item.name)
        row += 1
    row += 1
    sheet.put(row, 1, "Used by procure only (flags and bands; the workbook does not recalculate these)", NOTE)
    for item in reference_rows(doc):
        row += 1
        _write_row(sheet, row, item)
    sheet.freeze = (1, 2)
    sheet.autofilter = (0, 0, len(rows), len(HEADER) - 1)
    sheet.max_width = 70
    return defined


def _write_row(sheet: Sheet, row: int, item: InputRow) -> None:
    sheet.put(row, 0, item.name or "")
    sheet.put(row, 1, item.label)
    sheet.put(row, 2, item.bid)
    value_style = Style(num_format=item.num_format, fill=INPUT_FILL) if item.name else style(item.num_format)
    value = item.value
    if isinstance(value, float):
        value = D(value)
    sheet.put(row, VALUE_COL, value, value_style)
    if item.choices:
        sheet.choices[(row, VALUE_COL)] = list(item.choices)
    sheet.put(row, 4, item.unit)
    sheet.put(row, 5, item.source)
    sheet.put(row, 6, item.as_of, PLAIN)


def _sources(doc: QuoteDocument) -> dict[str, SourceRow]:
    return {s.key: s for s in doc.sources}


def _source_text(row: SourceRow | None, fallback: str) -> str:
    if row is None:
        return fallback
    return f"{row.label}: " + "; ".join(str(s) for s in row.source)


def _as_of(row: SourceRow | None, fallback: str | date) -> str:
    """A source's as-of date, else ``fallback`` (the report's)."""
    return str((row.as_of if row is not None else "") or fallback)


def further_phases(doc: QuoteDocument) -> list[PhaseSummary]:
    """The workload's phases after the main one (a long-context extension, say); [] for one phase."""
    return list(doc.workload.phases[1:])


def phase_key(index: int, key: str) -> str:
    """The input key of further phase ``index`` (1-based): phase1_train_tokens, ..."""
    return f"phase{index}_{key}"


def train_tokens_expr(doc: QuoteDocument) -> Expr:
    """The tokens of every phase: what cost per million tokens divides by (as the economics does)."""
    total: Expr = Name(Names.global_("train_tokens"))
    for i in range(1, len(further_phases(doc)) + 1):
        total = total + Name(Names.global_(phase_key(i, "train_tokens")))
    return total


def phase_rows(doc: QuoteDocument) -> list[InputRow]:
    """Each further phase's tokens and tokens per step (its step time is a bid input)."""
    as_of, rows = str(doc.as_of), []
    for i, phase in enumerate(further_phases(doc), start=1):
        name, where = phase.name, f"cluster.yaml workload.phases[{i - 1}]"
        rows += [InputRow(Names.global_(phase_key(i, "train_tokens")), f"Training tokens, phase {name}", "",
                          number_or_none(phase.train_tokens), "tokens", f"{where} (train_tokens, or steps "
                          "× tokens per step)", as_of, FMT["int"]),
                 InputRow(Names.global_(phase_key(i, "tokens_per_step")), f"Tokens per step, phase {name}", "",
                          phase.global_batch_seqs * phase.seq_len, "tokens",
                          f"{where} (global batch × sequence length)", as_of, FMT["int"])]
    return rows


def workload_rows(doc: QuoteDocument) -> list[InputRow]:
    w, as_of = doc.workload, str(doc.as_of)
    model = w.model
    model_source = _source_text(_sources(doc).get(f"model:{model.id}"), f"model {model.name}")
    phases = w.phases
    main_tokens = phases[0].train_tokens if phases else w.train_tokens
    tokens_label = f"Training tokens, phase {phases[0].name}" if phases else "Training tokens"
    return [
        InputRow(Names.global_("train_tokens"), tokens_label, "", number_or_none(main_tokens), "tokens",
                 "cluster.yaml workload.train_tokens", as_of, FMT["int"]),
        InputRow(Names.global_("tokens_per_step"), "Tokens per step (global batch)", "",
                 w.global_batch_tokens, "tokens", "cluster.yaml workload (global batch × sequence length)",
                 as_of, FMT["int"]),
        InputRow(Names.global_("params"), "Model parameters (checkpoint size)", "", model.params, "parameters",
                 model_source, as_of, FMT["int"]),
        InputRow(Names.global_("deadline_days"), "Deadline", "", number_or_none(w.deadline_days), "days",
                 "cluster.yaml workload.deadline_days (blank: none)", as_of, FMT["days"]),
        InputRow(Names.global_("horizon_months"), "Horizon of the cash view", "", w.horizon_months, "months",
                 "cluster.yaml workload.horizon_months (blank: the longest commitment or run among the bids)", as_of,
                 "0"),
        InputRow(Names.global_("max_lost_fraction"), "Largest lost fraction the goodput formula is trusted to", "",
                 D(MAX_LOST_FRACTION), "fraction",
                 "procure: beyond this the first-order formula means nothing; the loss is clamped", as_of, FMT["pct"]),
    ] + phase_rows(doc) + tax_rows(doc)


# (input key, label, the rate) of workload.tax
TAX_RATES: tuple[tuple[str, str, Callable[[TaxSummary], Decimal]], ...] = (
    ("rate", "Income tax rate (the shield of costs and depreciation)", lambda tax: tax.rate),
    ("vat_rate", "VAT/GST rate", lambda tax: tax.vat_rate),
    ("import_duty_rate", "Import duty on capex", lambda tax: tax.import_duty_rate))


def tax_rows(doc: QuoteDocument) -> list[InputRow]:
    """workload.tax, when given: its rates are inputs of the Cash flow sheet's tax rows."""
    tax, as_of = doc.workload.tax, str(doc.as_of)
    if tax is None:
        return []
    rows = [InputRow(Names.global_(f"tax_{key}"), label, "", number_or_none(rate(tax)), "fraction",
                     f"cluster.yaml workload.tax.{key}", as_of, FMT["pct"]) for key, label, rate in TAX_RATES]
    after = tax.vat_recovered_after_months
    rows.append(InputRow(None, "VAT recovered after (the layout of the Cash flow sheet)", "",
                         "not recovered: a cost" if after is None else after, "months",
                         "cluster.yaml workload.tax.vat_recovered_after_months", as_of))
    return rows


def basis_rows(doc: QuoteDocument) -> list[InputRow]:
    """The cost basis that ranks, when the document carries both (issue 12)."""
    if not any(b.cost_bases for b in doc.bids):
        return []
    return [InputRow(Names.global_("cost_basis"), "Cost basis that ranks", "", doc.cost_basis,
                     "present_value | run | commitment", "cluster.yaml workload.cost_basis, or procure quote --basis",
                     str(doc.as_of), "General", ("present_value", "run", "commitment"))]


def assumption_rows(doc: QuoteDocument) -> list[InputRow]:
    rows = []
    as_of, version = str(doc.as_of), doc.procure_version
    by_key = {a.key: a for a in doc.assumptions}
    for key in CHAIN_ASSUMPTIONS:
        a = by_key.get(key)
        if a is None:
            continue
        unit = a.unit
        if key == "power_usd_per_kwh":    # given in USD: the Model converts it with the FX cells
            unit = "USD/kWh"
        given = a.origin != "default"
        rows.append(InputRow(Names.global_(key), a.label or key, "", number_or_none(a.value), unit,
                             f"{a.source}" + (f" ({a.origin})" if given else ""),
                             as_of if given else f"procure {version} default", _assumption_format(key)))
    return rows


def _assumption_format(key: str) -> str:
    if key == "failures_per_gpu_hour":
        return FMT["sci"]
    if key in ("gpu_utilisation_power", "cost_of_capital", "resale_decline_per_year", "resale_haircut",
               "resale_transaction_cost", "leftover_hours_reuse_share"):
        return FMT["pct"]
    return "General"


def reference_rows(doc: QuoteDocument) -> list[InputRow]:
    as_of = str(doc.as_of)
    return [InputRow(None, a.label or a.key, "", a.value, a.unit, a.source, as_of)
            for a in doc.assumptions if a.key not in CHAIN_ASSUMPTIONS]


def fx_rows(doc: QuoteDocument) -> list[InputRow]:
    fx = doc.fx
    if fx is None:
        return []
    base = fx.base or "USD"
    verified = "" if fx.verified else " (unverified)"
    rows = [InputRow(Names.fx(ccy), f"FX rate {ccy}", "", D(rate), f"{ccy} per {base}",
                     f"{fx.source}{verified}", str(fx.as_of), "General")
            for ccy, rate in sorted(fx.rates.items())]
    rows.append(InputRow(Names.global_("fx_significant_digits"), "Significant digits of a converted FX rate", "",
                         FX_SIGNIFICANT_DIGITS, "digits", "procure money policy: FX rates at 12 significant digits, "
                         "converted prices to 1e-6 of a unit, half away from zero", str(doc.as_of), "0"))
    return rows


class RowMaker(Protocol):
    """One input row of a bid (``bid_rows``' ``row``)."""

    def __call__(self, field: str, label: str, value: Content, unit: str, source: str, when: str = ...,
                 num_format: str = ..., choices: tuple[str, ...] = ...) -> InputRow: ...


def bid_rows(doc: QuoteDocument, bid: BidResult, names: Names) -> list[InputRow]:
    bid_id, as_of = bid.id, str(doc.as_of)
    acc = bid.accelerator
    acc_row = _sources(doc).get(f"accelerator:{acc.id}")
    acc_source, acc_as_of = _source_text(acc_row, f"catalog {acc.id}"), _as_of(acc_row, as_of)

    def row(field: str, label: str, value: Content, unit: str, source: str, when: str = as_of,
            num_format: str = "General", choices: tuple[str, ...] = ()) -> InputRow:
        return InputRow(names.bid(bid_id, field), label, bid_id, value, unit, source, when, num_format, choices)

    rows = [row("gpus", "GPUs", bid.gpus, "GPU", "bid (cluster.yaml)", num_format=FMT["int"])]
    rows += price_rows(doc, bid, row)
    rows += power_rows(doc, bid, row, acc_source, acc_as_of)
    finance = bid.finance
    if finance is not None and finance.market_source and finance.market_value_new is not None:
        rows.append(row("market_value_new", "Market price of the same hardware new (what resale is a share of)",
                        D(finance.market_value_new), doc.currency,
                        finance.market_source, as_of, money_format(doc.currency, 2)))
    rows += [row("peak_tflops", "Dense peak per GPU at the workload precision", number_or_none(acc.peak_tflops),
                 "TFLOP/s", acc_source, acc_as_of, FMT["num2"]),
             row("model_flops_per_step", "Model FLOPs per step", number_or_none(bid.flops.model_per_step), "FLOP",
                 "procure step-time model (6 significant digits)", as_of, FMT["sci"])]
    delivery = bid.delivery
    if delivery is not None:
        rows.append(row("lead_time_days", "Lead time before the capacity is usable",
                        number_or_none(delivery.lead_time_days), "days",
                        delivery.lead_time_origin or "not given: usable on the as-of date", as_of,
                        FMT["days"]))
    rows += step_time_rows(doc, bid, row)
    rows += batch_rows(doc, bid, row)
    rows += phase_step_rows(doc, bid, row)
    rows += real_run_rows(bid, row)
    return rows


def real_run_rows(bid: BidResult, row: RowMaker) -> list[InputRow]:
    """The pace of published whole runs against the model's time to train (a modeled bid only)."""
    real, days = bid.real_run, bid.time_to_train_days
    if real is None or not days:
        return []
    pace = D(repr(round_sig(real.time_to_train_days / days, 6)))
    return [row("real_run_pace", "Published runs' pace: their time to train over the model's", pace, "×",
                f"published whole pre-training runs took {real.real_run_factor:.3g} × the model's time, losses apart "
                f"(the median over {real.fit_runs} published runs), with the run-level goodput",
                num_format=FMT["num3"])]


def own_batch(doc: QuoteDocument, bid: BidResult) -> bool:
    """The bid runs at a batch of its own (chosen in a batch range), or pays a token penalty: its
    tokens per step and token factor are inputs of its chain (issue 18)."""
    batch = bid.batch
    return batch is not None and (batch.origin == "range" or batch.token_factor != 1
                                  or bid.tokens_per_step != doc.workload.global_batch_tokens)


def batch_rows(doc: QuoteDocument, bid: BidResult, row: RowMaker) -> list[InputRow]:
    """The main phase's batch on this bid and its statistical-efficiency factor (issue 18)."""
    batch, as_of = bid.batch, str(doc.as_of)
    if batch is None or not own_batch(doc, bid):
        return []
    law = "procure statistical-efficiency law (methodology), at the document's six significant digits"
    return [row("tokens_per_step", "Tokens per step (this bid's global batch)",
                batch.global_batch_tokens or bid.tokens_per_step, "tokens",
                f"procure: batch {batch.origin} (workload.global_batch_range)", as_of, FMT["int"]),
            row("token_factor", "Token factor of the batch (tokens to the target over train tokens)",
                D(batch.token_factor), "ratio", law, as_of, "0.000000")]


def _model_source(doc: QuoteDocument) -> tuple[str, str]:
    """The step-time model and when it was fitted: the source of every modeled step time."""
    method = doc.methodology
    return method.model or "procure step-time model", str(method.fitted_at or doc.as_of)


def phase_step_rows(doc: QuoteDocument, bid: BidResult, row: RowMaker) -> list[InputRow]:
    """The modeled step time of each further phase on this bid (none where no plan fits it)."""
    by_name = {p.name: p for p in bid.phases}
    model, fitted = _model_source(doc)
    rows = []
    for i, phase in enumerate(further_phases(doc), start=1):
        result = by_name.get(phase.name)
        if result is None or result.step_time_s is None:
            continue
        rows.append(row(phase_key(i, "step_time_s"), f"Step time, phase {phase.name}, modeled",
                        D(result.step_time_s), "s", model, fitted, FMT["num3"]))
    return rows


def quoted_prices(doc: QuoteDocument, bid: BidResult) -> dict[str, tuple[Decimal, str, str, str]]:
    """key -> (price as quoted, its currency, what one unit buys, origin); an older document keeps
    only the converted price per GPU-hour, which is then the input, in the report currency."""
    p = bid.pricing
    quoted = {q.key: (D(q.quoted), q.currency, q.unit, q.origin) for q in p.quoted}
    if not quoted and p.price_per_gpu_hour is not None:
        return {"price_per_gpu_hour": (D(p.price_per_gpu_hour), doc.currency, "GPU-h", "as converted")}
    return quoted


def plain_terms(bid: BidResult) -> dict[str, Decimal | int]:
    p = bid.pricing
    terms: dict[str, Decimal | int] = dict(p.terms)
    if p.kind == "rental":
        terms.setdefault("min_commit_months", p.min_commit_months)
    return terms


def price_rows(doc: QuoteDocument, bid: BidResult, row: RowMaker) -> list[InputRow]:
    source_row = next((s for k, s in _sources(doc).items() if k in bid.sources and k.startswith("price:")), None)
    book = bid.pricing.price_book
    book_source = _source_text(source_row, f"price book {book}" if book else "bid (cluster.yaml)")
    when = _as_of(source_row, doc.as_of)
    used = used_terms(bid)
    rows = []
    for key, (value, ccy, unit, origin) in quoted_prices(doc, bid).items():
        if key not in used:
            continue
        label = TERM_LABELS.get(key, (key.replace("_", " "), ""))[0]
        source = book_source if origin.startswith("price book") else f"bid ({origin or 'cluster.yaml'})"
        rows.append(row(key, label, value, f"{ccy}/{unit}", source, when, money_format(ccy, MONEY_TERMS.get(key, 4))))
    for key, term in plain_terms(bid).items():
        if key in used and key in PLAIN_LABELS:
            label, unit, fmt = PLAIN_LABELS[key]
            rows.append(row(key, label, number_or_none(term), unit, book_source, when, fmt))
    return rows


# which inputs each kind of cost line reads (a zero adder makes no line, hence no input)
LINE_TERMS = {
    "gpu_hours": {"price_per_gpu_hour", "discount_fraction", "min_commit_months"},
    "idle_commitment": {"price_per_gpu_hour", "discount_fraction", "min_commit_months"},
    "storage": {"storage_per_gpu_hour"}, "network": {"network_per_gpu_hour"},
    "prepay_financing": {"prepay_fraction", "cost_of_capital"}, "setup": {"setup_fee"},
    "egress": {"egress_per_tb", "egress_tb"},
    "capex": {"capex_per_gpu"}, "node_capex": {"capex_per_node"}, "network_capex": {"network_capex_per_gpu"},
    "fabric_capex": {"network_capex"}, "financing": {"cost_of_capital"}, "resale": {"resale_decline_per_year"},
    "power": {"power_per_kwh", "pue"}, "colocation": {"colo_per_kw_month"}, "staff": {"staff_per_year"},
}
CAPEX_TERMS = {"capex_per_gpu", "capex_per_node", "network_capex_per_gpu", "network_capex"}
DEPRECIATION_TERMS = {"life_years", "residual_fraction"}


def all_lines(bid: BidResult) -> list[CostLine]:
    lines = [line for basis in bid.cost_bases.values() for line in basis.cost_lines]
    return lines or list(bid.cost_lines)


def used_terms(bid: BidResult) -> set[str]:
    """The terms some cost line of this bid reads."""
    purchase = bid.pricing.kind == "purchase"
    used: set[str] = set()
    for line in all_lines(bid):
        used |= LINE_TERMS.get(line.key, set())
        if line.key == "support":
            used.add("support_per_gpu_year" if purchase else "support_fraction")
    used.add("pue")                  # energy: the bid's own PUE (a rental's provider, a purchase's facility)
    if purchase and used & CAPEX_TERMS:
        quoted = {q.key for q in bid.pricing.quoted}
        used |= (CAPEX_TERMS & quoted) | DEPRECIATION_TERMS     # capex, financing and resale read them all
    return used


def power_rows(doc: QuoteDocument, bid: BidResult, row: RowMaker, acc_source: str, acc_as_of: str) -> list[InputRow]:
    """IT power per GPU: a system spec (node power / GPUs + fabric share), a given figure, or the TDP."""
    power, finance = bid.power, bid.finance
    source = (power.source if power is not None else "") or "tdp"
    node_kw = power.node_power_kw if power is not None else None
    rows = []
    if power is not None and source.startswith("system:") and node_kw is not None:
        spec = _sources(doc).get(source)
        text, when = _source_text(spec, f"catalog {source}"), _as_of(spec, doc.as_of)
        rows += [row("node_power_kw", "Power of one node at full load", D(node_kw), "kW", text, when,
                     FMT["num2"]),
                 row("fabric_w_per_gpu", "Fabric power per GPU (switches)", D(power.fabric_w_per_gpu or 0), "W",
                     text, when, FMT["num2"])]
    elif source == "given":
        rows.append(row("kw_per_gpu", "IT power per GPU", number_or_none(bid.pricing.terms.get("kw_per_gpu")), "kW",
                        "bid (cluster.yaml)", str(doc.as_of), FMT["num3"]))
    if not source.startswith("system:") or node_kw is None:
        rows.append(row("tdp_w", "Power per GPU (TDP)", number_or_none(bid.accelerator.tdp_w), "W", acc_source,
                        acc_as_of, FMT["int"]))
    gpn = (power.gpus_per_node if power is not None else None) or (finance.gpus_per_node if finance is not None
                                                                   else None)
    if gpn is not None:
        rows.append(row("gpus_per_node", "GPUs per node", gpn, "GPU", f"catalog {source}" if source.startswith(
            "system:") else "accelerator scale-up domain", str(doc.as_of), FMT["int"]))
    return rows


def step_time_rows(doc: QuoteDocument, bid: BidResult, row: RowMaker) -> list[InputRow]:
    as_of = str(doc.as_of)
    modeled = bid.modeled.step_time_s if bid.modeled is not None else None
    measured = bid.measured
    stats = measured.step_time_s if measured is not None else None
    logs = ", ".join(s.path for s in measured.sources) if measured is not None else ""
    model, fitted = _model_source(doc)
    return [
        row("modeled_step_time_s", "Step time, modeled", number_or_none(modeled), "s", model, fitted, FMT["num3"]),
        row("measured_step_time_s", "Step time, measured mean", number_or_none(stats.mean if stats else None), "s",
            f"measured logs: {logs}" if logs else "no measured logs", as_of, FMT["num3"]),
        row("committed_step_time_s", "Step time, committed by the vendor", number_or_none(bid.committed.step_time_s),
            "s", "bid (cluster.yaml committed.step_time_s)", as_of, FMT["num3"]),
        row("step_time_basis", "Which step time drives the economics", bid.step_time_basis,
            "modeled | measured | committed", "procure: the measured mean when logs gave one, else the model",
            as_of, "General", tuple(BASIS_CHOICES)),
    ]
