"""Per-layer compute time of one micro-batch on one GPU, for arrays of plans.

GEMMs: time = F / (peak * eta), eta = top * curve(F / peak): the achievable fraction of peak
falls for small GEMMs (launch latency, wave quantisation, pipeline prologue). The curve's abscissa
is the GEMM's ideal time at peak, so one shape transfers between accelerators of different speed.

Precision: under fp8 only the linear layers' GEMMs (QKV, attention output, MLP) run at the fp8
peak and the fp8 ceiling; the attention core (FlashAttention/cuDNN, bf16), the LM head (unless
the recipe says otherwise) and the MoE router stay 16-bit. Each fp8 GEMM input is cast (amax,
scale, cast and the transposed copy for the weight gradient): memory-bound traffic counted below.

Memory-bound kernels (layernorm, bias-dropout-add, activation, softmax of an unfused attention,
rotary/transposes, fp8 casts): a physical count of element accesses per forward pass (below), x 2
bytes, x ``membound_factor`` (fitted; it absorbs achieved-vs-peak HBM bandwidth and kernel
details), over HBM bandwidth. The backward moves about twice the forward's bytes.

Host overhead: Python/PyTorch launch time per layer per forward-equivalent pass
(``launch_overhead_s``). A GPU runs ahead of its host only while its queue is full, so the layer
takes the smooth maximum of GPU time and host time: small models are launch-bound.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from procure.model.attention import attention_efficiency
from procure.model.problem import ACT_BYTES, CoreKnobs, Problem

Vec = npt.NDArray[np.float64]

SMOOTH_MAX_P = 4.0
# Element accesses per forward pass per token, in units of the (possibly SP-sharded) hidden:
# 2 layernorms (read + write) = 4, 2 fused bias-dropout-adds (read x, read residual, write,
# 1-byte mask) = 7.
ELEMWISE_HIDDEN_ACCESSES = 11.0
# Scale-mask-softmax (read + write) + dropout (read, write, 1-byte mask) of the s x s scores.
SCORE_ACCESSES = 4.5
LOGIT_ACCESSES = 8.0           # fp32 cross entropy over the vocab shard, forward and backward


def curve_fraction(ideal_s: Any, kn: CoreKnobs) -> Vec:
    """The GEMM-size curve at log10(ideal seconds): one curve, or one per row (2-D knobs)."""
    x = np.log10(np.maximum(np.asarray(ideal_s, dtype=float), 1e-12))
    xp, fp = kn.curve_log_t, kn.curve_frac
    if xp.ndim == 1:
        return np.asarray(np.interp(x, xp, fp), dtype=float)
    x = np.broadcast_to(x, xp.shape[:1])
    x = np.clip(x, xp[:, 0], xp[:, -1])
    j = np.clip((x[:, None] >= xp[:, 1:-1]).sum(axis=1), 0, xp.shape[1] - 2)
    rows = np.arange(xp.shape[0])
    x0, x1, f0, f1 = xp[rows, j], xp[rows, j + 1], fp[rows, j], fp[rows, j + 1]
    w = np.where(x1 > x0, (x - x0) / np.where(x1 > x0, x1 - x0, 1.0), 0.0)
    return np.asarray(f0 + w * (f1 - f0), dtype=float)


def gemm_efficiency(flops: Any, peak: Any, kn: CoreKnobs, top: Any = None) -> Vec:
    ideal_s = np.maximum(flops / peak, 1e-12)
    return np.asarray((kn.gemm_top if top is None else top) * curve_fraction(ideal_s, kn), dtype=float)


def gemm_time_s(flops: Any, peak: Any, kn: CoreKnobs, flops_for_eff: Any = None, top: Any = None) -> Vec:
    """Time of a GEMM of ``flops``; ``flops_for_eff`` is the size of one GEMM when ``flops`` is
    the total of several equal ones (MoE experts); ``top`` the precision's top (16-bit default)."""
    size = flops if flops_for_eff is None else flops_for_eff
    return np.asarray(flops / (peak * gemm_efficiency(size, peak, kn, top)), dtype=float)


def linear_time_s(flops: Any, pb: Problem, kn: CoreKnobs, flops_for_eff: Any = None) -> Vec:
    """A linear layer's GEMM: at the fp8 peak and top under fp8, else 16-bit."""
    return gemm_time_s(flops, pb.lin_peak, kn, flops_for_eff, kn.gemm_top_lin)


def smooth_max(a: Any, b: Any, p: float = SMOOTH_MAX_P) -> Vec:
    hi = np.maximum(np.maximum(a, b), 1e-30)
    return np.asarray(hi * ((a / hi) ** p + (b / hi) ** p) ** (1.0 / p), dtype=float)


def attention_core_s(pb: Problem, kn: CoreKnobs, t: Vec, c: Vec, b: Vec) -> Vec:
    """Forward of the attention scores and values, always 16-bit.

    Flash: the causal FLOP count at attention.py's efficiency. Unfused (Megatron 2020-22): the
    full s x s batched GEMMs at the plain GEMM efficiency (softmax traffic is counted in mem_s)."""
    heads_loc = pb.heads / t
    full = 2 * 2 * b * heads_loc * (pb.seq / c) * pb.seq * pb.head_dim
    flash_flops = 0.5 * full
    eta_flash = attention_efficiency(pb.seq, pb.head_dim, c, kn.gemm_top, kn.attention_ratio,
                                     pb.attn_kernel) * curve_fraction(flash_flops / pb.peak, kn)
    flash_s = flash_flops / (pb.peak * eta_flash)
    unfused_s = gemm_time_s(full, pb.peak, kn)
    return np.asarray(np.where(pb.flash > 0, flash_s, unfused_s), dtype=float)


def layer_forward(pb: Problem, kn: CoreKnobs, t: Vec, c: Vec, b: Vec, sp: Vec, e: Vec,
                  moe: bool) -> dict[str, Vec]:
    """Forward pass of one layer for one micro-batch: dict of seconds.

    ``moe`` False: the dense layer; True: an MoE layer (routed experts + shared + router).
    Returns gemm_s (all GEMMs), core_s (attention scores/values), mem_s (memory-bound kernels),
    score_mem_s (the s x s part of mem_s, recomputed by selective recompute).
    """
    h = pb.hidden
    q = pb.heads * pb.head_dim
    h_kv = pb.kv_heads * pb.head_dim
    tok = b * pb.seq / c
    qkv = linear_time_s(2 * tok * h * (q + 2 * h_kv) / t, pb, kn)
    proj = linear_time_s(2 * tok * q * h / t, pb, kn)
    core = attention_core_s(pb, kn, t, c, b)
    if moe:
        local = np.maximum(pb.experts / np.maximum(e, 1), 1)   # experts per GPU
        routed_flops = 2 * tok * pb.top_k * pb.capacity * h * pb.expert_ffn * pb.mlp_mats / t
        mlp = linear_time_s(routed_flops, pb, kn, routed_flops / local)
        shared = 2 * tok * pb.shared_experts * h * pb.expert_ffn * pb.mlp_mats / t
        mlp = mlp + np.where(shared > 0, linear_time_s(np.maximum(shared, 1.0), pb, kn), 0.0)
        mlp = mlp + gemm_time_s(2 * tok * h * np.maximum(pb.experts, 1), pb.peak, kn)   # router
        width = (pb.top_k * pb.capacity + pb.shared_experts) * pb.expert_ffn
    else:
        fc1 = 2 * tok * h * pb.ffn * (pb.mlp_mats - 1) / t
        fc2 = 2 * tok * h * pb.ffn / t
        mlp = linear_time_s(fc1, pb, kn) + linear_time_s(fc2, pb, kn)
        width = pb.ffn
    sp_div = np.where(sp > 0, t, 1.0)
    accesses = (ELEMWISE_HIDDEN_ACCESSES * tok * h / sp_div
                + 2 * tok * (q + 2 * h_kv) / t + 2 * tok * q / t      # rotary/QKV split, attn out
                + np.where(pb.mlp_mats == 3, 3.0, 2.0) * tok * width / t)  # activation function
    # fp8 casts of the four linear inputs (QKV and fc1 inputs, attention output, fc2 input).
    cast = pb.fp8_cast * tok * (2 * h + q + width) / t
    score_acc = (1 - pb.flash) * SCORE_ACCESSES * b * (pb.heads / t) * (pb.seq / c) * pb.seq
    per_byte = kn.membound_factor * ACT_BYTES / pb.hbm_bw
    mlp_in = mlp * np.where(pb.mlp_mats == 3, 2.0 / 3.0, 0.5) if moe else linear_time_s(fc1, pb, kn)
    return {
        "gemm_s": np.asarray(qkv + proj + core + mlp, dtype=float),
        "core_s": core,
        "mlp_in_s": np.asarray(mlp_in, dtype=float),
        "qkv_s": np.asarray(qkv, dtype=float),
        "mem_s": np.asarray((accesses + cast + score_acc) * per_byte, dtype=float),
        "score_mem_s": np.asarray(score_acc * per_byte, dtype=float),
    }


def logits_time(pb: Problem, kn: CoreKnobs, t: Vec, c: Vec, b: Vec) -> Vec:
    """Forward + backward of the output layer and cross entropy (never recomputed): gpu seconds.
    16-bit unless the recipe runs the LM head in fp8; a frozen (LoRA) head has no weight gradient."""
    tok = b * pb.seq / c
    flops = 2 * tok * pb.hidden * pb.vocab / t
    gemm = np.where(pb.fp8_head > 0, linear_time_s(flops, pb, kn), gemm_time_s(flops, pb.peak, kn))
    mem = kn.membound_factor * LOGIT_ACCESSES * 4.0 * tok * pb.vocab / t / pb.hbm_bw
    return np.asarray((3.0 - pb.frozen) * gemm + mem, dtype=float)
