"""The view model of the commercial figures: quoted and converted prices, both cost bases,
upfront capex and delivery, and the negotiator's figures (per bid and for the summary).

Like the rest of the view model it computes nothing: it looks values up in the result
document and formats them through ``formatting``.
"""

from __future__ import annotations

from typing import Any

from procure.report.formatting import Formatter

BASES = ("present_value", "run", "commitment")
SECOND_VIEW = {"present_value": "run", "run": "present_value", "commitment": "present_value"}


def basis_name(basis: object, f: Formatter) -> str:
    return f.msg.get(f"basis.{basis}", str(basis))


def ranking_basis_line(doc: dict[str, Any], f: Formatter) -> str:
    """One sentence naming the basis that ranks (the summary and the terminal print it), and the
    value of time when it joins the ranking."""
    basis = doc.get("cost_basis")
    if basis not in BASES:
        return ""
    line = f.msg("summary.ranked_on", basis=basis_name(basis, f), meaning=f.msg(f"basis.{basis}.meaning"))
    vot = next((a.get("value") for a in doc.get("assumptions") or [] if a.get("key") == "value_of_time_per_day"), None)
    if vot is not None:
        line += " " + f.msg("summary.value_of_time", value=f.money(vot, doc.get("currency")))
    return line


# --- prices ---------------------------------------------------------------------------------

def quoted_prices(bid: dict[str, Any], doc: dict[str, Any], f: Formatter) -> list[dict[str, str]]:
    """Every price as quoted, next to its converted value in the report currency."""
    report = doc["currency"]
    pricing = bid.get("pricing") or {}
    rows = []
    for q in pricing.get("quoted") or []:
        same = q.get("currency") == report
        rows.append({
            "label": f.text(q.get("label")), "unit": f.text(q.get("unit")),
            "quoted": f.unit_price(q.get("quoted"), q.get("currency"), as_quoted=True),
            "converted": f.unit_price(q.get("converted"), report),
            "rate": "" if same else f.msg("bid.fx_rate_text", rate=f.fx_rate(q.get("fx_rate")), report=report,
                                          quoted=f.text(q.get("currency"))),
            "origin": f.text(q.get("origin")),
        })
    return rows


def pricing_rows(bid: dict[str, Any], doc: dict[str, Any], f: Formatter) -> list[tuple[str, str]]:
    """The overview's pricing rows: the headline price as quoted and as converted, the rate and its date."""
    p, report = bid.get("pricing") or {}, doc["currency"]
    key = "price_per_gpu_hour" if p.get("kind") == "rental" else "capex_per_gpu"
    headline = next((q for q in p.get("quoted") or [] if q.get("key") == key), None)
    label = f.msg("bid.price_per_gpu_hour" if key == "price_per_gpu_hour" else "bid.capex_per_gpu")
    rows = []
    if headline is None:     # a document without quoted prices: the converted figure, in the report currency
        rows.append((label, f.unit_price(p.get(key), report) if p.get(key) is not None else f.na))
    else:
        rows.append((label + " " + f.msg("bid.as_quoted"), f.unit_price(headline.get("quoted"), headline.get("currency"), as_quoted=True)))
        if headline.get("currency") != report:
            rows.append((label + " " + f.msg("bid.in_report_currency", currency=report),
                         f.unit_price(headline.get("converted"), report)))
            rows.append((f.msg("bid.fx_rate"), f.msg("bid.fx_rate_dated", rate=f.msg(
                "bid.fx_rate_text", rate=f.fx_rate(headline.get("fx_rate")), report=report,
                quoted=f.text(headline.get("currency"))), date=f.date(p.get("fx_as_of")))))
    return rows


# --- both cost bases --------------------------------------------------------------------------

def basis_rows(bid: dict[str, Any], f: Formatter) -> list[dict[str, Any]]:
    """One row per basis: total, per million tokens, billed and idle hours, time value."""
    ccy = bid.get("currency") or f.currency
    rows = []
    for basis in BASES:
        found = (bid.get("cost_bases") or {}).get(basis)
        if not found or found.get("total_cost") is None:
            continue
        rows.append({"basis": basis_name(basis, f), "ranks": basis == bid.get("cost_basis"),
                     "total": f.money(found.get("total_cost"), ccy),
                     "per_mtok": f.rate(found.get("cost_per_million_tokens"), ccy),
                     "billed": f.hours(found.get("billed_hours")),
                     "idle": f.hours(found.get("idle_commitment_hours")),
                     "time_value": "" if found.get("time_value") is None else f.money(found.get("time_value"), ccy)})
    return rows


def other_basis_lines(bid: dict[str, Any], f: Formatter, line_row: Any) -> dict[str, Any]:
    """The lines of the basis that does not rank (the ranking basis' lines are the cost table)."""
    other = SECOND_VIEW.get(str(bid.get("cost_basis")))
    found = (bid.get("cost_bases") or {}).get(other) if other else None
    if not found or not found.get("cost_lines"):
        return {"title": "", "rows": [], "total": ""}
    ccy = bid.get("currency") or f.currency
    return {"title": f.msg("bid.costs_on", basis=basis_name(other, f)),
            "rows": [line_row(line, f, ccy) for line in found.get("cost_lines") or []],
            "total": f.money(found.get("total_cost"), ccy)}


def delivery_rows(bid: dict[str, Any], f: Formatter) -> list[tuple[str, str]]:
    d = bid.get("delivery") or {}
    if not d:
        return []
    lead = d.get("lead_time_days")
    origin = d.get("lead_time_origin") or ""
    lead_text = f.days(lead) if origin else f.msg("bid.lead_time_not_given")
    rows = [(f.msg("bid.lead_time"), lead_text), (f.msg("bid.available_from"), f.date(d.get("available_from"))),
            (f.msg("bid.finish_date"), f.date(d.get("finish_date"))),
            (f.msg("bid.deadline_date"), f.date(d.get("deadline_date")))]
    if bid.get("upfront_capex") is not None:
        rows.insert(0, (f.msg("bid.upfront_capex"), f.money(bid.get("upfront_capex"), bid.get("currency"))))
    return rows


def power_rows(bid: dict[str, Any], f: Formatter) -> list[tuple[str, str]]:
    power = bid.get("power") or {}
    if not power or power.get("it_kw_per_gpu") is None:
        return []
    source = str(power.get("source") or "")
    if power.get("system"):
        how = f.msg("bid.power_system", system=f.text(power.get("system")), node=f.plain(power.get("node_power_kw")),
                    gpus=f.integer(power.get("gpus_per_node")), fabric=f.plain(power.get("fabric_w_per_gpu")))
    else:
        how = f.msg.get(f"bid.power_source.{source}", source)
    rows = [(f.msg("bid.it_power"), f"{f.plain(power.get('it_kw_per_gpu'))} kW ({how})")]
    if (bid.get("pricing") or {}).get("kind") == "purchase":      # a rental's price includes its facility
        rows.append((f.msg("bid.pue"), f.msg("bid.pue_text", pue=f.plain(power.get("pue")))))
    return rows


# --- the negotiator ---------------------------------------------------------------------------

def negotiator_rows(bid: dict[str, Any], doc: dict[str, Any], f: Formatter) -> dict[str, Any]:
    n = bid.get("negotiation") or {}
    if not n:
        return {"rows": [], "notes": [], "intro": ""}
    ccy, m = bid.get("currency") or f.currency, f.msg
    target = n.get("target_bid")
    intro = (m("negotiator.intro", target=f.text(target), basis=basis_name(n.get("basis"), f),
               value=f.rate(n.get("target_cost_per_million_tokens"), ccy)) if target else m("negotiator.alone"))
    price_label = m(f"negotiator.price.{n.get('price_key') or 'price_per_gpu_hour'}")
    price = f.na
    if n.get("break_even_price") is not None:
        price = f.unit_price(n.get("break_even_price"), ccy)
        if n.get("quoted_currency") and n.get("quoted_currency") != ccy:
            price += f" ({f.unit_price(n.get('break_even_quoted'), n.get('quoted_currency'))})"
        if n.get("break_even_change") is not None:
            price += " " + m("negotiator.change", change=f.change(n.get("break_even_change")))
    win = f.seconds(n.get("step_time_to_win_s"))
    if n.get("step_time_to_win_mfu") is not None:
        win += " " + m("negotiator.at_mfu", mfu=f.percent(n.get("step_time_to_win_mfu")))
    credible = f.seconds(n.get("credible_step_time_s"))
    if n.get("credible_bound"):
        credible += f" ({m.get('negotiator.bound.' + str(n.get('credible_bound')), str(n.get('credible_bound')))})"
    levers = {lever.get("key"): lever for lever in n.get("levers") or []}
    if n.get("kind") == "reservation":          # the term and the share, not a price cut, decide a reservation
        price_rows = [(m(f"negotiator.lever.{key}"), _lever_text(levers[key], f)) for key in
                      ("term_months", "committed_share") if key in levers]
    else:
        price_rows = [(price_label, price), (m("negotiator.current_price"), f.unit_price(n.get("current_price"), ccy))]
    if "lead_time_days" in levers:
        price_rows.append((m("negotiator.lever.lead_time_days"), _lever_text(levers["lead_time_days"], f)))
    rows = [*price_rows,
            (m("negotiator.step_time_to_win"), win), (m("negotiator.step_time"), f.seconds(n.get("step_time_s"))),
            (m("negotiator.credible_step_time"), credible),
            (m("negotiator.idle"), m("negotiator.idle_text", hours=f.hours(n.get("idle_commitment_hours")),
                                     cost=f.money(n.get("idle_commitment_cost"), ccy)))]
    return {"rows": rows, "notes": [f.text(x) for x in n.get("notes") or []], "intro": intro}


def _lever_text(lever: dict[str, Any], f: Formatter) -> str:
    """"1 month (bid: 12 months)", "13.9% (bid: 100.0%)", "day 77.0 (bid: day 90.0)"."""
    key, m = lever.get("key"), f.msg

    def shown(value: Any) -> str:
        if value is None:
            return f.na
        if key == "committed_share":
            return f.percent(float(value))
        if key == "lead_time_days":
            return m("negotiator.day", day=f"{float(value):.1f}")
        return m("negotiator.months", months=f"{int(value)}")
    return m("negotiator.lever_value", proposed=shown(lever.get("proposed")), current=shown(lever.get("current")))


def bid_commercial(bid: dict[str, Any], doc: dict[str, Any], f: Formatter, line_row: Any) -> dict[str, Any]:
    """Everything the bid page's commercial partials print."""
    return {"quoted": quoted_prices(bid, doc, f), "bases": basis_rows(bid, f),
            "other": other_basis_lines(bid, f, line_row), "delivery": delivery_rows(bid, f),
            "power": power_rows(bid, f), "negotiator": negotiator_rows(bid, doc, f),
            "basis_title": f.msg("bid.costs_on", basis=basis_name(bid.get("cost_basis"), f))}


def summary_bases(bids: list[dict[str, Any]], doc: dict[str, Any], f: Formatter) -> dict[str, Any]:
    """The summary's table of both bases for every bid, with upfront capex and delivery."""
    rows = []
    for bid in bids:
        ccy = bid.get("currency") or f.currency
        bases = bid.get("cost_bases") or {}
        run, commitment = bases.get("run") or {}, bases.get("commitment") or {}
        pv = bases.get("present_value") or {}
        rows.append({"id": f.text(bid["id"]),
                     "pv": f.rate(pv.get("cost_per_million_tokens"), ccy),
                     "pv_total": f.money(pv.get("total_cost"), ccy),
                     "run": f.rate(run.get("cost_per_million_tokens"), ccy),
                     "run_total": f.money(run.get("total_cost"), ccy),
                     "commitment": f.rate(commitment.get("cost_per_million_tokens"), ccy),
                     "commitment_total": f.money(commitment.get("total_cost"), ccy),
                     "idle": f.hours(bid.get("idle_commitment_hours")),
                     "capex": f.money(bid.get("upfront_capex"), ccy) if bid.get("upfront_capex") is not None else "",
                     "delivery": f.date((bid.get("delivery") or {}).get("available_from"))})
    rankings = doc.get("rankings") or {}
    orders = [(f.msg("summary.order_on", basis=basis_name(b, f)), ", ".join(map(str, rankings.get(b) or [])))
              for b in BASES if rankings.get(b)]
    return {"line": ranking_basis_line(doc, f), "rows": rows, "orders": orders}
