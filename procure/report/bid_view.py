"""The view model of one bid's section: plan, memory, step time, scaling, measurements, costs."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, SupportsFloat

from procure.report import charts, generated
from procure.report.commercial_view import bid_commercial, pricing_rows
from procure.report.formatting import Formatter
from procure.report.model_view import model_basis
from procure.report.moe_view import workload_structure
from procure.report.straggler_view import bid_stragglers
from procure.report.target_view import bid_target

if TYPE_CHECKING:
    from procure.document import QuoteDocument
    from procure.document.bid import BidResult, CostLine, Plan, StepTimeSummary

# additive parts of a step (they sum to the modeled step time); the subtotals are shown apart
STACKED_TERMS = ("compute_s", "overhead_s", "tp_comm_s", "pp_comm_s", "cp_comm_s", "dp_comm_exposed_s",
                 "ep_comm_s", "optimizer_s", "bubble_s", "io_s", "straggler_s")
SUBTOTAL_TERMS = ("comm_exposed_s", "comm_overlappable_s")
HIDDEN_TERM = "comm_overlappable_s"     # the communication the step could hide under compute
PLAN_FIELDS: tuple[tuple[str, Callable[[Plan], object]], ...] = (
    ("tp", lambda p: p.tp), ("pp", lambda p: p.pp), ("dp", lambda p: p.dp), ("cp", lambda p: p.cp),
    ("ep", lambda p: p.ep), ("vpp", lambda p: p.vpp), ("micro_batch", lambda p: p.micro_batch),
    ("zero_stage", lambda p: p.zero_stage), ("recompute", lambda p: p.recompute),
    ("sequence_parallel", lambda p: p.sequence_parallel))
PLAN_KEYS = tuple(key for key, _ in PLAN_FIELDS)       # the message keys (plan.<key>); the workbook's too
STATS: tuple[tuple[str, Callable[[StepTimeSummary], float | None]], ...] = (
    ("mean", lambda s: s.mean), ("p50", lambda s: s.p50), ("p95", lambda s: s.p95), ("p99", lambda s: s.p99),
    ("max", lambda s: s.max), ("std", lambda s: s.std))
HALF = 360  # width of a chart that sits in one of two columns
MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "reserve")


def bid_section(bid: BidResult, doc: QuoteDocument, f: Formatter) -> dict[str, Any]:
    m = f.msg
    return {
        "id": f.text(bid.id), "vendor": f.text(bid.vendor), "anchor": _anchor(bid),
        "heading": m("bid.heading", rank=f.text(bid.rank), id=f.text(bid.id)),
        "overview": _overview(bid, f) + _pricing(bid, doc, f),
        "plan": _plan(bid, f), "plan_origin": _plan_origin(bid, f), "model_basis": model_basis(bid, f),
        "structure": workload_structure(bid, f),
        "memory": _memory(bid, f), "step": _step(bid, f), "scaling": _scaling(bid, f),
        "comparison": _comparison(bid, f), "stragglers": bid_stragglers(bid, f), "measured": _measured(bid, f),
        "economics": _economics(bid, doc, f), "costs": _costs(bid, f),
        "commercial": bid_commercial(bid, doc, f, _line_row), "target": bid_target(bid, f),
        "flags": [{"code": f.text(fl.code), "severity": fl.severity or "info",
                   "severity_text": m.get(f"severity.{fl.severity}", f.text(fl.severity)),
                   "reason": generated.flag_reason(fl, bid, doc, f)} for fl in bid.flags],
    }


def _anchor(bid: BidResult) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(bid.rank or "")) + "-" + re.sub(r"[^A-Za-z0-9_-]+", "-", str(bid.id))


def _overview(bid: BidResult, f: Formatter) -> list[tuple[str, str]]:
    acc, net = bid.accelerator, bid.network
    net_text = f"{f.text(net.name or net.id)} ({f.msg('unit.gbps', value=f.integer(net.scale_out_gbps_per_gpu))})"
    return [(f.msg("bid.vendor"), f.text(bid.vendor)),
            (f.msg("bid.accelerator"), f.text(acc.name or acc.id)),
            (f.msg("bid.gpus"), f.integer(bid.gpus)),
            (f.msg("bid.network"), net_text)]


def _pricing(bid: BidResult, doc: QuoteDocument, f: Formatter) -> list[tuple[str, str]]:
    """Kind, book and term, then the price as quoted and (in another currency) as converted."""
    p = bid.pricing
    return ([(f.msg("bid.pricing"), f.msg.get(f"pricing.{p.kind}", f.text(p.kind))),
             (f.msg("bid.price_book"), f.text(p.price_book)),
             (f.msg("bid.term"), f.text(p.term))]
            + pricing_rows(bid, doc, f)
            + [(f.msg("bid.min_commit"), f.msg("unit.months", value=f.integer(p.min_commit_months)))])


def _plan(bid: BidResult, f: Formatter) -> list[tuple[str, str]]:
    plan = bid.plan
    rows = []
    for key, get in PLAN_FIELDS:
        value = get(plan) if plan is not None else None
        if isinstance(value, bool):
            value = f.msg("word.yes") if value else f.msg("word.no")
        elif isinstance(value, str):
            value = generated.keyed(f, f"plan.{key}.{value}", value)
        rows.append((f.msg(f"plan.{key}"), f.text(value)))
    return rows


def _plan_origin(bid: BidResult, f: Formatter) -> str:
    if bid.plan_origin == "given":
        return f.msg("bid.plan_origin.given")
    return f.msg("bid.plan_origin.auto", evaluated=f.integer(bid.search.plans_evaluated),
                 feasible=f.integer(bid.search.feasible))


def _memory(bid: BidResult, f: Formatter) -> dict[str, Any]:
    mem = bid.memory
    parts = mem.parts_gib
    keys = [k for k in MEMORY_PARTS if k in parts] + sorted(k for k in parts if k not in MEMORY_PARTS)
    labels = [(f.msg.get(f"memory.{k}", k), parts[k]) for k in keys]
    used, hbm = f.gib(mem.used_gib), f.gib(mem.hbm_gib)
    summary = f.msg("bid.memory_fits" if mem.fits else "bid.memory_does_not_fit", used=used, hbm=hbm)
    marker = (f"{f.msg('series.hbm')} {hbm}", float(mem.hbm_gib))
    svg = charts.stacked_bar([(f"{label} {f.gib(v)}", _f(v)) for label, v in labels], lambda v: f.integer(v),
                             title=f.msg("bid.memory"), marker=marker, width=HALF) if labels else ""
    return {"summary": summary, "rows": [(label, f.gib(v)) for label, v in labels], "svg": svg}


def _f(value: SupportsFloat | None) -> float | None:
    return None if value is None else float(value)


def _step(bid: BidResult, f: Formatter) -> dict[str, Any]:
    terms = bid.step_time_terms
    modeled = bid.modeled.step_time_s if bid.modeled is not None else None
    total = _f(modeled) or _f(bid.step_time_s) or 0.0
    rows = []
    for key in STACKED_TERMS + SUBTOTAL_TERMS + tuple(sorted(k for k in terms if k not in STACKED_TERMS + SUBTOTAL_TERMS)):
        if key in terms:
            share = f.percent(float(terms[key]) / total) if total and key in STACKED_TERMS else ""
            rows.append({"label": f.msg.get(f"term.{key}", key), "value": f.seconds(terms[key]), "share": share,
                         "subtotal": key in SUBTOTAL_TERMS})
    segments = [(f"{f.msg.get(f'term.{k}', k)} {f.seconds(terms[k])}", _f(terms[k])) for k in STACKED_TERMS
                if terms.get(k)]
    marker = None if modeled is None else (f"{f.msg('series.modeled')} {f.seconds(modeled)}", float(modeled))
    svg = charts.stacked_bar(segments, lambda v: f.sig(v, 2), title=f.msg("bid.step_time"), marker=marker) if segments else ""
    basis = bid.step_time_basis or "modeled"
    hidden = terms.get(HIDDEN_TERM)
    return {"rows": rows, "svg": svg, "basis": f.msg.get(f"bid.step_time_basis.{basis}", basis),
            "hidden": "" if hidden is None else f.msg("bid.hidden_comm", value=f.seconds(hidden))}


def _scaling(bid: BidResult, f: Formatter) -> dict[str, Any]:
    sc = bid.scaling
    curve = sc.curve if sc is not None else []
    rows = [{"gpus": f.integer(p.gpus), "step_time": f.seconds(p.step_time_s),
             "tokens": f.sig(p.tokens_per_s_per_gpu, 4), "efficiency": f.percent(p.efficiency)}
            for p in curve]
    points = [(float(p.gpus), float(p.efficiency) * 100) for p in curve if p.gpus]
    svg = charts.line_chart(points, lambda v: f.integer(v), lambda v: f"{f.integer(v)}%", title=f.msg("bid.scaling"),
                            x_label=f.msg("col.gpus"), y_label=f.msg("col.efficiency"), height=170, y_floor=100.0,
                            width=HALF) if len(points) > 1 else ""
    note = f.msg("bid.scaling_note", efficiency=f.percent(sc.efficiency), gpus=f.integer(bid.gpus),
                 reference=f.integer(sc.reference_gpus)) if sc is not None else ""
    return {"rows": rows, "svg": svg, "note": note}


def _comparison(bid: BidResult, f: Formatter) -> dict[str, Any]:
    c, mo = bid.committed, bid.modeled
    me = bid.measured.step_time_s if bid.measured is not None else None
    modeled = (mo.step_time_s, mo.p50_s, mo.p95_s, mo.p99_s) if mo is not None else (None,) * 4
    measured = (me.mean, me.p50, me.p95, me.p99) if me is not None else (None,) * 4
    table = [
        {"basis": f.msg("series.committed"), "mean": f.seconds(c.step_time_s), "p50": f.na, "p95": f.na,
         "p99": f.seconds(c.p99_step_time_s)},
        {"basis": f.msg("series.modeled"), "mean": f.seconds(modeled[0]), "p50": f.seconds(modeled[1]),
         "p95": f.seconds(modeled[2]), "p99": f.seconds(modeled[3])},
        {"basis": f.msg("series.measured"), "mean": f.seconds(measured[0]), "p50": f.seconds(measured[1]),
         "p95": f.seconds(measured[2]), "p99": f.seconds(measured[3])},
    ]
    series = [("series.committed", c.step_time_s, c.p99_step_time_s),
              ("series.modeled", modeled[0], modeled[3]),
              ("series.measured", measured[0], measured[3])]
    rows = []
    for key, mean, p99 in series:
        rows.append(charts.BarRow(f"{f.msg(key)} ({f.msg('series.mean')})", _f(mean), f.seconds(mean)))
        rows.append(charts.BarRow(f"{f.msg(key)} ({f.msg('series.p99')})", _f(p99), f.seconds(p99)))
    has_any = any(r.value is not None for r in rows)
    svg = charts.hbars(rows, lambda v: f.sig(v, 2), title=f.msg("bid.comparison"), colour=charts.PALETTE[1],
                       width=HALF) if has_any else ""
    return {"rows": table, "svg": svg}


def _measured(bid: BidResult, f: Formatter) -> dict[str, Any] | None:
    meas = bid.measured
    if meas is None:
        return None
    stats, hist = meas.step_time_s, meas.histogram
    svg = ""
    if hist is not None and hist.edges_s and hist.counts:
        p50, p99 = (stats.p50, stats.p99) if stats is not None else (None, None)
        markers = [(f"{f.msg('series.p50')} {f.seconds(p50)}", _f(p50)),
                   (f"{f.msg('series.p99')} {f.seconds(p99)}", _f(p99))]
        svg = charts.histogram([float(e) for e in hist.edges_s], [int(c) for c in hist.counts],
                               lambda v: f.sig(v, 3), title=f.msg("bid.measured"), markers=markers,
                               cdf_label=f.msg("series.cdf"), count_label=f.msg("series.count"))
    sources = [{"path": f.text(s.path), "format": f.text(s.format), "steps": f.integer(s.steps),
                "warmup": f.integer(s.warmup_excluded)} for s in meas.sources]
    stat_rows = []
    if stats is not None:
        stat_rows = [(f.msg.get(f"col.{k}", k), f.seconds(get(stats))) for k, get in STATS]
        stat_rows.append((f.msg("col.cv"), f.percent(stats.cv)))
    return {"sources": sources, "stats": stat_rows, "svg": svg, "note": generated.busbw_note(meas, f)}


def _economics(bid: BidResult, doc: QuoteDocument, f: Formatter) -> list[tuple[str, str]]:
    gp, m = bid.goodput, f.msg
    mtti = gp.job_mtti_h if gp is not None else None
    return [
        (m("metric.tokens_per_s"), m("unit.tokens_per_s", value=f.compact(bid.tokens_per_s))),
        (m("metric.tokens_per_s_per_gpu"), m("unit.tokens_per_s", value=f.sig(bid.tokens_per_s_per_gpu, 4))),
        (m("metric.mfu"), f.percent(bid.mfu)),
        (m("metric.hfu"), f.percent(bid.hfu)),
        (m("metric.goodput"), f.percent(gp.fraction if gp is not None else None)),
        (m("metric.job_mtti"), f.na if mtti is None else m("unit.hours", value=f.sig(mtti, 3))),
        (m("metric.checkpoint_interval"), f.minutes(gp.checkpoint_interval_min if gp is not None else None)),
        (m("metric.time_to_train"), f.days(bid.time_to_train_days)),
        *_real_run(bid, f),
        (m("metric.billed_hours"), f.hours(bid.billed_hours)),
        (m("metric.energy"), f.na if bid.energy_mwh is None else m("unit.mwh", value=f.number(bid.energy_mwh, 1))),
        (m("metric.mfu_convention"), generated.known_text(doc.mfu_convention, f)),
    ]


def _real_run(bid: BidResult, f: Formatter) -> list[tuple[str, str]]:
    """The run as published whole runs went, next to the model's (a modeled bid only)."""
    real, m = bid.real_run, f.msg
    if real is None:
        return []
    return [(m("metric.real_run_time"), m("real_run.days", days=f.days(real.time_to_train_days),
                                          factor=f.sig(real.real_run_factor, 3), runs=f.integer(real.fit_runs))),
            (m("metric.real_run_gpu_hours"), m("real_run.gpu_hours", hours=f.integer(real.gpu_hours),
                                               low=f.integer(real.p10_gpu_hours), high=f.integer(real.p90_gpu_hours)))]


def _line_label(line: CostLine, f: Formatter) -> str:
    return generated.keyed(f, f"cost.{line.key}", line.label or line.key)


def _line_row(line: CostLine, f: Formatter, ccy: str) -> dict[str, str]:
    return {"label": _line_label(line, f),
            "quantity": f"{_quantity(line.quantity, f)} {line.unit or ''}".strip(),
            "rate": _rate(line, f, ccy), "amount": f.money(line.amount, ccy),
            "formula": generated.cost_formula(line, f)}


def _costs(bid: BidResult, f: Formatter) -> dict[str, Any]:
    ccy = bid.currency or f.currency
    lines = bid.cost_lines
    credits = any(line.amount < 0 for line in lines)   # a resale credit: no stacked bar
    svg = charts.stacked_bar([(f"{_line_label(line, f)} {f.money(line.amount, ccy)}", _f(line.amount)) for line in lines],
                             lambda v: f.compact(v), title=f.msg("bid.costs")) if lines and not credits else ""
    residual = bid.residual_value
    return {"rows": [_line_row(line, f, ccy) for line in lines], "total": f.money(bid.total_cost, ccy), "svg": svg,
            "residual": "" if residual is None else f.msg("bid.residual", value=f.money(residual, ccy)),
            "empty": f.msg("bid.no_costs") if not lines else ""}


def _quantity(value: SupportsFloat | None, f: Formatter) -> str:
    if value is None:
        return f.na
    return f.integer(value) if float(value) == int(float(value)) else f.number(value, 2)


def _rate(line: CostLine, f: Formatter, ccy: str) -> str:
    text = f.plain(line.rate) if line.unit == ccy else f.unit_price(line.rate, ccy)
    for name, value in sorted(line.factors.items()):   # named in words, not as code
        text += f" × {f.msg.get(f'cost_factor.{name}', name.replace('_', ' '))} {f.plain(value)}"
    if line.divisor != 1:
        text += f" ÷ {f.plain(line.divisor)}"
    return text
