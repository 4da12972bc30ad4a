"""The vectorised step-time evaluation: arrays of plans in, arrays of terms out.

Both the plan search and a fixed plan (a grid of one) run this code, so they cannot disagree;
the backtest runs it once over every run of a file (one row per run).

    T_step = compute + overhead + tp + ep + cp + pp + dp_exposed + optimizer + bubble + io
             + straggler

which is the spec's max(T_comp, T_comm_overlappable) + T_serial + T_bubble + T_io with the
overlappable comm split into its hidden part (inside compute) and its exposed part:
exposed = T_ov - (1 - OVERLAP_CONTENTION) * overlap_efficiency * min(T_ov, window). The window of
the bucketed DP reduce is one micro-batch of the stage (Megatron reduces gradients during the
LAST micro-batch's backward and gathers parameters during the first forward); ZeRO-2 reduces
every micro-batch's gradients under that backward. ZeRO-3/FSDP is timed layer by layer: each
layer's parameter all-gather hides under the previous layer's forward (and backward), its
gradient reduce-scatter under the next layer's backward, every micro-batch, at the stack's
prefetch efficiency; the first gather and the last reduce of each micro-batch never hide.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from procure.model import collectives as col
from procure.model.compute import layer_forward, logits_time, smooth_max
from procure.model.memory import (SEARCH_HEADROOM_FRACTION, gpu_memory, layer_activation_bytes,
                                  recompute_fraction)
from procure.model.problem import (ACT_BYTES, OPTIMIZER_BYTES, OPTIMIZER_STEP_BYTES, PCIE_BW,
                                   WEIGHT_BYTES, CoreKnobs, Problem)
from procure.model.stragglers import expected_max_z

Vec = npt.NDArray[np.float64]

PCIE_COPY_BW = 25e9            # B/s device->host per GPU for an asynchronous checkpoint snapshot
SELECTIVE_LAUNCH_UNITS = 0.3   # extra host work of recomputing the attention core
# A fused (flash) attention backward recomputes S = QK^T and P = softmax(S) before dV, dP, dQ, dK:
# 5 matmuls against the forward's 2 (Dao 2023, FlashAttention-2, sec. 3.1.2), i.e. 2.5 x the
# forward's FLOPs where every other GEMM's backward is 2 x.
FLASH_BWD_PASSES = 2.5
# Hidden communication is not free: while a collective runs under compute, its kernels hold SMs
# (NCCL: one CTA per channel, 8-32 of H100's 132 SMs; TE userbuffers 8-16) and share HBM
# bandwidth, so the compute it hides under runs slower (Rashidi et al., ISCA 2021: overlapped
# compute slows by up to 1.4x; Megatron/NeMo cap DP and TP collectives at 8 CTAs for this reason).
# Each second of hidden comm costs this many seconds of compute. A physical prior, not fitted:
# the calibration runs hide little comm, so they cannot pin it down.
OVERLAP_CONTENTION = 0.15
PLAN_ARRAY_KEYS = ("t", "p", "d", "c", "e", "v", "b", "z", "rc", "sp", "tpo", "odp", "aoff", "sg", "rl")


def _plan_arrays(plan: dict[str, Any]) -> list[Vec]:
    return [np.asarray(plan[k], dtype=float) if k in plan else np.zeros(1)
            for k in PLAN_ARRAY_KEYS]


def _layer_times(pb: Problem, kn: CoreKnobs, t: Vec, c: Vec, b: Vec, sp: Vec, e: Vec,
                 rc: Vec, full_share: Vec) -> dict[str, Vec]:
    """Per layer per micro-batch (averaged over dense and MoE layers and over recomputed and
    kept layers): gpu, host (launch time), gemm, core, one forward pass (fwd) and the backward
    with its recomputation (bwd). A frozen (LoRA) base has no weight-gradient GEMMs: its linear layers'
    backward is one pass (activation gradients), not two."""
    fwd_passes = 1.0 + full_share
    sel = (rc == 1).astype(float)
    moe_frac = pb.moe_layers / pb.layers
    core_bwd_extra = pb.flash * (FLASH_BWD_PASSES - 2.0)

    def gpu(lf: dict[str, Vec]) -> Vec:
        return np.asarray((fwd_passes + 2.0) * (lf["gemm_s"] + lf["mem_s"])
                          - pb.frozen * (lf["gemm_s"] - lf["core_s"])
                          + core_bwd_extra * lf["core_s"] + sel * _selective_s(pb, lf),
                          dtype=float)

    dense = layer_forward(pb, kn, t, c, b, sp, e, moe=False)
    gpu_l, gemm_f, core_f = gpu(dense), dense["gemm_s"], dense["core_s"]
    fwd_l = dense["gemm_s"] + dense["mem_s"]
    if np.any(pb.moe_layers > 0):
        moe = layer_forward(pb, kn, t, c, b, sp, e, moe=True)
        gpu_l = (1 - moe_frac) * gpu_l + moe_frac * gpu(moe)
        gemm_f = (1 - moe_frac) * gemm_f + moe_frac * moe["gemm_s"]
        fwd_l = (1 - moe_frac) * fwd_l + moe_frac * (moe["gemm_s"] + moe["mem_s"])
    host_l = kn.launch_overhead_s * pb.host_factor * (fwd_passes + 2.0 + SELECTIVE_LAUNCH_UNITS * sel)
    return {
        "gpu": gpu_l,
        "host": np.asarray(host_l, dtype=float),
        "gemm": np.asarray((fwd_passes + 2.0 - pb.frozen) * gemm_f, dtype=float),
        "core": np.asarray((fwd_passes + 2.0 + core_bwd_extra + sel) * core_f, dtype=float),
        "fwd": np.asarray(fwd_l, dtype=float),
        "bwd": np.asarray(gpu_l - fwd_l, dtype=float),
        "fwd_passes": np.asarray(fwd_passes, dtype=float),
    }


def _selective_s(pb: Problem, lf: dict[str, Vec]) -> Vec:
    """What selective recomputation re-runs per layer: the attention core (Megatron), plus the MLP
    input GEMMs and the elementwise kernels (MaxText save_dot_except_mlpwi), or the whole layer
    but the Q/K/V projections (save_qkv_proj)."""
    core = lf["core_s"] + lf["score_mem_s"]
    return np.asarray(np.select([pb.sel_mode == 1, pb.sel_mode == 2],
                                [core + lf["mlp_in_s"] + lf["mem_s"],
                                 lf["gemm_s"] - lf["qkv_s"] + lf["mem_s"]], core), dtype=float)


def _bandwidths(pb: Problem, kn: CoreKnobs) -> tuple[Vec, Vec]:
    bw_up = pb.up_bw * kn.scale_up_bw_eff
    bw_nic = np.where(pb.nic_measured > 0, pb.nic_bw, pb.nic_bw * kn.scale_out_bw_eff)
    return np.asarray(bw_up, dtype=float), np.asarray(bw_nic, dtype=float)


def _hide(total: Vec, window: Any, eff: Any) -> Vec:
    """Exposed seconds of ``total`` comm run under a ``window`` of compute."""
    hidden = eff * np.minimum(total, window)
    return np.asarray(total - (1.0 - OVERLAP_CONTENTION) * hidden, dtype=float)


def _layer_comm(pb: Problem, kn: CoreKnobs, t: Vec, c: Vec, d: Vec, b: Vec, e: Vec, tpo: Vec,
                lt: dict[str, Vec]) -> tuple[Vec, Vec, Vec, Vec, Vec]:
    """Exposed TP, EP, CP seconds per layer per micro-batch, then all TP and all CP seconds."""
    bw_up, bw_nic = _bandwidths(pb, kn)
    h = pb.hidden
    tok = b * pb.seq / c
    g, k = col.group_layout(t, pb.gpn, 1)
    # 2 collectives forward (+2 in a full-recompute forward) and 2 backward, each of b*s*h
    # elements (all-reduce; with SP an all-gather + reduce-scatter pair of the same volume).
    n_coll = 2.0 * lt["fwd_passes"] + 2.0
    tp = n_coll * col.all_reduce_s(tok * h * ACT_BYTES, t, g, k, bw_up, bw_nic, pb.lat_net)
    tp_exposed = np.where(tpo > 0, _hide(tp, lt["gemm"], kn.overlap_efficiency), tp)
    # EP: dispatch + combine per forward pass, two more in the backward; slowest rank carries
    # capacity_factor x the mean share.
    moe_frac = pb.moe_layers / pb.layers
    # EP ranks sit t x c apart among the dp ranks; folded over TP (ep > dp x cp) they are adjacent.
    g, k = col.group_layout(e, pb.gpn, np.where(e <= d * c, t * c, np.maximum(1.0, t * c * d / e)))
    a2a = col.all_to_all_s(tok * pb.top_k * pb.capacity * h * ACT_BYTES, e, g, k, bw_up, bw_nic,
                           pb.lat_net)
    ep = np.where(e > 1, moe_frac * (2.0 * lt["fwd_passes"] + 2.0) * a2a, 0.0)
    # CP ring: c-1 exchanges of this rank's K and V chunk per pass, under the attention core.
    hd = pb.head_dim
    kv_width = np.maximum(pb.kv_heads * hd / t, hd)
    kv_bytes = 2.0 * b * (pb.seq / c) * kv_width * ACT_BYTES
    cp = np.where(c > 1, (c - 1) * (lt["fwd_passes"] + 2.0)
                  * col.send_recv_s(kv_bytes, t * c > pb.gpn, bw_up, bw_nic, pb.lat_net), 0.0)
    cp_exposed = _hide(np.asarray(cp, dtype=float), lt["core"], kn.overlap_efficiency)
    return (np.asarray(tp_exposed, dtype=float), np.asarray(ep, dtype=float), cp_exposed,
            np.asarray(tp, dtype=float), np.asarray(cp, dtype=float))


def _zero3_comm(pb: Problem, kn: CoreKnobs, ag_l: Vec, rs_l: Vec, m: Vec, stage_layers: Vec,
                lt: dict[str, Vec]) -> tuple[Vec, Vec]:
    """(all, exposed) ZeRO-3/FSDP seconds: per layer per micro-batch, a gather under the previous
    layer's forward, a gather plus a reduce-scatter under the backward."""
    eff = kn.overlap_efficiency * pb.zero3_prefetch
    per_layer = (np.maximum(ag_l - eff * lt["fwd"], 0.0)
                 + np.maximum(ag_l + rs_l - eff * lt["bwd"], 0.0))
    total = m * stage_layers * (2.0 * ag_l + rs_l)
    exposed = np.minimum(total, m * (stage_layers * per_layer + ag_l + rs_l))
    cost = exposed + OVERLAP_CONTENTION * (total - exposed)
    return np.asarray(total, dtype=float), np.asarray(cost, dtype=float)


def _dp_comm(pb: Problem, kn: CoreKnobs, t: Vec, d: Vec, c: Vec, z: Vec, m: Vec, odp: Vec,
             sg: Vec, params: Vec, window_s: Vec, compute: Vec, stage_layers: Vec,
             lt: dict[str, Vec]) -> tuple[Vec, Vec]:
    """(all DP/ZeRO comm seconds, exposed seconds). Frozen (LoRA) base weights have no gradients
    to reduce and no updated parameters to gather; under ZeRO-3 they are still gathered."""
    bw_up, bw_nic = _bandwidths(pb, kn)
    dpc = d * c
    g, k = col.group_layout(dpc, pb.gpn, t)
    trained = 1.0 - pb.frozen
    grads, weights = params * pb.grad_bytes * trained, params * pb.weight_bytes
    ar = col.all_reduce_s(grads, dpc, g, k, bw_up, bw_nic, pb.lat_net)
    rs = col.reduce_scatter_s(grads, dpc, g, k, bw_up, bw_nic, pb.lat_net)
    ag = col.all_gather_s(weights * trained, dpc, g, k, bw_up, bw_nic, pb.lat_net)
    layers = np.maximum(stage_layers, 1)
    # ZeRO-3 gathers and reduces inside the shard group (hybrid sharding: sg ranks), then
    # all-reduces its gradient shard across the dp x cp / sg replicas once per step.
    shard = np.where(sg > 0, sg, dpc)
    gs, ks = col.group_layout(shard, pb.gpn, t)
    ag_l = col.all_gather_s(weights / layers, shard, gs, ks, bw_up, bw_nic, pb.lat_net)
    rs_l = col.reduce_scatter_s(grads / layers, shard, gs, ks, bw_up, bw_nic, pb.lat_net)
    replicas = dpc / shard
    gr, kr = col.group_layout(replicas, pb.gpn, t * shard)
    ar_rep = np.where(replicas > 1, col.all_reduce_s(grads / shard, replicas, gr, kr, bw_up, bw_nic,
                                                     pb.lat_net), 0.0)
    z3_total, z3_exposed = _zero3_comm(pb, kn, ag_l, rs_l, m, stage_layers, lt)
    total = np.select([z == 0, z == 1, z == 2], [ar, rs + ag, m * rs + ag], z3_total + ar_rep)
    # ZeRO-2 reduce-scatters each micro-batch's gradients under its backward.
    backward_share = 2.0 / (lt["fwd_passes"] + 2.0)
    window = np.where(z == 2, compute * backward_share, window_s)
    # The last bucket is reduced after the last backward kernel: it never hides.
    hideable = np.where(z >= 2, total, total * (1.0 - 1.0 / layers))
    overlapped = (odp > 0) | (z >= 2)
    exposed = np.where(overlapped, _hide(hideable, window, kn.overlap_efficiency) + total - hideable,
                       total)
    exposed = np.where(z >= 3, z3_exposed + _hide(ar_rep, window_s, kn.overlap_efficiency), exposed)
    return np.asarray(total, dtype=float), np.asarray(exposed, dtype=float)


def _offload_s(pb: Problem, stored: Vec, stage_layers: Vec, m: Vec, aoff: Vec, lt: dict[str, Vec]) -> Vec:
    """Exposed activation-offload copies: each stored layer goes to host under the next layer's
    forward and comes back under the previous layer's backward."""
    copy_s = stored / PCIE_BW
    per_layer = np.maximum(copy_s - lt["fwd"], 0.0) + np.maximum(copy_s - lt["bwd"], 0.0)
    return np.asarray(np.where(aoff > 0, m * stage_layers * per_layer, 0.0), dtype=float)


def _io(pb: Problem, params: Vec, z: Vec, dpc: Vec) -> Vec:
    held = params * np.where(z >= 1, 1.0 / np.maximum(dpc, 1), 1.0)
    state_b = held * (WEIGHT_BYTES + OPTIMIZER_BYTES)
    per_write = np.where(pb.ckpt_async > 0, state_b / PCIE_COPY_BW,
                         state_b * pb.n_gpus / np.maximum(pb.storage_bw, 1.0))
    ckpt = np.where(pb.ckpt_interval > 0, per_write / np.maximum(pb.ckpt_interval, 1), 0.0)
    return np.asarray(ckpt + pb.data_stall_s, dtype=float)


def _straggler_z(n_gpus: Vec) -> Vec:
    flat = np.atleast_1d(n_gpus)
    values = np.array([expected_max_z(float(n)) for n in flat])
    return values.reshape(np.shape(n_gpus))


def evaluate(pb: Problem, kn: CoreKnobs, plan: dict[str, Any]) -> dict[str, Any]:
    """Evaluate arrays of plans. ``plan``: dict of equal-length arrays t, p, d, c, e, v, b, z
    (ZeRO stage), rc (0 none, 1 selective, 2 full), sp, tpo, odp, aoff (0/1). Returns a dict of
    arrays."""
    t, p, d, c, e, v, b, z, rc, sp, tpo, odp, aoff, sg, rl = _plan_arrays(plan)
    tpo = tpo * pb.tp_overlap_ok            # a plan asking for it where it cannot run
    m = pb.batch / (b * d)
    stage_layers = np.ceil(pb.layers / p)
    full_share = recompute_fraction(rc, rl, stage_layers)
    lt = _layer_times(pb, kn, t, c, b, sp, e, rc, full_share)
    tp_l, ep_l, cp_l, tp_all, cp_all = _layer_comm(pb, kn, t, c, d, b, e, tpo, lt)
    logit = logits_time(pb, kn, t, c, b)
    t_mb_gpu = stage_layers * lt["gpu"] + logit
    # A layer takes the longer of its GPU stream and its host's launches (smoothly). Comm that
    # overlaps compute (TP comm overlap, the CP ring) also fills a launch-bound layer's idle GPU
    # time; a serial collective (plain TP all-reduce, EP all-to-all) is a barrier across its
    # ranks, whose hosts are not in step: it adds after.
    overlapped = np.where(tpo > 0, tp_l, 0.0) + cp_l
    serial = np.where(tpo > 0, 0.0, tp_l) + ep_l
    stream_l = lt["gpu"] + overlapped
    wall_l = smooth_max(stream_l, lt["host"]) + serial
    t_mb_wall = stage_layers * wall_l + logit
    compute = m * t_mb_gpu
    mem, params = gpu_memory(pb, t, p, d, c, e, v, b, z, rc, sp, m, stage_layers, aoff, sg, full_share)
    bw_up, bw_nic = _bandwidths(pb, kn)
    pp_bytes = b * pb.seq / c * pb.hidden * ACT_BYTES / t
    # Megatron pairs each send with the opposite receive in one batched NCCL call: two per
    # micro-batch (forward activation, backward gradient), in the fill and drain as well.
    p2p = col.send_recv_s(pp_bytes, t * c * d >= pb.gpn, bw_up, bw_nic, pb.lat_net)
    # Fill and drain run the other stages' micro-batches; the logits (last stage) sit in the
    # steady state, which the slowest (last) stage paces.
    bubble = np.asarray((p - 1) / v * (t_mb_wall - logit), dtype=float)
    # Bucketed DP comm hides under the last micro-batch's backward and the first one's forward,
    # and in the pipeline's fill and drain, where this stage waits on the others.
    dp_all, dp_exposed = _dp_comm(pb, kn, t, d, c, z, m, odp, sg, params, t_mb_gpu + bubble, compute,
                                  stage_layers, lt)
    held = params * np.where(z >= 1, 1.0 / np.maximum(d * c, 1), 1.0) * (1.0 - pb.frozen)
    stored, _ = layer_activation_bytes(pb, t, c, b, rc, sp, full_share)
    terms: dict[str, Vec] = {
        "compute_s": compute,
        "overhead_s": np.asarray(m * stage_layers * (wall_l - stream_l - serial), dtype=float),
        "tp_comm_s": np.asarray(m * stage_layers * tp_l, dtype=float),
        "pp_comm_s": np.asarray(np.where(p > 1, 2.0 * (v * m + p - 1) * p2p, 0.0), dtype=float),
        "dp_comm_exposed_s": dp_exposed,
        "ep_comm_s": np.asarray(m * stage_layers * ep_l, dtype=float),
        "cp_comm_s": np.asarray(m * stage_layers * cp_l, dtype=float),
        "optimizer_s": np.asarray(held * OPTIMIZER_STEP_BYTES * kn.membound_factor / pb.hbm_bw, dtype=float),
        "bubble_s": bubble,
        "io_s": _io(pb, params, z, d * c) + _offload_s(pb, stored, stage_layers, m, aoff, lt),
    }
    mu = sum(terms.values())
    terms["straggler_s"] = np.asarray(mu * kn.step_time_cv * _straggler_z(pb.n_gpus), dtype=float)
    step = mu + terms["straggler_s"]
    overlapped_dp = (odp > 0) | (z >= 2)
    terms["comm_overlappable_s"] = np.asarray(np.where(overlapped_dp, dp_all, 0.0) + m * stage_layers * (
        np.where(tpo > 0, tp_all, 0.0) + cp_all), dtype=float)
    terms["comm_exposed_s"] = np.asarray(np.where(overlapped_dp, dp_exposed, 0.0) + terms["cp_comm_s"]
                                         + np.where(tpo > 0, terms["tp_comm_s"], 0.0), dtype=float)
    return {
        "step_time_s": step,
        "mu_s": mu,
        "terms": terms,
        "memory": mem,
        "feasible": mem["total"] <= pb.hbm_bytes,
        "fits_with_headroom": mem["total"] + SEARCH_HEADROOM_FRACTION * pb.hbm_bytes <= pb.hbm_bytes,
        "m": m,
        "stage_layers": stage_layers,
    }
