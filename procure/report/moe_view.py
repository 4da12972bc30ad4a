"""What a bid's page adds for an MoE model and for a workload with phases: the expert-parallel
layout and its all-to-all term, idle GPUs, and each further (long-context) phase."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from procure.report.formatting import Formatter

if TYPE_CHECKING:
    from procure.document.bid import BidResult


def workload_structure(bid: BidResult, f: Formatter) -> dict[str, Any]:
    """The view model of the partial ``workload_structure.html.j2`` (empty parts are falsy)."""
    return {"expert": _expert(bid, f), "phases": _phases(bid, f), "idle": _idle(bid, f)}


def _expert(bid: BidResult, f: Formatter) -> list[tuple[str, str]]:
    ep = bid.expert_parallel
    if ep is None:
        return []
    span = (f.msg("moe.inside", ranks=f.integer(ep.ranks_per_domain)) if ep.inside_scale_up
            else f.msg("moe.across", ranks=f.integer(ep.ranks_per_domain), domains=f.integer(ep.domains)))
    yes_no = f.msg("word.yes") if ep.a2a_overlap else f.msg("word.no")
    return [(f.msg("moe.layout"), f.msg("moe.layout_value", ep=f.integer(ep.ep), etp=f.integer(ep.etp),
                                         edp=f.integer(ep.edp))),
            (f.msg("moe.group"), span),
            (f.msg("moe.dispatcher"), f.text(ep.dispatcher)),
            (f.msg("moe.overlap"), yes_no),
            (f.msg("moe.a2a"), f.msg("moe.a2a_value", total=f.seconds(ep.a2a_total_s),
                                      exposed=f.seconds(ep.a2a_exposed_s))),
            (f.msg("moe.load"), f.msg(f"moe.load.{ep.load_imbalance_origin}", load=f.number(ep.load_imbalance, 2)))]


def _phases(bid: BidResult, f: Formatter) -> list[dict[str, str]]:
    rows = []
    for phase in bid.phases:
        plan = phase.plan
        shape = (f.msg("phase.plan_value", tp=f.integer(plan.tp), pp=f.integer(plan.pp),
                       dp=f.integer(plan.dp), cp=f.integer(plan.cp), ep=f.integer(plan.ep),
                       cp_comm=f.text(plan.cp_comm or "-"))
                 if plan is not None else f.text(phase.infeasible_reason))
        rows.append({"name": f.text(phase.name), "seq_len": f.integer(phase.seq_len),
                     "batch": f.integer(phase.global_batch_seqs), "tokens": f.sig(phase.train_tokens, 3),
                     "plan": shape, "step_time": f.seconds(phase.step_time_s),
                     "days": f.days(phase.time_to_train_days)})
    return rows


def _idle(bid: BidResult, f: Formatter) -> str:
    idle = bid.idle_gpus
    return f.msg("bid.idle_gpus", idle=f.integer(idle), gpus=f.integer(bid.gpus)) if idle else ""
