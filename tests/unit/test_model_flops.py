"""FLOP and parameter counts: Megatron's closed forms, GQA, gated MLPs, MoE, recomputation."""

from __future__ import annotations

import pytest

from procure.model import active_param_count, model_flops_per_token, param_count
from procure.model.flops import forward_flops_per_token, hardware_flops_per_token

try:
    from test_model_fixtures import LLAMA3_405B, LLAMA3_70B, MIXTRAL, gpt
except ImportError:  # pragma: no cover - package-style test layout
    from .test_model_fixtures import LLAMA3_405B, LLAMA3_70B, MIXTRAL, gpt

CASES = [(24, 2304, 24, 51200, 2048), (96, 12288, 96, 51200, 2048), (128, 25600, 160, 51200, 2048),
         (30, 4096, 32, 131072, 4096)]


@pytest.mark.parametrize("layers,h,heads,vocab,s", CASES)
def test_megatron_72_formula_exact(layers, h, heads, vocab, s):
    arch, batch = gpt(layers, h, heads, vocab=vocab), 1536
    megatron = 72 * batch * s * layers * h ** 2 * (1 + s / (6 * h) + vocab / (12 * h * layers))
    ours = model_flops_per_token(arch, s, causal=False) * batch * s
    assert ours == pytest.approx(megatron, rel=1e-12)


@pytest.mark.parametrize("layers,h,heads,vocab,s", CASES)
def test_megatron_96_full_recompute_formula_exact(layers, h, heads, vocab, s):
    arch, batch = gpt(layers, h, heads, vocab=vocab), 512
    megatron = 96 * batch * s * layers * h ** 2 * (1 + s / (6 * h) + vocab / (16 * h * layers))
    ours = hardware_flops_per_token(arch, s, "full", causal=False) * batch * s
    assert ours == pytest.approx(megatron, rel=1e-12)


def test_selective_recompute_adds_one_attention_core_forward():
    arch, s = gpt(24, 2048, 16), 2048
    extra = hardware_flops_per_token(arch, s, "selective") - model_flops_per_token(arch, s)
    assert extra == pytest.approx(24 * 2 * s * 2048)          # the causal core (MFU convention)
    extra_nc = (hardware_flops_per_token(arch, s, "selective", causal=False)
                - model_flops_per_token(arch, s, causal=False))
    assert extra_nc == pytest.approx(24 * 4 * s * 2048)
    assert hardware_flops_per_token(arch, s, "none") == model_flops_per_token(arch, s)


def test_causal_count_halves_only_the_attention_core():
    arch, s = gpt(24, 2048, 16), 4096
    diff = model_flops_per_token(arch, s, causal=False) - model_flops_per_token(arch, s, causal=True)
    assert diff == pytest.approx(3 * 24 * 2 * s * 2048)


def test_gqa_and_gated_mlp_projection_counts():
    h, kv = 8192, 8 * 128
    parts = forward_flops_per_token(LLAMA3_70B, 8192)
    assert parts["proj"] == pytest.approx(80 * 2 * (2 * h * h + 2 * h * kv))
    assert parts["mlp"] == pytest.approx(80 * 2 * 3 * h * 28672)
    assert parts["logits"] == pytest.approx(2 * h * 128256)


def test_llama_parameter_counts_match_their_names():
    assert param_count(LLAMA3_70B) == pytest.approx(70.6e9, rel=0.01)
    assert param_count(LLAMA3_405B) == pytest.approx(405.9e9, rel=0.01)


def test_moe_active_parameters_count_top_k_experts():
    total, active = param_count(MIXTRAL), active_param_count(MIXTRAL)
    assert total == pytest.approx(46.7e9, rel=0.02)
    assert active == pytest.approx(12.9e9, rel=0.03)
    per_token_mlp = forward_flops_per_token(MIXTRAL, 4096)["mlp"]
    assert per_token_mlp == pytest.approx(32 * 2 * (2 * 3 * 4096 * 14336 + 4096 * 8))


def test_the_mfu_convention_counts_the_causal_core():
    from procure.model import MFU_CONVENTION
    from procure.model.flops import MFU_CAUSAL

    arch, s = gpt(24, 2048, 16), 4096
    assert MFU_CAUSAL and "causal" in MFU_CONVENTION
    assert model_flops_per_token(arch, s) == model_flops_per_token(arch, s, causal=True)


def test_head_dim_decoupled_from_hidden():
    """Qwen3-style: 32 heads x 128 = 4096 query width on a 2560 hidden."""
    from dataclasses import replace

    base = gpt(36, 2560, 32, kv_heads=8, ffn=9728, gated=True)
    wide = replace(base, head_dim=128)
    assert base.head_width == 80 and wide.head_width == 128
    parts = forward_flops_per_token(wide, 4096)
    q, kv = 32 * 128, 8 * 128
    assert parts["proj"] == pytest.approx(36 * 2 * (2560 * (q + 2 * kv) + q * 2560))
    assert parts["attn_core"] == pytest.approx(36 * 2 * 4096 * q)
    assert param_count(wide) > param_count(base)
