"""Expert parallelism: the MoE dispatch and combine all-to-alls of one layer, for arrays of plans.

Layout (Megatron-Core MoE parallel folding): the expert grid etp x ep x edp x pp refolds the same
ranks as tp x cp x dp x pp, expert-TP innermost, so an EP group is ``ep`` ranks ``etp`` apart:
it fills a scale-up domain (8-GPU node, 72-GPU NVL72 rack) before it crosses the scale-out
network. Each rank routes its own sequence-parallel share of the tokens (b x s / cp / tp).

Volume: a token goes to ``top_k`` experts (x the hot rank's load, ``problem.moe_load``). The
all-to-all dispatcher sends one copy per routed expert; of an EP group with g ranks per domain
over k domains, (g - 1)/ep of the copies stay inside the domain and (ep - g)/ep cross it, each
through the sending GPU's own NIC share (rail-optimised). Deduplicating dispatchers (DeepEP,
HybridEP) send a token once per destination domain over the scale-out network and fan it out
over NVLink there: (k - 1)(1 - (1 - 1/k)^top_k) remote copies per token, at most the routing's
group limit (DeepSeek-V3's node-limited routing: 4 nodes); inside one domain, once per distinct
destination rank. A block router (each token to one aligned block of top_k consecutive experts,
NeMo AutoModel's benchmark gate) reaches only the ranks and domains holding its block. Dispatch
moves ``dispatch_bytes`` per element (bf16, or fp8 with scales); the combine and both backward
all-to-alls move bf16.

Per layer and micro-batch: a dispatch and a combine in every forward pass (the recomputed one
too when the MoE block is recomputed), a combine-gradient and a dispatch-gradient in the
backward. With expert TP > 1 the dispatched tokens are all-gathered over the etp ranks and the
outputs reduce-scattered back. An overlap schedule (Megatron's EP A2A overlap, DeepSeek's
DualPipe) runs one micro-batch's all-to-all under another's compute: ``a2a_overlap_efficiency``
of it hides, at the usual contention cost; otherwise it is a barrier on the critical path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from procure.model import collectives as col
from procure.model.problem import ACT_BYTES, CoreKnobs, Problem, moe_load

Vec = npt.NDArray[np.float64]


def expert_layout(plan: dict[str, Any], gpus_per_domain: int) -> dict[str, Any]:
    """The expert-parallel layout of a plan, as a report shows it: ep, etp, the expert-data-
    parallel size, EP ranks per scale-up domain, domains an EP group spans and whether it stays
    inside one (NVLink/NVL72) domain."""
    ep, etp = int(plan.get("ep", 1)), int(plan.get("etp", 1) or 1)
    ranks = plan.get("tp", 1) * plan.get("dp", 1) * plan.get("cp", 1)
    g, k = ep_layout(ep, etp, max(1, gpus_per_domain))
    return {"ep": ep, "etp": etp, "edp": max(1, ranks // max(1, ep * etp)),
            "ranks_per_domain": int(g), "domains": int(k), "inside_scale_up": bool(k <= 1),
            "dispatcher": plan.get("moe_dispatcher", "alltoall"), "a2a_overlap": bool(plan.get("a2a_overlap"))}


def ep_layout(e: Any, et: Any, gpn: Any) -> tuple[Vec, Vec]:
    """(EP ranks per scale-up domain, domains spanned): ep ranks ``etp`` apart."""
    return col.group_layout(e, gpn, et)


def blocks_touched(block: Any, segment: Any) -> Vec:
    """Segments of ``segment`` consecutive experts (an EP rank's, a domain's) that an aligned block
    of ``block`` consecutive experts overlaps, averaged over the blocks: the segment boundaries
    falling strictly inside blocks are t/S per block less the t/lcm(t, S) that coincide with a
    block start."""
    t = np.maximum(np.rint(np.asarray(block, dtype=float)), 1.0).astype(np.int64)
    seg = np.maximum(np.rint(np.asarray(segment, dtype=float)), 1.0).astype(np.int64)
    return np.asarray(1.0 + t / seg - t / np.lcm(t, seg), dtype=float)


def remote_copies(pb: Problem, e: Any, g: Any, k: Any, dedup: Any) -> tuple[Vec, Vec]:
    """(copies per routed token that stay inside the domain, copies that cross it), for the plain
    all-to-all (dedup 0) or a deduplicating dispatcher (dedup 1)."""
    load = moe_load(pb)
    ep = np.maximum(np.asarray(e, dtype=float), 1.0)
    naive_intra = load * (g - 1.0) / ep
    naive_inter = load * (ep - g) / ep
    top_k = np.maximum(pb.top_k, 1.0)
    spread = load / top_k                                 # the hot rank's extra load
    nodes = np.maximum(np.asarray(k, dtype=float), 1.0)
    remote_nodes = (nodes - 1.0) * (1.0 - (1.0 - 1.0 / nodes) ** top_k)
    limit = np.where(pb.group_limit > 0, pb.group_limit * (nodes - 1.0) / nodes, np.inf)
    dedup_inter = spread * np.minimum(remote_nodes, limit)
    ranks = (ep - 1.0) * (1.0 - (1.0 - 1.0 / ep) ** top_k)
    # Inside one domain: once per distinct rank; across domains every routed copy still moves
    # over NVLink once on its way to its expert's rank.
    dedup_intra = np.where(nodes > 1, load * (g - 1.0) / np.maximum(g, 1.0), spread * ranks)
    block = np.asarray(pb.block_routing, dtype=float) > 0
    if np.any(block):
        experts_per_rank = np.maximum(np.asarray(pb.experts, dtype=float), 1.0) / ep
        ranks_hit = blocks_touched(top_k, experts_per_rank)
        domains_hit = blocks_touched(top_k, experts_per_rank * np.maximum(g, 1.0))
        # one domain holds the whole group (k 1) exactly when g is ep: (g - 1)/g is the local share
        block_intra = spread * ranks_hit * (g - 1.0) / np.maximum(g, 1.0)
        dedup_intra = np.where(block, block_intra, dedup_intra)
        dedup_inter = np.where(block, spread * domains_hit * (nodes - 1.0) / nodes, dedup_inter)
    use = np.asarray(dedup, dtype=float) > 0
    return (np.asarray(np.where(use, dedup_intra, naive_intra), dtype=float),
            np.asarray(np.where(use, dedup_inter, naive_inter), dtype=float))


def all_to_all_once_s(pb: Problem, tokens: Any, elem_bytes: Any, e: Any, g: Any, k: Any, dedup: Any,
                      bw_up: Any, bw_nic: Any) -> Vec:
    """One dispatch (or combine) of ``tokens`` tokens from each rank of the EP group."""
    intra, inter = remote_copies(pb, e, g, k, dedup)
    per_copy = tokens * pb.hidden * elem_bytes
    bw_term = np.maximum(intra * per_copy / bw_up, np.where(k > 1, inter * per_copy / bw_nic, 0.0))
    lat = col.BASE_LATENCY_S + (g - 1.0) * col.INTRA_HOP_S + (k - 1.0) * pb.lat_net
    return np.asarray(np.where(e > 1, bw_term + lat, 0.0), dtype=float)


def expert_tp_s(pb: Problem, tokens: Any, et: Any, gpn: Any, bw_up: Any, bw_nic: Any) -> Vec:
    """All-gather of the dispatched tokens over the etp ranks and reduce-scatter of the expert
    outputs (one pair per pass)."""
    size = tokens * moe_load(pb) * pb.hidden * ACT_BYTES * et
    g, k = col.group_layout(et, gpn, 1)
    pair = 2.0 * col.all_gather_s(size, et, g, k, bw_up, bw_nic, pb.lat_net)
    return np.asarray(np.where(et > 1, pair, 0.0), dtype=float)


def ep_layer_comm(pb: Problem, kn: CoreKnobs, tokens: Any, e: Any, et: Any, dedup: Any, overlap: Any,
                  fwd_passes: Any, moe_recompute: Any, window: Any, bw_up: Any,
                  bw_nic: Any) -> tuple[Vec, Vec]:
    """(all, exposed) EP seconds of one MoE layer for one micro-batch. ``tokens``: tokens each rank
    routes; ``window``: the compute an overlap schedule hides them under."""
    g, k = ep_layout(e, et, pb.gpn)
    dispatch = all_to_all_once_s(pb, tokens, pb.dispatch_bytes, e, g, k, dedup, bw_up, bw_nic)
    bf16 = all_to_all_once_s(pb, tokens, ACT_BYTES, e, g, k, dedup, bw_up, bw_nic)
    passes = fwd_passes + moe_recompute
    a2a = passes * (dispatch + bf16) + 2.0 * bf16
    etp = (passes + 1.0) * expert_tp_s(pb, tokens, et, pb.gpn, bw_up, bw_nic)
    total = np.asarray(np.where(e > 1, a2a, 0.0) + etp, dtype=float)
    exposed = np.where(np.asarray(overlap, dtype=float) > 0, col.hide(total, window, kn.a2a_overlap_efficiency),
                       total)
    return total, np.asarray(exposed, dtype=float)
