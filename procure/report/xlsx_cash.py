"""The Cash flow sheet: every bid as dated cash over the quote's horizon, one column per month,
each cell a formula over the Model chain and the Inputs (``economics.cashflow`` in formulas).

Per bid: a few named scalars (delivery, run end, commitment end, hold end, sale month, resale
fraction, cost of capital), one row per kind of flow (cash out > 0, cash in < 0), then net cash,
the discount factor ROUND((1 + cost of capital)^(−month / 12), 6), the discounted net and the
cumulative cash. The table at the top adds them up: nominal total, present value, upfront cash,
peak cash out and the rank on present value. Hours of month k of a span (s, e] are
MAX(0, MIN(e, k × hours per month) − MAX(s, (k − 1) × hours per month)), invoiced at the end of
month k, as the economics bills them. The months run to the document's last flow (at most
``MAX_MONTH_COLUMNS``); the last column also takes whatever an edit pushes later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Callable

from procure.document import QuoteDocument
from procure.document.quote import TaxSummary
from procure.economics.cashflow import MAX_MONTHLY_FLOWS
from procure.report.xlsx_cells import FMT, NOTE, SECTION, Book, Sheet, Style, money_format, style
from procure.report.xlsx_chain import Chain
from procure.report.xlsx_formula import Expr, Name, Num, Range, Ref, call
from procure.report.xlsx_inputs import Names

CASH_SHEET = "Cash flow"
MAX_MONTH_COLUMNS = MAX_MONTHLY_FLOWS          # the document's own cap on monthly flows
TABLE_HEADER = ["Bid", "Nominal total", "Present value", "Upfront cash", "Peak cash out", "Rank on present value",
                "Cost of capital", "Horizon (months)"]
ITEM_COL, TOTAL_COL, FIRST_MONTH_COL = 1, 2, 3
HOURS_PER_YEAR = Num(Decimal(8760))            # a unit conversion, the economics' year
UPFRONT = ("capex", "prepayment", "setup", "import-duty", "vat")
FLOW_LABELS = {
    "capex": "Capex at order", "setup": "One-time setup fee", "prepayment": "Prepayment at signing",
    "invoice": "Usage invoices (GPU-hours, support, storage, network; less the prepaid share)",
    "egress": "Data egress", "leftover-hours": "Reserved hours left over, reused (credit)",
    "power": "Power", "colocation": "Colocation", "support": "Support", "staff": "Staff",
    "resale": "Resale at the horizon end (net of haircut and transaction cost)",
    "import-duty": "Import duty on capex", "vat": "VAT/GST on capex and expenses",
    "vat-refund": "VAT recovered (credit)", "tax-shield": "Income-tax shield of costs and depreciation (credit)",
    "tax-on-sale": "Income tax on the sale over the book value", "depreciation": "Tax depreciation (not cash)"}
Zero = Num(Decimal(0))


@dataclass
class Block:
    """One bid's rows: named scalars, then one row per kind of flow."""

    chain: Chain
    doc: QuoteDocument
    names: Names
    defined: set[str]
    book: Book
    scalars: dict[str, Expr] = field(default_factory=dict)
    flows: list[tuple[str, int]] = field(default_factory=list)         # (kind, row)

    @property
    def bid_id(self) -> str:
        return self.chain.bid.id

    def m(self, key: str) -> Expr | None:
        return self.chain.get("base", key)

    def inp(self, key: str) -> Expr | None:
        name = self.names.bid(self.bid_id, key)
        return Name(name) if name in self.defined else None

    def g(self, key: str) -> Expr | None:
        name = Names.global_(key)
        return Name(name) if name in self.defined else None

    def name(self, key: str) -> str:
        return cash_name(self.names, self.bid_id, key)


def cash_name(names: Names, bid_id: str, key: str) -> str:
    """The defined name of a bid's figure ``key`` on the Cash flow sheet."""
    return f"cash_{names.slug(bid_id)}_{key}"


def cash_bids(chains: list[Chain]) -> list[Chain]:
    """The bids the document costs as cash (a price and a time to train)."""
    return [c for c in chains if c.bid.cash is not None and "used_hours" in c.base]


def month_count(chains: list[Chain]) -> int:
    """Months 0..N: the document's last flow, at least its horizon, at most the cap."""
    last = 0
    for chain in cash_bids(chains):
        cash = chain.bid.cash
        assert cash is not None                              # cash_bids keeps the bids that have it
        last = max([last, cash.horizon_months] + [f.month for f in cash.flows])
    return min(last, MAX_MONTH_COLUMNS)


def build_cash(book: Book, doc: QuoteDocument, chains: list[Chain], names: Names, defined: set[str]) -> Sheet | None:
    bids = cash_bids(chains)
    if not bids:
        return None
    sheet = book.sheet(CASH_SHEET)
    ccy = doc.currency
    money = style(money_format(ccy))
    sheet.header(0, TABLE_HEADER)
    months = month_count(chains)
    horizon_row = len(bids) + 2
    grid = horizon_row + 3                                   # the month header of the grid
    sheet.put(horizon_row, 0, "Horizon", Style(bold=True))
    sheet.put(horizon_row + 1, 0, "Month k ends k × hours per month (Inputs) after as-of; month 0 is signing; "
              "the last column also takes anything an edit pushes later.", NOTE)
    _month_header(sheet, grid, months)
    row, blocks = grid + 1, []
    for chain in bids:
        block = Block(chain, doc, names, defined, book)
        row = _write_block(sheet, row, block, months, grid, money)
        blocks.append((block, row))
        row += 1
    ends = [b.scalars["commit_end"] for b, _ in blocks]
    horizon = _horizon(defined, ends)
    sheet.put(horizon_row, ITEM_COL, "hours from as-of", NOTE)
    sheet.put(horizon_row, TOTAL_COL, horizon, style(FMT["num2"]))
    book.define("cash_horizon_hours", CASH_SHEET, horizon_row, TOTAL_COL)
    _table(sheet, blocks, money)
    sheet.freeze = (grid + 1, FIRST_MONTH_COL)
    sheet.max_width = 40
    return sheet


def _month_header(sheet: Sheet, grid: int, months: int) -> None:
    sheet.put(grid, 0, "Bid", Style(bold=True))
    sheet.put(grid, ITEM_COL, "Month", Style(bold=True))
    sheet.put(grid, TOTAL_COL, "Total", Style(bold=True))
    for k in range(months + 1):
        sheet.put(grid, FIRST_MONTH_COL + k, k, Style(bold=True, num_format="0"))


def _horizon(defined: set[str], ends: list[Expr]) -> Expr:
    """workload.horizon_months × hours per month when given, else the latest commitment end."""
    latest = call("MAX", *ends)
    given = Names.global_("horizon_months")
    if given not in defined:
        return latest
    return call("IF", call("ISNUMBER", Name(given)), Name(given) * Name(Names.global_("months_hours")), latest)


# --- one bid ---------------------------------------------------------------------------------

def _scalar(sheet: Sheet, row: int, block: Block, key: str, label: str, expr: Expr, fmt: str) -> int:
    sheet.put(row, 0, block.bid_id)
    sheet.put(row, ITEM_COL, label)
    sheet.put(row, TOTAL_COL, expr, style(fmt))
    block.book.define(block.name(key), CASH_SHEET, row, TOTAL_COL)
    block.scalars[key] = Name(block.name(key))
    return row + 1


def _opt(expr: Expr | None, fallback: Decimal = Decimal(0)) -> Expr:
    return expr if expr is not None else Num(fallback)


def _write_block(sheet: Sheet, row: int, block: Block, months: int, grid: int, money: Style) -> int:
    bid = block.chain.bid
    rental = bid.pricing.kind == "rental"
    sheet.put(row, 0, f"{block.bid_id}: {bid.pricing.kind}", SECTION)
    for col in range(1, FIRST_MONTH_COL + months + 1):
        sheet.put(row, col, None, SECTION)
    row += 1
    mh = Name(Names.global_("months_hours"))
    used = block.m("used_hours")
    assert used is not None
    row = _scalar(sheet, row, block, "lead_hours", "Delivery (h from as-of)",
                  _opt(block.inp("lead_time_days")) * 24, FMT["num2"])
    lead = block.scalars["lead_hours"]
    row = _scalar(sheet, row, block, "run_end", "End of the run (h)", lead + used, FMT["num2"])
    commit = block.m("commit_hours") if rental else None
    end = lead + (used if commit is None else call("MAX", used, commit))
    row = _scalar(sheet, row, block, "commit_end", "End of the commitment (h)", end, FMT["num2"])
    coc = block.m("cost_of_capital") or block.inp("cost_of_capital") or block.g("cost_of_capital")
    row = _scalar(sheet, row, block, "cost_of_capital", "Cost of capital (per year)", _opt(coc), FMT["pct2"])
    flows = _rental_flows(block, commit) if rental else _purchase_flows(block)
    if not rental:
        row = _scalar(sheet, row, block, "hold_end", "Held until (h): the horizon end, or the run's when later",
                      call("MAX", Name("cash_horizon_hours"), block.scalars["run_end"]), FMT["num2"])
        sale = call("ROUNDUP", block.scalars["hold_end"] / mh, 0) + _opt(block.g("resale_months_to_sell"))
        row = _scalar(sheet, row, block, "sale_month", "Sold in month", sale, "0")
        row = _scalar(sheet, row, block, "resale_fraction", "Resale cash, fraction of capex", _resale_fraction(block),
                      "0.000000")
    tax = block.doc.workload.tax
    depreciation = None
    if tax is not None and not rental:
        row = _scalar(sheet, row, block, "tax_base", "Tax depreciation base: capex + import duty (+ VAT not recovered)",
                      _tax_base(block, tax), FMT["num2"])
        depreciation = row
        row = _flow_row(sheet, row, block, "depreciation", _depreciation(block), months, grid, money)
    first_flow = row
    for kind, cell in flows:
        row = _flow_row(sheet, row, block, kind, cell, months, grid, money)
    if tax is not None:
        for kind, cell in tax_cells(block, tax, rental, depreciation):
            row = _flow_row(sheet, row, block, kind, cell, months, grid, money)
    return _totals(sheet, row, block, first_flow, months, grid, money)


def _flow_row(sheet: Sheet, row: int, block: Block, kind: str, cell: Cell, months: int, grid: int,
              money: Style) -> int:
    sheet.put(row, 0, block.bid_id)
    sheet.put(row, ITEM_COL, FLOW_LABELS[kind], NOTE if kind == "depreciation" else Style())
    for k in range(months + 1):
        col = FIRST_MONTH_COL + k
        sheet.put(row, col, cell(Ref(CASH_SHEET, grid, col), k == months), money)
    sheet.put(row, TOTAL_COL, call("SUM", Range(CASH_SHEET, row, FIRST_MONTH_COL, row, FIRST_MONTH_COL + months)),
              money)
    if kind != "depreciation":
        block.flows.append((kind, row))
    return row + 1


def _totals(sheet: Sheet, row: int, block: Block, first_flow: int, months: int, grid: int, money: Style) -> int:
    last_flow = row - 1
    net, df, disc, cum = row, row + 1, row + 2, row + 3
    labels = {net: "Net cash out", df: "Discount factor", disc: "Discounted net cash out",
              cum: "Cumulative net cash out"}
    for r, label in labels.items():
        sheet.put(r, 0, block.bid_id)
        sheet.put(r, ITEM_COL, label, Style(bold=r in (net, disc)))
    rate = block.scalars["cost_of_capital"]
    for k in range(months + 1):
        col = FIRST_MONTH_COL + k
        month = Ref(CASH_SHEET, grid, col)
        sheet.put(net, col, call("SUM", Range(CASH_SHEET, first_flow, col, last_flow, col)), money._replace(bold=True))
        sheet.put(df, col, call("ROUND", (1 + rate).power(-month / 12), 6), style("0.000000"))
        sheet.put(disc, col, call("ROUND", Ref(CASH_SHEET, net, col) * Ref(CASH_SHEET, df, col), 2), money)
        sheet.put(cum, col, call("SUM", Range(CASH_SHEET, net, FIRST_MONTH_COL, net, col)), money)
    last = FIRST_MONTH_COL + months
    for r in (net, disc):
        sheet.put(r, TOTAL_COL, call("SUM", Range(CASH_SHEET, r, FIRST_MONTH_COL, r, last)), money._replace(bold=True))
    block.book.define(block.name("nominal_total"), CASH_SHEET, net, TOTAL_COL)
    block.book.define(block.name("present_value"), CASH_SHEET, disc, TOTAL_COL)
    upfront = [Ref(CASH_SHEET, r, FIRST_MONTH_COL) for kind, r in block.flows if kind in UPFRONT]
    block.scalars["upfront"] = call("SUM", *upfront) if upfront else Zero
    block.scalars["peak"] = call("MAX", 0, Range(CASH_SHEET, cum, FIRST_MONTH_COL, cum, last))
    return cum + 1


# --- the flows: each a function of (the month cell, whether it is the last column) -------------

Cell = Callable[[Expr, bool], Expr]


def span_hours(start: Expr, end: Expr, month: Expr, mh: Expr, last: bool) -> Expr:
    """Hours of the span (start, end] that month ``month`` invoices (the last column: all later ones too)."""
    top = end if last else call("MIN", end, month * mh)
    return call("MAX", 0, top - call("MAX", start, (month - 1) * mh))


def at_month(event: Expr, month: Expr, last: bool, amount: Expr) -> Expr:
    """``amount`` in the month of ``event`` (the last column: in it or later), else 0."""
    return call("IF", month.le(event) if last else event.eq(month), amount, 0)


def _rental_flows(block: Block, commit: Expr | None) -> list[tuple[str, Cell]]:
    mh = Name(Names.global_("months_hours"))
    gpus = Name(block.names.bid(block.bid_id, "gpus"))
    price = block.m("price_per_gpu_hour")
    assert price is not None
    discount = block.m("discount_factor")
    gpu_rate = gpus * price * discount if discount is not None else gpus * price
    per_hour = gpu_rate * (1 + _opt(block.inp("support_fraction")))
    adders = [a for a in (block.m("storage_per_gpu_hour"), block.m("network_per_gpu_hour")) if a is not None]
    if adders:
        per_hour = per_hour + gpus * (adders[0] if len(adders) == 1 else adders[0] + adders[1])
    committed = _opt(commit)
    prepay = block.inp("prepay_fraction")
    lead, run_end, commit_end = (block.scalars[k] for k in ("lead_hours", "run_end", "commit_end"))
    flows: list[tuple[str, Cell]] = []
    setup = block.m("setup_fee")
    if setup is not None:
        flows.append(("setup", lambda k, last: at_month(Zero, k, False, call("ROUND", setup, 2))))
    share: Expr = Zero
    if prepay is not None and commit is not None:
        share = call("IF", committed.gt(0), prepay, 0)
        flows.append(("prepayment", lambda k, last: at_month(Zero, k, False,
                                                             call("ROUND", gpu_rate * committed * share, 2))))

    def invoice(k: Expr, last: bool) -> Expr:
        hours = span_hours(lead, commit_end, k, mh, last)
        if prepay is None or commit is None:
            return call("ROUND", per_hour * hours, 2)
        in_commit = span_hours(lead, lead + committed, k, mh, last)
        return call("ROUND", per_hour * hours - gpu_rate * in_commit * share, 2)
    flows.append(("invoice", invoice))
    flows += _egress(block, run_end, mh)
    reuse = block.g("leftover_hours_reuse_share")
    if commit is not None and reuse is not None:
        flows.append(("leftover-hours", lambda k, last: -call(
            "ROUND", gpu_rate * span_hours(run_end, commit_end, k, mh, last) * reuse, 2)))
    return flows


def _egress(block: Block, run_end: Expr, mh: Expr) -> list[tuple[str, Cell]]:
    per_tb, tb = block.m("egress_per_tb"), block.inp("egress_tb")
    if per_tb is None or tb is None:
        return []
    month = call("ROUNDUP", run_end / mh, 0)
    return [("egress", lambda k, last: at_month(month, k, last, call("ROUND", tb * per_tb, 2)))]


def _purchase_flows(block: Block) -> list[tuple[str, Cell]]:
    mh = Name(Names.global_("months_hours"))
    gpus = Name(block.names.bid(block.bid_id, "gpus"))
    capex = block.m("capex_total")
    assert capex is not None
    lead, run_end = block.scalars["lead_hours"], block.scalars["run_end"]
    hold_end = Name(block.name("hold_end"))
    flows: list[tuple[str, Cell]] = [("capex", lambda k, last: at_month(Zero, k, False, capex))]
    setup = block.m("setup_fee")
    if setup is not None:
        flows.append(("setup", lambda k, last: at_month(Zero, k, False, call("ROUND", setup, 2))))
    kw, price, pue = block.m("kw_per_gpu"), block.m("power_per_kwh"), block.m("pue")
    util = block.g("gpu_utilisation_power")
    if kw is not None and price is not None and pue is not None and util is not None:
        per_hour = gpus * kw * util * pue * price
        flows.append(("power", lambda k, last: call("ROUND", per_hour * span_hours(lead, run_end, k, mh, last), 2)))
    held: list[tuple[str, Expr]] = []
    colo = block.m("colo_per_kw_month")
    if kw is not None and colo is not None:
        held.append(("colocation", gpus * kw * colo / mh))
    support = block.m("support_per_gpu_year")
    if support is not None:
        held.append(("support", gpus * support / HOURS_PER_YEAR))
    staff = block.m("staff_per_year")
    if staff is not None:
        held.append(("staff", staff / HOURS_PER_YEAR))
    for kind, rate in held:
        flows.append((kind, _held(rate, lead, hold_end, mh)))
    flows += _egress(block, run_end, mh)
    fraction, sale = Name(block.name("resale_fraction")), Name(block.name("sale_month"))
    flows.append(("resale", lambda k, last: at_month(sale, k, last, -call("ROUND", capex * fraction, 2))))
    return flows


def _held(rate: Expr, lead: Expr, hold_end: Expr, mh: Expr) -> Cell:
    return lambda k, last: call("ROUND", rate * span_hours(lead, hold_end, k, mh, last), 2)


def _resale_fraction(block: Block) -> Expr:
    """ROUND((1 − decline)^(age / 8,760) × (1 − haircut) × (1 − transaction cost), 6); the age runs
    from delivery to the month of the sale."""
    mh = Name(Names.global_("months_hours"))
    decline = _opt(block.m("resale_decline"))
    age = Name(block.name("sale_month")) * mh - block.scalars["lead_hours"]
    market = (1 - decline).power(age / HOURS_PER_YEAR)
    return call("ROUND", market * (1 - _opt(block.g("resale_haircut"))) * (1 - _opt(block.g("resale_transaction_cost"))),
                6)


# --- taxes (economics.tax, by formula) ----------------------------------------------------------

def _tax_rate(key: str) -> Expr:
    return Name(Names.global_(f"tax_{key}"))


def _tax_base(block: Block, tax: TaxSummary) -> Expr:
    capex = block.m("capex_total")
    assert capex is not None
    base = capex + call("ROUND", capex * _tax_rate("import_duty_rate"), 2)
    if tax.vat_recovered_after_months is None:
        base = base + call("ROUND", capex * _tax_rate("vat_rate"), 2)
    return base


def _depreciation(block: Block) -> Cell:
    """Straight line to zero over the life, by the hours held in each month (not cash: the shield reads it)."""
    mh = Name(Names.global_("months_hours"))
    life = block.m("life_hours")
    assert life is not None
    lead, base = block.scalars["lead_hours"], block.scalars["tax_base"]
    end = call("MIN", lead + life, Name(block.name("hold_end")))
    return lambda k, last: call("ROUND", base * span_hours(lead, end, k, mh, last) / life, 2)


def tax_cells(block: Block, tax: TaxSummary, rental: bool, depreciation: int | None) -> list[tuple[str, Cell]]:
    """Import duty, VAT (and its refund), the tax shield and the tax on the sale, per month, over the
    flow rows already written: the month's expenses are every flow but capex and resale."""
    expense_rows = [r for kind, r in block.flows if kind not in ("capex", "resale")]
    capex_row = next((r for kind, r in block.flows if kind == "capex"), None)

    def expenses(k: Expr) -> Expr:
        assert isinstance(k, Ref)
        refs: list[Expr] = [Ref(CASH_SHEET, r, k.col) for r in expense_rows]
        return call("SUM", *refs) if refs else Zero

    vat, rate = _tax_rate("vat_rate"), _tax_rate("rate")
    cells: list[tuple[str, Cell]] = []
    if capex_row is not None:
        capex = block.m("capex_total")
        assert capex is not None
        cells.append(("import-duty", lambda k, last: at_month(Zero, k, False,
                                                              call("ROUND", capex * _tax_rate("import_duty_rate"), 2))))

    def vat_cell(k: Expr, last: bool) -> Expr:
        assert isinstance(k, Ref)
        base = expenses(k)
        if capex_row is not None and k.col == FIRST_MONTH_COL:
            base = base + Ref(CASH_SHEET, capex_row, k.col)
        return call("ROUND", base * vat, 2)
    cells.append(("vat", vat_cell))
    after = tax.vat_recovered_after_months
    if after is not None:
        cells.append(("vat-refund", _refund(block, int(after))))
    cost = after is None

    def shield(k: Expr, last: bool) -> Expr:
        assert isinstance(k, Ref)
        deductible = expenses(k)
        if depreciation is not None:
            deductible = deductible + Ref(CASH_SHEET, depreciation, k.col)
        if cost:
            deductible = deductible + call("ROUND", expenses(k) * vat, 2)
        return -call("ROUND", deductible * rate, 2)
    cells.append(("tax-shield", shield))
    if depreciation is not None and not rental:
        cells.append(("tax-on-sale", _tax_on_sale(block, depreciation)))
    return cells


def _refund(block: Block, after: int) -> Cell:
    """Minus the VAT paid ``after`` months earlier (the last column: every refund from then on)."""
    def cell(k: Expr, last: bool) -> Expr:
        assert isinstance(k, Ref)
        vat_row = next(r for kind, r in block.flows if kind == "vat")
        first = k.col - after
        if first < FIRST_MONTH_COL:
            return Zero
        if last:
            return -call("SUM", Range(CASH_SHEET, vat_row, first, vat_row, k.col))
        return -Ref(CASH_SHEET, vat_row, first)
    return cell


def _tax_on_sale(block: Block, depreciation: int) -> Cell:
    """Tax at the income-tax rate on the sale's cash less the book value left, in the month of the sale."""
    capex = block.m("capex_total")
    assert capex is not None
    sale_cash = call("ROUND", capex * Name(block.name("resale_fraction")), 2)

    book = block.scalars["tax_base"] - Ref(CASH_SHEET, depreciation, TOTAL_COL)
    return lambda k, last: at_month(Name(block.name("sale_month")), k, last,
                                    call("ROUND", (sale_cash - book) * _tax_rate("rate"), 2))


# --- the table at the top ----------------------------------------------------------------------

def _table(sheet: Sheet, blocks: list[tuple[Block, int]], money: Style) -> None:
    first, last = 1, len(blocks)
    for r, (block, _) in enumerate(blocks, start=1):
        sheet.put(r, 0, block.bid_id, Style(bold=True))
        sheet.put(r, 1, Name(block.name("nominal_total")), money)
        sheet.put(r, 2, Name(block.name("present_value")), money._replace(bold=True))
        sheet.put(r, 3, block.scalars["upfront"], money)
        sheet.put(r, 4, block.scalars["peak"], money)
        sheet.put(r, 5, call("RANK", Ref(CASH_SHEET, r, 2), Range(CASH_SHEET, first, 2, last, 2, absolute=True), 1),
                  style(FMT["int"], bold=True))
        sheet.put(r, 6, block.scalars["cost_of_capital"], style(FMT["pct2"]))
        sheet.put(r, 7, call("ROUNDUP", Name("cash_horizon_hours") / Name(Names.global_("months_hours")), 0),
                  style("0"))
        for key, col in (("nominal_total", 1), ("present_value", 2), ("upfront", 3), ("peak", 4)):
            block.book.define(block.name("table_" + key), CASH_SHEET, r, col)


__all__ = ["CASH_SHEET", "build_cash", "cash_bids", "month_count", "span_hours"]
