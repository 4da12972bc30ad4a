"""Peak memory of one GPU for arrays of plans (bytes), after Korthikanti et al. 2022.

Weights, gradients and optimizer states: 2 + (2 or 4) + 12 bytes per parameter held; ZeRO-1
shards the 12 over the data-parallel group (dp x cp ranks), ZeRO-2 also the gradients, ZeRO-3
also the weights. Routed experts are split over EP ranks, everything else over TP ranks.

Activations per layer per micro-batch (Korthikanti eq. 1-2, bytes, 16-bit), sbh = s*b*h with
s the per-GPU sequence slice (s/cp):
  no recompute: sbh * (10 + 24/t + 5*a*s/(h*t))   (10/t with sequence parallelism)
  selective:    sbh * (10 + 24/t)                 (34/t with sequence parallelism)
  full:         2 * sbh                           (/t with sequence parallelism), plus the full
                activations of the one layer being recomputed.
The "24" and "5as/h" are generalised to GQA (K, V of width h_kv), gated MLPs and MoE; with a
fused (flash) attention kernel the s x s terms are not stored at all. The "10" holds two 1-byte
dropout masks only when the recipe uses dropout (modern ones do not); under fp8, Transformer
Engine keeps the fp8 cast of each GEMM input (1 byte) for the weight gradient. 1F1B keeps p micro-batches
in flight on the first stage (x (1 + (p-1)/(p*v)) with interleaving); the last stage holds the
logits (fp32) of one micro-batch. A reserve (5% of HBM) is kept free.
"""

from __future__ import annotations

import numpy as np

from procure.model.problem import OPTIMIZER_BYTES, WEIGHT_BYTES

RESERVE_FRACTION = 0.05
LOGIT_BYTES = 8.0              # fp32 logits and their gradient in the vocab-parallel cross entropy


def layer_params_per_gpu(pb, t, e):
    """(dense layer, MoE layer) weights held by one GPU."""
    h = pb.hidden
    h_kv = pb.kv_heads * h / pb.heads
    attn = (h * (h + 2 * h_kv) + h * h) / t + 2 * h
    dense = attn + pb.mlp_mats * h * pb.ffn / t
    expert = pb.mlp_mats * h * pb.expert_ffn
    local_experts = np.where(pb.experts > 0, pb.experts / np.maximum(e, 1), 0.0)
    moe = attn + (local_experts + pb.shared_experts) * expert / t + h * pb.experts
    return dense, moe


def stage_params(pb, t, p, e, stage_layers):
    """(first stage, last stage, mean-over-layers per-layer) weights held by one GPU."""
    dense, moe = layer_params_per_gpu(pb, t, e)
    moe_frac = pb.moe_layers / pb.layers
    per_layer = (1 - moe_frac) * dense + moe_frac * moe
    body = stage_layers * per_layer
    emb = pb.vocab * pb.hidden / t
    single = p <= 1
    first = body + emb + np.where(single, (1 - pb.tied) * emb + pb.hidden, 0.0)
    last = np.where(single, first, body + emb + pb.hidden)   # output layer (a copy when tied), final norm
    return first, last, per_layer


def state_bytes(params, z, dpc, grad_bytes):
    """Weights + gradients + optimizer states of ``params`` under ZeRO stage ``z``."""
    shard = np.maximum(dpc, 1)
    w = WEIGHT_BYTES * np.where(z >= 3, 1.0 / shard, 1.0)
    g = grad_bytes * np.where(z >= 2, 1.0 / shard, 1.0)
    o = OPTIMIZER_BYTES * np.where(z >= 1, 1.0 / shard, 1.0)
    return params * (w + g + o)


def layer_activation_bytes(pb, t, c, b, rc, sp):
    """(stored bytes per layer per micro-batch, bytes of one layer without recompute)."""
    h = pb.hidden
    s_loc = pb.seq / c
    sbh = s_loc * b * h
    h_kv = pb.kv_heads * h / pb.heads
    moe_frac = pb.moe_layers / pb.layers
    mlp_width = (1 - moe_frac) * pb.ffn + moe_frac * (
        pb.top_k * pb.capacity + pb.shared_experts) * pb.expert_ffn
    fc1_out = np.where(pb.mlp_mats == 3, 2.0, 1.0) * mlp_width
    # GEMM inputs kept for the weight gradient: bf16, or their fp8 cast under fp8 (TE).
    gemm_in = np.where(pb.fp8 > 0, 1.0, 2.0)
    # Replicated part: two norm inputs (bf16), QKV and fc1 GEMM inputs, two dropout masks.
    replicated = (4.0 + 2.0 * gemm_in + 2.0 * pb.dropout) / np.where(sp, t, 1.0)
    # TP-split part: Q, K, V and the attention output (bf16, saved by the attention kernel), the
    # fp8 copy of that output for the projection GEMM, fc1 output (+ activation output when
    # gated), fc2 input; 24 for a plain bf16 GPT (d_ff = 4h).
    split = (2 * (h + 2 * h_kv) + 2 * h + pb.fp8 * h + 2 * fc1_out + gemm_in * mlp_width) / h
    scores = (1 - pb.flash) * 5.0 * pb.heads * pb.seq / h       # s x s softmax, mask, dropout
    full_layer = sbh * (replicated + split / t + scores / t)
    selective = sbh * (replicated + split / t)
    recompute_full = 2.0 * sbh / np.where(sp, t, 1.0)
    stored = np.where(rc == 2, recompute_full, np.where(rc == 1, selective, full_layer))
    working = np.where(rc == 2, full_layer, 0.0)
    return stored, working


def end_stage_layers(pb, p, stage_layers):
    """(first, last) stage layers. With uneven stages the remainder goes to the middle stages:
    the first stage holds the most in-flight micro-batches and the embedding, the last the
    logits (Llama 3 405B ran 7 + 14 x 8 + 7 on pp16; Megatron-core
    --decoder-{first,last}-pipeline-num-layers)."""
    low = np.floor(pb.layers / p)
    short = p * stage_layers - pb.layers            # stages that can hold one layer fewer
    first = np.where((p > 1) & (short >= 1), low, stage_layers)
    last = np.where((p > 1) & (short >= 2), low, stage_layers)
    return first, last


def gpu_memory(pb, t, p, d, c, e, v, b, z, rc, sp, m, stage_layers):
    """Peak bytes per GPU (max over first and last pipeline stage) and its parts."""
    n_first, n_last = end_stage_layers(pb, p, stage_layers)
    first_p, _, _ = stage_params(pb, t, p, e, n_first)
    _, last_p, _ = stage_params(pb, t, p, e, n_last)
    dpc = d * c
    stored, working = layer_activation_bytes(pb, t, c, b, rc, sp)
    inflight = np.minimum(p, np.maximum(m, 1)) * np.where(v > 1, 1.0 + (p - 1) / (p * v), 1.0)
    act_first = n_first * stored * inflight + working
    logits = LOGIT_BYTES * b * (pb.seq / c) * pb.vocab / t
    act_last = n_last * stored + working + logits
    single = p <= 1
    act_first = np.where(single, act_last, act_first)
    states_first = state_bytes(first_p, z, dpc, pb.grad_bytes)
    states_last = state_bytes(last_p, z, dpc, pb.grad_bytes)
    total_first = states_first + act_first
    total_last = states_last + act_last
    use_first = total_first >= total_last
    params = np.where(use_first, first_p, last_p)
    # The slowest stage's weights drive DP comm, optimizer and checkpoint time (core.py).
    full_first, full_last, _ = stage_params(pb, t, p, e, stage_layers)
    busiest = np.maximum(full_first, full_last)
    shard = np.maximum(dpc, 1)
    parts = {
        "weights": params * WEIGHT_BYTES * np.where(z >= 3, 1.0 / shard, 1.0),
        "gradients": params * pb.grad_bytes * np.where(z >= 2, 1.0 / shard, 1.0),
        "optimizer": params * OPTIMIZER_BYTES * np.where(z >= 1, 1.0 / shard, 1.0),
        "activations": np.where(use_first, act_first, act_last),
    }
    reserve = RESERVE_FRACTION * pb.hbm_bytes
    total = np.maximum(total_first, total_last)
    parts["reserve"] = reserve * np.ones_like(total)
    parts["total"] = total + reserve
    return parts, busiest
