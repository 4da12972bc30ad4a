"""The view model of the commercial figures: quoted and converted prices, both cost bases,
upfront capex and delivery, and the negotiator's figures (per bid and for the summary).

Like the rest of the view model it computes nothing: it looks values up in the result
document and formats them through ``formatting``.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, Optional, cast

from procure.recommendation import SECOND_VIEW
from procure.report.formatting import Formatter

if TYPE_CHECKING:
    from procure.document import QuoteDocument
    from procure.document.bid import BidResult, CostLine, NegotiationLever

Basis = Literal["present_value", "run", "commitment"]
BASES: tuple[Basis, ...] = ("present_value", "run", "commitment")
LineRow = Callable[["CostLine", Formatter, str], dict[str, str]]   # a cost line as the cost table prints it


def basis_name(basis: object, f: Formatter) -> str:
    return f.msg.get(f"basis.{basis}", str(basis))


def ranking_basis_line(doc: QuoteDocument, f: Formatter) -> str:
    """One sentence naming the basis that ranks (the summary and the terminal print it), and the
    value of time when it joins the ranking."""
    basis = doc.cost_basis
    if basis not in BASES:
        return ""
    line = f.msg("summary.ranked_on", basis=basis_name(basis, f), meaning=f.msg(f"basis.{basis}.meaning"))
    vot = next((a.value for a in doc.assumptions if a.key == "value_of_time_per_day"), None)
    if vot is not None:
        line += " " + f.msg("summary.value_of_time", value=f.money(vot, doc.currency))
    return line


# --- prices ---------------------------------------------------------------------------------

def quoted_prices(bid: BidResult, doc: QuoteDocument, f: Formatter) -> list[dict[str, str]]:
    """Every price as quoted, next to its converted value in the report currency."""
    report = doc.currency
    rows = []
    for q in bid.pricing.quoted:
        same = q.currency == report
        rows.append({
            "label": f.text(q.label), "unit": f.text(q.unit),
            "quoted": f.unit_price(q.quoted, q.currency, as_quoted=True),
            "converted": f.unit_price(q.converted, report),
            "rate": "" if same else f.msg("bid.fx_rate_text", rate=f.fx_rate(q.fx_rate), report=report,
                                          quoted=f.text(q.currency)),
            "origin": f.text(q.origin),
        })
    return rows


def pricing_rows(bid: BidResult, doc: QuoteDocument, f: Formatter) -> list[tuple[str, str]]:
    """The overview's pricing rows: the headline price as quoted and as converted, the rate and its date."""
    p, report = bid.pricing, doc.currency
    rental = p.kind == "rental"
    key = "price_per_gpu_hour" if rental else "capex_per_gpu"
    headline = next((q for q in p.quoted if q.key == key), None)
    label = f.msg("bid.price_per_gpu_hour" if rental else "bid.capex_per_gpu")
    rows = []
    if headline is None:     # a document without quoted prices: the converted figure, in the report currency
        price = p.price_per_gpu_hour if rental else p.capex_per_gpu
        rows.append((label, f.unit_price(price, report) if price is not None else f.na))
    else:
        rows.append((label + " " + f.msg("bid.as_quoted"), f.unit_price(headline.quoted, headline.currency, as_quoted=True)))
        if headline.currency != report:
            rows.append((label + " " + f.msg("bid.in_report_currency", currency=report),
                         f.unit_price(headline.converted, report)))
            rows.append((f.msg("bid.fx_rate"), f.msg("bid.fx_rate_dated", rate=f.msg(
                "bid.fx_rate_text", rate=f.fx_rate(headline.fx_rate), report=report,
                quoted=f.text(headline.currency)), date=f.date(p.fx_as_of))))
    return rows


# --- both cost bases --------------------------------------------------------------------------

def basis_rows(bid: BidResult, f: Formatter) -> list[dict[str, Any]]:
    """One row per basis: total, per million tokens, billed and idle hours, time value."""
    ccy = bid.currency or f.currency
    rows = []
    for basis in BASES:
        found = bid.cost_bases.get(basis)
        if found is None or found.total_cost is None:
            continue
        rows.append({"basis": basis_name(basis, f), "ranks": basis == bid.cost_basis,
                     "total": f.money(found.total_cost, ccy),
                     "per_mtok": f.rate(found.cost_per_million_tokens, ccy),
                     "billed": f.hours(found.billed_hours),
                     "idle": f.hours(found.idle_commitment_hours),
                     "time_value": "" if found.time_value is None else f.money(found.time_value, ccy)})
    return rows


def other_basis_lines(bid: BidResult, f: Formatter, line_row: LineRow) -> dict[str, Any]:
    """The lines of the basis that does not rank (the ranking basis' lines are the cost table)."""
    other = cast(Optional[Basis], SECOND_VIEW.get(str(bid.cost_basis)))
    found = bid.cost_bases.get(other) if other else None
    if found is None or not found.cost_lines:
        return {"title": "", "rows": [], "total": ""}
    ccy = bid.currency or f.currency
    return {"title": f.msg("bid.costs_on", basis=basis_name(other, f)),
            "rows": [line_row(line, f, ccy) for line in found.cost_lines],
            "total": f.money(found.total_cost, ccy)}


def delivery_rows(bid: BidResult, f: Formatter) -> list[tuple[str, str]]:
    d = bid.delivery
    if d is None:
        return []
    lead_text = f.days(d.lead_time_days) if d.lead_time_origin else f.msg("bid.lead_time_not_given")
    rows = [(f.msg("bid.lead_time"), lead_text), (f.msg("bid.available_from"), f.date(d.available_from)),
            (f.msg("bid.finish_date"), f.date(d.finish_date)),
            (f.msg("bid.deadline_date"), f.date(d.deadline_date))]
    if bid.upfront_capex is not None:
        rows.insert(0, (f.msg("bid.upfront_capex"), f.money(bid.upfront_capex, bid.currency)))
    return rows


def power_rows(bid: BidResult, f: Formatter) -> list[tuple[str, str]]:
    power = bid.power
    if power is None or power.it_kw_per_gpu is None:
        return []
    source = str(power.source or "")
    if power.system:
        how = f.msg("bid.power_system", system=f.text(power.system), node=f.plain(power.node_power_kw),
                    gpus=f.integer(power.gpus_per_node), fabric=f.plain(power.fabric_w_per_gpu))
    else:
        how = f.msg.get(f"bid.power_source.{source}", source)
    rows = [(f.msg("bid.it_power"), f"{f.plain(power.it_kw_per_gpu)} kW ({how})")]
    if bid.pricing.kind == "purchase":      # a rental's price includes its facility
        rows.append((f.msg("bid.pue"), f.msg("bid.pue_text", pue=f.plain(power.pue))))
    return rows


# --- the negotiator ---------------------------------------------------------------------------

def negotiator_rows(bid: BidResult, doc: QuoteDocument, f: Formatter) -> dict[str, Any]:
    n = bid.negotiation
    if n is None:
        return {"rows": [], "notes": [], "intro": ""}
    ccy, m = bid.currency or f.currency, f.msg
    target = n.target_bid
    intro = (m("negotiator.intro", target=f.text(target), basis=basis_name(n.basis, f),
               value=f.rate(n.target_cost_per_million_tokens, ccy)) if target else m("negotiator.alone"))
    price_label = m(f"negotiator.price.{n.price_key or 'price_per_gpu_hour'}")
    price = f.na
    if n.break_even_price is not None:
        price = f.unit_price(n.break_even_price, ccy)
        if n.quoted_currency and n.quoted_currency != ccy:
            price += f" ({f.unit_price(n.break_even_quoted, n.quoted_currency)})"
        if n.break_even_change is not None:
            price += " " + m("negotiator.change", change=f.change(n.break_even_change))
    win = f.seconds(n.step_time_to_win_s)
    if n.step_time_to_win_mfu is not None:
        win += " " + m("negotiator.at_mfu", mfu=f.percent(n.step_time_to_win_mfu))
    credible = f.seconds(n.credible_step_time_s)
    if n.credible_bound:
        credible += f" ({m.get('negotiator.bound.' + str(n.credible_bound), str(n.credible_bound))})"
    levers = {lever.key: lever for lever in n.levers}
    if n.kind == "reservation":          # the term and the share, not a price cut, decide a reservation
        price_rows = [(m(f"negotiator.lever.{key}"), _lever_text(levers[key], f)) for key in
                      ("term_months", "committed_share") if key in levers]
    else:
        price_rows = [(price_label, price), (m("negotiator.current_price"), f.unit_price(n.current_price, ccy))]
    delivery = next((lever for lever in n.levers if lever.key == "lead_time_days"), None)
    if delivery is not None:
        price_rows.append((m("negotiator.lever.lead_time_days"), _lever_text(delivery, f)))
    rows = [*price_rows,
            (m("negotiator.step_time_to_win"), win), (m("negotiator.step_time"), f.seconds(n.step_time_s)),
            (m("negotiator.credible_step_time"), credible),
            (m("negotiator.idle"), m("negotiator.idle_text", hours=f.hours(n.idle_commitment_hours),
                                     cost=f.money(n.idle_commitment_cost, ccy)))]
    return {"rows": rows, "notes": [f.text(x) for x in n.notes], "intro": intro}


def _lever_text(lever: NegotiationLever, f: Formatter) -> str:
    """"1 month (bid: 12 months)", "13.9% (bid: 100.0%)", "day 77.0 (bid: day 90.0)"."""
    key, m = lever.key, f.msg

    def shown(value: Decimal | None) -> str:
        if value is None:
            return f.na
        if key == "committed_share":
            return f.percent(float(value))
        if key == "lead_time_days":
            return m("negotiator.day", day=f"{float(value):.1f}")
        return m("negotiator.months", months=f"{int(value)}")
    return m("negotiator.lever_value", proposed=shown(lever.proposed), current=shown(lever.current))


def bid_commercial(bid: BidResult, doc: QuoteDocument, f: Formatter, line_row: LineRow) -> dict[str, Any]:
    """Everything the bid page's commercial partials print."""
    return {"quoted": quoted_prices(bid, doc, f), "bases": basis_rows(bid, f),
            "other": other_basis_lines(bid, f, line_row), "delivery": delivery_rows(bid, f),
            "power": power_rows(bid, f), "negotiator": negotiator_rows(bid, doc, f),
            "basis_title": f.msg("bid.costs_on", basis=basis_name(bid.cost_basis, f))}


SUMMARY_COLUMNS: tuple[tuple[Basis, str], ...] = (("present_value", "pv"), ("run", "run"), ("commitment", "commitment"))


def _basis_cells(bid: BidResult, f: Formatter, ccy: str) -> dict[str, str]:
    """The summary's per-basis cells: cost per million tokens and the total, on every basis."""
    cells = {}
    for basis, column in SUMMARY_COLUMNS:
        found = bid.cost_bases.get(basis)
        cells[column] = f.rate(found.cost_per_million_tokens if found is not None else None, ccy)
        cells[f"{column}_total"] = f.money(found.total_cost if found is not None else None, ccy)
    return cells


def summary_bases(bids: list[BidResult], doc: QuoteDocument, f: Formatter) -> dict[str, Any]:
    """The summary's table of both bases for every bid, with upfront capex and delivery."""
    rows = []
    for bid in bids:
        ccy = bid.currency or f.currency
        rows.append({"id": f.text(bid.id), **_basis_cells(bid, f, ccy),
                     "idle": f.hours(bid.idle_commitment_hours),
                     "capex": f.money(bid.upfront_capex, ccy) if bid.upfront_capex is not None else "",
                     "delivery": f.date(bid.delivery.available_from if bid.delivery is not None else None)})
    orders = [(f.msg("summary.order_on", basis=basis_name(b, f)), ", ".join(map(str, doc.rankings.get(b) or [])))
              for b in BASES if doc.rankings.get(b)]
    return {"line": ranking_basis_line(doc, f), "rows": rows, "orders": orders}
