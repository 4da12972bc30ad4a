"""The vectorised step-time evaluation: arrays of plans in, arrays of terms out.

Both the plan search and a fixed plan (a grid of one) run this code, so they cannot disagree.

    T_step = compute + overhead + tp + ep + cp + pp + dp_exposed + optimizer + bubble + io
             + straggler

which is the spec's max(T_comp, T_comm_overlappable) + T_serial + T_bubble + T_io with the
overlappable comm split into its hidden part (inside compute) and its exposed part
(dp_exposed, cp): exposed = T_ov - overlap_efficiency * min(T_ov, window). The window of the
bucketed DP reduce is one micro-batch of the stage (Megatron reduces gradients during the LAST
micro-batch's backward and gathers parameters during the first forward); ZeRO-2 reduces every
micro-batch's gradients under that backward, ZeRO-3 may hide under all of the step's compute.
"""

from __future__ import annotations

import numpy as np

from procure.model import collectives as col
from procure.model.compute import layer_forward, logits_time, smooth_max
from procure.model.memory import gpu_memory
from procure.model.problem import ACT_BYTES, OPTIMIZER_BYTES, OPTIMIZER_STEP_BYTES, WEIGHT_BYTES
from procure.model.stragglers import expected_max_z

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


def _plan_arrays(plan):
    keys = ("t", "p", "d", "c", "e", "v", "b", "z", "rc", "sp", "tpo", "odp")
    return [np.asarray(plan[k], dtype=float) for k in keys]


def _layer_times(pb, kn, t, c, b, sp, e, rc):
    """Per layer per micro-batch (averaged over dense and MoE layers): gpu, host, gemm, core."""
    fwd_passes = 1.0 + (rc == 2)
    sel = (rc == 1).astype(float)
    moe_frac = pb.moe_layers / pb.layers
    core_bwd_extra = pb.flash * (FLASH_BWD_PASSES - 2.0)

    def gpu(lf):
        return ((fwd_passes + 2.0) * (lf["gemm_s"] + lf["mem_s"]) + core_bwd_extra * lf["core_s"]
                + sel * (lf["core_s"] + lf["score_mem_s"]))

    dense = layer_forward(pb, kn, t, c, b, sp, e, moe=False)
    gpu_l, gemm_f, core_f = gpu(dense), dense["gemm_s"], dense["core_s"]
    if np.any(pb.moe_layers > 0):
        moe = layer_forward(pb, kn, t, c, b, sp, e, moe=True)
        gpu_l = (1 - moe_frac) * gpu_l + moe_frac * gpu(moe)
        gemm_f = (1 - moe_frac) * gemm_f + moe_frac * moe["gemm_s"]
    host_l = kn.launch_overhead_s * (fwd_passes + 2.0 + SELECTIVE_LAUNCH_UNITS * sel)
    return {
        "gpu": gpu_l,
        "wall": smooth_max(gpu_l, host_l),
        "gemm": (fwd_passes + 2.0) * gemm_f,
        "core": (fwd_passes + 2.0 + core_bwd_extra + sel) * core_f,
        "fwd_passes": fwd_passes,
    }


def _bandwidths(pb, kn):
    bw_up = pb.up_bw * kn.scale_up_bw_eff
    bw_nic = np.where(pb.nic_measured > 0, pb.nic_bw, pb.nic_bw * kn.scale_out_bw_eff)
    return bw_up, bw_nic


def _hide(total, window, eff):
    """Exposed seconds of ``total`` comm run under a ``window`` of compute."""
    hidden = eff * np.minimum(total, window)
    return total - (1.0 - OVERLAP_CONTENTION) * hidden


def _layer_comm(pb, kn, t, c, b, e, sp, tpo, lt):
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
    g, k = col.group_layout(e, pb.gpn, t * c)
    a2a = col.all_to_all_s(tok * pb.top_k * pb.capacity * h * ACT_BYTES, e, g, k, bw_up, bw_nic,
                           pb.lat_net)
    ep = np.where(e > 1, moe_frac * (2.0 * lt["fwd_passes"] + 2.0) * a2a, 0.0)
    # CP ring: c-1 exchanges of this rank's K and V chunk per pass, under the attention core.
    hd = h / pb.heads
    kv_width = np.maximum(pb.kv_heads * hd / t, hd)
    kv_bytes = 2.0 * b * (pb.seq / c) * kv_width * ACT_BYTES
    cp = np.where(c > 1, (c - 1) * (lt["fwd_passes"] + 2.0)
                  * col.send_recv_s(kv_bytes, t * c > pb.gpn, bw_up, bw_nic, pb.lat_net), 0.0)
    cp_exposed = _hide(cp, lt["core"], kn.overlap_efficiency)
    return tp_exposed, ep, cp_exposed, tp, cp


def _dp_comm(pb, kn, t, d, c, z, m, odp, params, t_mb_gpu, compute, stage_layers, fwd_passes):
    """(all DP/ZeRO comm seconds, exposed seconds)."""
    bw_up, bw_nic = _bandwidths(pb, kn)
    dpc = d * c
    g, k = col.group_layout(dpc, pb.gpn, t)
    grads, weights = params * pb.grad_bytes, params * WEIGHT_BYTES
    ar = col.all_reduce_s(grads, dpc, g, k, bw_up, bw_nic, pb.lat_net)
    rs = col.reduce_scatter_s(grads, dpc, g, k, bw_up, bw_nic, pb.lat_net)
    ag = col.all_gather_s(weights, dpc, g, k, bw_up, bw_nic, pb.lat_net)
    total = np.select([z == 0, z == 1, z == 2],
                      [ar, rs + ag, m * rs + ag],
                      m * ((fwd_passes + 1.0) * ag + rs))
    # ZeRO-2 reduce-scatters each micro-batch's gradients under its backward; ZeRO-3 also
    # gathers parameters under the forward.
    backward_share = 2.0 / (fwd_passes + 2.0)
    window = np.select([z == 2, z == 3], [compute * backward_share, compute], t_mb_gpu)
    # The last bucket is reduced after the last backward kernel: it never hides.
    hideable = np.where(z >= 2, total, total * (1.0 - 1.0 / np.maximum(stage_layers, 1)))
    # ZeRO-3/FSDP always prefetches; ZeRO-2 reduces every micro-batch under the next backward.
    overlapped = (odp > 0) | (z >= 2)
    exposed = np.where(overlapped, _hide(hideable, window, kn.overlap_efficiency) + total - hideable,
                       total)
    return total, exposed


def _io(pb, params, z, dpc):
    held = params * np.where(z >= 1, 1.0 / np.maximum(dpc, 1), 1.0)
    state_b = held * (WEIGHT_BYTES + OPTIMIZER_BYTES)
    per_write = np.where(pb.ckpt_async > 0, state_b / PCIE_COPY_BW,
                         state_b * pb.n_gpus / np.maximum(pb.storage_bw, 1.0))
    ckpt = np.where(pb.ckpt_interval > 0, per_write / np.maximum(pb.ckpt_interval, 1), 0.0)
    return ckpt + pb.data_stall_s


def evaluate(pb, kn, plan):
    """Evaluate arrays of plans. ``plan``: dict of equal-length arrays t, p, d, c, e, v, b, z
    (ZeRO stage), rc (0 none, 1 selective, 2 full), sp, tpo, odp (0/1). Returns a dict of arrays."""
    t, p, d, c, e, v, b, z, rc, sp, tpo, odp = _plan_arrays(plan)
    tpo = tpo * pb.tp_overlap_ok            # a plan asking for it where it cannot run
    m = pb.batch / (b * d)
    stage_layers = np.ceil(pb.layers / p)
    lt = _layer_times(pb, kn, t, c, b, sp, e, rc)
    tp_l, ep_l, cp_l, tp_all, cp_all = _layer_comm(pb, kn, t, c, b, e, sp, tpo, lt)
    logit = logits_time(pb, kn, t, c, b)
    t_mb_gpu = stage_layers * lt["gpu"] + logit
    t_mb_wall = stage_layers * (lt["wall"] + tp_l + ep_l + cp_l) + logit
    compute = m * t_mb_gpu
    mem, params = gpu_memory(pb, t, p, d, c, e, v, b, z, rc, sp, m, stage_layers)
    bw_up, bw_nic = _bandwidths(pb, kn)
    pp_bytes = b * pb.seq / c * pb.hidden * ACT_BYTES / t
    # Megatron pairs each send with the opposite receive in one batched NCCL call: two per
    # micro-batch (forward activation, backward gradient), in the fill and drain as well.
    p2p = col.send_recv_s(pp_bytes, t * c * d >= pb.gpn, bw_up, bw_nic, pb.lat_net)
    dp_all, dp_exposed = _dp_comm(pb, kn, t, d, c, z, m, odp, params, t_mb_gpu, compute,
                                  stage_layers, lt["fwd_passes"])
    held = params * np.where(z >= 1, 1.0 / np.maximum(d * c, 1), 1.0)
    terms = {
        "compute_s": compute,
        "overhead_s": m * stage_layers * (lt["wall"] - lt["gpu"]),
        "tp_comm_s": m * stage_layers * tp_l,
        "pp_comm_s": np.where(p > 1, 2.0 * (v * m + p - 1) * p2p, 0.0),
        "dp_comm_exposed_s": dp_exposed,
        "ep_comm_s": m * stage_layers * ep_l,
        "cp_comm_s": m * stage_layers * cp_l,
        "optimizer_s": held * OPTIMIZER_STEP_BYTES * kn.membound_factor / pb.hbm_bw,
        # Fill and drain run the other stages' micro-batches; the logits (last stage) sit in
        # the steady state, which the slowest (last) stage paces.
        "bubble_s": (p - 1) / v * (t_mb_wall - logit),
        "io_s": _io(pb, params, z, d * c),
    }
    mu = sum(terms.values())
    z_n = np.vectorize(expected_max_z)(pb.n_gpus)
    terms["straggler_s"] = mu * kn.step_time_cv * z_n
    step = mu + terms["straggler_s"]
    overlapped_dp = (odp > 0) | (z >= 2)
    terms["comm_overlappable_s"] = np.where(overlapped_dp, dp_all, 0.0) + m * stage_layers * (
        np.where(tpo > 0, tp_all, 0.0) + cp_all)
    terms["comm_exposed_s"] = (np.where(overlapped_dp, dp_exposed, 0.0) + terms["cp_comm_s"]
                               + np.where(tpo > 0, terms["tp_comm_s"], 0.0))
    return {
        "step_time_s": step,
        "mu_s": mu,
        "terms": terms,
        "memory": mem,
        "feasible": mem["total"] <= pb.hbm_bytes,
        "m": m,
        "stage_layers": stage_layers,
    }
