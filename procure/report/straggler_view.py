"""The view model of a bid's slow ranks and outlier steps, shown beside its commitment.

What the burn-in found that the step-time percentiles do not say: which ranks held the steps
back and how often, and which steps stood out, next to the step time the vendor committed to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from procure.report.formatting import Formatter

if TYPE_CHECKING:
    from procure.document.bid import BidResult, Measured, OutlierStep

LISTED_OUTLIERS = 20   # on the page; the document keeps up to 50


def bid_stragglers(bid: BidResult, f: Formatter) -> dict[str, Any] | None:
    """None without measured logs; else the commitment, the named ranks and the outlier steps."""
    meas = bid.measured
    if meas is None:
        return None
    m = f.msg
    named = meas.stragglers
    several = len({r.source for r in named}) > 1      # then each rank says which log it is from
    ranks = [{"rank": str(r.rank) + (f" ({f.text(r.source)})" if several else ""),
              "slowest": m("stragglers.of_steps", count=f.integer(r.times_slowest), steps=f.integer(r.steps)),
              "slow": m("stragglers.of_steps", count=f.integer(r.slow_steps), steps=f.integer(r.steps)),
              "slowdown": f.percent(r.slowdown)} for r in named]
    return {"commitment": _commitment(bid, meas, f), "ranks": ranks, "ranks_note": _ranks_note(meas, len(ranks), f),
            "outliers": _outliers(meas.outlier_steps, f), "rule": m("stragglers.rule")}


def _commitment(bid: BidResult, meas: Measured, f: Formatter) -> str:
    committed, stats = bid.committed, meas.step_time_s
    mean, p99 = (stats.mean, stats.p99) if stats is not None else (None, None)
    if committed.step_time_s is None:
        return f.msg("stragglers.measured_only", mean=f.seconds(mean), p99=f.seconds(p99))
    return f.msg("stragglers.commitment", committed_mean=f.seconds(committed.step_time_s),
                 committed_p99=f.seconds(committed.p99_step_time_s), mean=f.seconds(mean), p99=f.seconds(p99))


def _ranks_note(meas: Measured, named: int, f: Formatter) -> str:
    compared = meas.ranks_compared
    if compared is None:
        return f.msg("stragglers.no_ranks")
    if not named:
        return f.msg("stragglers.none", ranks=f.integer(compared))
    return f.msg("stragglers.named", count=f.integer(named), ranks=f.integer(compared))


def _outliers(steps: list[OutlierStep], f: Formatter) -> str:
    if not steps:
        return f.msg("stragglers.no_outliers")
    listed = [f.msg("stragglers.outlier", step=f.integer(o.step), time=f.seconds(o.step_time_s))
              if o.step is not None else f.seconds(o.step_time_s) for o in steps[:LISTED_OUTLIERS]]
    text = f.msg("stragglers.outliers", count=f.integer(len(steps)), steps=f.msg("stragglers.separator").join(listed))
    more = len(steps) - LISTED_OUTLIERS
    return text + (" " + f.msg("stragglers.more", count=f.integer(more)) if more > 0 else "")
