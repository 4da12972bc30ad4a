"""Parameter and FLOP counts of dense and MoE decoder-only transformers.

Forward matmul FLOPs per token (spec "FLOPs"), with q = heads x head_dim and kv = kv_heads x
head_dim (head_dim defaults to hidden / heads): attention projections 2*(h*(q + 2 kv) + q*h),
attention scores and values 2*keys*(q_k + q_v) where keys = s non-causal or s/2 causal, MLP
2*2*h*d_ff (plain) or 2*3*h*d_ff (gated), logits 2*h*V, MoE: the experts' MLP x top_k plus the
shared experts plus the router 2*h*experts. Training = 3 x forward.

Multi-head latent attention (MLA, DeepSeek-V2/V3): the projections are the latent chains
h -> q_lora -> heads x (nope + rope) for queries, h -> kv_lora + rope -> heads x (nope + v) for
keys and values, heads x v -> h out; the scores run at width nope + rope, the values at v.
Local attention: a sliding window of w keys (w - w^2/(2s) keys per query on average, causal) or
causal chunks of w (w/2); ``global_every`` n makes every n-th layer global. Multi-token
prediction (DeepSeek-V3) adds per module one transformer layer (an MoE layer when the model has
experts), a 2h x h projection and one more pass through the output head.

MFU convention (``MFU_CONVENTION``, printed by the document): model FLOPs count the CAUSAL
attention core, the work a causal kernel has to do. Counted non-causal (Megatron/PaLM), a
long-context run's attention is credited twice the work the hardware does and its MFU can exceed
the accelerator's measured matmul ceiling (issue 10: Llama 3 8B at 1M tokens reported MFU 0.90).
Counted causal, MFU <= the GEMM ceiling always holds. ``causal=False`` still gives the Megatron
number (tests check Megatron's closed forms with it).
"""

from __future__ import annotations

from procure.catalog.types import ModelArch

MFU_CAUSAL = True
MFU_CONVENTION = ("model FLOPs = 3 x forward matmul FLOPs with the causal attention core "
                  "(2 × sequence length × heads × head size per layer per token forward: the work a causal kernel does; "
                  "Megatron/PaLM count it non-causal, twice that), over the dense peak at the "
                  "workload precision")


def head_width(arch: ModelArch) -> int:
    """Per-head width of queries and keys (MLA: nope + rope)."""
    return arch.head_width


def v_head_width(arch: ModelArch) -> int:
    return arch.mla.v_head_dim if arch.mla is not None else arch.head_width


def q_width(arch: ModelArch) -> int:
    return arch.heads * head_width(arch)


def kv_hidden(arch: ModelArch) -> int:
    return arch.kv_heads * head_width(arch)


def _mlp_mats(arch: ModelArch) -> int:
    return 3 if arch.gated_mlp else 2


def attention_in_params(arch: ModelArch) -> int:
    """Weights that produce Q, K and V from the hidden state (MLA: the latent chains)."""
    h = arch.hidden
    mla = arch.mla
    if mla is None:
        return h * (q_width(arch) + 2 * kv_hidden(arch))
    q_full = arch.heads * mla.qk_head_dim
    q = h * q_full if mla.q_lora_rank is None else mla.q_lora_rank * (h + q_full)
    kv = h * (mla.kv_lora_rank + mla.qk_rope_head_dim) + mla.kv_lora_rank * arch.heads * (
        mla.qk_nope_head_dim + mla.v_head_dim)
    return q + kv


def attention_out_params(arch: ModelArch) -> int:
    return arch.heads * v_head_width(arch) * arch.hidden


def attention_params(arch: ModelArch) -> int:
    return attention_in_params(arch) + attention_out_params(arch)


def dense_mlp_params(arch: ModelArch) -> int:
    return _mlp_mats(arch) * arch.hidden * arch.ffn_hidden


def moe_layer_counts(arch: ModelArch) -> tuple[int, int]:
    """(dense-MLP layers, MoE layers)."""
    moe_layers = arch.moe_layer_count
    return arch.layers - moe_layers, moe_layers


def expert_params(arch: ModelArch) -> int:
    """Weights of ONE routed expert."""
    assert arch.moe is not None
    return _mlp_mats(arch) * arch.hidden * arch.moe.expert_ffn_hidden


def moe_mlp_params(arch: ModelArch, active: bool) -> int:
    """MLP weights of one MoE layer: routed experts (all, or top_k when active), shared, router."""
    moe = arch.moe
    assert moe is not None
    routed = moe.top_k if active else moe.experts
    shared = _mlp_mats(arch) * arch.hidden * moe.shared_ffn
    return routed * expert_params(arch) + shared + arch.hidden * moe.experts


def embedding_params(arch: ModelArch) -> int:
    tables = 1 if arch.tied_embeddings else 2
    return tables * arch.vocab * arch.hidden


def norm_params(arch: ModelArch) -> int:
    return (2 * arch.layers + 1) * arch.hidden


def _mtp_layer_params(arch: ModelArch, active: bool) -> int:
    """One multi-token-prediction module: a transformer layer (MoE when the model has experts),
    the 2h x h projection of [hidden; next embedding] and its norms (embedding and head shared)."""
    mlp = moe_mlp_params(arch, active) if arch.moe is not None else dense_mlp_params(arch)
    return attention_params(arch) + mlp + 2 * arch.hidden * arch.hidden + 4 * arch.hidden


def _count(arch: ModelArch, active: bool) -> int:
    dense, moe_layers = moe_layer_counts(arch)
    layer = attention_params(arch)
    total = dense * (layer + dense_mlp_params(arch))
    if moe_layers:
        total += moe_layers * (layer + moe_mlp_params(arch, active))
    total += arch.mtp_layers * _mtp_layer_params(arch, active)
    return total + embedding_params(arch) + norm_params(arch)


def param_count(arch: ModelArch) -> int:
    """All weights (embeddings, every expert, norms, MTP modules); biases are ignored (< 0.1%)."""
    return _count(arch, active=False)


def active_param_count(arch: ModelArch) -> int:
    """Weights one token touches: top_k routed experts instead of all of them."""
    return _count(arch, active=True)


def mean_keys(arch: ModelArch, seq_len: int, causal: bool = MFU_CAUSAL) -> float:
    """Keys per query averaged over the layers: s (non-causal) or s/2 (causal) on global layers,
    the window's keys on local ones."""
    s = float(seq_len)
    full = s / 2.0 if causal else s
    win = arch.attention_window
    if win is None:
        return full
    w = min(float(win.size), s)
    if win.kind == "chunked":
        local = w / 2.0 if causal else w
    else:
        local = w - w * w / (2.0 * s) if causal else w
    g = win.global_fraction
    return g * full + (1.0 - g) * local


def forward_flops_per_token(arch: ModelArch, seq_len: int, causal: bool = MFU_CAUSAL) -> dict[str, float]:
    """Forward matmul FLOPs per token split into parts: proj, attn_core, mlp, logits (MTP modules
    included in each part)."""
    dense, moe_layers = moe_layer_counts(arch)
    score_width = arch.heads * (head_width(arch) + v_head_width(arch))
    core = 2.0 * mean_keys(arch, seq_len, causal) * score_width
    mlp = dense * 2.0 * dense_mlp_params(arch)
    moe_mlp = 2.0 * moe_mlp_params(arch, active=True) if arch.moe is not None else 2.0 * dense_mlp_params(arch)
    mlp += moe_layers * moe_mlp if moe_layers else 0.0
    mtp = arch.mtp_layers
    return {
        "proj": (arch.layers + mtp) * 2.0 * attention_params(arch) + mtp * 2.0 * 2 * arch.hidden ** 2,
        "attn_core": (arch.layers + mtp) * core,
        "mlp": mlp + mtp * moe_mlp,
        "logits": (1 + mtp) * 2.0 * arch.hidden * arch.vocab,
    }


def model_flops_per_token(arch: ModelArch, seq_len: int, causal: bool = MFU_CAUSAL) -> float:
    """Training model FLOPs per token (3 x forward), no recomputation; ``MFU_CONVENTION``."""
    return 3.0 * sum(forward_flops_per_token(arch, seq_len, causal).values())


def hardware_flops_per_token(arch: ModelArch, seq_len: int, recompute: str,
                             causal: bool = MFU_CAUSAL) -> float:
    """Model FLOPs plus recomputation: full = one more forward of every layer (not the logits);
    selective = one more forward of the attention scores and values."""
    parts = forward_flops_per_token(arch, seq_len, causal)
    extra = 0.0
    if recompute == "full":
        extra = parts["proj"] + parts["attn_core"] + parts["mlp"]
    elif recompute == "selective":
        extra = parts["attn_core"]
    return 3.0 * sum(parts.values()) + extra
