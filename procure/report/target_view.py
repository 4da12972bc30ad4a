"""The view model of time to target (issue 18): the summary's time-to-target table with the
statistical-efficiency penalty on its own line, each bid's ratios, the batch it runs at (and every
batch the search tried), a commitment stated at the vendor's conditions next to its conversion,
and the methodology's definitions.

Like the rest of the view model it computes nothing: it looks values up in the result document
and formats them through ``formatting``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from procure.report import generated
from procure.report.formatting import Formatter, signed_percent

if TYPE_CHECKING:
    from procure.document import QuoteDocument
    from procure.document.bid import BatchSection, BidResult, Conditions, Plan, Ratios

RATIOS: tuple[tuple[str, Callable[[Ratios], float | None]], ...] = (
    ("bubble_ratio", lambda r: r.bubble_ratio), ("comm_to_compute", lambda r: r.comm_to_compute),
    ("overlap_efficiency", lambda r: r.overlap_efficiency), ("exposed_comm_share", lambda r: r.exposed_comm_share),
    ("effective_tokens_per_s_per_gpu", lambda r: r.effective_tokens_per_s_per_gpu))
RATIO_KEYS = tuple(key for key, _ in RATIOS)      # the message keys (ratio.<key>) and the schema's fields
PLAN_SHAPE: tuple[tuple[str, Callable[[Plan], int]], ...] = (
    ("TP", lambda p: p.tp), ("PP", lambda p: p.pp), ("DP", lambda p: p.dp), ("CP", lambda p: p.cp),
    ("EP", lambda p: p.ep), ("VPP", lambda p: p.vpp), ("MB", lambda p: p.micro_batch))


def _penalty(value: object, f: Formatter) -> str:
    return signed_percent(value, f.loc, 1)


def _ratio(key: str, value: object, f: Formatter) -> str:
    if key == "effective_tokens_per_s_per_gpu":
        return f.na if value is None else f.msg("unit.tokens_per_s", value=f.sig(value, 4))
    if key == "comm_to_compute":
        return f.na if value is None else f.number(value, 2)
    return f.percent(value)


def _has_ratios(ratios: Ratios | None) -> bool:
    return ratios is not None and any(get(ratios) is not None for _, get in RATIOS)


def _batch_tokens(bid: BidResult) -> int:
    """The global batch the bid runs at, in tokens (a document without a batch section: tokens per step)."""
    return (bid.batch.global_batch_tokens if bid.batch is not None else 0) or bid.tokens_per_step


def _origin(batch: BatchSection | None, f: Formatter) -> str:
    origin = batch.origin if batch is not None else None
    return f.msg.get(f"target.origin.{origin}", f.text(origin))


# --- the summary -----------------------------------------------------------------------------

def _critical_line(doc: QuoteDocument, f: Formatter) -> str:
    w = doc.workload
    critical = w.critical_batch
    if critical is None:
        return ""
    return f.msg("target.critical", critical=f.compact(critical.critical_batch_tokens),
                 final=f.compact(critical.final_critical_batch_tokens),
                 reference=f.compact(critical.reference_batch_tokens),
                 train=f.compact(w.train_tokens), minimum=f.compact(critical.min_tokens))


def _range_line(doc: QuoteDocument, f: Formatter) -> str:
    r = doc.workload.global_batch_range
    if r is None:
        return f.msg("target.fixed_batch")
    return f.msg("target.range", low=f.compact(r.min_tokens), high=f.compact(r.max_tokens),
                 low_seqs=f.integer(r.min_seqs), high_seqs=f.integer(r.max_seqs))


def time_to_target_summary(bids: list[BidResult], doc: QuoteDocument, f: Formatter) -> dict[str, Any]:
    """Per bid three lines: the target tokens at the bid's throughput, the statistical-efficiency
    penalty (tokens, days, cost), and the time and cost to the target."""
    rows = []
    for bid in bids:
        t = bid.time_to_target
        if t is None:                    # no time (no plan) or a document from before time to target
            continue
        ccy = bid.currency or f.currency
        rows.append({
            "id": f.text(bid.id),
            "batch": f.msg("target.batch_cell", tokens=f.compact(_batch_tokens(bid)), origin=_origin(bid.batch, f)),
            "target_tokens": f.compact(t.target_tokens), "days_target": f.days(t.days_at_target_tokens),
            "cost_target": f.money(t.cost_at_target_tokens, ccy),
            "penalty": _penalty(t.token_penalty, f),
            "penalty_tokens": f.compact(t.penalty_tokens), "penalty_days": f.days(t.penalty_days),
            "penalty_cost": f.money(t.penalty_cost, ccy),
            "equivalent": f.compact(t.equivalent_tokens), "days": f.days(t.days),
            "cost": f.money(t.cost, ccy),
        })
    basis = next((b.time_to_target.basis for b in bids if b.time_to_target is not None), None)
    return {"rows": rows, "critical": _critical_line(doc, f), "range": _range_line(doc, f),
            "basis": f.msg("target.basis", basis=f.msg.get(f"basis.{basis}", f.text(basis))) if basis else ""}


def ratio_rows(bids: list[BidResult], f: Formatter) -> list[dict[str, Any]]:
    """The comparison's table: every bid's batch, token penalty and ratios side by side."""
    rows = []
    for bid in bids:
        ratios, batch = bid.ratios, bid.batch
        if ratios is None or not _has_ratios(ratios):
            continue
        rows.append({"id": f.text(bid.id),
                     "batch": f.compact(_batch_tokens(bid)),
                     "penalty": _penalty(batch.token_penalty, f) if batch is not None else f.na,
                     "ratios": [_ratio(key, get(ratios), f) for key, get in RATIOS]})
    return rows


# --- one bid ---------------------------------------------------------------------------------

def bid_ratios(bid: BidResult, f: Formatter) -> list[dict[str, str]]:
    ratios = bid.ratios
    if ratios is None or not _has_ratios(ratios):
        return []
    return [{"label": f.msg(f"ratio.{key}"), "value": _ratio(key, get(ratios), f),
             "formula": f.msg(f"ratio.{key}.formula")} for key, get in RATIOS]


def _shape(plan: Plan | None, f: Formatter) -> str:
    """A plan in one short line: TP8 PP5 DP625 CP4 EP1 VPP8 MB1."""
    if plan is None:
        return f.na
    return " ".join(f"{label}{get(plan)}" for label, get in PLAN_SHAPE)


def bid_batch(bid: BidResult, f: Formatter) -> dict[str, Any]:
    batch = bid.batch
    if batch is None:
        return {"line": "", "candidates": []}
    line = f.msg("target.batch_line", batch=f.integer(batch.global_batch_tokens),
                 seqs=f.integer(batch.global_batch_seqs), origin=_origin(batch, f),
                 penalty=_penalty(batch.token_penalty, f),
                 reference=f.integer(batch.reference_batch_tokens),
                 critical=f.compact(batch.critical_batch_tokens))
    candidates = []
    for c in batch.candidates:
        r = c.ratios
        candidates.append({
            "batch": f.integer(c.global_batch_seqs), "tokens": f.compact(c.global_batch_tokens),
            "chosen": c.chosen, "feasible": c.feasible,
            "plan": _shape(c.plan, f) if c.feasible else f.text(c.reason),
            "step": f.seconds(c.step_time_s), "penalty": _penalty(c.token_penalty, f),
            "days": f.days(c.time_to_target_days),
            "bubble": f.percent(r.bubble_ratio if r is not None else None),
            "overlap": f.percent(r.overlap_efficiency if r is not None else None),
            "effective": _ratio("effective_tokens_per_s_per_gpu",
                                r.effective_tokens_per_s_per_gpu if r is not None else None, f),
        })
    return {"line": line, "note": f.text(batch.note) if batch.note else "", "candidates": candidates}


def _conditions(c: Conditions, f: Formatter) -> str:
    return f.msg("target.conditions", tokens=f.integer(c.global_batch_tokens),
                 seqs=f.integer(c.global_batch_seqs), seq_len=f.integer(c.seq_len),
                 precision=f.text(c.precision))


def bid_commitment(bid: BidResult, f: Formatter) -> dict[str, Any]:
    """The commitment as stated, next to its conversion to the bid's conditions."""
    stated = bid.committed.stated
    if stated is None:
        return {}
    rows = [{"basis": f.msg("target.committed_stated"), "conditions": _conditions(stated.conditions, f),
             "mean": f.seconds(stated.step_time_s), "p99": f.seconds(stated.p99_step_time_s)},
            {"basis": f.msg("target.committed_converted"),
             "conditions": _conditions(stated.bid_conditions, f),
             "mean": f.seconds(stated.converted_step_time_s),
             "p99": f.seconds(stated.converted_p99_step_time_s)}]
    if stated.comparable:
        note = f.msg("target.conversion", factor=f.sig(stated.conversion_factor, 3),
                     at_bid=f.seconds(stated.modeled_at_bid_s),
                     at_stated=f.seconds(stated.modeled_at_stated_s))
    else:
        note = f.msg("target.not_comparable", reason=f.text(stated.reason))
    return {"rows": rows, "note": note}


def bid_target(bid: BidResult, f: Formatter) -> dict[str, Any]:
    """Everything the bid page's time-to-target partial prints."""
    return {"ratios": bid_ratios(bid, f), "batch": bid_batch(bid, f), "commitment": bid_commitment(bid, f)}


# --- the methodology -------------------------------------------------------------------------

def methodology_target(doc: QuoteDocument, f: Formatter) -> dict[str, Any]:
    method = doc.methodology
    ratios = [{"label": f.msg.get(f"ratio.{r.key}", f.text(r.label)),
               "formula": generated.keyed(f, f"ratio.{r.key}.formula", r.formula),
               "text": generated.keyed(f, f"ratio.{r.key}.meaning", r.description)}
              for r in method.ratios]
    law = method.statistical_efficiency
    if law is None:
        return {"ratios": ratios, "law": "", "law_name": "", "params": [], "notes": "", "candidates": "",
                "conversion": "", "flag": ""}
    params = [{"name": f.msg.get(f"law_param.{name}", f.text(name)), "value": f.plain(value),
               "source": "; ".join(map(str, law.sources.get(name) or []))}
              for name, value in sorted(law.parameters.items())]
    return {"ratios": ratios, "law": f.text(law.form), "law_name": f.text(law.name),
            "params": params, "notes": f.text(law.notes) if law.notes else "",
            "candidates": f.text(law.candidate_batches), "conversion": f.text(law.commitment_conversion),
            "flag": f.msg("target.flag_rule", threshold=f.percent(law.penalty_flag, 0))}
