"""Parameter and FLOP counts of dense and MoE decoder-only transformers.

Forward matmul FLOPs per token (spec "FLOPs"), with q = heads x head_dim and kv = kv_heads x
head_dim (head_dim defaults to hidden / heads): attention projections 2*(h*(q + 2 kv) + q*h),
attention scores and values 4*s*q non-causal or 2*s*q causal, MLP 2*2*h*d_ff (plain) or
2*3*h*d_ff (gated), logits 2*h*V, MoE: MLP x top_k plus the router 2*h*experts.
Training = 3 x forward.

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
                  "(2·s·heads·head_dim per layer per token forward: the work a causal kernel does; "
                  "Megatron/PaLM count it non-causal, twice that), over the dense peak at the "
                  "workload precision")


def head_width(arch: ModelArch) -> int:
    return arch.head_dim or arch.hidden // arch.heads


def q_width(arch: ModelArch) -> int:
    return arch.heads * head_width(arch)


def kv_hidden(arch: ModelArch) -> int:
    return arch.kv_heads * head_width(arch)


def _mlp_mats(arch: ModelArch) -> int:
    return 3 if arch.gated_mlp else 2


def attention_params(arch: ModelArch) -> int:
    h = arch.hidden
    return h * (q_width(arch) + 2 * kv_hidden(arch)) + q_width(arch) * h


def dense_mlp_params(arch: ModelArch) -> int:
    return _mlp_mats(arch) * arch.hidden * arch.ffn_hidden


def moe_layer_counts(arch: ModelArch) -> tuple[int, int]:
    """(dense-MLP layers, MoE layers)."""
    if arch.moe is None:
        return arch.layers, 0
    dense = min(arch.moe.dense_layers, arch.layers)
    return dense, arch.layers - dense


def expert_params(arch: ModelArch) -> int:
    """Weights of ONE routed expert."""
    assert arch.moe is not None
    return _mlp_mats(arch) * arch.hidden * arch.moe.expert_ffn_hidden


def moe_mlp_params(arch: ModelArch, active: bool) -> int:
    """MLP weights of one MoE layer: routed experts (all, or top_k when active), shared, router."""
    moe = arch.moe
    assert moe is not None
    routed = moe.top_k if active else moe.experts
    return (routed + moe.shared_experts) * expert_params(arch) + arch.hidden * moe.experts


def embedding_params(arch: ModelArch) -> int:
    tables = 1 if arch.tied_embeddings else 2
    return tables * arch.vocab * arch.hidden


def norm_params(arch: ModelArch) -> int:
    return (2 * arch.layers + 1) * arch.hidden


def param_count(arch: ModelArch) -> int:
    """All weights (embeddings, every expert, norms); biases are ignored (< 0.1%)."""
    dense, moe_layers = moe_layer_counts(arch)
    layer = attention_params(arch)
    total = dense * (layer + dense_mlp_params(arch))
    if moe_layers:
        total += moe_layers * (layer + moe_mlp_params(arch, active=False))
    return total + embedding_params(arch) + norm_params(arch)


def active_param_count(arch: ModelArch) -> int:
    """Weights one token touches: top_k routed experts instead of all of them."""
    dense, moe_layers = moe_layer_counts(arch)
    layer = attention_params(arch)
    total = dense * (layer + dense_mlp_params(arch))
    if moe_layers:
        total += moe_layers * (layer + moe_mlp_params(arch, active=True))
    return total + embedding_params(arch) + norm_params(arch)


def forward_flops_per_token(arch: ModelArch, seq_len: int, causal: bool = MFU_CAUSAL) -> dict[str, float]:
    """Forward matmul FLOPs per token split into parts: proj, attn_core, mlp, logits."""
    s = seq_len
    dense, moe_layers = moe_layer_counts(arch)
    core = (2.0 if causal else 4.0) * s * q_width(arch)
    mlp = dense * 2.0 * dense_mlp_params(arch)
    if moe_layers:
        mlp += moe_layers * 2.0 * moe_mlp_params(arch, active=True)
    return {
        "proj": arch.layers * 2.0 * attention_params(arch),
        "attn_core": arch.layers * core,
        "mlp": mlp,
        "logits": 2.0 * arch.hidden * arch.vocab,
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
