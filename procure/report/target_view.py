"""The view model of time to target (issue 18): the summary's time-to-target table with the
statistical-efficiency penalty on its own line, each bid's ratios, the batch it runs at (and every
batch the search tried), a commitment stated at the vendor's conditions next to its conversion,
and the methodology's definitions.

Like the rest of the view model it computes nothing: it looks values up in the result document
and formats them through ``formatting``.
"""

from __future__ import annotations

from typing import Any

from procure.report import generated
from procure.report.formatting import Formatter, signed_percent

RATIO_KEYS = ("bubble_ratio", "comm_to_compute", "overlap_efficiency", "exposed_comm_share",
              "effective_tokens_per_s_per_gpu")
PLAN_SHAPE = (("tp", "TP"), ("pp", "PP"), ("dp", "DP"), ("cp", "CP"), ("ep", "EP"), ("vpp", "VPP"),
              ("micro_batch", "MB"))


def _penalty(value: object, f: Formatter) -> str:
    return signed_percent(value, f.loc, 1)


def _ratio(key: str, value: object, f: Formatter) -> str:
    if key == "effective_tokens_per_s_per_gpu":
        return f.na if value is None else f.msg("unit.tokens_per_s", value=f.sig(value, 4))
    if key == "comm_to_compute":
        return f.na if value is None else f.number(value, 2)
    return f.percent(value)


# --- the summary -----------------------------------------------------------------------------

def _critical_line(doc: dict[str, Any], f: Formatter) -> str:
    w = doc.get("workload") or {}
    critical = w.get("critical_batch")
    if not critical:
        return ""
    return f.msg("target.critical", critical=f.compact(critical.get("critical_batch_tokens")),
                 final=f.compact(critical.get("final_critical_batch_tokens")),
                 reference=f.compact(critical.get("reference_batch_tokens")),
                 train=f.compact(w.get("train_tokens")), minimum=f.compact(critical.get("min_tokens")))


def _range_line(doc: dict[str, Any], f: Formatter) -> str:
    r = (doc.get("workload") or {}).get("global_batch_range")
    if not r:
        return f.msg("target.fixed_batch")
    return f.msg("target.range", low=f.compact(r.get("min_tokens")), high=f.compact(r.get("max_tokens")),
                 low_seqs=f.integer(r.get("min_seqs")), high_seqs=f.integer(r.get("max_seqs")))


def time_to_target_summary(bids: list[dict[str, Any]], doc: dict[str, Any], f: Formatter) -> dict[str, Any]:
    """Per bid three lines: the target tokens at the bid's throughput, the statistical-efficiency
    penalty (tokens, days, cost), and the time and cost to the target."""
    rows = []
    for bid in bids:
        t, batch = bid.get("time_to_target") or {}, bid.get("batch") or {}
        if not t:                    # no time (no plan) or a document from before time to target
            continue
        ccy = bid.get("currency") or f.currency
        rows.append({
            "id": f.text(bid["id"]),
            "batch": f.msg("target.batch_cell", tokens=f.compact(batch.get("global_batch_tokens") or bid.get("tokens_per_step")),
                           origin=f.msg.get(f"target.origin.{batch.get('origin')}", f.text(batch.get("origin")))),
            "target_tokens": f.compact(t.get("target_tokens")), "days_target": f.days(t.get("days_at_target_tokens")),
            "cost_target": f.money(t.get("cost_at_target_tokens"), ccy),
            "penalty": _penalty(t.get("token_penalty"), f),
            "penalty_tokens": f.compact(t.get("penalty_tokens")), "penalty_days": f.days(t.get("penalty_days")),
            "penalty_cost": f.money(t.get("penalty_cost"), ccy),
            "equivalent": f.compact(t.get("equivalent_tokens")), "days": f.days(t.get("days")),
            "cost": f.money(t.get("cost"), ccy),
        })
    basis = next((b["time_to_target"].get("basis") for b in bids if b.get("time_to_target")), None)
    return {"rows": rows, "critical": _critical_line(doc, f), "range": _range_line(doc, f),
            "basis": f.msg("target.basis", basis=f.msg.get(f"basis.{basis}", f.text(basis))) if basis else ""}


def ratio_rows(bids: list[dict[str, Any]], f: Formatter) -> list[dict[str, Any]]:
    """The comparison's table: every bid's batch, token penalty and ratios side by side."""
    rows = []
    for bid in bids:
        ratios, batch = bid.get("ratios") or {}, bid.get("batch") or {}
        if not any(value is not None for value in ratios.values()):
            continue
        rows.append({"id": f.text(bid["id"]),
                     "batch": f.compact(batch.get("global_batch_tokens") or bid.get("tokens_per_step")),
                     "penalty": _penalty(batch.get("token_penalty"), f) if batch else f.na,
                     "ratios": [_ratio(key, ratios.get(key), f) for key in RATIO_KEYS]})
    return rows


# --- one bid ---------------------------------------------------------------------------------

def bid_ratios(bid: dict[str, Any], f: Formatter) -> list[dict[str, str]]:
    ratios = bid.get("ratios") or {}
    if not any(value is not None for value in ratios.values()):
        return []
    return [{"label": f.msg(f"ratio.{key}"), "value": _ratio(key, ratios.get(key), f),
             "formula": f.msg(f"ratio.{key}.formula")} for key in RATIO_KEYS]


def _shape(plan: dict[str, Any] | None, f: Formatter) -> str:
    """A plan in one short line: TP8 PP5 DP625 CP4 EP1 VPP8 MB1."""
    if not plan:
        return f.na
    return " ".join(f"{label}{plan.get(key)}" for key, label in PLAN_SHAPE if plan.get(key) is not None)


def bid_batch(bid: dict[str, Any], f: Formatter) -> dict[str, Any]:
    batch = bid.get("batch") or {}
    if not batch:
        return {"line": "", "candidates": []}
    line = f.msg("target.batch_line", batch=f.integer(batch.get("global_batch_tokens")),
                 seqs=f.integer(batch.get("global_batch_seqs")),
                 origin=f.msg.get(f"target.origin.{batch.get('origin')}", f.text(batch.get("origin"))),
                 penalty=_penalty(batch.get("token_penalty"), f),
                 reference=f.integer(batch.get("reference_batch_tokens")),
                 critical=f.compact(batch.get("critical_batch_tokens")))
    candidates = []
    for c in batch.get("candidates") or []:
        r = c.get("ratios") or {}
        candidates.append({
            "batch": f.integer(c.get("global_batch_seqs")), "tokens": f.compact(c.get("global_batch_tokens")),
            "chosen": bool(c.get("chosen")), "feasible": bool(c.get("feasible")),
            "plan": _shape(c.get("plan"), f) if c.get("feasible") else f.text(c.get("reason")),
            "step": f.seconds(c.get("step_time_s")), "penalty": _penalty(c.get("token_penalty"), f),
            "days": f.days(c.get("time_to_target_days")), "bubble": f.percent(r.get("bubble_ratio")),
            "overlap": f.percent(r.get("overlap_efficiency")),
            "effective": _ratio("effective_tokens_per_s_per_gpu", r.get("effective_tokens_per_s_per_gpu"), f),
        })
    return {"line": line, "note": f.text(batch.get("note")) if batch.get("note") else "", "candidates": candidates}


def _conditions(c: dict[str, Any], f: Formatter) -> str:
    return f.msg("target.conditions", tokens=f.integer(c.get("global_batch_tokens")),
                 seqs=f.integer(c.get("global_batch_seqs")), seq_len=f.integer(c.get("seq_len")),
                 precision=f.text(c.get("precision")))


def bid_commitment(bid: dict[str, Any], f: Formatter) -> dict[str, Any]:
    """The commitment as stated, next to its conversion to the bid's conditions."""
    stated = (bid.get("committed") or {}).get("stated")
    if not stated:
        return {}
    rows = [{"basis": f.msg("target.committed_stated"), "conditions": _conditions(stated.get("conditions") or {}, f),
             "mean": f.seconds(stated.get("step_time_s")), "p99": f.seconds(stated.get("p99_step_time_s"))},
            {"basis": f.msg("target.committed_converted"),
             "conditions": _conditions(stated.get("bid_conditions") or {}, f),
             "mean": f.seconds(stated.get("converted_step_time_s")),
             "p99": f.seconds(stated.get("converted_p99_step_time_s"))}]
    if stated.get("comparable"):
        note = f.msg("target.conversion", factor=f.sig(stated.get("conversion_factor"), 3),
                     at_bid=f.seconds(stated.get("modeled_at_bid_s")),
                     at_stated=f.seconds(stated.get("modeled_at_stated_s")))
    else:
        note = f.msg("target.not_comparable", reason=f.text(stated.get("reason")))
    return {"rows": rows, "note": note}


def bid_target(bid: dict[str, Any], f: Formatter) -> dict[str, Any]:
    """Everything the bid page's time-to-target partial prints."""
    return {"ratios": bid_ratios(bid, f), "batch": bid_batch(bid, f), "commitment": bid_commitment(bid, f)}


# --- the methodology -------------------------------------------------------------------------

def methodology_target(doc: dict[str, Any], f: Formatter) -> dict[str, Any]:
    method = doc.get("methodology") or {}
    ratios = [{"label": f.msg.get(f"ratio.{r.get('key')}", f.text(r.get("label"))),
               "formula": generated.keyed(f, f"ratio.{r.get('key')}.formula", r.get("formula")),
               "text": generated.keyed(f, f"ratio.{r.get('key')}.meaning", r.get("description"))}
              for r in method.get("ratios") or []]
    law = method.get("statistical_efficiency") or {}
    params = [{"name": f.msg.get(f"law_param.{name}", f.text(name)), "value": f.plain(value),
               "source": "; ".join(map(str, (law.get("sources") or {}).get(name) or []))}
              for name, value in sorted((law.get("parameters") or {}).items())]
    return {"ratios": ratios, "law": f.text(law.get("form")) if law else "", "law_name": f.text(law.get("name")) if law else "",
            "params": params, "notes": f.text(law.get("notes")) if law.get("notes") else "",
            "candidates": f.text(law.get("candidate_batches")) if law else "",
            "conversion": f.text(law.get("commitment_conversion")) if law else "",
            "flag": f.msg("target.flag_rule", threshold=f.percent(law.get("penalty_flag"), 0)) if law else ""}
