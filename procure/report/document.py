"""The view model: a result document turned into the strings and charts a report prints.

Renderers compute nothing; this module only looks values up and formats them (through
``formatting``). The document was validated against its schema before it got here (see
``procure.document``); optional values (null) print as "n/a".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, SupportsFloat

from procure import __version__
from procure.report import charts, generated
from procure.report.bid_pages import (CHART_MAX_BARS, BidPages, chart_note, large_summary, selected,
                                      table_bids)
from procure.report.bid_pages import note as bid_pages_note
from procure.report.bid_pages import resolve as pages_for
from procure.report.bid_view import bid_section
from procure.report.commercial_view import summary_bases
from procure.report.formatting import Formatter
from procure.report.order import ranked_bids
from procure.report.target_view import RATIO_KEYS, methodology_target, ratio_rows, time_to_target_summary

if TYPE_CHECKING:
    from procure.document import QuoteDocument
    from procure.document.bid import Band, BidResult, MoneyBand, SensitivityRow
    from procure.document.quote import AssumptionRow, Methodology, SourceRow, WorkloadSummary

METHOD_KEYS = ("method.step", "method.compute", "method.comm", "method.bubble", "method.stragglers",
               "method.goodput", "method.economics", "method.flags")
HTML_LANG = {"en": "en", "zh-TW": "zh-Hant-TW"}



def build_view(doc: QuoteDocument, lang: str = "en", page_size: str = "A4",
               attached: list[str] | tuple[str, ...] = (), bid_pages: BidPages | None = None) -> dict[str, Any]:
    """``attached``: names of the files the PDF carries (the cover says so). ``bid_pages``: which
    bids get a detail page (None: the default for the report's size, see ``bid_pages``)."""
    f = Formatter(lang, doc.currency)
    bids = ranked_bids(doc)
    pages, recommended = pages_for(bid_pages, len(bids)), doc.recommendation.bid
    shown = selected(bids, pages, recommended)
    tabled = table_bids(bids, shown)        # a large report's per-bid tables: the bids with a page
    return large_summary({
        "lang": lang, "html_lang": HTML_LANG.get(lang, lang), "page_size": page_size,
        "t": f.msg.table, "meta": _meta(doc, f),
        "cover": _cover(doc, f, attached),
        "workload": _workload(doc.workload, f),
        "ranking": [ranking_row(b, f) for b in bids],
        "bases": summary_bases(tabled, doc, f), "target": time_to_target_summary(tabled, doc, f),
        "recommendation": _recommendation(doc, f),
        "flags": flags_explained(bids, f, doc),
        "bids": [bid_section(b, doc, f) for b in shown],
        "bid_pages_note": bid_pages_note(f.msg, f.integer, pages, shown, len(bids), recommended),
        "compare": _compare(doc, bids, f, tabled),
        "methodology": _methodology(doc.methodology, f), "method_target": methodology_target(doc, f),
        "assumptions": _assumptions(doc, f),
        "sources": _sources(doc.sources, f),
    }, bids, f)


def _meta(doc: QuoteDocument, f: Formatter) -> dict[str, str]:
    title = f.text(doc.title)
    return {"title": title, "as_of": str(doc.as_of), "as_of_text": f.date(doc.as_of),
            "subtitle": f.msg("report.title_suffix"),
            "generated_by": f.msg("report.generated_by", version=doc.procure_version or __version__,
                                  schema=doc.schema_)}


def _cover(doc: QuoteDocument, f: Formatter, attached: list[str] | tuple[str, ...]) -> dict[str, Any]:
    inputs = [{"path": f.text(i.path), "role": generated.keyed(f, f"role.{i.role}", i.role),
               "sha256": f.text(i.sha256), "bytes": f.integer(i.bytes)}
              for i in doc.inputs]
    return {"rows": [(f.msg("cover.rfq_date"), f.date(doc.as_of)),
                     (f.msg("cover.currency"), f.text(doc.currency)),
                     (f.msg("cover.bids"), f.integer(len(doc.bids)))],
            "verdict": _verdict(doc, f),
            "inputs": inputs,
            "attached": f.msg("cover.attached", files=", ".join(map(str, attached))) if attached else ""}


def _verdict(doc: QuoteDocument, f: Formatter) -> str:
    """Page 1's answer: the recommended bid with its cost, time and total, and how many bids carry flags."""
    winner = next((b for b in doc.bids if b.id == doc.recommendation.bid), None)
    if winner is None:
        return ""
    currency = winner.currency or f.currency
    flagged = sum(1 for b in doc.bids if b.flags)
    return f.msg("cover.verdict", bid=f.text(winner.id), vendor=f.text(winner.vendor),
                 usd_mtok=f.rate(winner.cost_per_million_tokens, currency),
                 days=f.days(winner.time_to_train_days), total=f.money(winner.total_cost, currency),
                 flagged=f.integer(flagged), bids=f.integer(len(doc.bids)))


def _workload(w: WorkloadSummary, f: Formatter) -> list[tuple[str, str]]:
    model = w.model
    m = f.msg
    return [
        (m("workload.model"), f.text(model.name or model.id)),
        (m("workload.params"), f.compact(model.params)),
        (m("workload.seq_len"), f.integer(w.seq_len)),
        (m("workload.global_batch_tokens"), m("unit.tokens", value=f.integer(w.global_batch_tokens))),
        (m("workload.train_tokens"), m("unit.tokens", value=f.compact(w.train_tokens))),
        (m("workload.precision"), f.text(w.precision)),
        (m("workload.deadline"), f.days(w.deadline_days)),
        (m("workload.model_flops_per_token"), f.compact(w.model_flops_per_token)),
        (m("workload.attention"), generated.known_text(w.attention_flops_convention, f)),
    ]


def ranking_row(bid: BidResult, f: Formatter) -> dict[str, Any]:
    acc = bid.accelerator
    currency = bid.currency or f.currency
    return {
        "rank": f.text(bid.rank), "id": f.text(bid.id), "vendor": f.text(bid.vendor),
        "accel_gpus": f"{f.text(acc.name or acc.id)} × {f.integer(bid.gpus)}" + _idle(bid, f),
        "step_time": f.seconds(bid.step_time_s),
        "days": f.days(bid.time_to_train_days),
        "real_days": f.days(bid.real_run.time_to_train_days) if bid.real_run is not None else f.na,
        "total_cost": f.money(bid.total_cost, currency),
        "usd_mtok": f.rate(bid.cost_per_million_tokens, currency),
        "mfu": f.percent(bid.mfu),
        "flags": [{"code": f.text(fl.code), "severity": fl.severity} for fl in bid.flags],
    }


def _idle(bid: BidResult, f: Formatter) -> str:
    """GPUs the plan leaves idle (still billed), beside the GPU count on the comparison."""
    idle = bid.idle_gpus
    return f" ({f.msg('ranking.idle_gpus', idle=f.integer(idle))})" if idle else ""


def flags_explained(bids: list[BidResult], f: Formatter, doc: QuoteDocument) -> list[dict[str, Any]]:
    """Each flag code once, with what it means and every bid that carries it."""
    groups: dict[str, dict[str, Any]] = {}
    instances: dict[str, list[dict[str, str]]] = {}
    for bid in bids:
        for flag in bid.flags:
            code = f.text(flag.code)
            if code not in groups:
                instances[code] = []
                groups[code] = {"code": code, "instances": instances[code],
                                "meaning": f.msg.get(f"flag.{code}", f.msg("flag.unknown"))}
            instances[code].append({"bid": f.text(bid.id), "severity": flag.severity,
                                    "severity_text": f.msg(f"severity.{flag.severity}"),
                                    "reason": generated.flag_reason(flag, bid, doc, f)})
    return list(groups.values())


def _recommendation(doc: QuoteDocument, f: Formatter) -> dict[str, str]:
    """The document's recommendation in English; in another language one written from the
    structured fields (never the English sentence translated, never the English beside it)."""
    own = generated.recommendation(doc, f)
    return {"text": own or f.text(doc.recommendation.text), "generated": "", "note": "",
            "line": generated.recommended_line(doc, f), "fx_warning": generated.fx_warning(doc, f)}


def _compare(doc: QuoteDocument, bids: list[BidResult], f: Formatter, tabled: list[BidResult]) -> dict[str, Any]:
    winner_id = doc.sensitivity_summary.winner or (doc.ranking[0] if doc.ranking else None)
    winner = next((b for b in bids if b.id == winner_id), None)
    changes = generated.decision_movers(doc, f)
    verdict = (f.msg("compare.winner_changes", winner=f.text(winner_id), changes=f.msg("rec.list_sep").join(changes))
               if changes else f.msg("compare.winner_stable", winner=f.text(winner_id)))
    unc = next((b.uncertainty for b in bids if b.uncertainty is not None), None)
    groups = decision_groups(bids, str(winner_id)) if winner else []
    shown = _shown(bids, str(winner_id)) if winner else []
    charted = bids[:CHART_MAX_BARS]       # a chart is one page; the ranking table lists every bid
    return {
        "usd_mtok_svg": _band_chart(charted, _cost_bar, f.msg("compare.usd_mtok"), lambda v: f.money(v), None, f),
        "days_svg": _band_chart(charted, _days_bar, f.msg("compare.days"), lambda v: f.integer(v),
                                _deadline(doc, f), f),
        "chart_note": chart_note(f.msg, f.integer, len(bids)),
        "uncertainty_note": (f.msg("compare.uncertainty_note", samples=f.integer(unc.samples),
                                   seed=f.text(unc.seed)) if unc is not None else ""),
        "verdict": verdict,
        "tornado_title": f.msg("compare.tornado", bid=f.text(winner_id)),
        "tornado_svg": _tornado(shown, str(winner_id), f),
        "sensitivity": _sensitivity_rows(shown, f),
        "sensitivity_note": (f.msg("compare.sensitivity_more", shown=f.integer(TORNADO_FACTORS),
                                   total=f.integer(len(groups))) if len(groups) > len(shown) else ""),
        "ratios": ratio_rows(tabled, f), "ratio_labels": [f.msg(f"ratio.{key}") for key in RATIO_KEYS],
    }


def _deadline(doc: QuoteDocument, f: Formatter) -> tuple[str, float] | None:
    days = doc.workload.deadline_days
    return None if days is None else (f"{f.msg('series.deadline')} {f.days(days)}", float(days))


BandBar = tuple["SupportsFloat | None", "Band | MoneyBand | None", str]    # a bar's value, its P10–P90 band and its text


def _cost_bar(bid: BidResult, f: Formatter) -> BandBar:
    band = bid.uncertainty.cost_per_million_tokens if bid.uncertainty is not None else None
    return bid.cost_per_million_tokens, band, f.rate(bid.cost_per_million_tokens, bid.currency)


def _days_bar(bid: BidResult, f: Formatter) -> BandBar:
    band = bid.uncertainty.time_to_train_days if bid.uncertainty is not None else None
    return bid.time_to_train_days, band, f.days(bid.time_to_train_days)


def _band_chart(bids: list[BidResult], bar: Callable[[BidResult, Formatter], BandBar], title: str, tick: charts.Fmt,
                reference: tuple[str, float] | None, f: Formatter) -> str:
    rows: list[charts.BarRow] = []
    for i, bid in enumerate(bids):
        value, band, text = bar(bid, f)
        rows.append(charts.BarRow(label=str(bid.id), value=_float(value), value_text=text,
                                  lo=_float(band.p10 if band is not None else None),
                                  hi=_float(band.p90 if band is not None else None), highlight=i == 0))
    return charts.hbars(rows, tick, title=title, reference=reference)


def _float(value: SupportsFloat | None) -> float | None:
    return None if value is None else float(value)


TORNADO_FACTORS = 12    # the factors the page charts and tables; the workbook lists every row


@dataclass(frozen=True)
class Move:
    """One sensitivity row and the bid whose figures it states."""

    row: SensitivityRow
    bid: str

    @property
    def own(self) -> bool:
        """The row moved the bid's own input (not a shared assumption, not the cost basis)."""
        return self.row.scope == "bid" and self.row.factor != "cost_basis"


def _moved(move: Move) -> float:
    """How far a row moved its input: the change, or the absolute step (days, share)."""
    step = move.row.step
    return float(step) if step is not None else float(move.row.change or 0)


def _swing(moves: list[Move]) -> tuple[bool, float]:
    """How far a factor moves the decision: whether any of its rows changes the recommended bid,
    then the largest move of the gap between the recommended bid and the runner-up."""
    gaps = [abs(float(m.row.gap_change)) for m in moves if m.row.gap_change is not None]
    return any(m.row.winner_changes for m in moves), max(gaps, default=0.0)


def _is_basis(group: list[Move]) -> bool:
    return group[0].row.factor == "cost_basis"


def decision_groups(bids: list[BidResult], winner_id: str) -> list[list[Move]]:
    """The rows that can move the decision, by factor: the recommended bid's own inputs and the
    shared assumptions (its rows), and every other bid's own inputs; the factors that change the
    recommendation first, then by how far they move the gap to the runner-up, each factor's rows
    by the size of the move. Each row carries ``bid``, the bid whose figures it states. The cost
    basis (a setting, not a move) is last."""
    groups: dict[tuple[str, str, str], list[Move]] = {}
    for bid in bids:
        for row in bid.sensitivity:
            move = Move(row, bid.id)
            if bid.id != winner_id and not move.own:
                continue
            key = (str(bid.id) if move.own else "", str(row.factor), str(row.subject or ""))
            groups.setdefault(key, []).append(move)

    def order(group: list[Move]) -> tuple[bool, bool, float]:
        flips, gap = _swing(group)
        return _is_basis(group), not flips, -gap
    return [sorted(g, key=_moved) for g in sorted(groups.values(), key=order)]


def _shown(bids: list[BidResult], winner_id: str) -> list[list[Move]]:
    """The factors the page shows: those that move the decision most, and the cost basis."""
    groups = decision_groups(bids, winner_id)
    moved = [g for g in groups if not _is_basis(g)][:TORNADO_FACTORS]
    return moved + [g for g in groups if _is_basis(g)]


def _factor_on(move: Move, f: Formatter) -> str:
    """The factor, naming the bid when the row moved that bid's own input."""
    text = generated.factor_text(move.row, f)
    if move.own:
        return f.msg("move.on_bid", move=text, bid=f.text(move.bid))
    return text


def _tornado(groups: list[list[Move]], winner_id: str, f: Formatter) -> str:
    """For each factor, the gap between the recommended bid and the runner-up at its two
    extreme moves, drawn from the base gap; the factors that move the decision most on top."""
    rows = []
    base_gap = None
    for moves in groups:
        low, high = moves[0], moves[-1]
        if low.row.factor == "cost_basis" or low.row.gap is None or high.row.gap is None:
            continue
        if base_gap is None:
            base_gap = float(low.row.gap) - float(low.row.gap_change or 0)
        rows.append((_factor_on(low, f), _float(low.row.gap), _float(high.row.gap) if high is not low else None,
                     _gap_text(low.row, f), _gap_text(high.row, f)))
    if base_gap is None:
        return ""
    base_label = f"{f.msg('series.base')} {f.rate(base_gap)}"
    return charts.tornado(rows, base_gap, lambda v: f.money(v), title=f.msg("compare.tornado", bid=winner_id),
                          base_label=base_label)


def _gap_text(row: SensitivityRow, f: Formatter) -> str:
    """The move and the gap it leaves, and the bid recommended instead when it changes."""
    text = f"{generated.change_text(row, f)}: {f.rate(row.gap)}"
    if row.winner_changes:
        return f.msg("compare.gap_other", gap=text, bid=f.text(row.recommended))
    return text


def _sensitivity_rows(groups: list[list[Move]], f: Formatter) -> list[dict[str, str]]:
    return [{"factor": generated.factor_text(m.row, f), "change": generated.change_text(m.row, f),
             "bid": f.text(m.bid),
             "recommended": (f.msg("compare.recommended_changed", bid=f.text(m.row.recommended))
                             if m.row.winner_changes else f.text(m.row.recommended)),
             "gap": f.rate(m.row.gap),
             "usd_mtok": f.rate(m.row.cost_per_million_tokens), "days": f.days(m.row.time_to_train_days),
             "rank": f.text(m.row.rank),
             "winner_changes": f.msg("word.yes") if m.row.winner_changes else f.msg("word.no")}
            for moves in groups for m in moves]


def _methodology(method: Methodology, f: Formatter) -> dict[str, Any]:
    """The model, its paragraphs, and the fitted parameters as named quantities with their meaning
    (one column per accelerator of the quote), never the calibration file's own keys."""
    knob_rows = method.knobs
    accelerators = [_knob_label(str(row.label), f) for row in knob_rows]
    names = sorted({name for row in knob_rows for name in row.values}, key=_knob_order)
    quantities = [{"name": f.msg.get(f"knob.{name}", _words(name)), "meaning": f.msg.get(f"knob.{name}.meaning", ""),
                   "values": [_knob_value(name, row.values.get(name), f) for row in knob_rows]}
                  for name in names]
    return {"model": f.msg("method.model", model=f.text(method.model)),
            "paragraphs": [f.msg(k) for k in METHOD_KEYS],
            "fit": _fit_rows(method, f), "accelerators": accelerators, "quantities": quantities}


def _fit_rows(method: Methodology, f: Formatter) -> list[tuple[str, str]]:
    fitted_on = [_fit_source(s, f) for s in method.fitted_on]
    errors = "; ".join(f"{_fit_source(k, f)} {f.percent(v)}" for k, v in sorted(method.fit_mape.items()))
    rows = [(f.msg("method.fit_sources"), f.msg("method.fit_sources_value", count=f.integer(len(fitted_on)),
                                                names="; ".join(fitted_on))) if fitted_on else None,
            (f.msg("method.fitted_at"), f.date(method.fitted_at)) if method.fitted_at else None,
            (f.msg("method.fit_error"), errors) if errors else None]
    return [row for row in rows if row]


CORPUS_PREFIX = "corpus:"   # a data set of published runs, named by its release (dgxc-24.11, mlperf-v4.1)


def _fit_source(name: str, f: Formatter) -> str:
    """A calibration data set by its title: a corpus by its release name, a file by its message."""
    if name.startswith(CORPUS_PREFIX):
        return f.text(name[len(CORPUS_PREFIX):])
    return f.msg.get(f"fit_source.{name}", _words(name.rsplit("/", 1)[-1].rsplit(".", 1)[0]))


def _words(key: str) -> str:
    """The last resort for a name no message covers: its words, never the raw key."""
    return key.replace("_", " ").strip().capitalize()


KNOB_ORDER = ("gemm_top", "gemm_curve", "ceiling_scale", "attention_ratio", "fp8_gemm_scale", "membound_factor",
              "launch_overhead_s", "scale_up_bw_eff", "scale_out_bw_eff", "overlap_efficiency", "step_time_cv",
              "grouped_gemm_scale", "moe_overhead_s", "a2a_overlap_efficiency")


def _knob_order(name: str) -> tuple[int, str]:
    return (KNOB_ORDER.index(name) if name in KNOB_ORDER else len(KNOB_ORDER), name)


def _knob_value(name: str, value: object, f: Formatter) -> str:
    if value is None:
        return f.na
    if name.endswith("_s") and isinstance(value, (int, float, Decimal)):
        return f.msg("unit.seconds", value=f.measure(float(f"{float(value):.3g}")))   # 3 significant digits
    if isinstance(value, (int, float, Decimal)):
        return f.measure(value)
    return f.text(value).replace(", ", "; ")   # the efficiency curve: one point per wrap


DEFAULT_KNOBS = " (default knobs)"   # the document's label of an accelerator with no fitted knobs


def _knob_label(label: str, f: Formatter) -> str:
    if label.endswith(DEFAULT_KNOBS):
        return f.msg("method.default_knobs", accelerator=label[:-len(DEFAULT_KNOBS)])
    return label


def _plain(value: object, f: Formatter) -> str:
    if isinstance(value, (list, tuple)):
        return "; ".join(_plain(v, f) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_plain(v, f)}" for k, v in sorted(value.items()))
    if isinstance(value, bool):
        return f.msg("word.yes") if value else f.msg("word.no")
    if isinstance(value, (int, float)) or type(value).__name__ == "Decimal":
        return f.plain(value)
    return f.text(value)


def _assumptions(doc: QuoteDocument, f: Formatter) -> dict[str, Any]:
    rows = [{"label": generated.keyed(f, f"assumption.{a.key}", a.label or a.key),
             "value": _assumption_value(a, f),
             "unit": generated.keyed(f, f"assumption_unit.{a.unit}", a.unit) if a.unit else "",
             "origin": generated.keyed(f, f"origin.{a.origin}", a.origin),
             "source": generated.keyed(f, "assumptions.given" if a.origin != "default"
                                       else f"assumption_source.{a.key}", a.source)}
            for a in doc.assumptions]
    fx = doc.fx
    if fx is None:
        return {"rows": rows, "fx": ""}
    rates = ", ".join(f"{k} {_plain(v, f)}" for k, v in sorted(fx.rates.items()))
    fx_text = f.msg("assumptions.fx", base=f.text(fx.base), as_of=f.date(fx.as_of),
                    rates=rates or f.na, source=f.text(fx.source))
    return {"rows": rows, "fx": fx_text}


IDENTIFIERS = ("seed",)   # numbers that name something: printed as written, never grouped or rounded


def _assumption_value(row: AssumptionRow, f: Formatter) -> str:
    value = row.value
    if row.key in IDENTIFIERS:
        return f.text(value)
    if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
        return f.measure(value)
    return _plain(value, f)


def _sources(sources: list[SourceRow], f: Formatter) -> list[dict[str, str]]:
    """Each source as a citation: what it is, where it was read, when, and whether its figures were
    checked there or are an estimate."""
    return [{"kind": f.msg.get(f"source_kind.{s.kind}", f.text(s.kind)), "label": f.text(s.label),
             "source": "; ".join(map(str, s.source)) or f.na, "as_of": f.text(s.as_of),
             "checked": f.msg("sources.checked") if s.verified else f.msg("sources.estimate")}
            for s in sources]
