"""Peak memory of one GPU for arrays of plans (bytes), after Korthikanti et al. 2022.

Weights, gradients and optimizer states: 2 + (4 fp32 main grads, or 2) + 12 bytes per parameter
held; ZeRO-1 (Megatron's distributed optimizer) shards the 12 over the data-parallel group (dp x
cp ranks), ZeRO-2 also the gradients, ZeRO-3/FSDP also the weights (FSDP2 keeps fp32 sharded
parameters and fp32 gradients: 16/N instead of 18/N, within the model's resolution). Under
ZeRO-3 the gathered 16-bit weights of the layer being computed and of the one being prefetched,
and the unsharded gradient of the layer being reduced, are held on top. Routed experts are split
over EP ranks, everything else over TP ranks.

Activations per layer per micro-batch (Korthikanti eq. 1-2, bytes, 16-bit), sbh = s*b*h with
s the per-GPU sequence slice (s/cp):
  no recompute: sbh * (10 + 24/t + 5*a*s/(h*t))   (10/t with sequence parallelism)
  selective:    sbh * (10 + 24/t)                 (34/t with sequence parallelism)
  full:         2 * sbh                           (/t with sequence parallelism), plus the full
                activations of the one layer being recomputed.
The "24" and "5as/h" are generalised to GQA and decoupled head dims (Q of width heads x head_dim,
K and V of kv_heads x head_dim), gated MLPs and MoE; with a fused (flash) attention kernel the
s x s terms are not stored at all. The "10" holds two 1-byte dropout masks only when the recipe
uses dropout (modern ones do not); under fp8, Transformer Engine keeps the fp8 cast of each GEMM
input (1 byte) for the weight gradient. 1F1B keeps p micro-batches in flight on the first stage
(x (1 + (p-1)/(p*v)) with interleaving); the last stage holds the logits (fp32) of one
micro-batch. Activation offload keeps only the layers being computed (the current and the next
being copied in: two) on the GPU. A reserve (5% of HBM) is kept free.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from procure.model.problem import OPTIMIZER_BYTES, WEIGHT_BYTES, Problem

Vec = npt.NDArray[np.float64]

# HBM no tensor can use: the CUDA context, NCCL and cuBLAS workspaces (about 1-2 GiB on an 80 GB
# part). A published run that ran needs at most the rest; the plan search keeps a further
# SEARCH_HEADROOM_FRACTION free for allocator fragmentation (tuned recipes do not run at the edge).
RESERVE_FRACTION = 0.03
SEARCH_HEADROOM_FRACTION = 0.05
ZERO3_RESIDENT_LAYERS = 2.0    # gathered layers held under ZeRO-3 (computing + prefetched)
OFFLOAD_RESIDENT_LAYERS = 2.0  # stored layers kept on the GPU under activation offload


def layer_params_per_gpu(pb: Problem, t: Vec, e: Vec) -> tuple[Vec, Vec]:
    """(dense layer, MoE layer) weights held by one GPU."""
    h = pb.hidden
    q = pb.heads * pb.head_dim
    h_kv = pb.kv_heads * pb.head_dim
    attn = (h * (q + 2 * h_kv) + q * h) / t + 2 * h
    dense = attn + pb.mlp_mats * h * pb.ffn / t
    expert = pb.mlp_mats * h * pb.expert_ffn
    local_experts = np.where(pb.experts > 0, pb.experts / np.maximum(e, 1), 0.0)
    moe = attn + (local_experts + pb.shared_experts) * expert / t + h * pb.experts
    return np.asarray(dense, dtype=float), np.asarray(moe, dtype=float)


def stage_params(pb: Problem, t: Vec, p: Vec, e: Vec, stage_layers: Vec) -> tuple[Vec, Vec, Vec]:
    """(first stage, last stage, mean-over-layers per-layer) weights held by one GPU."""
    dense, moe = layer_params_per_gpu(pb, t, e)
    moe_frac = pb.moe_layers / pb.layers
    per_layer = (1 - moe_frac) * dense + moe_frac * moe
    body = stage_layers * per_layer
    emb = pb.vocab * pb.hidden / t
    single = p <= 1
    first = body + emb + np.where(single, (1 - pb.tied) * emb + pb.hidden, 0.0)
    last = np.where(single, first, body + emb + pb.hidden)   # output layer (a copy when tied), final norm
    return np.asarray(first, dtype=float), np.asarray(last, dtype=float), np.asarray(per_layer, dtype=float)


def state_bytes(params: Vec, z: Vec, dpc: Vec, grad_bytes: Vec | float, frozen: Any = 0.0,
                weight_bytes: Any = WEIGHT_BYTES) -> Vec:
    """Weights + gradients + optimizer states of ``params`` under ZeRO stage ``z`` sharded over
    ``dpc`` ranks (frozen LoRA base weights: weights only)."""
    shard = np.maximum(dpc, 1)
    w = weight_bytes * np.where(z >= 3, 1.0 / shard, 1.0)
    g = grad_bytes * np.where(z >= 2, 1.0 / shard, 1.0)
    o = OPTIMIZER_BYTES * np.where(z >= 1, 1.0 / shard, 1.0)
    return np.asarray(params * (w + (1.0 - frozen) * (g + o)), dtype=float)


def recompute_fraction(rc: Vec, rl: Vec, stage_layers: Vec) -> Vec:
    """Share of a stage's layers under full recomputation (``rl`` > 0: only that many)."""
    part = np.where(rl > 0, np.minimum(rl, stage_layers) / np.maximum(stage_layers, 1), 1.0)
    return np.asarray(np.where(rc == 2, part, 0.0), dtype=float)


def layer_activation_bytes(pb: Problem, t: Vec, c: Vec, b: Vec, rc: Vec, sp: Vec,
                           full_share: Any = None) -> tuple[Vec, Vec]:
    """(stored bytes per layer per micro-batch (mean over the stage's layers), bytes of one layer
    without recompute). ``full_share``: the share of layers under full recompute (all by default)."""
    h = pb.hidden
    q = pb.heads * pb.head_dim
    s_loc = pb.seq / c
    sbh = s_loc * b * h
    h_kv = pb.kv_heads * pb.head_dim
    moe_frac = pb.moe_layers / pb.layers
    mlp_width = (1 - moe_frac) * pb.ffn + moe_frac * (
        pb.top_k * pb.capacity + pb.shared_experts) * pb.expert_ffn
    fc1_out = np.where(pb.mlp_mats == 3, 2.0, 1.0) * mlp_width
    # GEMM inputs kept for the weight gradient: bf16, or their fp8 cast under fp8 (TE).
    gemm_in = np.where(pb.fp8 > 0, 1.0, 2.0)
    # Replicated part: two norm inputs (bf16), QKV and fc1 GEMM inputs, two dropout masks.
    replicated = (4.0 + 2.0 * gemm_in + 2.0 * pb.dropout) / np.where(sp > 0, t, 1.0)
    # TP-split part: Q, K, V and the attention output (bf16, saved by the attention kernel), the
    # fp8 copy of that output for the projection GEMM, fc1 output (+ activation output when
    # gated), fc2 input; 24 for a plain bf16 GPT (d_ff = 4h).
    split = (2 * (q + 2 * h_kv) + 2 * q + pb.fp8 * q + 2 * fc1_out + gemm_in * mlp_width) / h
    # Frozen (LoRA) base: a frozen GEMM's input is not needed (no weight gradient) except the
    # adapter-carrying QKV input; under fp8 the recipes also keep the rest in fp8.
    act = np.where(pb.fp8 > 0, 1.0, 2.0)
    frozen_rep = (4.0 + act) / np.where(sp > 0, t, 1.0)
    frozen_split = act * ((q + 2 * h_kv) + q + fc1_out) / h
    replicated = np.where(pb.frozen > 0, frozen_rep, replicated)
    split = np.where(pb.frozen > 0, frozen_split, split)
    scores = (1 - pb.flash) * 5.0 * pb.heads * pb.seq / h       # s x s softmax, mask, dropout
    full_layer = sbh * (replicated + split / t + scores / t)
    # Selective: Megatron keeps all but the attention core; MaxText's policies only the Q/K/V,
    # attention-output and MLP-output GEMM results, or only Q/K/V (2 bytes each).
    qkv = sbh * 2.0 * (q + 2 * h_kv) / t / h
    dots = qkv + sbh * 2.0 * 2.0 / np.where(sp > 0, t, 1.0)
    selective = np.select([pb.sel_mode == 1, pb.sel_mode == 2], [dots, qkv], sbh * (replicated + split / t))
    recompute_full = 2.0 * sbh / np.where(sp > 0, t, 1.0)
    share = np.where(rc == 2, 1.0, 0.0) if full_share is None else full_share
    stored = np.where(rc == 2, share * recompute_full + (1.0 - share) * full_layer,
                      np.where(rc == 1, selective, full_layer))
    working = np.where((rc == 2) & (share > 0), full_layer, 0.0)
    return np.asarray(stored, dtype=float), np.asarray(working, dtype=float)


def end_stage_layers(pb: Problem, p: Vec, stage_layers: Vec) -> tuple[Vec, Vec]:
    """(first, last) stage layers. With uneven stages the remainder goes to the middle stages:
    the first stage holds the most in-flight micro-batches and the embedding, the last the
    logits (Llama 3 405B ran 7 + 14 x 8 + 7 on pp16; Megatron-core
    --decoder-{first,last}-pipeline-num-layers)."""
    low = np.floor(pb.layers / p)
    short = p * stage_layers - pb.layers            # stages that can hold one layer fewer
    first = np.where((p > 1) & (short >= 1), low, stage_layers)
    last = np.where((p > 1) & (short >= 2), low, stage_layers)
    return np.asarray(first, dtype=float), np.asarray(last, dtype=float)


def _stored_layers(n_layers: Vec, offload: Vec) -> Vec:
    return np.asarray(np.where(offload > 0, np.minimum(n_layers, OFFLOAD_RESIDENT_LAYERS), n_layers),
                      dtype=float)


def gpu_memory(pb: Problem, t: Vec, p: Vec, d: Vec, c: Vec, e: Vec, v: Vec, b: Vec, z: Vec, rc: Vec,
               sp: Vec, m: Vec, stage_layers: Vec, offload: Vec, shard_group: Any = 0.0,
               full_share: Any = None) -> tuple[dict[str, Vec], Vec]:
    """Peak bytes per GPU (max over first and last pipeline stage) and its parts, and the weights
    the slowest stage holds. ``shard_group`` > 0: hybrid sharding over that many ranks."""
    n_first, n_last = end_stage_layers(pb, p, stage_layers)
    first_p, _, per_layer = stage_params(pb, t, p, e, n_first)
    _, last_p, _ = stage_params(pb, t, p, e, n_last)
    dpc = np.where(shard_group > 0, shard_group, d * c)
    stored, working = layer_activation_bytes(pb, t, c, b, rc, sp, full_share)
    inflight = np.minimum(p, np.maximum(m, 1)) * np.where(v > 1, 1.0 + (p - 1) / (p * v), 1.0)
    act_first = _stored_layers(n_first, offload) * stored * inflight + working
    logits = pb.logit_bytes * b * (pb.seq / c) * pb.vocab / t
    act_last = _stored_layers(n_last, offload) * stored + working + logits
    single = p <= 1
    act_first = np.where(single, act_last, act_first)
    # ZeRO-3: gathered 16-bit weights of two layers and one layer's unsharded gradient.
    gathered_w = np.where(z >= 3, per_layer * ZERO3_RESIDENT_LAYERS * pb.weight_bytes, 0.0)
    gathered_g = np.where(z >= 3, per_layer * pb.grad_bytes * (1.0 - pb.frozen), 0.0)
    states_first = state_bytes(first_p, z, dpc, pb.grad_bytes, pb.frozen, pb.weight_bytes) + gathered_w + gathered_g
    states_last = state_bytes(last_p, z, dpc, pb.grad_bytes, pb.frozen, pb.weight_bytes) + gathered_w + gathered_g
    total_first = states_first + act_first
    total_last = states_last + act_last
    use_first = total_first >= total_last
    params = np.where(use_first, first_p, last_p)
    # The slowest stage's weights drive DP comm, optimizer and checkpoint time (core.py).
    full_first, full_last, _ = stage_params(pb, t, p, e, stage_layers)
    busiest = np.maximum(full_first, full_last)
    shard = np.maximum(dpc, 1)
    parts = {
        "weights": params * pb.weight_bytes * np.where(z >= 3, 1.0 / shard, 1.0) + gathered_w,
        "gradients": (1.0 - pb.frozen) * params * pb.grad_bytes * np.where(z >= 2, 1.0 / shard, 1.0)
        + gathered_g,
        "optimizer": (1.0 - pb.frozen) * params * OPTIMIZER_BYTES * np.where(z >= 1, 1.0 / shard, 1.0),
        "activations": np.where(use_first, act_first, act_last),
    }
    reserve = RESERVE_FRACTION * pb.hbm_bytes
    total = np.maximum(total_first, total_last)
    parts["reserve"] = reserve * np.ones_like(total)
    parts["total"] = total + reserve
    return {k: np.asarray(v, dtype=float) for k, v in parts.items()}, np.asarray(busiest, dtype=float)
