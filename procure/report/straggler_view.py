"""The view model of a bid's slow ranks and outlier steps, shown beside its commitment.

What the burn-in found that the step-time percentiles do not say: which ranks held the steps
back and how often, and which steps stood out, next to the step time the vendor committed to.
"""

from __future__ import annotations

from typing import Any

from procure.report.formatting import Formatter

LISTED_OUTLIERS = 20   # on the page; the document keeps up to 50


def bid_stragglers(bid: dict[str, Any], f: Formatter) -> dict[str, Any] | None:
    """None without measured logs; else the commitment, the named ranks and the outlier steps."""
    meas = bid.get("measured")
    if not meas:
        return None
    m = f.msg
    named = meas.get("stragglers") or []
    several = len({r.get("source") for r in named}) > 1      # then each rank says which log it is from
    ranks = [{"rank": str(r.get("rank")) + (f" ({f.text(r.get('source'))})" if several else ""),
              "slowest": m("stragglers.of_steps", count=f.integer(r.get("times_slowest")), steps=f.integer(r.get("steps"))),
              "slow": m("stragglers.of_steps", count=f.integer(r.get("slow_steps")), steps=f.integer(r.get("steps"))),
              "slowdown": f.percent(r.get("slowdown"))} for r in named]
    return {"commitment": _commitment(bid, meas, f), "ranks": ranks, "ranks_note": _ranks_note(meas, ranks, f),
            "outliers": _outliers(meas.get("outlier_steps") or [], f), "rule": m("stragglers.rule")}


def _commitment(bid: dict[str, Any], meas: dict[str, Any], f: Formatter) -> str:
    committed, stats = bid.get("committed") or {}, meas.get("step_time_s") or {}
    if committed.get("step_time_s") is None:
        return f.msg("stragglers.measured_only", mean=f.seconds(stats.get("mean")), p99=f.seconds(stats.get("p99")))
    return f.msg("stragglers.commitment", committed_mean=f.seconds(committed.get("step_time_s")),
                 committed_p99=f.seconds(committed.get("p99_step_time_s")),
                 mean=f.seconds(stats.get("mean")), p99=f.seconds(stats.get("p99")))


def _ranks_note(meas: dict[str, Any], ranks: list[dict[str, str]], f: Formatter) -> str:
    compared = meas.get("ranks_compared")
    if compared is None:
        return f.msg("stragglers.no_ranks")
    if not ranks:
        return f.msg("stragglers.none", ranks=f.integer(compared))
    return f.msg("stragglers.named", count=f.integer(len(ranks)), ranks=f.integer(compared))


def _outliers(steps: list[dict[str, Any]], f: Formatter) -> str:
    if not steps:
        return f.msg("stragglers.no_outliers")
    listed = [f.msg("stragglers.outlier", step=f.integer(o.get("step")), time=f.seconds(o.get("step_time_s")))
              if o.get("step") is not None else f.seconds(o.get("step_time_s")) for o in steps[:LISTED_OUTLIERS]]
    text = f.msg("stragglers.outliers", count=f.integer(len(steps)), steps=f.msg("stragglers.separator").join(listed))
    more = len(steps) - LISTED_OUTLIERS
    return text + (" " + f.msg("stragglers.more", count=f.integer(more)) if more > 0 else "")
