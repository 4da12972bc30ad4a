"""Per-layer compute time of one micro-batch on one GPU, for arrays of plans.

GEMMs: time = F / (peak * eta), eta = gemm_top * curve(F / peak): the achievable fraction of peak
falls for small GEMMs (launch latency, wave quantisation, pipeline prologue). The curve's abscissa
is the GEMM's ideal time at peak, so one shape transfers between accelerators of different speed.

Memory-bound kernels (layernorm, bias-dropout-add, activation, softmax of an unfused attention,
rotary/transposes): a physical count of element accesses per forward pass (below), x 2 bytes,
x ``membound_factor`` (fitted; it absorbs achieved-vs-peak HBM bandwidth and kernel details),
over HBM bandwidth. The backward moves about twice the forward's bytes.

Host overhead: Python/PyTorch launch time per layer per forward-equivalent pass
(``launch_overhead_s``). A GPU runs ahead of its host only while its queue is full, so the layer
takes the smooth maximum of GPU time and host time: small models are launch-bound.
"""

from __future__ import annotations

import numpy as np

from procure.model.problem import ACT_BYTES

SMOOTH_MAX_P = 4.0
# Element accesses per forward pass per token, in units of the (possibly SP-sharded) hidden:
# 2 layernorms (read + write) = 4, 2 fused bias-dropout-adds (read x, read residual, write,
# 1-byte mask) = 7.
ELEMWISE_HIDDEN_ACCESSES = 11.0
# Scale-mask-softmax (read + write) + dropout (read, write, 1-byte mask) of the s x s scores.
SCORE_ACCESSES = 4.5
LOGIT_ACCESSES = 8.0           # fp32 cross entropy over the vocab shard, forward and backward
# A fused (flash) attention kernel reaches a lower fraction of peak than a cuBLAS GEMM of the same
# work: FlashAttention-2 (Dao 2023) reports 50-73% of A100 peak forward+backward where large
# GEMMs reach ~85%; FlashAttention-3 on H100 75% forward. 0.75 of the GEMM efficiency.
FLASH_EFFICIENCY_RATIO = 0.75


def gemm_efficiency(flops, peak, kn):
    ideal_s = np.maximum(flops / peak, 1e-12)
    frac = np.interp(np.log10(ideal_s), kn.curve_log_t, kn.curve_frac)
    return kn.gemm_top * frac


def gemm_time_s(flops, peak, kn, flops_for_eff=None):
    """Time of a GEMM of ``flops``; ``flops_for_eff`` is the size of one GEMM when ``flops`` is
    the total of several equal ones (MoE experts)."""
    size = flops if flops_for_eff is None else flops_for_eff
    return flops / (peak * gemm_efficiency(size, peak, kn))


def smooth_max(a, b, p=SMOOTH_MAX_P):
    hi = np.maximum(np.maximum(a, b), 1e-30)
    return hi * ((a / hi) ** p + (b / hi) ** p) ** (1.0 / p)


def layer_forward(pb, kn, t, c, b, sp, e, moe):
    """Forward pass of one layer for one micro-batch: dict of seconds.

    ``moe`` False: the dense layer; True: an MoE layer (routed experts + shared + router).
    Returns gemm_s (all GEMMs), core_s (attention scores/values GEMMs), mem_s (memory-bound
    kernels), score_mem_s (the s x s part of mem_s, recomputed by selective recompute).
    """
    h = pb.hidden
    hd = h / pb.heads
    h_kv = pb.kv_heads * hd
    tok = b * pb.seq / c
    peak = pb.peak
    qkv = gemm_time_s(2 * tok * h * (h + 2 * h_kv) / t, peak, kn)
    proj = gemm_time_s(2 * tok * h * h / t, peak, kn)
    core_frac = np.where(pb.flash > 0, 0.5, 1.0)        # flash skips masked causal blocks
    core_flops = 2 * 2 * b * (pb.heads / t) * (pb.seq / c) * pb.seq * hd * core_frac
    core = gemm_time_s(core_flops, peak, kn) / np.where(pb.flash > 0, FLASH_EFFICIENCY_RATIO, 1.0)
    if moe:
        local = np.maximum(pb.experts / np.maximum(e, 1), 1)   # experts per GPU
        routed_flops = 2 * tok * pb.top_k * pb.capacity * h * pb.expert_ffn * pb.mlp_mats / t
        mlp = gemm_time_s(routed_flops, peak, kn, routed_flops / local)
        shared = 2 * tok * pb.shared_experts * h * pb.expert_ffn * pb.mlp_mats / t
        mlp = mlp + np.where(shared > 0, gemm_time_s(np.maximum(shared, 1.0), peak, kn), 0.0)
        mlp = mlp + gemm_time_s(2 * tok * h * np.maximum(pb.experts, 1), peak, kn)
        width = (pb.top_k * pb.capacity + pb.shared_experts) * pb.expert_ffn
    else:
        fc1 = 2 * tok * h * pb.ffn * (pb.mlp_mats - 1) / t
        fc2 = 2 * tok * h * pb.ffn / t
        mlp = gemm_time_s(fc1, peak, kn) + gemm_time_s(fc2, peak, kn)
        width = pb.ffn
    sp_div = np.where(sp, t, 1.0)
    accesses = (ELEMWISE_HIDDEN_ACCESSES * tok * h / sp_div
                + 2 * tok * (h + 2 * h_kv) / t + 2 * tok * h / t       # rotary/QKV split, attn out
                + np.where(pb.mlp_mats == 3, 3.0, 2.0) * tok * width / t)  # activation function
    score_acc = (1 - pb.flash) * SCORE_ACCESSES * b * (pb.heads / t) * (pb.seq / c) * pb.seq
    per_byte = kn.membound_factor * ACT_BYTES / pb.hbm_bw
    return {
        "gemm_s": qkv + proj + core + mlp,
        "core_s": core,
        "mem_s": (accesses + score_acc) * per_byte,
        "score_mem_s": score_acc * per_byte,
    }


def logits_time(pb, kn, t, c, b):
    """Forward + backward of the output layer and cross entropy (never recomputed): (gpu_s)."""
    tok = b * pb.seq / c
    gemm = gemm_time_s(2 * tok * pb.hidden * pb.vocab / t, pb.peak, kn)
    mem = kn.membound_factor * LOGIT_ACCESSES * 4.0 * tok * pb.vocab / t / pb.hbm_bw
    return 3.0 * gemm + mem
