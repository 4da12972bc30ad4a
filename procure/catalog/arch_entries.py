"""Pydantic schemas of a model architecture: the `models/` catalog entries and the inline `model:`
of cluster.yaml share them. Apart from the other catalog schemas so that reading cluster.yaml
against a cached catalog builds only these (see hardware_catalog/README.md)."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, ValidationInfo, field_validator

from procure.sources.fields import Finite, Strict


class MoESpec(Strict):
    experts: int = Field(gt=1, le=4096, description="Routed experts per MoE layer.")
    top_k: int = Field(ge=1, le=64, description="Experts each token is routed to.")
    expert_ffn_hidden: int = Field(gt=0, description="MLP width of one expert.")
    shared_experts: int = Field(0, ge=0, description="Experts every token passes through, in addition to the routed ones.")
    shared_expert_ffn_hidden: Optional[int] = Field(None, gt=0, description="Total MLP width of the shared experts, where it differs from shared_experts x expert_ffn_hidden.")
    dense_layers: int = Field(0, ge=0, description="Leading layers with a dense MLP instead of experts.")
    layer_freq: int = Field(1, ge=1, le=64, description="Every n-th layer after the dense ones is MoE (Llama 4 Maverick: 2).")
    capacity_factor: Optional[Finite] = Field(None, ge=1.0, le=8.0, description="Expert capacity as a multiple of the balanced load (tokens over capacity are dropped, experts padded to it); unset means dropless routing.")
    groups: Optional[int] = Field(None, ge=1, le=4096, description="Expert groups of group-limited routing (DeepSeek-V3: 8).")
    group_topk: Optional[int] = Field(None, ge=1, le=4096, description="Groups a token's experts may come from (DeepSeek-V3: 4): laid out one per node, the nodes a token crosses to.")

    @field_validator("top_k")
    @classmethod
    def _top_k_le_experts(cls, value: int, info: ValidationInfo) -> int:
        experts = info.data.get("experts")
        if experts is not None and value > experts:
            raise ValueError(f"top_k {value} exceeds the {experts} experts")
        return value


class MLASpec(Strict):
    q_lora_rank: Optional[int] = Field(None, gt=0, description="Width of the query latent; unset when queries are projected directly.")
    kv_lora_rank: int = Field(gt=0, description="Width of the key/value latent.")
    qk_nope_head_dim: int = Field(gt=0, description="Per-head query/key width without rotary embedding.")
    qk_rope_head_dim: int = Field(gt=0, description="Per-head rotary query/key width (the key part shared across heads).")
    v_head_dim: int = Field(gt=0, description="Per-head value width.")


class AttentionWindowSpec(Strict):
    size: int = Field(gt=0, le=100_000_000, description="Keys a query sees (sliding) or the chunk length (chunked).")
    global_every: Optional[int] = Field(None, ge=1, le=1000, description="Every n-th layer attends to the whole sequence; unset means every layer is local.")
    kind: Literal["sliding", "chunked"] = Field("sliding", description="`sliding` (GPT-OSS, Mistral) or `chunked` (causal inside fixed chunks: Llama 4).")


class ArchitectureSpec(Strict):
    """An inline model architecture (instead of a preset id)."""

    name: str = Field("custom model", description="Display name of the model.")
    layers: int = Field(gt=0, le=10_000, description="Transformer layers.")
    hidden: int = Field(gt=0, le=1_000_000, description="Hidden (model) width.")
    heads: int = Field(gt=0, le=10_000, description="Attention heads.")
    kv_heads: Optional[int] = Field(None, gt=0, description="Key/value heads (grouped-query attention); unset means `heads` (multi-head attention).")
    head_dim: Optional[int] = Field(None, gt=0, le=4096, description="Width of one attention head, where the model decouples it from hidden / heads (Qwen3, Gemma); unset means hidden / heads.")
    ffn_hidden: Optional[int] = Field(None, gt=0, description="Dense MLP width; unset means 4 x hidden, or 8/3 x hidden rounded up to 256 with `gated_mlp`.")
    vocab: int = Field(gt=0, le=10_000_000, description="Vocabulary size.")
    gated_mlp: bool = Field(False, description="SwiGLU/GeGLU MLP (three weight matrices instead of two).")
    tied_embeddings: bool = Field(False, description="Input embedding and output projection share weights.")
    moe: Optional[MoESpec] = Field(None, description="Mixture-of-experts layers; unset for a dense model.")
    mla: Optional[MLASpec] = Field(None, description="Multi-head latent attention (DeepSeek-V2/V3, Kimi K2); unset for standard attention.")
    attention_window: Optional[AttentionWindowSpec] = Field(None, description="Local attention on some layers (sliding window or chunks); unset for full causal attention.")
    mtp_layers: int = Field(0, ge=0, le=16, description="Multi-token-prediction modules (DeepSeek-V3: 1): one more layer and output-head pass each.")
