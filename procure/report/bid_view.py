"""The view model of one bid's section: plan, memory, step time, scaling, measurements, costs."""

from __future__ import annotations

import re
from typing import Any, SupportsFloat

from procure.money import D
from procure.report import charts, generated
from procure.report.commercial_view import bid_commercial, pricing_rows
from procure.report.formatting import Formatter
from procure.report.model_view import model_basis
from procure.report.moe_view import workload_structure
from procure.report.straggler_view import bid_stragglers
from procure.report.target_view import bid_target

# additive parts of a step (they sum to the modeled step time); the subtotals are shown apart
STACKED_TERMS = ("compute_s", "overhead_s", "tp_comm_s", "pp_comm_s", "cp_comm_s", "dp_comm_exposed_s",
                 "ep_comm_s", "optimizer_s", "bubble_s", "io_s", "straggler_s")
SUBTOTAL_TERMS = ("comm_exposed_s", "comm_overlappable_s")
PLAN_KEYS = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero_stage", "recompute", "sequence_parallel")
HALF = 360  # width of a chart that sits in one of two columns
MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "reserve")


def bid_section(bid: dict[str, Any], doc: dict[str, Any], f: Formatter) -> dict[str, Any]:
    m = f.msg
    return {
        "id": f.text(bid["id"]), "vendor": f.text(bid["vendor"]), "anchor": _anchor(bid),
        "heading": m("bid.heading", rank=f.text(bid.get("rank")), id=f.text(bid["id"])),
        "overview": _overview(bid, f) + _pricing(bid, doc, f),
        "plan": _plan(bid, f), "plan_origin": _plan_origin(bid, f), "model_basis": model_basis(bid, f),
        "structure": workload_structure(bid, f),
        "memory": _memory(bid, f), "step": _step(bid, f), "scaling": _scaling(bid, f),
        "comparison": _comparison(bid, f), "stragglers": bid_stragglers(bid, f), "measured": _measured(bid, f),
        "economics": _economics(bid, doc, f), "costs": _costs(bid, f),
        "commercial": bid_commercial(bid, doc, f, _line_row), "target": bid_target(bid, f),
        "flags": [{"code": f.text(fl.get("code")), "severity": fl.get("severity") or "info",
                   "severity_text": m.get(f"severity.{fl.get('severity')}", f.text(fl.get("severity"))),
                   "reason": generated.flag_reason(fl, bid, doc, f)} for fl in bid.get("flags") or []],
    }


def _anchor(bid: dict[str, Any]) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(bid.get("rank") or "")) + "-" + re.sub(r"[^A-Za-z0-9_-]+", "-", str(bid["id"]))


def _overview(bid: dict[str, Any], f: Formatter) -> list[tuple[str, str]]:
    acc, net = bid.get("accelerator") or {}, bid.get("network") or {}
    gbps = net.get("scale_out_gbps_per_gpu")
    net_text = f.text(net.get("name") or net.get("id"))
    if gbps is not None:
        net_text += f" ({f.msg('unit.gbps', value=f.integer(gbps))})"
    return [(f.msg("bid.vendor"), f.text(bid["vendor"])),
            (f.msg("bid.accelerator"), f.text(acc.get("name") or acc.get("id"))),
            (f.msg("bid.gpus"), f.integer(bid.get("gpus"))),
            (f.msg("bid.network"), net_text)]


def _pricing(bid: dict[str, Any], doc: dict[str, Any], f: Formatter) -> list[tuple[str, str]]:
    """Kind, book and term, then the price as quoted and (in another currency) as converted."""
    p = bid.get("pricing") or {}
    months = p.get("min_commit_months")
    return ([(f.msg("bid.pricing"), f.msg.get(f"pricing.{p.get('kind')}", f.text(p.get("kind")))),
             (f.msg("bid.price_book"), f.text(p.get("price_book"))),
             (f.msg("bid.term"), f.text(p.get("term")))]
            + pricing_rows(bid, doc, f)
            + [(f.msg("bid.min_commit"), f.na if months is None else f.msg("unit.months", value=f.integer(months)))])


def _plan(bid: dict[str, Any], f: Formatter) -> list[tuple[str, str]]:
    plan = bid.get("plan") or {}
    rows = []
    for key in PLAN_KEYS:
        value = plan.get(key)
        if isinstance(value, bool):
            value = f.msg("word.yes") if value else f.msg("word.no")
        elif isinstance(value, str):
            value = generated.keyed(f, f"plan.{key}.{value}", value)
        rows.append((f.msg(f"plan.{key}"), f.text(value)))
    return rows


def _plan_origin(bid: dict[str, Any], f: Formatter) -> str:
    if bid.get("plan_origin") == "given":
        return f.msg("bid.plan_origin.given")
    s = bid.get("search") or {}
    return f.msg("bid.plan_origin.auto", evaluated=f.integer(s.get("plans_evaluated")),
                 feasible=f.integer(s.get("feasible")))


def _memory(bid: dict[str, Any], f: Formatter) -> dict[str, Any]:
    mem = bid.get("memory") or {}
    parts = mem.get("parts_gib") or {}
    keys = [k for k in MEMORY_PARTS if k in parts] + sorted(k for k in parts if k not in MEMORY_PARTS)
    labels = [(f.msg.get(f"memory.{k}", k), parts[k]) for k in keys]
    used, hbm = f.gib(mem.get("used_gib")), f.gib(mem.get("hbm_gib"))
    summary = f.msg("bid.memory_fits" if mem.get("fits", True) else "bid.memory_does_not_fit", used=used, hbm=hbm)
    marker = None if mem.get("hbm_gib") is None else (f"{f.msg('series.hbm')} {hbm}", float(mem["hbm_gib"]))
    svg = charts.stacked_bar([(f"{label} {f.gib(v)}", _f(v)) for label, v in labels], lambda v: f.integer(v),
                             title=f.msg("bid.memory"), marker=marker, width=HALF) if labels else ""
    return {"summary": summary, "rows": [(label, f.gib(v)) for label, v in labels], "svg": svg}


def _f(value: SupportsFloat | str | None) -> float | None:
    return None if value is None else float(value)


def _step(bid: dict[str, Any], f: Formatter) -> dict[str, Any]:
    terms = bid.get("step_time_terms") or {}
    modeled = (bid.get("modeled") or {}).get("step_time_s")
    total = _f(modeled) or _f(bid.get("step_time_s")) or 0.0
    rows = []
    for key in STACKED_TERMS + SUBTOTAL_TERMS + tuple(sorted(k for k in terms if k not in STACKED_TERMS + SUBTOTAL_TERMS)):
        if key in terms:
            share = f.percent(float(terms[key]) / total) if total and terms[key] is not None and key in STACKED_TERMS else ""
            rows.append({"label": f.msg.get(f"term.{key}", key), "value": f.seconds(terms[key]), "share": share,
                         "subtotal": key in SUBTOTAL_TERMS})
    segments = [(f"{f.msg.get(f'term.{k}', k)} {f.seconds(terms[k])}", _f(terms[k])) for k in STACKED_TERMS
                if terms.get(k)]
    marker = None if modeled is None else (f"{f.msg('series.modeled')} {f.seconds(modeled)}", float(modeled))
    svg = charts.stacked_bar(segments, lambda v: f.sig(v, 2), title=f.msg("bid.step_time"), marker=marker) if segments else ""
    basis = bid.get("step_time_basis") or "modeled"
    hidden = terms.get("comm_overlappable_s")
    return {"rows": rows, "svg": svg, "basis": f.msg.get(f"bid.step_time_basis.{basis}", basis),
            "hidden": "" if hidden is None else f.msg("bid.hidden_comm", value=f.seconds(hidden))}


def _scaling(bid: dict[str, Any], f: Formatter) -> dict[str, Any]:
    sc = bid.get("scaling") or {}
    curve = sc.get("curve") or []
    rows = [{"gpus": f.integer(p.get("gpus")), "step_time": f.seconds(p.get("step_time_s")),
             "tokens": f.sig(p.get("tokens_per_s_per_gpu"), 4), "efficiency": f.percent(p.get("efficiency"))}
            for p in curve]
    points = [(float(p["gpus"]), float(p["efficiency"]) * 100) for p in curve
              if p.get("gpus") and p.get("efficiency") is not None]
    svg = charts.line_chart(points, lambda v: f.integer(v), lambda v: f"{f.integer(v)}%", title=f.msg("bid.scaling"),
                            x_label=f.msg("col.gpus"), y_label=f.msg("col.efficiency"), height=170, y_floor=100.0,
                            width=HALF) if len(points) > 1 else ""
    note = f.msg("bid.scaling_note", efficiency=f.percent(sc.get("efficiency")), gpus=f.integer(bid.get("gpus")),
                 reference=f.integer(sc.get("reference_gpus"))) if sc else ""
    return {"rows": rows, "svg": svg, "note": note}


def _comparison(bid: dict[str, Any], f: Formatter) -> dict[str, Any]:
    c, mo = bid.get("committed") or {}, bid.get("modeled") or {}
    me = ((bid.get("measured") or {}).get("step_time_s")) or {}
    table = [
        {"basis": f.msg("series.committed"), "mean": f.seconds(c.get("step_time_s")), "p50": f.na, "p95": f.na,
         "p99": f.seconds(c.get("p99_step_time_s"))},
        {"basis": f.msg("series.modeled"), "mean": f.seconds(mo.get("step_time_s")), "p50": f.seconds(mo.get("p50_s")),
         "p95": f.seconds(mo.get("p95_s")), "p99": f.seconds(mo.get("p99_s"))},
        {"basis": f.msg("series.measured"), "mean": f.seconds(me.get("mean")), "p50": f.seconds(me.get("p50")),
         "p95": f.seconds(me.get("p95")), "p99": f.seconds(me.get("p99"))},
    ]
    series = [("series.committed", c.get("step_time_s"), c.get("p99_step_time_s")),
              ("series.modeled", mo.get("step_time_s"), mo.get("p99_s")),
              ("series.measured", me.get("mean"), me.get("p99"))]
    rows = []
    for key, mean, p99 in series:
        rows.append(charts.BarRow(f"{f.msg(key)} ({f.msg('series.mean')})", _f(mean), f.seconds(mean)))
        rows.append(charts.BarRow(f"{f.msg(key)} ({f.msg('series.p99')})", _f(p99), f.seconds(p99)))
    has_any = any(r.value is not None for r in rows)
    svg = charts.hbars(rows, lambda v: f.sig(v, 2), title=f.msg("bid.comparison"), colour=charts.PALETTE[1],
                       width=HALF) if has_any else ""
    return {"rows": table, "svg": svg}


def _measured(bid: dict[str, Any], f: Formatter) -> dict[str, Any] | None:
    meas = bid.get("measured")
    if not meas:
        return None
    stats = meas.get("step_time_s") or {}
    hist = meas.get("histogram") or {}
    svg = ""
    if hist.get("edges_s") and hist.get("counts"):
        markers = [(f"{f.msg('series.p50')} {f.seconds(stats.get('p50'))}", _f(stats.get("p50"))),
                   (f"{f.msg('series.p99')} {f.seconds(stats.get('p99'))}", _f(stats.get("p99")))]
        svg = charts.histogram([float(e) for e in hist["edges_s"]], [int(c) for c in hist["counts"]],
                               lambda v: f.sig(v, 3), title=f.msg("bid.measured"), markers=markers,
                               cdf_label=f.msg("series.cdf"), count_label=f.msg("series.count"))
    sources = [{"path": f.text(s.get("path")), "format": f.text(s.get("format")), "steps": f.integer(s.get("steps")),
                "warmup": f.integer(s.get("warmup_excluded"))} for s in meas.get("sources") or []]
    keys = ("mean", "p50", "p95", "p99", "max", "std")
    stat_rows = [(f.msg.get(f"col.{k}", k), f.seconds(stats.get(k))) for k in keys if k in stats]
    if "cv" in stats:
        stat_rows.append((f.msg("col.cv"), f.percent(stats.get("cv"))))
    return {"sources": sources, "stats": stat_rows, "svg": svg, "note": generated.busbw_note(meas, f)}


def _economics(bid: dict[str, Any], doc: dict[str, Any], f: Formatter) -> list[tuple[str, str]]:
    gp, m = bid.get("goodput") or {}, f.msg
    return [
        (m("metric.tokens_per_s"), m("unit.tokens_per_s", value=f.compact(bid.get("tokens_per_s")))),
        (m("metric.tokens_per_s_per_gpu"), m("unit.tokens_per_s", value=f.sig(bid.get("tokens_per_s_per_gpu"), 4))),
        (m("metric.mfu"), f.percent(bid.get("mfu"))),
        (m("metric.hfu"), f.percent(bid.get("hfu"))),
        (m("metric.goodput"), f.percent(gp.get("fraction"))),
        (m("metric.job_mtti"), f.na if gp.get("job_mtti_h") is None else m("unit.hours", value=f.sig(gp["job_mtti_h"], 3))),
        (m("metric.checkpoint_interval"), f.minutes(gp.get("checkpoint_interval_min"))),
        (m("metric.time_to_train"), f.days(bid.get("time_to_train_days"))),
        (m("metric.billed_hours"), f.hours(bid.get("billed_hours"))),
        (m("metric.energy"), f.na if bid.get("energy_mwh") is None else m("unit.mwh", value=f.number(bid["energy_mwh"], 1))),
        (m("metric.mfu_convention"), generated.known_text(doc.get("mfu_convention"), f)),
    ]


def _line_row(line: dict[str, Any], f: Formatter, ccy: str) -> dict[str, Any]:
    return {"label": generated.keyed(f, f"cost.{line.get('key')}", line.get("label") or line.get("key")),
            "quantity": f"{_quantity(line.get('quantity'), f)} {line.get('unit') or ''}".strip(),
            "rate": _rate(line, f, ccy), "amount": f.money(line.get("amount"), ccy),
            "formula": generated.cost_formula(line, f)}


def _costs(bid: dict[str, Any], f: Formatter) -> dict[str, Any]:
    ccy = bid.get("currency") or f.currency
    lines = bid.get("cost_lines") or []
    rows = [_line_row(line, f, ccy) for line in lines]
    credits = any((_f(line.get("amount")) or 0.0) < 0 for line in lines)   # a resale credit: no stacked bar
    svg = charts.stacked_bar([(f"{r['label']} {r['amount']}", _f(line.get("amount"))) for r, line in zip(rows, lines)],
                             lambda v: f.compact(v), title=f.msg("bid.costs")) if lines and not credits else ""
    residual = bid.get("residual_value")
    return {"rows": rows, "total": f.money(bid.get("total_cost"), ccy), "svg": svg,
            "residual": "" if residual is None else f.msg("bid.residual", value=f.money(residual, ccy)),
            "empty": f.msg("bid.no_costs") if not lines else ""}


def _quantity(value: SupportsFloat | str | None, f: Formatter) -> str:
    if value is None:
        return f.na
    return f.integer(value) if float(value) == int(float(value)) else f.number(value, 2)


def _rate(line: dict[str, Any], f: Formatter, ccy: str) -> str:
    text = f.plain(line.get("rate")) if line.get("unit") == ccy else f.unit_price(line.get("rate"), ccy)
    for name, value in sorted((line.get("factors") or {}).items()):   # named in words, not as code
        text += f" × {f.msg.get(f'cost_factor.{name}', name.replace('_', ' '))} {f.plain(value)}"
    if line.get("divisor") not in (None, 1) and D(line["divisor"]) != 1:
        text += f" ÷ {f.plain(line['divisor'])}"
    return text
