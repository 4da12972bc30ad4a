"""One chain of formulas per bid, from the inputs to time to train, billed hours and the prices in
the report currency, planned for two cases: Base (as quoted) and Scenario (with the what-ifs).

Each row mirrors one step of ``procure.economics``: throughput = tokens per step / step time;
goodput = 1 − (δ/τ + N·λ·(τ/2 + R)) with Young's τ = √(2δ/(N·λ)) unless an interval is given;
time = train tokens / throughput / goodput; hours are billed rounded up to 0.01 h; a reservation
bills at least its minimum commitment. Planning decides every formula; xlsx_model writes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable

from procure.report.xlsx_cells import FMT
from procure.report.xlsx_formula import Expr, Name, Num, call
from procure.report.xlsx_inputs import Names


class Missing(Exception):
    """A formula needs a cell this bid does not have: the row stays blank for it."""


@dataclass
class Context:
    """What one bid's formulas may read: its inputs, the globals, and its chain so far."""

    bid: dict[str, Any]
    doc: dict[str, Any]
    names: Names
    defined: set[str]
    base: dict[str, Expr] = field(default_factory=dict)
    scenario: dict[str, Expr] = field(default_factory=dict)
    scenario_case: bool = False

    @property
    def id(self) -> str:
        return str(self.bid["id"])

    @property
    def kind(self) -> str:
        return str((self.bid.get("pricing") or {}).get("kind") or "rental")

    def _named(self, name: str) -> Expr:
        if name not in self.defined:
            raise Missing(name)
        return Name(name)

    def inp(self, field_name: str) -> Expr:
        return self._named(self.names.bid(self.id, field_name))

    def g(self, key: str) -> Expr:
        return self._named(Names.global_(key))

    def fx(self, currency: str) -> Expr:
        return self._named(Names.fx(currency))

    def m(self, key: str) -> Expr:
        """This case's cell for ``key``; a scenario falls back to the base where it does not differ."""
        if self.scenario_case and key in self.scenario:
            return self.scenario[key]
        return self.b(key)

    def b(self, key: str) -> Expr:
        if key not in self.base:
            raise Missing(key)
        return self.base[key]

    def optional(self, read: Callable[[str], Expr], key: str) -> Expr | None:
        try:
            return read(key)
        except Missing:
            return None

    def whatif(self, key: str) -> Expr:
        return Name(self.names.whatif(self.id, key))


Builder = Callable[[Context], Expr]
TERA = Num(Decimal(10**12))      # TFLOP/s -> FLOP/s
GIGA = Num(Decimal(10**9))       # GB -> B


@dataclass(frozen=True)
class Row:
    key: str
    label: str
    unit: str
    num_format: str
    how: str
    base: Builder | None
    scenario: Builder | None = None
    shared: Builder | None = None     # one value for all bids, in the "All bids" column


# --- the rows, in chain order (a builder raises Missing where its row does not apply) ------------

def _step_base(c: Context) -> Expr:
    if c.bid.get("step_time_s") is None:
        raise Missing("step_time_s")
    basis = c.inp("step_time_basis")
    return call("IF", basis.eq("measured"), c.inp("measured_step_time_s"),
                call("IF", basis.eq("committed"), c.inp("committed_step_time_s"), c.inp("modeled_step_time_s")))


def _step_scenario(c: Context) -> Expr:
    base = c.b("step_time_s")
    fallback: Expr = base
    try:
        mfu = c.whatif("mfu")
        implied = c.inp("model_flops_per_step") / (c.inp("gpus") * c.inp("peak_tflops") * TERA * mfu)
        fallback = call("IF", call("N", mfu).gt(0), implied, base)
    except Missing:
        pass
    step = c.whatif("step_time_s")
    return call("IF", call("N", step).gt(0), step, fallback)


def _tokens_per_s(c: Context) -> Expr:
    return c.g("tokens_per_step") / c.m("step_time_s")


def _mfu(c: Context) -> Expr:
    return c.inp("model_flops_per_step") / (c.m("step_time_s") * c.inp("gpus") * c.inp("peak_tflops") * TERA)


def _job_rate(c: Context) -> Expr:
    c.b("step_time_s")
    return c.inp("gpus") * c.g("failures_per_gpu_hour") / 3600


def _write_s(c: Context) -> Expr:
    return c.g("params") * c.g("checkpoint_bytes_per_param") / (c.g("checkpoint_write_gbs") * GIGA)


def _interval(c: Context) -> Expr:
    rate, given, write = c.b("job_failures_per_s"), c.g("checkpoint_interval_min"), Name(SHARED_WRITE)
    young = call("IF", rate.gt(0), call("SQRT", 2 * write / rate), 0)
    return call("IF", call("ISNUMBER", given), given * 60, young)


def _lost(c: Context) -> Expr:
    rate, tau, write = c.b("job_failures_per_s"), c.b("checkpoint_interval_s"), Name(SHARED_WRITE)
    raw = call("IF", tau.gt(0), write / tau, 0) + rate * (tau / 2 + c.g("restart_min") * 60)
    return call("MIN", call("MAX", raw, 0), c.g("max_lost_fraction"))


def _goodput(c: Context) -> Expr:
    return 1 - c.b("lost_fraction")


def _training_s(c: Context) -> Expr:
    return c.g("train_tokens") / c.m("tokens_per_s") / c.b("goodput")


def _days(c: Context) -> Expr:
    return c.m("training_s") / 86400


def _used_hours(c: Context) -> Expr:
    return call("ROUNDUP", c.m("training_s") / 3600, 2)


def _commit_hours(c: Context) -> Expr:
    if c.kind != "rental":
        raise Missing("commitment")
    c.b("used_hours")
    return c.inp("min_commit_months") * c.g("months_hours")


def _billed(c: Context) -> Expr:
    used, commit = c.m("used_hours"), c.base.get("commit_hours")
    return used if commit is None else call("MAX", used, commit)


def _fx(c: Context) -> Expr:
    p = c.bid.get("pricing") or {}
    book, report = str(p.get("book_currency") or c.doc["currency"]), str(c.doc["currency"])
    if not p.get("quoted_terms") or book == report:
        raise Missing("fx_rate")
    return c.fx(report) / c.fx(book)


def _in_report_currency(c: Context, quoted: Expr) -> Expr:
    fx = c.base.get("fx_rate")
    return quoted if fx is None else quoted * fx


def _converted(term: str) -> Builder:
    def build(c: Context) -> Expr:
        return _in_report_currency(c, c.inp(term))
    return build


def _discounted(term: str, priced: bool) -> Builder:
    """Scenario: the what-if price replaces the quoted one (``priced``), then the discount applies."""
    def build(c: Context) -> Expr:
        quoted = c.inp(term)
        if priced:
            price = c.whatif("price")
            quoted = call("IF", call("N", price).gt(0), price, quoted)
        return _in_report_currency(c, quoted) * (1 - call("N", c.whatif("discount")))
    return build


def _life_hours(c: Context) -> Expr:
    return c.inp("life_years") * 8760


def _depreciated(c: Context) -> Expr:
    return call("MIN", c.m("used_hours"), c.b("life_hours"))


def _depreciable(c: Context) -> Expr:
    c.b("life_hours")
    return 1 - c.inp("residual_fraction")


def _kw(c: Context) -> Expr:
    c.b("used_hours")
    if (c.bid.get("accelerator") or {}).get("tdp_w") is None:
        raise Missing("tdp_w")
    return c.inp("tdp_w") / 1000


def _pue(c: Context) -> Expr:
    c.b("kw_per_gpu")
    book = c.optional(c.inp, "pue")
    fallback: Expr = Num(Decimal(1)) if book is None else call("IF", call("ISNUMBER", book), book, 1)
    given = c.optional(c.g, "pue")
    return fallback if given is None else call("IF", call("ISNUMBER", given), given, fallback)


def _power_price(c: Context) -> Expr:
    book = _converted("power_per_kwh")(c)
    given = c.optional(c.g, "power_usd_per_kwh")
    if given is None:
        return book
    report = str(c.doc["currency"])
    try:
        to_report = given if report == "USD" else given * (c.fx(report) / c.fx("USD"))
    except Missing:
        return book
    return call("IF", call("ISNUMBER", given), to_report, book)


def _energy(c: Context) -> Expr:
    energy = c.inp("gpus") * c.b("kw_per_gpu") * c.g("gpu_utilisation_power") * c.b("pue") * c.b("used_hours")
    return call("ROUND", energy / 1000, 3)


SHARED_WRITE = "all_checkpoint_write_s"
ROWS: tuple[Row, ...] = (
    Row("step_time_s", "Step time", "s", FMT["num3"],
        "the basis chosen on Inputs; scenario: the what-if step time, else the one the what-if MFU implies",
        _step_base, _step_scenario),
    Row("tokens_per_s", "Tokens per second", "tokens/s", FMT["int"], "tokens per step / step time",
        _tokens_per_s, _tokens_per_s),
    Row("mfu", "MFU", "", FMT["pct"], "model FLOPs per step / (step time × GPUs × peak)", _mfu, _mfu),
    Row("checkpoint_write_s", "Checkpoint write time δ", "s", FMT["num2"],
        "parameters × checkpoint bytes per parameter / write bandwidth", None, shared=_write_s),
    Row("job_failures_per_s", "Job interruptions N·λ", "1/s", FMT["sci"], "GPUs × interruptions per GPU-hour / 3600",
        _job_rate),
    Row("checkpoint_interval_s", "Checkpoint interval τ", "s", FMT["num2"],
        "the given interval, else Young's optimum √(2δ/(N·λ))", _interval),
    Row("lost_fraction", "Lost fraction", "", FMT["pct2"], "δ/τ + N·λ·(τ/2 + restart), clamped to [0, the cap]",
        _lost),
    Row("goodput", "Goodput", "", FMT["pct2"], "1 − lost fraction", _goodput),
    Row("training_s", "Wall-clock training time", "s", FMT["int"], "train tokens / tokens per second / goodput",
        _training_s, _training_s),
    Row("time_to_train_days", "Time to train", "days", FMT["days"], "wall-clock seconds / 86,400", _days, _days),
    Row("used_hours", "Hours used", "h", FMT["num2"], "wall-clock hours rounded up to 0.01 h (a started 36 s is billed)",
        _used_hours, _used_hours),
    Row("commit_hours", "Minimum commitment", "h", FMT["num2"], "minimum commitment months × hours per month",
        _commit_hours),
    Row("billed_hours", "Billed hours", "h", FMT["num2"], "rental: the larger of hours used and the commitment; "
        "purchase: hours used", _billed, _billed),
    Row("fx_rate", "FX rate, report currency per quoted unit", "", "0.000000",
        "FX (report currency per base) / FX (quoted currency per base)", _fx),
    Row("price_per_gpu_hour", "Price per GPU-hour", "{ccy}/GPU-h", "money4",
        "quoted price × FX; scenario: the what-if price, less the discount", _converted("price_per_gpu_hour"),
        _discounted("price_per_gpu_hour", True)),
    Row("storage_per_gpu_hour", "Storage per GPU-hour", "{ccy}/GPU-h", "money4", "quoted × FX",
        _converted("storage_per_gpu_hour")),
    Row("network_per_gpu_hour", "Network per GPU-hour", "{ccy}/GPU-h", "money4", "quoted × FX",
        _converted("network_per_gpu_hour")),
    Row("capex_per_gpu", "Capex per GPU", "{ccy}/GPU", "money2",
        "quoted × FX; scenario: the what-if price, less the discount", _converted("capex_per_gpu"),
        _discounted("capex_per_gpu", True)),
    Row("network_capex_per_gpu", "Network capex per GPU", "{ccy}/GPU", "money2", "quoted × FX (less the discount)",
        _converted("network_capex_per_gpu"), _discounted("network_capex_per_gpu", False)),
    Row("life_hours", "Depreciation life", "h", FMT["int"], "life years × 8,760", _life_hours),
    Row("depreciated_hours", "Hours depreciated", "h", FMT["num2"], "hours used, at most the life",
        _depreciated, _depreciated),
    Row("depreciable_fraction", "Depreciable fraction", "", FMT["pct"], "1 − residual fraction", _depreciable),
    Row("support_per_gpu_year", "Support per GPU-year", "{ccy}/GPU-year", "money2", "quoted × FX",
        _converted("support_per_gpu_year")),
    Row("kw_per_gpu", "Power per GPU", "kW", FMT["num3"], "TDP W / 1,000", _kw),
    Row("pue", "PUE", "", "0.00", "the workload's PUE, else the price book's, else 1 (IT energy only)", _pue),
    Row("power_per_kwh", "Power price", "{ccy}/kWh", "money4",
        "the workload's USD price × FX, else the price book's × FX", _power_price),
    Row("colo_per_kw_month", "Colocation per kW-month", "{ccy}/kW-month", "money2", "quoted × FX",
        _converted("colo_per_kw_month")),
    Row("energy_mwh", "Energy", "MWh", FMT["num3"], "GPUs × kW × average power draw × PUE × hours used / 1,000",
        _energy),
)


@dataclass
class Chain:
    """One bid's named chain: key -> the name of its cell, per case, and the formulas behind them."""

    bid: dict[str, Any]
    base: dict[str, Expr]
    scenario: dict[str, Expr]
    formulas: dict[tuple[str, str], Expr]      # (case, key) -> formula

    def get(self, case: str, key: str) -> Expr | None:
        if case == "scenario" and key in self.scenario:
            return self.scenario[key]
        return self.base.get(key)

    @property
    def feasible(self) -> bool:
        return "time_to_train_days" in self.base


def plan_chain(doc: dict[str, Any], bid: dict[str, Any], names: Names, defined: set[str]) -> Chain:
    """Decide every formula of one bid (nothing is written yet; names resolve when evaluated)."""
    c = Context(bid, doc, names, defined)
    formulas: dict[tuple[str, str], Expr] = {}
    for case in ("base", "scenario"):
        c.scenario_case = case == "scenario"
        for row in ROWS:
            builder = row.base if case == "base" else row.scenario
            if builder is None or (case == "scenario" and row.key not in c.base):
                continue
            try:
                expr = builder(c)
            except Missing:
                continue
            formulas[(case, row.key)] = expr
            chain = c.base if case == "base" else c.scenario
            chain[row.key] = Name(names.base(c.id, row.key) if case == "base" else names.scenario(c.id, row.key))
    return Chain(bid, dict(c.base), dict(c.scenario), formulas)
