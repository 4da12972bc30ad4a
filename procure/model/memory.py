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

from procure.model.problem import OPTIMIZER_BYTES, WEIGHT_BYTES, Problem, attn_in_at, kv_width_at, moe_load
from procure.model.types import RECOMPUTE_MODULES

Vec = npt.NDArray[np.float64]

# HBM no tensor can use: the CUDA context, NCCL and cuBLAS workspaces (about 1-2 GiB on an 80 GB
# part). A published run that ran needs at most the rest; the plan search keeps a further
# SEARCH_HEADROOM_FRACTION free for allocator fragmentation (tuned recipes do not run at the edge).
RESERVE_FRACTION = 0.03
SEARCH_HEADROOM_FRACTION = 0.05
ZERO3_RESIDENT_LAYERS = 2.0    # gathered layers held under ZeRO-3 (computing + prefetched)
OFFLOAD_RESIDENT_LAYERS = 2.0  # stored layers kept on the GPU under activation offload


def moe_layers_in(pb: Problem, n_layers: Any) -> Vec:
    """MoE layers among ``n_layers`` consecutive layers of the busiest stage: all of them (but the
    model's dense layers) when every layer is MoE, every n-th one when they interleave."""
    n = np.asarray(n_layers, dtype=float)
    return np.asarray(np.minimum(np.minimum(n, pb.moe_layers), np.ceil(n / np.maximum(pb.moe_freq, 1))),
                      dtype=float)


def layer_params_per_gpu(pb: Problem, t: Vec, e: Vec, et: Any = 1.0) -> tuple[Vec, Vec, Vec]:
    """(dense layer, MoE layer without its routed experts, routed experts of an MoE layer) weights
    held by one GPU: attention and shared experts split over TP, routed experts over EP then
    expert-TP, the router replicated."""
    h = pb.hidden
    attn = (attn_in_at(pb, t) + pb.attn_out) / t + 2 * h
    dense = attn + pb.mlp_mats * h * pb.ffn / t
    expert = pb.mlp_mats * h * pb.expert_ffn
    local_experts = np.where(pb.experts > 0, pb.experts / np.maximum(e, 1), 0.0)
    moe = attn + pb.mlp_mats * h * pb.shared_ffn / t + h * pb.experts
    return (np.asarray(dense, dtype=float), np.asarray(moe, dtype=float),
            np.asarray(local_experts * expert / np.maximum(et, 1), dtype=float))


def stage_params(pb: Problem, t: Vec, p: Vec, e: Vec, stage_layers: Vec,
                 et: Any = 1.0) -> dict[str, Vec]:
    """Weights one GPU holds on the first and the last pipeline stage, split into the part sharded
    over the data-parallel group ("dense": attention, dense MLPs, shared experts, embeddings) and
    the routed experts (sharded over the expert-data-parallel group). The last stage also holds
    the multi-token-prediction modules (an MoE layer, a 2h x h projection and an embedding copy
    each). ``per_layer_*``: the mean over the busiest stage's layers."""
    dense_l, moe_l, expert_l = layer_params_per_gpu(pb, t, e, et)
    n_moe = moe_layers_in(pb, stage_layers)
    n = np.maximum(stage_layers, 1)
    body_dense = (stage_layers - n_moe) * dense_l + n_moe * moe_l
    body_expert = n_moe * expert_l
    emb = pb.vocab * pb.hidden / t
    single = p <= 1
    mtp_dense = pb.mtp * (moe_l + 2 * pb.hidden * pb.hidden / t + emb)
    first = body_dense + emb + np.where(single, (1 - pb.tied) * emb + pb.hidden + mtp_dense, 0.0)
    # Output layer (a copy when tied) and final norm on the last stage, with the MTP modules.
    last = np.where(single, first, body_dense + emb + pb.hidden + mtp_dense)
    mtp_expert = pb.mtp * expert_l * (pb.experts > 0)
    first_x = body_expert + np.where(single, mtp_expert, 0.0)
    last_x = body_expert + mtp_expert
    return {"first_dense": np.asarray(first, dtype=float), "first_expert": np.asarray(first_x, dtype=float),
            "last_dense": np.asarray(last, dtype=float), "last_expert": np.asarray(last_x, dtype=float),
            "per_layer_dense": np.asarray(body_dense / n, dtype=float),
            "per_layer_expert": np.asarray(body_expert / n, dtype=float)}


def state_bytes(params: Vec, z: Vec, dpc: Vec, grad_bytes: Vec | float, frozen: Any = 0.0,
                weight_bytes: Any = WEIGHT_BYTES, fp32_params: Any = 0.0,
                optimizer_bytes: Any = OPTIMIZER_BYTES) -> Vec:
    """Weights + gradients + optimizer states of ``params`` under ZeRO stage ``z`` sharded over
    ``dpc`` ranks (frozen LoRA base weights: weights only). ``fp32_params``: FSDP keeps the
    sharded parameters themselves in fp32 (the optimizer holds only the two moments, 8 bytes), where
    Megatron keeps 16-bit weights plus an fp32 master copy in the optimizer (12 bytes;
    ``optimizer_bytes`` where the stack keeps the moments in 16 bits)."""
    shard = np.maximum(dpc, 1)
    fsdp32 = (np.asarray(fp32_params, dtype=float) > 0) & (z >= 3)
    w = np.where(fsdp32, 4.0, weight_bytes) * np.where(z >= 3, 1.0 / shard, 1.0)
    g = grad_bytes * np.where(z >= 2, 1.0 / shard, 1.0)
    o = np.where(fsdp32, optimizer_bytes - 4.0, optimizer_bytes) * np.where(z >= 1, 1.0 / shard, 1.0)
    return np.asarray(params * (w + (1.0 - frozen) * (g + o)), dtype=float)


def recompute_fraction(rc: Vec, rl: Vec, stage_layers: Vec) -> Vec:
    """Share of a stage's layers under full recomputation (``rl`` > 0: only that many)."""
    part = np.where(rl > 0, np.minimum(rl, stage_layers) / np.maximum(stage_layers, 1), 1.0)
    return np.asarray(np.where(rc == 2, part, 0.0), dtype=float)


def module_flags(rm: Any) -> dict[str, Vec]:
    """The selective-recompute modules of bitmask ``rm`` (bit i = RECOMPUTE_MODULES[i]) as 0/1."""
    bits = np.asarray(rm, dtype=np.int64)
    return {name: np.asarray((bits >> i) & 1, dtype=float) for i, name in enumerate(RECOMPUTE_MODULES)}


def _layer_parts(pb: Problem, t: Vec, sp: Vec, flags: dict[str, Vec], by_module: Vec,
                 moe_load: Any, dedup: Any = 0.0) -> tuple[Vec, Vec, Vec, Vec]:
    """Bytes per token kept for the backward without full recompute, in units of hidden:
    (replicated part (/sp applied), TP-split attention part, dense MLP part, MoE MLP part),
    the last three before the division by t. Modules recomputed selectively (``by_module`` 1 and
    their flag set) keep only their inputs."""
    h = pb.hidden
    gemm_in = np.where(pb.fp8 > 0, 1.0, 2.0)
    # Layernorm recompute drops the norm outputs (the QKV and MLP GEMM inputs) unless fp8 keeps
    # their fp8 copies for the weight gradient anyway.
    norm_out = np.where((by_module * flags["layernorm"] > 0) & (pb.fp8 == 0), 0.0, 2.0 * gemm_in)
    latent = 2.0 * pb.mla_latent / h
    replicated = (4.0 + norm_out + 2.0 * pb.dropout + latent) / np.where(sp > 0, t, 1.0)
    qkv_out = np.where(by_module * flags["mla_up_proj"] * (pb.mla_up > 0) > 0, 0.0,
                       2 * (pb.qk_width + kv_width_at(pb, t)))
    # Q, K, V (or MLA's up-projected q, k, v), the attention output (saved by the kernel) and its
    # fp8 copy for the projection GEMM; a stack caching activations in low precision keeps one
    # 12-bit (E5M6) copy for both (DeepSeek-V3 report, sec. 3.3.3).
    attn_out = np.where(pb.act_cache_fp8 > 0, 1.5, 2.0 + pb.fp8) * pb.v_width
    attn = (qkv_out + attn_out) / h
    fc1_out = (pb.mlp_mats - 1) * pb.ffn
    dense_mlp = np.where(by_module * flags["mlp"] > 0, 0.0, 2 * fc1_out + gemm_in * pb.ffn) / h
    # MoE: per routed copy the dispatched input, the fc1 output, the activation output (fc2 input)
    # and, with the all-to-all dispatcher, the expert output kept for the prob-weighted unpermute
    # (the flex dispatcher of DeepEP/HybridEP applies the probabilities inside the experts'
    # activation instead); the shared experts as a dense MLP; the router's fp32 probabilities.
    act_out = np.where(by_module * flags["moe_act"] > 0, 0.0, gemm_in * pb.expert_ffn)
    unpermute = np.where(np.asarray(dedup, dtype=float) > 0, 0.0, 2 * h)
    fc1_bytes = np.where(pb.act_cache_fp8 > 0, 1.0, 2.0)
    routed = moe_load * (gemm_in * h + fc1_bytes * (pb.mlp_mats - 1) * pb.expert_ffn + act_out + unpermute)
    routed = np.where(by_module * flags["moe"] > 0, 0.0, routed)
    shared = np.where(by_module * flags["shared_experts"] > 0, 0.0,
                      2 * (pb.mlp_mats - 1) * pb.shared_ffn + gemm_in * pb.shared_ffn)
    moe_mlp = (routed + shared + 4.0 * pb.experts) / h
    return (np.asarray(replicated, dtype=float), np.asarray(attn, dtype=float),
            np.asarray(dense_mlp, dtype=float), np.asarray(moe_mlp, dtype=float))


def layer_activation_bytes(pb: Problem, t: Vec, c: Vec, b: Vec, rc: Vec, sp: Vec,
                           full_share: Any = None, rm: Any = 0.0, moe_share: Any = None,
                           dedup: Any = 0.0) -> tuple[Vec, Vec]:
    """(stored bytes per layer per micro-batch (mean over the stage's layers), bytes of one layer
    without recompute). ``full_share``: the share of layers under full recompute (all by default);
    ``rm``: the selective-recompute modules (bitmask, 0: the stack's policy); ``moe_share``: the
    share of MoE layers among the stage's (default: the model's)."""
    h = pb.hidden
    s_loc = pb.seq / c
    sbh = s_loc * b * h
    moe_frac = pb.moe_layers / pb.layers if moe_share is None else moe_share
    by_module = ((rc == 1) & (np.asarray(rm, dtype=float) > 0)).astype(float)
    flags = module_flags(rm)
    replicated, attn, dense_mlp, moe_mlp = _layer_parts(pb, t, sp, flags, by_module, moe_load(pb), dedup)
    split = attn + (1 - moe_frac) * dense_mlp + moe_frac * moe_mlp
    # Frozen (LoRA) base: a frozen GEMM's input is not needed (no weight gradient) except the
    # adapter-carrying QKV input; under fp8 the recipes also keep the rest in fp8.
    act = np.where(pb.fp8 > 0, 1.0, 2.0)
    frozen_rep = (4.0 + act) / np.where(sp > 0, t, 1.0)
    frozen_split = act * ((pb.qk_width + pb.kv_width) + pb.v_width + (pb.mlp_mats - 1) * pb.ffn) / h
    replicated = np.where(pb.frozen > 0, frozen_rep, replicated)
    split = np.where(pb.frozen > 0, frozen_split, split)
    scores = (1 - pb.flash) * 5.0 * pb.heads * pb.seq / h       # s x s softmax, mask, dropout
    full_layer = sbh * (replicated + split / t + scores / t)
    # Selective: Megatron keeps all but the attention core (or what its modules say); MaxText's
    # policies only the Q/K/V, attention-output and MLP-output GEMM results, or only Q/K/V.
    qkv = sbh * 2.0 * (pb.qk_width + kv_width_at(pb, t)) / t / h
    dots = qkv + sbh * 2.0 * 2.0 / np.where(sp > 0, t, 1.0)
    megatron = sbh * (replicated + split / t)
    selective = np.where(by_module > 0, megatron,
                         np.select([pb.sel_mode == 1, pb.sel_mode == 2], [dots, qkv], megatron))
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
               full_share: Any = None, et: Any = 1.0, rm: Any = 0.0,
               dedup: Any = 0.0, ps: Any = 0.0) -> tuple[dict[str, Vec], Vec, Vec]:
    """Peak bytes per GPU (max over first and last pipeline stage) and its parts, then the weights
    the slowest stage holds: (dense part, routed experts). ``shard_group`` > 0: hybrid sharding
    over that many ranks. Routed experts are sharded over the expert-data-parallel group
    (tp x dp x cp / (ep x etp) ranks), everything else over dp x cp. ``ps`` 1 (DualPipe): every
    rank holds two stages, one per direction, so its parameter states are doubled, and p + 1
    micro-batches' stage activations are in flight (DeepSeek-V3 report, Table 2)."""
    n_first, n_last = end_stage_layers(pb, p, stage_layers)
    first = stage_params(pb, t, p, e, n_first, et)
    last = stage_params(pb, t, p, e, n_last, et)
    dpc = np.where(shard_group > 0, shard_group, d * c)
    edp = np.maximum(t * d * c / np.maximum(e * et, 1), 1)
    moe_share = moe_layers_in(pb, stage_layers) / np.maximum(stage_layers, 1)
    stored, working = layer_activation_bytes(pb, t, c, b, rc, sp, full_share, rm, moe_share, dedup)
    dualpipe = np.asarray(ps, dtype=float) == 1
    inflight = np.where(dualpipe, np.minimum(p + 1.0, np.maximum(m, 1)),
                        np.minimum(p, np.maximum(m, 1)) * np.where(v > 1, 1.0 + (p - 1) / (p * v), 1.0))
    copies = np.where(dualpipe, 2.0, 1.0)
    act_first = _stored_layers(n_first, offload) * stored * inflight + working
    logits = pb.logit_bytes * b * (pb.seq / c) * pb.vocab / t * (1 + pb.mtp)
    act_last = _stored_layers(n_last + pb.mtp, offload) * stored + working + logits
    single = p <= 1
    act_first = np.where(single, act_last, act_first)
    # ZeRO-3: gathered 16-bit weights of two layers and one layer's unsharded gradient.
    per_layer = first["per_layer_dense"] + first["per_layer_expert"]
    gathered_w = np.where(z >= 3, per_layer * ZERO3_RESIDENT_LAYERS * pb.weight_bytes, 0.0)
    gathered_g = np.where(z >= 3, per_layer * pb.grad_bytes * (1.0 - pb.frozen), 0.0)

    def states(part: dict[str, Vec], end: str) -> Vec:
        return (state_bytes(part[f"{end}_dense"], z, dpc, pb.grad_bytes, pb.frozen, pb.weight_bytes,
                            pb.fp32_params, pb.optimizer_bytes)
                + state_bytes(part[f"{end}_expert"], z, edp, pb.grad_bytes, pb.frozen, pb.weight_bytes,
                              pb.fp32_params, pb.optimizer_bytes))

    total_first = copies * states(first, "first") + gathered_w + gathered_g + act_first
    total_last = copies * states(last, "last") + gathered_w + gathered_g + act_last
    use_first = total_first >= total_last
    dense = np.where(use_first, first["first_dense"], last["last_dense"])
    expert = np.where(use_first, first["first_expert"], last["last_expert"])
    # The slowest stage's weights drive DP comm, optimizer and checkpoint time (core.py).
    full = stage_params(pb, t, p, e, stage_layers, et)
    busy_dense = np.maximum(full["first_dense"], full["last_dense"])
    busy_expert = np.maximum(full["first_expert"], full["last_expert"])

    def shard(x: Vec, n: Vec, stage: int) -> Vec:
        return np.asarray(x * np.where(z >= stage, 1.0 / np.maximum(n, 1), 1.0), dtype=float)

    fsdp32 = (pb.fp32_params > 0) & (z >= 3)
    parts = {
        "weights": copies * (shard(dense, dpc, 3) + shard(expert, edp, 3)) * np.where(fsdp32, 4.0, pb.weight_bytes)
        + gathered_w,
        "gradients": copies * (1.0 - pb.frozen) * pb.grad_bytes * (shard(dense, dpc, 2) + shard(expert, edp, 2))
        + gathered_g,
        "optimizer": copies * (1.0 - pb.frozen) * np.where(fsdp32, pb.optimizer_bytes - 4.0, pb.optimizer_bytes)
        * (shard(dense, dpc, 1) + shard(expert, edp, 1)),
        "activations": np.where(use_first, act_first, act_last),
    }
    reserve = RESERVE_FRACTION * pb.hbm_bytes
    total = np.maximum(total_first, total_last)
    parts["reserve"] = reserve * np.ones_like(total)
    parts["total"] = total + reserve
    return ({k: np.asarray(val, dtype=float) for k, val in parts.items()},
            np.asarray(busy_dense, dtype=float), np.asarray(busy_expert, dtype=float))
