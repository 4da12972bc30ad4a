"""The vectorised step-time evaluation: arrays of plans in, arrays of terms out.

Both the plan search and a fixed plan (a grid of one) run this code, so they cannot disagree;
the backtest runs it once over every run of a file (one row per run).

    T_step = compute + overhead + tp + ep + cp + pp + dp_exposed + optimizer + bubble + io
             + straggler

which is the spec's max(T_comp, T_comm_overlappable) + T_serial + T_bubble + T_io with the
overlappable comm split into its hidden part (inside compute) and its exposed part:
exposed = T_ov - (1 - collectives.OVERLAP_CONTENTION) * overlap_efficiency * min(T_ov, window). The window of
the bucketed DP reduce is one micro-batch of the stage (Megatron reduces gradients during the
LAST micro-batch's backward and gathers parameters during the first forward); ZeRO-2 reduces
every micro-batch's gradients under that backward. ZeRO-3/FSDP is timed layer by layer: each
layer's parameter all-gather hides under the previous layer's forward (and backward), its
gradient reduce-scatter under the next layer's backward, every micro-batch, at the stack's
prefetch efficiency; the first gather and the last reduce of each micro-batch never hide.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from procure.model import collectives as col
from procure.model.compute import layer_forward, logits_time, smooth_max
from procure.model.context import cp_layer_comm
from procure.model.expert import ep_layer_comm
from procure.model.memory import (SEARCH_HEADROOM_FRACTION, end_stage_layers, gpu_memory,
                                  layer_activation_bytes, module_flags, moe_layers_in,
                                  recompute_fraction)
from procure.model.plans import PlanArrays, Plans, Vec
from procure.model.problem import (ACT_BYTES, OPTIMIZER_BYTES, OPTIMIZER_STEP_BYTES, PCIE_BW,
                                   WEIGHT_BYTES, CoreKnobs, Problem)
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
# Selective recomputation by module (memory.module_flags): what each re-runs of a layer's forward.
MODULE_PARTS = {"core_attn": ("core_s", "score_mem_s"), "mla_up_proj": ("mla_up_s",),
                "layernorm": ("norm_s",)}


@dataclass(frozen=True, slots=True)
class LayerTimes:
    """Seconds per layer per micro-batch on the busiest stage, averaged over its dense and MoE
    layers and over its recomputed and kept layers."""

    gpu_s: Vec              # the GPU stream: forward, backward and recomputation
    gpu_moe_s: Vec          # the same for an MoE layer (a dense layer's where the model has none)
    host_s: Vec             # the host's kernel launches
    moe_host_s: Vec         # serial MoE host/sync time (the dispatcher's)
    gemm_s: Vec             # the GEMMs of every pass (what TP comm overlap hides under)
    core_fwd_s: Vec         # one forward pass of a dense layer's attention core
    fwd_s: Vec              # one forward pass
    bwd_s: Vec              # the backward with its recomputation
    fwd_passes: Vec         # forward passes: 1 plus the share of layers under full recompute
    moe_recompute: Vec      # 1.0 where selective recompute re-runs the MoE block


@dataclass(frozen=True, slots=True)
class LayerComm:
    """Communication seconds per layer per micro-batch: all of it, and the part compute does not
    hide."""

    tp_s: Vec
    tp_exposed_s: Vec
    ep_s: Vec
    ep_exposed_s: Vec
    cp_s: Vec
    cp_exposed_s: Vec
    cp_serial: Vec          # 1.0 where the exposed CP comm is a barrier (all-to-all, all-gather)


def _module_recompute_s(forward: dict[str, Vec], flags: dict[str, Vec], moe: bool) -> Vec:
    """Forward seconds re-run by selective recomputation of the flagged modules."""
    out = np.zeros_like(forward["core_s"])
    for name, keys in MODULE_PARTS.items():
        out = out + flags[name] * sum(forward[k] for k in keys)
    mlp = flags["moe"] if moe else flags["mlp"]
    out = out + mlp * forward["mlp_s"]
    if moe:
        out = out + flags["moe_act"] * (1 - flags["moe"]) * forward["act_s"]
    return np.asarray(out, dtype=float)


def _layer_times(pb: Problem, kn: CoreKnobs, plans: Plans, full_share: Vec, moe_share: Vec) -> LayerTimes:
    """The layer's times (see LayerTimes). A frozen (LoRA) base has no weight-gradient GEMMs: its
    linear layers' backward is one pass (activation gradients), not two."""
    t, c, b, sp, e, et = (plans.tp, plans.cp, plans.micro_batch, plans.sequence_parallel, plans.ep, plans.etp)
    rm = plans.recompute_modules
    fwd_passes = 1.0 + full_share
    sel = (plans.recompute == 1).astype(float)
    by_module = sel * (rm > 0)
    flags = module_flags(rm)
    core_bwd_extra = pb.flash * (FLASH_BWD_PASSES - 2.0)

    def gpu(forward: dict[str, Vec], moe: bool) -> Vec:
        recompute = np.where(by_module > 0, _module_recompute_s(forward, flags, moe), _selective_s(pb, forward))
        return np.asarray((fwd_passes + 2.0) * (forward["gemm_s"] + forward["mem_s"])
                          - pb.frozen * (forward["gemm_s"] - forward["core_s"])
                          + core_bwd_extra * forward["core_s"] + sel * recompute, dtype=float)

    dense = layer_forward(pb, kn, t, c, b, sp, e, moe=False, et=et)
    gpu_l, gemm_f, core_f = gpu(dense, False), dense["gemm_s"], dense["core_s"]
    fwd_l = dense["gemm_s"] + dense["mem_s"]
    gpu_moe = gpu_l
    if np.any(pb.moe_layers > 0):
        moe = layer_forward(pb, kn, t, c, b, sp, e, moe=True, et=et)
        gpu_moe = gpu(moe, True)
        gpu_l = (1 - moe_share) * gpu_l + moe_share * gpu_moe
        gemm_f = (1 - moe_share) * gemm_f + moe_share * moe["gemm_s"]
        fwd_l = (1 - moe_share) * fwd_l + moe_share * (moe["gemm_s"] + moe["mem_s"])
    host_l = kn.launch_overhead_s * pb.host_factor * (fwd_passes + 2.0 + SELECTIVE_LAUNCH_UNITS * sel)
    moe_recompute = by_module * flags["moe"]
    moe_host = moe_share * kn.moe_overhead_s * (fwd_passes + 2.0 + moe_recompute)
    return LayerTimes(
        gpu_s=gpu_l,
        gpu_moe_s=np.asarray(gpu_moe, dtype=float),
        host_s=np.asarray(host_l, dtype=float),
        moe_host_s=np.asarray(moe_host, dtype=float),
        gemm_s=np.asarray((fwd_passes + 2.0 - pb.frozen) * gemm_f, dtype=float),
        core_fwd_s=np.asarray(core_f, dtype=float),
        fwd_s=np.asarray(fwd_l, dtype=float),
        bwd_s=np.asarray(gpu_l - fwd_l, dtype=float),
        fwd_passes=np.asarray(fwd_passes, dtype=float),
        moe_recompute=np.asarray(moe_recompute, dtype=float),
    )


def _selective_s(pb: Problem, forward: dict[str, Vec]) -> Vec:
    """What selective recomputation re-runs per layer: the attention core (Megatron), plus the MLP
    input GEMMs and the elementwise kernels (MaxText save_dot_except_mlpwi), or the whole layer
    but the Q/K/V projections (save_qkv_proj)."""
    core = forward["core_s"] + forward["score_mem_s"]
    return np.asarray(np.select([pb.sel_mode == 1, pb.sel_mode == 2],
                                [core + forward["mlp_in_s"] + forward["mem_s"],
                                 forward["gemm_s"] - forward["qkv_s"] + forward["mem_s"]], core), dtype=float)


def _bandwidths(pb: Problem, kn: CoreKnobs) -> tuple[Vec, Vec]:
    bw_up = pb.up_bw * kn.scale_up_bw_eff
    bw_nic = np.where(pb.nic_measured > 0, pb.nic_bw, pb.nic_bw * kn.scale_out_bw_eff)
    return np.asarray(bw_up, dtype=float), np.asarray(bw_nic, dtype=float)


def _layer_comm(pb: Problem, kn: CoreKnobs, plans: Plans, lt: LayerTimes, moe_share: Vec) -> LayerComm:
    """The layer's TP, EP and CP communication (see LayerComm)."""
    t, c, b, e, et = plans.tp, plans.cp, plans.micro_batch, plans.ep, plans.etp
    bw_up, bw_nic = _bandwidths(pb, kn)
    h = pb.hidden
    tok = b * pb.seq / c
    gt, kt = col.group_layout(t, pb.gpn, 1)
    # 2 collectives forward (+2 in a full-recompute forward) and 2 backward, each of b*s*h
    # elements (all-reduce; with SP an all-gather + reduce-scatter pair of the same volume).
    n_coll = 2.0 * lt.fwd_passes + 2.0
    tp = n_coll * col.all_reduce_s(tok * h * ACT_BYTES, t, gt, kt, bw_up, bw_nic, pb.lat_net)
    tp_exposed = np.where(plans.tp_comm_overlap > 0, col.hide(tp, lt.gemm_s, kn.overlap_efficiency), tp)
    ep_all, ep_exposed = ep_layer_comm(pb, kn, tok / t, e, et, plans.moe_dispatcher, plans.a2a_overlap,
                                       lt.fwd_passes, lt.moe_recompute, lt.gpu_s, bw_up, bw_nic)
    cp_all, cp_exposed, cp_serial = cp_layer_comm(pb, kn, t, c, b, plans.cp_comm, lt.core_fwd_s,
                                                  lt.fwd_passes, bw_up, bw_nic)
    return LayerComm(tp_s=np.asarray(tp, dtype=float), tp_exposed_s=np.asarray(tp_exposed, dtype=float),
                     ep_s=moe_share * ep_all, ep_exposed_s=moe_share * ep_exposed,
                     cp_s=cp_all, cp_exposed_s=cp_exposed, cp_serial=cp_serial)


def _zero3_comm(pb: Problem, kn: CoreKnobs, ag_l: Vec, rs_l: Vec, m: Vec, stage_layers: Vec,
                lt: LayerTimes) -> tuple[Vec, Vec]:
    """(all, exposed) ZeRO-3/FSDP seconds: per layer per micro-batch, a gather under the previous
    layer's forward, a gather plus a reduce-scatter under the backward."""
    eff = kn.overlap_efficiency * pb.zero3_prefetch
    per_layer = (np.maximum(ag_l - eff * lt.fwd_s, 0.0)
                 + np.maximum(ag_l + rs_l - eff * lt.bwd_s, 0.0))
    total = m * stage_layers * (2.0 * ag_l + rs_l)
    exposed = np.minimum(total, m * (stage_layers * per_layer + ag_l + rs_l))
    cost = exposed + col.OVERLAP_CONTENTION * (total - exposed)
    return np.asarray(total, dtype=float), np.asarray(cost, dtype=float)


def _dp_comm(pb: Problem, kn: CoreKnobs, t: Vec, dpc: Vec, z: Vec, m: Vec, odp: Vec,
             sg: Vec, params: Vec, window_s: Vec, compute: Vec, stage_layers: Vec,
             lt: LayerTimes) -> tuple[Vec, Vec]:
    """(all DP/ZeRO comm seconds, exposed seconds) of ``params`` reduced over ``dpc`` ranks ``t``
    apart. Frozen (LoRA) base weights have no gradients to reduce and no updated parameters to
    gather; under ZeRO-3 they are still gathered."""
    bw_up, bw_nic = _bandwidths(pb, kn)
    g, k = col.group_layout(dpc, pb.gpn, t)
    trained = 1.0 - pb.frozen
    grads, weights = params * pb.grad_bytes * trained, params * pb.weight_bytes
    ar = col.all_reduce_s(grads, dpc, g, k, bw_up, bw_nic, pb.lat_net)
    rs = col.reduce_scatter_s(grads, dpc, g, k, bw_up, bw_nic, pb.lat_net)
    ag = col.all_gather_s(weights * trained, dpc, g, k, bw_up, bw_nic, pb.lat_net)
    layers = np.maximum(stage_layers, 1)
    # ZeRO-3 gathers and reduces inside the shard group (hybrid sharding: sg ranks), then
    # all-reduces its gradient shard across the dp x cp / sg replicas once per step.
    shard = np.where(sg > 0, np.minimum(sg, dpc), dpc)
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
    backward_share = 2.0 / (lt.fwd_passes + 2.0)
    window = np.where(z == 2, compute * backward_share, window_s)
    # The last bucket is reduced after the last backward kernel: it never hides.
    hideable = np.where(z >= 2, total, total * (1.0 - 1.0 / layers))
    overlapped = (odp > 0) | (z >= 2)
    exposed = np.where(overlapped, col.hide(hideable, window, kn.overlap_efficiency) + total - hideable,
                       total)
    exposed = np.where(z >= 3, z3_exposed + col.hide(ar_rep, window_s, kn.overlap_efficiency), exposed)
    total = np.where(dpc > 1, total, 0.0)
    exposed = np.where(dpc > 1, exposed, 0.0)
    return np.asarray(total, dtype=float), np.asarray(exposed, dtype=float)


def _dp_both(pb: Problem, kn: CoreKnobs, plans: Plans, m: Vec, params: tuple[Vec, Vec],
             window_s: Vec, compute: Vec, stage_layers: Vec, lt: LayerTimes) -> tuple[Vec, Vec]:
    """DP comm of the dense weights over dp x cp (ranks tp apart) and of the routed experts over
    the expert-data-parallel group (tp x dp x cp / (ep x etp) ranks, ep x etp apart); the experts'
    reduce hides in what the dense one left of the window."""
    t, d, c, e, et, z = plans.tp, plans.dp, plans.cp, plans.ep, plans.etp, plans.zero_stage
    odp, sg = plans.overlap_grad_reduce, plans.fsdp_shard_group
    dense_all, dense_exp = _dp_comm(pb, kn, t, d * c, z, m, odp, sg, params[0], window_s, compute,
                                    stage_layers, lt)
    edp = np.maximum(t * d * c / np.maximum(e * et, 1), 1)
    left = np.maximum(window_s - (dense_all - dense_exp), 0.0)
    exp_all, exp_exp = _dp_comm(pb, kn, e * et, edp, z, m, odp, np.zeros_like(sg), params[1], left,
                                compute, stage_layers, lt)
    has = params[1] > 0
    return (np.asarray(dense_all + np.where(has, exp_all, 0.0), dtype=float),
            np.asarray(dense_exp + np.where(has, exp_exp, 0.0), dtype=float))


def _offload_s(pb: Problem, stored: Vec, stage_layers: Vec, m: Vec, aoff: Vec, lt: LayerTimes) -> Vec:
    """Exposed activation-offload copies: each stored layer goes to host under the next layer's
    forward and comes back under the previous layer's backward."""
    copy_s = stored / PCIE_BW
    per_layer = np.maximum(copy_s - lt.fwd_s, 0.0) + np.maximum(copy_s - lt.bwd_s, 0.0)
    return np.asarray(np.where(aoff > 0, m * stage_layers * per_layer, 0.0), dtype=float)


def _io(pb: Problem, held: Vec, used: Vec) -> Vec:
    state_b = held * (WEIGHT_BYTES + OPTIMIZER_BYTES)
    per_write = np.where(pb.ckpt_async > 0, state_b / PCIE_COPY_BW,
                         state_b * used / np.maximum(pb.storage_bw, 1.0))
    ckpt = np.where(pb.ckpt_interval > 0, per_write / np.maximum(pb.ckpt_interval, 1), 0.0)
    return np.asarray(ckpt + pb.data_stall_s, dtype=float)


def _straggler_z(n_gpus: Vec) -> Vec:
    """expected_max_z of each plan's GPU count, computed once per distinct count (a search's
    plans share one or a few)."""
    flat = np.atleast_1d(n_gpus).ravel()
    if flat.size == 0:
        return np.zeros(np.shape(n_gpus))
    ordered = np.sort(flat)
    distinct = ordered[np.r_[True, ordered[1:] != ordered[:-1]]]
    z = np.array([expected_max_z(float(n)) for n in distinct.tolist()])
    return z[np.searchsorted(distinct, flat)].reshape(np.shape(n_gpus))


def _held(plans: Plans, pb: Problem, dense: Vec, expert: Vec) -> Vec:
    """Weights whose optimizer state this GPU updates (the distributed optimizer shards both
    parts over their data-parallel groups)."""
    dpc = plans.dp * plans.cp
    edp = np.maximum(plans.tp * dpc / np.maximum(plans.ep * plans.etp, 1), 1)
    sharded = plans.zero_stage >= 1
    held = np.where(sharded, dense / np.maximum(dpc, 1) + expert / edp, dense + expert)
    return np.asarray(held * (1.0 - pb.frozen), dtype=float)


def _slowest_stage(pb: Problem, p: Vec, layer_s: Vec, head_s: Vec, ul: Vec) -> tuple[Vec, Vec]:
    """(layers of the slowest pipeline stage, whether it is the last one carrying the head).

    Even stages hold ceil(L/p) layers, the last adding the output layer and the MTP modules. When
    L is not a multiple of p, Megatron's first and last stages hold one layer fewer each
    (memory.end_stage_layers). A plan that lays the stages out freely (``ul``: a stated pipeline
    layout, or the search on a stack with uneven stages) balances the last stage: it holds x
    layers and the others share the rest, x = (L t - (p-1) h) / (p t) balancing x t + h against
    the middle stages' ceil((L-x)/(p-1)) t (DeepSeek-V3's last stage holds one layer with the MTP
    module and the loss)."""
    layers = pb.layers
    even_n = np.ceil(layers / p)
    tau = np.maximum(layer_s, 1e-12)
    _, last_n = end_stage_layers(pb, p, even_n)
    best_t = np.maximum(last_n * tau + head_s, even_n * tau)
    best_last = last_n * tau + head_s >= even_n * tau
    best_n = np.where(best_last, last_n, even_n)
    free = (ul > 0) & (p > 1)
    x0 = (layers * tau - (p - 1) * head_s) / (p * tau)
    for x in (np.floor(x0), np.ceil(x0)):
        x = np.clip(x, 0.0, even_n)
        middle = np.ceil((layers - x) / np.maximum(p - 1, 1))
        t_last, t_mid = x * tau + head_s, middle * tau
        t = np.maximum(t_last, t_mid)
        better = free & (t < best_t)
        best_t = np.where(better, t, best_t)
        best_n = np.where(better, np.where(t_last >= t_mid, x, middle), best_n)
        best_last = np.where(better, t_last >= t_mid, best_last)
    return np.asarray(best_n, dtype=float), np.asarray(best_last, dtype=bool)


def pipeline_bubble_s(p: Vec, v: Vec, ps: Vec, chunk_s: Vec) -> Vec:
    """Fill and drain of one step; ``chunk_s`` is one micro-batch's forward + backward through a
    stage. (Interleaved) 1F1B: (p-1)/v chunks. DualPipe (``ps`` 1; DeepSeek-V3 report, Table 2):
    (p/2-1)(F&B + B - 3W), where F&B, a forward and a backward chunk overlapped, lasts F + B and
    the input-gradient (B) and weight-gradient (W) halves of the backward each cost a forward:
    (p/2-1)(F + B)/3."""
    one_f_one_b = (p - 1) / v * chunk_s
    dualpipe = np.maximum(p / 2.0 - 1.0, 0.0) * chunk_s / 3.0
    return np.asarray(np.where(ps == 1, dualpipe, one_f_one_b), dtype=float)


def evaluate(pb: Problem, kn: CoreKnobs, plan: PlanArrays) -> dict[str, Any]:
    """Evaluate arrays of plans (one entry per plan, see PlanArrays). Returns a dict of arrays."""
    plans = Plans.of(plan, pb.tp_overlap_ok)
    t, p, d, c, e, v, b = plans.tp, plans.pp, plans.dp, plans.cp, plans.ep, plans.vpp, plans.micro_batch
    tp_overlap = plans.tp_comm_overlap > 0
    used = t * p * d * c
    m = pb.batch / (b * d)
    stage_layers = np.ceil(pb.layers / p)
    moe_share = moe_layers_in(pb, stage_layers) / np.maximum(stage_layers, 1)
    full_share = recompute_fraction(plans.recompute, plans.recompute_layers, stage_layers)
    lt = _layer_times(pb, kn, plans, full_share, moe_share)
    cm = _layer_comm(pb, kn, plans, lt, moe_share)
    logit = logits_time(pb, kn, t, c, b) * (1.0 + pb.mtp)
    # The last stage also runs the multi-token-prediction modules (a layer each).
    mtp = pb.mtp * np.where(pb.moe_layers > 0, lt.gpu_moe_s, lt.gpu_s)
    head = logit + mtp
    # A layer takes the longer of its GPU stream and its host's launches (smoothly). Comm that
    # overlaps compute (TP comm overlap, the CP ring) also fills a launch-bound layer's idle GPU
    # time; a serial collective (plain TP all-reduce, EP all-to-all, CP all-to-all or
    # all-gather) is a barrier across its ranks, whose hosts are not in step: it adds after, as
    # does the MoE dispatcher's host synchronisation.
    cp_ring = cm.cp_exposed_s * (1.0 - cm.cp_serial)
    overlapped = np.where(tp_overlap, cm.tp_exposed_s, 0.0) + cp_ring
    serial = (np.where(tp_overlap, 0.0, cm.tp_exposed_s) + cm.ep_exposed_s
              + cm.cp_exposed_s * cm.cp_serial + lt.moe_host_s)
    stream_l = lt.gpu_s + overlapped
    wall_l = smooth_max(stream_l, lt.host_s) + serial
    # The slowest pipeline stage paces the step: the last one carries the output layer (and the
    # MTP modules); where the stack lays stages out freely it holds fewer layers (balanced).
    n_slow, last = _slowest_stage(pb, p, wall_l, head, plans.uneven_stages)
    t_mb_gpu = np.where(last, n_slow * lt.gpu_s + head, n_slow * lt.gpu_s)
    compute = m * t_mb_gpu
    mem, dense_p, expert_p = gpu_memory(pb, t, p, d, c, e, v, b, plans.zero_stage, plans.recompute,
                                        plans.sequence_parallel, m, stage_layers, plans.activation_offload,
                                        plans.fsdp_shard_group, full_share, plans.etp, plans.recompute_modules,
                                        plans.moe_dispatcher, plans.pipeline_schedule)
    bw_up, bw_nic = _bandwidths(pb, kn)
    pp_bytes = b * pb.seq / c * pb.hidden * ACT_BYTES / t
    # Megatron pairs each send with the opposite receive in one batched NCCL call: two per
    # micro-batch (forward activation, backward gradient), in the fill and drain as well.
    p2p = col.send_recv_s(pp_bytes, t * c * d >= pb.gpn, bw_up, bw_nic, pb.lat_net)
    # Fill and drain run the other stages' micro-batches; the logits (last stage) sit in the
    # steady state, which the slowest (last) stage paces.
    bubble = pb.flushes * pipeline_bubble_s(p, v, plans.pipeline_schedule, stage_layers * wall_l)
    # Bucketed DP comm hides under the last micro-batch's backward and the first one's forward,
    # and in the pipeline's fill and drain, where this stage waits on the others.
    dp_all, dp_exposed = _dp_both(pb, kn, plans, m, (dense_p, expert_p), t_mb_gpu + bubble, compute,
                                  stage_layers, lt)
    held = _held(plans, pb, dense_p, expert_p)
    stored, _ = layer_activation_bytes(pb, t, c, b, plans.recompute, plans.sequence_parallel, full_share,
                                       plans.recompute_modules, moe_share, plans.moe_dispatcher)
    layer_steps = m * n_slow
    terms: dict[str, Vec] = {
        "compute_s": compute,
        "overhead_s": np.asarray(layer_steps * (wall_l - stream_l - serial + lt.moe_host_s), dtype=float),
        "tp_comm_s": np.asarray(layer_steps * cm.tp_exposed_s, dtype=float),
        "pp_comm_s": np.asarray(np.where(p > 1, 2.0 * (v * m + pb.flushes * (p - 1)) * p2p, 0.0), dtype=float),
        "dp_comm_exposed_s": dp_exposed,
        "ep_comm_s": np.asarray(layer_steps * cm.ep_exposed_s, dtype=float),
        "cp_comm_s": np.asarray(layer_steps * cm.cp_exposed_s, dtype=float),
        "optimizer_s": np.asarray(held * OPTIMIZER_STEP_BYTES * kn.membound_factor / pb.hbm_bw, dtype=float),
        "bubble_s": bubble,
        "io_s": _io(pb, held, used) + _offload_s(pb, stored, stage_layers, m, plans.activation_offload, lt),
    }
    mu = sum(terms.values())
    terms["straggler_s"] = np.asarray(mu * kn.step_time_cv * _straggler_z(used * np.ones_like(mu)),
                                      dtype=float)
    step = mu + terms["straggler_s"]
    overlapped_dp = (plans.overlap_grad_reduce > 0) | (plans.zero_stage >= 2)
    ep_overlap = plans.a2a_overlap > 0
    terms["comm_overlappable_s"] = np.asarray(np.where(overlapped_dp, dp_all, 0.0) + layer_steps * (
        np.where(tp_overlap, cm.tp_s, 0.0) + cm.cp_s * (1.0 - cm.cp_serial)
        + np.where(ep_overlap, cm.ep_s, 0.0)), dtype=float)
    terms["comm_exposed_s"] = np.asarray(np.where(overlapped_dp, dp_exposed, 0.0) + layer_steps * (
        cp_ring + np.where(ep_overlap, cm.ep_exposed_s, 0.0))
        + np.where(tp_overlap, terms["tp_comm_s"], 0.0), dtype=float)
    terms["ep_comm_total_s"] = np.asarray(layer_steps * cm.ep_s, dtype=float)
    return {
        "step_time_s": step,
        "mu_s": mu,
        "terms": terms,
        "memory": mem,
        "feasible": mem["total"] <= pb.hbm_bytes,
        "fits_with_headroom": mem["total"] + SEARCH_HEADROOM_FRACTION * pb.hbm_bytes <= pb.hbm_bytes,
        "m": m,
        "stage_layers": stage_layers,
        "used_gpus": used,
    }
