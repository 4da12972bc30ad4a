"""What a bid's page adds for an MoE model and for a workload with phases: the expert-parallel
layout and its all-to-all term, idle GPUs, and each further (long-context) phase."""

from __future__ import annotations

from typing import Any

from procure.report.formatting import Formatter


def workload_structure(bid: dict[str, Any], f: Formatter) -> dict[str, Any]:
    """The view model of the partial ``workload_structure.html.j2`` (empty parts are falsy)."""
    return {"expert": _expert(bid, f), "phases": _phases(bid, f), "idle": _idle(bid, f)}


def _expert(bid: dict[str, Any], f: Formatter) -> list[tuple[str, str]]:
    ep = bid.get("expert_parallel")
    if not ep:
        return []
    span = (f.msg("moe.inside", ranks=f.integer(ep.get("ranks_per_domain"))) if ep.get("inside_scale_up")
            else f.msg("moe.across", ranks=f.integer(ep.get("ranks_per_domain")), domains=f.integer(ep.get("domains"))))
    yes_no = f.msg("word.yes") if ep.get("a2a_overlap") else f.msg("word.no")
    return [(f.msg("moe.layout"), f.msg("moe.layout_value", ep=f.integer(ep.get("ep")), etp=f.integer(ep.get("etp")),
                                         edp=f.integer(ep.get("edp")))),
            (f.msg("moe.group"), span),
            (f.msg("moe.dispatcher"), f.text(ep.get("dispatcher"))),
            (f.msg("moe.overlap"), yes_no),
            (f.msg("moe.a2a"), f.msg("moe.a2a_value", total=f.seconds(ep.get("a2a_total_s")),
                                      exposed=f.seconds(ep.get("a2a_exposed_s")))),
            (f.msg("moe.load"), f.msg(f"moe.load.{ep.get('load_imbalance_origin')}",
                                      load=f.number(ep.get("load_imbalance"), 2)))]


def _phases(bid: dict[str, Any], f: Formatter) -> list[dict[str, str]]:
    rows = []
    for phase in bid.get("phases") or []:
        plan = phase.get("plan") or {}
        shape = (f.msg("phase.plan_value", tp=f.integer(plan.get("tp")), pp=f.integer(plan.get("pp")),
                       dp=f.integer(plan.get("dp")), cp=f.integer(plan.get("cp")), ep=f.integer(plan.get("ep")),
                       cp_comm=f.text(plan.get("cp_comm") or "-"))
                 if plan else f.text(phase.get("infeasible_reason")))
        rows.append({"name": f.text(phase.get("name")), "seq_len": f.integer(phase.get("seq_len")),
                     "batch": f.integer(phase.get("global_batch_seqs")), "tokens": f.sig(phase.get("train_tokens"), 3),
                     "plan": shape, "step_time": f.seconds(phase.get("step_time_s")),
                     "days": f.days(phase.get("time_to_train_days"))})
    return rows


def _idle(bid: dict[str, Any], f: Formatter) -> str:
    idle = bid.get("idle_gpus") or 0
    return f.msg("bid.idle_gpus", idle=f.integer(idle), gpus=f.integer(bid.get("gpus"))) if idle else ""
