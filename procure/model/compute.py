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

from procure.model.attention import REFERENCE_CALL_S, attention_efficiency
from procure.model.problem import ACT_BYTES, CoreKnobs, Problem, attn_in_at, kv_width_at, moe_load

Vec = npt.NDArray[np.float64]

SMOOTH_MAX_P = 4.0
# Element accesses per forward pass per token, in units of the (possibly SP-sharded) hidden:
# 2 layernorms (read + write) = 4, 2 fused bias-dropout-adds (read x, read residual, write,
# 1-byte mask) = 7.
ELEMWISE_HIDDEN_ACCESSES = 11.0
# Scale-mask-softmax (read + write) + dropout (read, write, 1-byte mask) of the s x s scores.
SCORE_ACCESSES = 4.5
LOGIT_ACCESSES = 8.0           # fp32 cross entropy over the vocab shard, forward and backward
NORM_ACCESSES = 4.0            # two layernorms (read + write) of ELEMWISE_HIDDEN_ACCESSES
# MoE permute (read a token, write its top-k copies in expert order) and unpermute (read the k
# expert outputs, write the prob-weighted sum): in units of (tokens + routed copies) x hidden.
PERMUTE_ACCESSES = 2.0
# Router: fp32 logits written and read by the softmax/sigmoid and top-k (2-byte units).
ROUTER_ACCESSES = 8.0
EXPERT_TILE_ROWS = 128.0       # M tile of the grouped GEMM kernels (CUTLASS/cuBLAS, TE)


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


def attention_curve(ideal_s: Any, kn: CoreKnobs) -> Vec:
    """The size curve for an attention call, relative to the size at which ``attention_ratio`` was
    measured (attention.REFERENCE_CALL_S: that measurement already includes the curve's effect
    there), never above 1: a short call loses what a short GEMM loses, a long one gains nothing."""
    ref = curve_fraction(REFERENCE_CALL_S, kn)
    return np.asarray(np.minimum(1.0, curve_fraction(ideal_s, kn) / ref), dtype=float)


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
    """Forward of the attention scores and values, always 16-bit, averaged over the layers.

    Flash: the causal FLOP count at attention.py's efficiency; local-attention layers (sliding
    window, chunks) run their window's keys at the local kernel's efficiency. Unfused (Megatron
    2020-22): the full s x s batched GEMMs at the plain GEMM efficiency (softmax traffic is counted
    in mem_s)."""
    per_key = 2 * b * (pb.seq / c) * (pb.qk_width + pb.v_width) / t
    full = per_key * pb.seq
    flash_flops = 0.5 * full
    eta_flash = attention_efficiency(pb.seq, pb.head_dim, c, kn.gemm_top, kn.attention_ratio,
                                     pb.attn_kernel) * attention_curve(flash_flops / pb.peak, kn)
    flash_s = flash_flops / (pb.peak * eta_flash)
    if np.any(np.asarray(pb.win_size) > 0):         # most models have no local-attention layers
        flash_s = np.where(pb.win_size > 0, pb.win_global * flash_s + (1 - pb.win_global)
                           * _local_attention_s(pb, kn, per_key, c), flash_s)
    unfused_s = gemm_time_s(full, pb.peak, kn)
    return np.asarray(np.where(pb.flash > 0, flash_s, unfused_s), dtype=float)


def _local_attention_s(pb: Problem, kn: CoreKnobs, per_key: Vec, c: Vec) -> Vec:
    """A local-attention layer's core: its window's keys (a chunk's: half of it on average) at the
    local kernel's efficiency."""
    w = np.minimum(np.maximum(pb.win_size, 1.0), pb.seq)
    keys = np.where(pb.win_chunked > 0, w / 2.0, w - w * w / (2.0 * pb.seq))
    local_flops = per_key * keys
    eta_local = attention_efficiency(pb.seq, pb.head_dim, c, kn.gemm_top, kn.attention_ratio,
                                     pb.attn_kernel, w, pb.win_chunked) * attention_curve(
                                         local_flops / pb.peak, kn)
    return np.asarray(local_flops / (pb.peak * eta_local), dtype=float)


def expert_gemm_s(flops: Any, rows: Any, pb: Problem, kn: CoreKnobs) -> Vec:
    """A grouped expert GEMM (all of this GPU's experts in one kernel): ``flops`` in all, ``rows``
    tokens per expert. Each expert's rows are padded to whole tiles of EXPERT_TILE_ROWS (half a
    tile wasted on average, a whole tile at least), so the kernel runs the padded work; its launch
    and wave effects follow the whole grouped GEMM's padded size (the GEMM curve), and
    ``grouped_gemm_scale`` is what the grouped kernel keeps of a plain GEMM's efficiency. More
    tokens never take less time."""
    r = np.maximum(np.asarray(rows, dtype=float), 1e-9)
    padded = flops * np.maximum(r + 0.5 * EXPERT_TILE_ROWS, EXPERT_TILE_ROWS) / r
    padded = np.where(np.asarray(rows, dtype=float) > 0, padded, flops)
    eff = gemm_efficiency(np.maximum(padded, 1.0), pb.lin_peak, kn, kn.gemm_top_lin)
    return np.asarray(padded / (pb.lin_peak * eff * kn.grouped_gemm_scale), dtype=float)


def _moe_mlp(pb: Problem, kn: CoreKnobs, tok: Vec, t: Vec, e: Vec, et: Vec) -> dict[str, Vec]:
    """The MoE block of one layer: routed experts (grouped GEMMs), shared experts (a dense TP MLP),
    the router, and their memory-bound kernels (permute/unpermute, activation, router softmax)."""
    h = pb.hidden
    tok_e = tok / t                          # SP-sharded tokens each rank routes
    load = tok_e * moe_load(pb)
    rows = load * np.maximum(e, 1) * et / np.maximum(pb.experts, 1)     # per local expert
    fc1 = 2 * load * h * (pb.mlp_mats - 1) * pb.expert_ffn
    fc2 = 2 * load * h * pb.expert_ffn
    routed = expert_gemm_s(fc1, rows, pb, kn) + expert_gemm_s(fc2, rows, pb, kn)
    shared_f = 2 * tok * h * pb.shared_ffn / t
    shared = np.where(pb.shared_ffn > 0, linear_time_s(np.maximum(shared_f * (pb.mlp_mats - 1), 1.0), pb, kn)
                      + linear_time_s(np.maximum(shared_f, 1.0), pb, kn), 0.0)
    router = gemm_time_s(2 * tok_e * h * np.maximum(pb.experts, 1), pb.peak, kn)
    act = np.where(pb.mlp_mats == 3, 3.0, 2.0)
    per_byte = kn.membound_factor * ACT_BYTES / pb.hbm_bw
    routed_mem = (PERMUTE_ACCESSES * (tok_e + load) * h + act * load * pb.expert_ffn
                  + ROUTER_ACCESSES * tok_e * np.maximum(pb.experts, 1)
                  + pb.fp8_cast * load * (h + pb.expert_ffn)) * per_byte
    shared_mem = (act * tok * pb.shared_ffn / t + pb.fp8_cast * tok * (h + pb.shared_ffn) / t) * per_byte
    return {"routed_s": np.asarray(routed + router, dtype=float), "shared_s": np.asarray(shared, dtype=float),
            "routed_mem_s": np.asarray(routed_mem, dtype=float),
            "shared_mem_s": np.asarray(shared_mem, dtype=float),
            "act_mem_s": np.asarray(act * load * pb.expert_ffn * per_byte, dtype=float)}


def layer_forward(pb: Problem, kn: CoreKnobs, t: Vec, c: Vec, b: Vec, sp: Vec, e: Vec,
                  moe: bool, et: Any = 1.0) -> dict[str, Vec]:
    """Forward pass of one layer for one micro-batch: dict of seconds.

    ``moe`` False: the dense layer; True: an MoE layer (routed experts + shared + router).
    Returns gemm_s (all GEMMs), core_s (attention scores/values), mem_s (memory-bound kernels),
    score_mem_s (the s x s part of mem_s, recomputed by selective recompute), and the parts
    selective recomputation by module re-runs: mlp_s (the MLP block: dense, or routed + shared
    experts with their kernels), mlp_in_s, qkv_s, mla_up_s, act_s (the experts' or the MLP's
    activation function), norm_s (the layernorms).
    """
    h = pb.hidden
    tok = b * pb.seq / c
    qkv = linear_time_s(2 * tok * attn_in_at(pb, t) / t, pb, kn)
    proj = linear_time_s(2 * tok * pb.attn_out / t, pb, kn)
    mla_up = np.where(pb.mla_up > 0, linear_time_s(np.maximum(2 * tok * pb.mla_up / t, 1.0), pb, kn), 0.0)
    core = attention_core_s(pb, kn, t, c, b)
    sp_div = np.where(sp > 0, t, 1.0)
    per_byte = kn.membound_factor * ACT_BYTES / pb.hbm_bw
    norm = NORM_ACCESSES * tok * h / sp_div * per_byte
    attn_acc = (ELEMWISE_HIDDEN_ACCESSES - NORM_ACCESSES) * tok * h / sp_div \
        + 2 * tok * (pb.qk_width + kv_width_at(pb, t)) / t + 2 * tok * pb.v_width / t     # rotary/QKV split, attn out
    # fp8 casts of the attention linears' inputs (QKV input, attention output).
    attn_cast = pb.fp8_cast * tok * (h + pb.v_width) / t
    score_acc = (1 - pb.flash) * SCORE_ACCESSES * b * (pb.heads / t) * (pb.seq / c) * pb.seq
    attn_mem = (attn_acc + attn_cast + score_acc) * per_byte + norm
    if moe:
        parts = _moe_mlp(pb, kn, tok, t, e, np.asarray(et, dtype=float))
        mlp = parts["routed_s"] + parts["shared_s"]
        mlp_mem = parts["routed_mem_s"] + parts["shared_mem_s"]
        mlp_in = mlp * np.where(pb.mlp_mats == 3, 2.0 / 3.0, 0.5)
        act_s = parts["act_mem_s"]
    else:
        fc1 = 2 * tok * h * pb.ffn * (pb.mlp_mats - 1) / t
        fc2 = 2 * tok * h * pb.ffn / t
        mlp_in = linear_time_s(fc1, pb, kn)
        mlp = mlp_in + linear_time_s(fc2, pb, kn)
        act_s = np.where(pb.mlp_mats == 3, 3.0, 2.0) * tok * pb.ffn / t * per_byte
        mlp_mem = act_s + pb.fp8_cast * tok * (h + pb.ffn) / t * per_byte
    return {
        "gemm_s": np.asarray(qkv + proj + core + mlp, dtype=float),
        "core_s": core,
        "mlp_in_s": np.asarray(mlp_in, dtype=float),
        "qkv_s": np.asarray(qkv, dtype=float),
        "mem_s": np.asarray(attn_mem + mlp_mem, dtype=float),
        "score_mem_s": np.asarray(score_acc * per_byte, dtype=float),
        "mlp_s": np.asarray(mlp + mlp_mem, dtype=float),
        "mla_up_s": np.asarray(mla_up, dtype=float),
        "act_s": np.asarray(act_s, dtype=float),
        "norm_s": np.asarray(norm, dtype=float),
    }


def logits_time(pb: Problem, kn: CoreKnobs, t: Vec, c: Vec, b: Vec) -> Vec:
    """Forward + backward of the output layer and cross entropy (never recomputed): gpu seconds.
    16-bit unless the recipe runs the LM head in fp8; a frozen (LoRA) head has no weight gradient."""
    tok = b * pb.seq / c
    flops = 2 * tok * pb.hidden * pb.vocab / t
    gemm = np.where(pb.fp8_head > 0, linear_time_s(flops, pb, kn), gemm_time_s(flops, pb.peak, kn))
    mem = kn.membound_factor * LOGIT_ACCESSES * 4.0 * tok * pb.vocab / t / pb.hbm_bw
    return np.asarray((3.0 - pb.frozen) * gemm + mem, dtype=float)
