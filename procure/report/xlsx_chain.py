"""One chain of formulas per bid, from the inputs to time to train, billed hours and the prices in
the report currency, planned for two cases: Base (as quoted) and Scenario (with the what-ifs).

Each row mirrors one step of ``procure.economics``: throughput = tokens per step / step time;
goodput = 1 − (δ/τ + N·λ·(τ/2 + R)) with Young's τ = √(2δ/(N·λ)) unless an interval is given;
time = train tokens (× the token factor of a batch of the bid's own) / throughput / goodput, plus each further phase of the workload at its own step
time and tokens per step (over the same goodput); hours are billed rounded up to 0.01 h; a reservation
bills at least its minimum commitment. Planning decides every formula; xlsx_model writes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Callable

from procure.document import QuoteDocument
from procure.document.bid import BidResult
from procure.report.xlsx_cells import FMT
from procure.report.xlsx_formula import Expr, Name, Num, call
from procure.report.xlsx_inputs import Names, further_phases, phase_key, quoted_prices


class Missing(Exception):
    """A formula needs a cell this bid does not have: the row stays blank for it."""


@dataclass
class Context:
    """What one bid's formulas may read: its inputs, the globals, and its chain so far."""

    bid: BidResult
    doc: QuoteDocument
    names: Names
    defined: set[str]
    base: dict[str, Expr] = field(default_factory=dict)
    scenario: dict[str, Expr] = field(default_factory=dict)
    scenario_case: bool = False
    target: dict[str, Expr] = field(default_factory=dict)
    target_case: bool = False                             # at the target tokens: the token factor left out
    currencies: set[str] = field(default_factory=set)     # quoted currencies converted (FX rows needed)

    @property
    def id(self) -> str:
        return self.bid.id

    @property
    def kind(self) -> str:
        return self.bid.pricing.kind

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
        if self.target_case and key in self.target:
            return self.target[key]
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

    def currency_of(self, term: str) -> str:
        quoted = quoted_prices(self.doc, self.bid).get(term)
        return self.doc.currency if quoted is None else quoted[1]

    def to_report(self, quoted: Expr, currency: str) -> Expr:
        """A price in the report currency: as written in it, else ROUND(price × FX, 6) (money policy)."""
        if currency == self.doc.currency:
            return quoted
        self.currencies.add(currency)
        return call("ROUND", quoted * Name(fx_name(currency)), 6)


def fx_name(currency: str) -> str:
    """The shared cell converting ``currency`` to the report currency (Model, All bids column)."""
    return "all_fx_" + Names.fx(currency)[3:]


def fx_formula(report: str, currency: str) -> Expr:
    """Report-currency units per unit of ``currency``, at the money policy's significant digits."""
    ratio = Name(Names.fx(report)) / Name(Names.fx(currency))
    digits = Name(Names.global_("fx_significant_digits")) - 1 - call("INT", call("LOG10", call("ABS", ratio)))
    return call("ROUND", ratio, digits)


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


# --- the rows, in chain order (a builder raises Missing where its row does not apply) ------------

def _step_base(c: Context) -> Expr:
    if c.bid.step_time_s is None:
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
    own = c.optional(c.inp, "tokens_per_step")      # a batch of the bid's own (a batch range)
    return (own if own is not None else c.g("tokens_per_step")) / c.m("step_time_s")


def _mfu(c: Context) -> Expr:
    return c.inp("model_flops_per_step") / (c.m("step_time_s") * c.inp("gpus") * c.inp("peak_tflops") * TERA)


def _job_rate(c: Context) -> Expr:
    c.b("step_time_s")
    return c.inp("gpus") * c.g("failures_per_gpu_hour") / 3600


def _write_gbs(c: Context) -> Expr:
    given = c.g("checkpoint_write_gbs")
    scaled = call("MIN", c.inp("gpus") * c.g("checkpoint_write_gbs_per_gpu"), c.g("storage_write_cap_gbs"))
    return call("IF", call("ISNUMBER", given), given, scaled)


def _write_s(c: Context) -> Expr:
    return c.g("params") * c.g("checkpoint_bytes_per_param") / (c.b("checkpoint_write_gbs") * GIGA)


def _interval(c: Context) -> Expr:
    rate, given, write = c.b("job_failures_per_s"), c.g("checkpoint_interval_min"), c.b("checkpoint_write_s")
    young = call("IF", rate.gt(0), call("MAX", call("SQRT", 2 * write / rate), write), 0)
    return call("IF", call("ISNUMBER", given), given * 60, young)


def _lost(c: Context) -> Expr:
    rate, tau, write = c.b("job_failures_per_s"), c.b("checkpoint_interval_s"), c.b("checkpoint_write_s")
    raw = call("IF", tau.gt(0), write / tau, 0) + rate * (tau / 2 + c.g("restart_min") * 60)
    return call("MIN", call("MAX", raw, 0), c.g("max_lost_fraction"))


def _goodput(c: Context) -> Expr:
    return (1 - c.b("lost_fraction")) * (1 - c.g("eval_fraction")) * (1 - c.g("data_stall_fraction"))


def _phases_s(c: Context) -> Expr:
    """The further phases' compute seconds, each at its own step time and tokens per step; the
    scenario moves every phase's step time by the factor the main one's what-if moves it."""
    phases = further_phases(c.doc)
    if not phases:
        raise Missing("phases")
    total: Expr | None = None
    for i in range(1, len(phases) + 1):
        step = c.inp(phase_key(i, "step_time_s"))
        if c.scenario_case:
            step = step * c.m("step_time_s") / c.b("step_time_s")
        seconds = c.g(phase_key(i, "train_tokens")) * step / c.g(phase_key(i, "tokens_per_step"))
        total = seconds if total is None else total + seconds
    assert total is not None
    return total


def _training_s(c: Context) -> Expr:
    tokens = c.g("train_tokens")
    factor = c.optional(c.inp, "token_factor")      # the main phase's batch: its statistical efficiency
    if factor is not None and not c.target_case:
        tokens = tokens * factor
    main = tokens / c.m("tokens_per_s") / c.b("goodput")
    if not further_phases(c.doc):
        return main
    return main + c.m("phases_s") / c.b("goodput")     # every phase at the bid's goodput, as the economics


def _days(c: Context) -> Expr:
    return c.m("training_s") / 86400


def _real_run_days(c: Context) -> Expr:
    """The time to train at the pace published whole runs kept (Inputs: their pace over the model's)."""
    pace = c.optional(c.inp, "real_run_pace")
    if pace is None:
        raise Missing("real_run_pace")
    return c.m("time_to_train_days") * pace


def _used_hours(c: Context) -> Expr:
    return call("ROUNDUP", c.m("training_s") / 3600, 2)


def _days_to_finish(c: Context) -> Expr:
    return c.inp("lead_time_days") + c.m("used_hours") / 24


def _commit_hours(c: Context) -> Expr:
    if c.kind != "rental":
        raise Missing("commitment")
    c.b("used_hours")
    return c.inp("min_commit_months") * c.g("months_hours")


def _billed(c: Context) -> Expr:
    """What the commitment basis pays for: a reservation's whole term, else the hours used."""
    used, commit = c.m("used_hours"), c.optional(c.b, "commit_hours")
    return used if commit is None else call("MAX", used, commit)


def _idle(c: Context) -> Expr:
    if c.kind != "rental":
        raise Missing("idle")
    return c.m("billed_hours") - c.m("used_hours")


def _converted(term: str, whatif: str = "") -> Builder:
    """A quoted price in the report currency: ROUND(quoted × FX, 6) when quoted in another currency.

    ``whatif``: "price" (the what-if price replaces the quoted one, then the discount applies),
    "discount" (the discount only), "" (no what-if)."""
    def build(c: Context) -> Expr:
        quoted = c.inp(term)
        if whatif == "price":
            price = c.whatif("price")
            quoted = call("IF", call("N", price).gt(0), price, quoted)
        converted = c.to_report(quoted, c.currency_of(term))
        if whatif:
            converted = converted * (1 - call("N", c.whatif("discount")))
        return converted
    return build


def _discount_factor(c: Context) -> Expr:
    return 1 - c.inp("discount_fraction")


def _nodes(c: Context) -> Expr:
    c.inp("capex_per_node")
    return call("ROUNDUP", c.inp("gpus") / c.inp("gpus_per_node"), 0)


CAPEX_ITEMS = (("capex_per_gpu", "gpus"), ("capex_per_node", "nodes"), ("network_capex_per_gpu", "gpus"),
               ("network_capex", ""))


def capex_items(c: Context) -> list[tuple[str, Expr, Expr]]:
    """(price key, quantity, price) of each capital item, in the economics' order."""
    items = []
    for key, quantity in CAPEX_ITEMS:
        price = c.optional(c.m, key)
        if price is None:
            continue
        items.append((key, Num(Decimal(1)) if not quantity else c.inp("gpus") if quantity == "gpus" else c.b(quantity),
                      price))
    return items


def _capex_total(c: Context) -> Expr:
    items = capex_items(c)
    if c.kind != "purchase" or not items:
        raise Missing("capex")
    total = call("ROUND", items[0][1] * items[0][2], 2)
    for _, quantity, price in items[1:]:
        total = total + call("ROUND", quantity * price, 2)
    return total


def _market_value(c: Context) -> Expr:
    """What resale is a share of: the market's price new (an input, from a purchase book) or the
    capex paid, whichever is lower; the capex paid without a market price."""
    market = c.optional(c.inp, "market_value_new")
    return c.m("capex_total") if market is None else call("MIN", market, c.m("capex_total"))


def _life_hours(c: Context) -> Expr:
    return c.inp("life_years") * 8760


def _depreciated(c: Context) -> Expr:
    return call("MIN", c.m("used_hours"), c.b("life_hours"))


def _depreciable(c: Context) -> Expr:
    c.b("life_hours")
    residual = c.optional(c.inp, "residual_fraction")
    return Num(Decimal(1)) if residual is None else 1 - residual


def _cost_of_capital(c: Context) -> Expr:
    if c.kind != "purchase" and c.optional(c.inp, "prepay_fraction") is None:
        raise Missing("cost_of_capital")
    return c.optional(c.inp, "cost_of_capital") or c.g("cost_of_capital")


def _resale_decline(c: Context) -> Expr:
    if c.kind != "purchase":
        raise Missing("resale")
    return c.optional(c.inp, "resale_decline_per_year") or c.g("resale_decline_per_year")


def _resale_fraction(c: Context) -> Expr:
    return call("ROUND", (1 - c.b("resale_decline")).power(c.m("used_hours") / 8760)
                * (1 - c.g("resale_haircut")) * (1 - c.g("resale_transaction_cost")), 6)


def _kw(c: Context) -> Expr:
    c.b("used_hours")
    power = c.bid.power
    source = (power.source if power is not None else "") or "tdp"
    if (power is None or power.it_kw_per_gpu is None) and c.bid.accelerator.tdp_w is None:
        raise Missing("power")
    if source.startswith("system:") and c.optional(c.inp, "node_power_kw") is not None:
        return c.inp("node_power_kw") / c.inp("gpus_per_node") + c.inp("fabric_w_per_gpu") / 1000
    if source == "given":
        return c.inp("kw_per_gpu")
    return c.inp("tdp_w") / 1000


def _pue(c: Context) -> Expr:
    """The bid's own PUE (inline or its price book's) wins; else a purchase takes the workload's
    (the buyer's facility) and a rental the assumed PUE of a rented cluster; else 1 (IT only)."""
    c.b("kw_per_gpu")
    fallback: Expr = Num(Decimal(1))
    if c.kind == "rental":
        fallback = c.optional(c.g, "rental_pue") or fallback
    else:
        given = c.optional(c.g, "pue")
        if given is not None:
            fallback = call("IF", call("ISNUMBER", given), given, fallback)
    own = c.optional(c.inp, "pue")
    return fallback if own is None else call("IF", call("ISNUMBER", own), own, fallback)


def _power_price(c: Context) -> Expr:
    """The bid's own price (inline or its price book's) × FX wins; else the workload's, given in
    USD, × the USD rate (both converted as the economics converts them: ROUND(price × FX, 6))."""
    try:
        return _converted("power_per_kwh")(c)
    except Missing:
        pass
    given = _given_assumption(c, "power_usd_per_kwh")
    if given is None:
        raise Missing("power_per_kwh")
    return c.to_report(given, "USD")


def _given_assumption(c: Context, key: str) -> Expr | None:
    """An assumption's input cell, when the document gives it a value."""
    row = next((a for a in c.doc.assumptions if a.key == key), None)
    return None if row is None or row.value is None else c.optional(c.g, key)


def _energy(c: Context) -> Expr:
    energy = c.inp("gpus") * c.b("kw_per_gpu") * c.g("gpu_utilisation_power") * c.b("pue") * c.b("used_hours")
    return call("ROUND", energy / 1000, 3)


def _time_value(c: Context) -> Expr:
    value = c.g("value_of_time_per_day")
    return call("IF", call("ISNUMBER", value), call("ROUND", value * c.m("days_to_finish"), 2), 0)


ROWS: tuple[Row, ...] = (
    Row("step_time_s", "Step time", "s", FMT["num3"],
        "the basis chosen on Inputs; scenario: the what-if step time, else the one the what-if MFU implies",
        _step_base, _step_scenario),
    Row("tokens_per_s", "Tokens per second", "tokens/s", FMT["int"], "tokens per step / step time",
        _tokens_per_s, _tokens_per_s),
    Row("mfu", "MFU", "", FMT["pct"], "model FLOPs per step / (step time × GPUs × peak)", _mfu, _mfu),
    Row("checkpoint_write_gbs", "Checkpoint write bandwidth", "GB/s", FMT["num2"],
        "the given bandwidth, else GPUs × bandwidth per GPU, at most the storage's aggregate", _write_gbs),
    Row("checkpoint_write_s", "Checkpoint write time δ", "s", FMT["num2"],
        "parameters × checkpoint bytes per parameter / write bandwidth", _write_s),
    Row("job_failures_per_s", "Job interruptions N·λ", "1/s", FMT["sci"], "GPUs × interruptions per GPU-hour / 3600",
        _job_rate),
    Row("checkpoint_interval_s", "Checkpoint interval τ", "s", FMT["num2"],
        "the given interval, else Young's optimum √(2δ/(N·λ)), at least one write δ", _interval),
    Row("lost_fraction", "Lost fraction", "", FMT["pct2"], "δ/τ + N·λ·(τ/2 + restart), clamped to [0, the cap]",
        _lost),
    Row("goodput", "Goodput", "", FMT["pct2"], "(1 − lost fraction) × (1 − evaluations) × (1 − data stalls)",
        _goodput),
    Row("phases_s", "Further phases, compute time", "s", FMT["int"],
        "Σ over the workload's further phases (Inputs): tokens × step time / tokens per step; the training time "
        "below adds it over goodput; scenario: each phase's step time moves by the main step time's what-if factor",
        _phases_s, _phases_s),
    Row("training_s", "Wall-clock training time", "s", FMT["int"], "train tokens / tokens per second / goodput",
        _training_s, _training_s),
    Row("time_to_train_days", "Time to train", "days", FMT["days"], "wall-clock seconds / 86,400", _days, _days),
    Row("real_run_days", "Time to train as published runs went", "days", FMT["days"],
        "time to train × published runs' pace (Inputs); the costs use the time to train above",
        _real_run_days, _real_run_days),
    Row("used_hours", "Hours used", "h", FMT["num2"], "wall-clock hours rounded up to 0.01 h (a started 36 s is billed)",
        _used_hours, _used_hours),
    Row("days_to_finish", "Days to finish", "days", FMT["days"], "lead time + hours used / 24",
        _days_to_finish, _days_to_finish),
    Row("commit_hours", "Minimum commitment", "h", FMT["num2"], "minimum commitment months × hours per month",
        _commit_hours),
    Row("billed_hours", "Billed hours, commitment basis", "h", FMT["num2"],
        "rental: the larger of hours used and the commitment; purchase: hours used (the run basis bills hours "
        "used)", _billed, _billed),
    Row("idle_hours", "Idle commitment", "h", FMT["num2"], "billed − used hours (commitment basis)", _idle, _idle),
    Row("price_per_gpu_hour", "Price per GPU-hour", "{ccy}/GPU-h", "money6",
        "ROUND(quoted × FX, 6); scenario: the what-if price, less the discount",
        _converted("price_per_gpu_hour"), _converted("price_per_gpu_hour", "price")),
    Row("discount_factor", "Price factor after the bid's discount", "", FMT["pct"], "1 − discount", _discount_factor),
    Row("storage_per_gpu_hour", "Storage per GPU-hour", "{ccy}/GPU-h", "money6", "ROUND(quoted × FX, 6)",
        _converted("storage_per_gpu_hour")),
    Row("network_per_gpu_hour", "Network per GPU-hour", "{ccy}/GPU-h", "money6", "ROUND(quoted × FX, 6)",
        _converted("network_per_gpu_hour")),
    Row("setup_fee", "One-time setup", "{ccy}", "money2", "ROUND(quoted × FX, 6)", _converted("setup_fee")),
    Row("egress_per_tb", "Egress per TB", "{ccy}/TB", "money2", "ROUND(quoted × FX, 6)", _converted("egress_per_tb")),
    Row("capex_per_gpu", "Capex per GPU", "{ccy}/GPU", "money2",
        "ROUND(quoted × FX, 6); scenario: the what-if price, less the discount", _converted("capex_per_gpu"),
        _converted("capex_per_gpu", "price")),
    Row("nodes", "Nodes", "node", FMT["int"], "GPUs / GPUs per node, rounded up", _nodes),
    Row("capex_per_node", "Capex per node", "{ccy}/node", "money2", "ROUND(quoted × FX, 6) (less the discount)",
        _converted("capex_per_node"), _converted("capex_per_node", "discount")),
    Row("network_capex_per_gpu", "Network capex per GPU", "{ccy}/GPU", "money2",
        "ROUND(quoted × FX, 6) (less the discount)", _converted("network_capex_per_gpu"),
        _converted("network_capex_per_gpu", "discount")),
    Row("network_capex", "Fabric capex", "{ccy}", "money2", "ROUND(quoted × FX, 6) (less the discount)",
        _converted("network_capex"), _converted("network_capex", "discount")),
    Row("capex_total", "Upfront capex", "{ccy}", "money2", "Σ ROUND(quantity × capex, 2) over the capital items",
        _capex_total, _capex_total),
    Row("market_value", "Market price new (resale base)", "{ccy}", "money2",
        "MIN(the purchase book's price of the same hardware new (input), upfront capex)", _market_value,
        _market_value),
    Row("life_hours", "Depreciation life", "h", FMT["int"], "life years × 8,760", _life_hours),
    Row("depreciated_hours", "Hours depreciated", "h", FMT["num2"], "hours used, at most the life",
        _depreciated, _depreciated),
    Row("depreciable_fraction", "Depreciable fraction", "", FMT["pct"], "1 − book residual", _depreciable),
    Row("cost_of_capital", "Cost of capital", "per year", FMT["pct2"], "the bid's, else the workload's",
        _cost_of_capital),
    Row("resale_decline", "Resale value decline", "per year", FMT["pct"], "the bid's, else the workload's",
        _resale_decline),
    Row("resale_fraction", "Resale value at the end of the run", "of the market price new", "0.000000",
        "ROUND((1 − decline)^(hours used / 8,760) × (1 − haircut) × (1 − transaction cost), 6)", _resale_fraction, _resale_fraction),
    Row("support_per_gpu_year", "Support per GPU-year", "{ccy}/GPU-year", "money2", "ROUND(quoted × FX, 6)",
        _converted("support_per_gpu_year")),
    Row("staff_per_year", "Staff per year", "{ccy}/year", "money2", "ROUND(quoted × FX, 6)",
        _converted("staff_per_year")),
    Row("kw_per_gpu", "IT power per GPU", "kW", "0.0000",
        "node power / GPUs per node + fabric W / 1,000 (system spec), else the given kW, else TDP / 1,000", _kw),
    Row("pue", "PUE", "", "0.00", "the bid's own (inline or its price book's), else the workload's for a purchase "
        "or the assumed PUE of a rented cluster for a rental, else 1 (IT energy only)", _pue),
    Row("power_per_kwh", "Power price", "{ccy}/kWh", "money6",
        "ROUND(the bid's own price (inline or its price book's) × FX, 6), else ROUND(the workload's USD price × "
        "the USD rate, 6)", _power_price),
    Row("colo_per_kw_month", "Colocation per kW-month", "{ccy}/kW-month", "money2", "ROUND(quoted × FX, 6)",
        _converted("colo_per_kw_month")),
    Row("energy_mwh", "Energy", "MWh", FMT["num3"], "GPUs × IT kW × average draw × PUE × hours used / 1,000",
        _energy),
    Row("time_value", "Value of time", "{ccy}", "money2", "value of time per day × days to finish (0 when not given)",
        _time_value, _time_value),
)


@dataclass
class Chain:
    """One bid's named chain: key -> the name of its cell, per case, and the formulas behind them."""

    bid: BidResult
    base: dict[str, Expr]
    scenario: dict[str, Expr]
    formulas: dict[tuple[str, str], Expr]      # (case, key) -> formula
    currencies: frozenset[str] = frozenset()   # quoted currencies this bid converts
    target: dict[str, Expr] = field(default_factory=dict)   # at the target tokens (a token factor of its own)

    def get(self, case: str, key: str) -> Expr | None:
        if case == "scenario" and key in self.scenario:
            return self.scenario[key]
        if case == "target" and key in self.target:
            return self.target[key]
        return self.base.get(key)

    @property
    def feasible(self) -> bool:
        return "time_to_train_days" in self.base


def plan_chain(doc: QuoteDocument, bid: BidResult, names: Names, defined: set[str]) -> Chain:
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
    c.scenario_case = False
    _plan_target(c, formulas)
    return Chain(bid, dict(c.base), dict(c.scenario), formulas, frozenset(c.currencies), dict(c.target))


# what moves when the run stops at the target tokens (Time to target: the cost at the target tokens)
TARGET_KEYS = ("training_s", "time_to_train_days", "used_hours", "days_to_finish", "billed_hours", "idle_hours",
               "depreciated_hours", "resale_fraction")


def target_name(names: Names, bid_id: str, key: str) -> str:
    return names.base(bid_id, "target_" + key)


def _plan_target(c: Context, formulas: dict[tuple[str, str], Expr]) -> None:
    """A bid with a token factor of its own: the chain again at the target tokens alone (factor 1)."""
    if c.optional(c.inp, "token_factor") is None:
        return
    c.target_case = True
    for row in ROWS:
        if row.key not in TARGET_KEYS or row.key not in c.base or row.base is None:
            continue
        formulas[("target", row.key)] = row.base(c)
        c.target[row.key] = Name(target_name(c.names, c.id, row.key))
    c.target_case = False
