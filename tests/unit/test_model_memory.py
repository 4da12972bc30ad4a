"""Per-GPU memory against hand computations (Korthikanti et al. 2022, ZeRO)."""

from __future__ import annotations

import numpy as np
import pytest

from procure.model import PlanSpec, Workload, estimate
from procure.model.memory import RESERVE_FRACTION, layer_activation_bytes, state_bytes
from procure.model.problem import build_problem

try:
    from test_model_fixtures import A100_80, H100, HDR, gpt
except ImportError:  # pragma: no cover
    from .test_model_fixtures import A100_80, H100, HDR, gpt

GPT3 = gpt(96, 12288, 96)
S, H, A = 2048, 12288, 96
SBH = S * 1 * H


def _pb(attention="unfused", dropout=None, precision="fp16"):
    wl = Workload(seq_len=S, global_batch=1536, precision=precision, attention=attention,
                  dropout=dropout)
    accel = H100 if precision == "fp8" else A100_80       # A100 has no fp8
    return build_problem(GPT3, accel, HDR, 1024, wl)


@pytest.mark.parametrize("rc,sp,expected", [
    (0, False, SBH * (10 + 24 / 8 + 5 * A * S / (H * 8))),       # Korthikanti eq. 2
    (0, True, SBH * (34 / 8 + 5 * A * S / (H * 8))),             # + sequence parallelism
    (1, True, SBH * 34 / 8),                                     # selective recompute + SP
    (1, False, SBH * (10 + 24 / 8)),
    (2, False, 2 * SBH),                                         # full recompute
    (2, True, 2 * SBH / 8),
])
def test_gpt3_layer_activations_match_korthikanti(rc, sp, expected):
    stored, _ = layer_activation_bytes(_pb(), np.array(8.0), np.array(1.0), np.array(1.0),
                                       np.array(rc), np.array(sp))
    assert float(stored) == pytest.approx(expected, rel=1e-12)


def test_flash_attention_drops_the_s_squared_terms():
    stored, _ = layer_activation_bytes(_pb("flash", dropout=True), np.array(8.0), np.array(1.0),
                                       np.array(1.0), np.array(0), np.array(False))
    assert float(stored) == pytest.approx(SBH * (10 + 24 / 8), rel=1e-12)


def test_no_dropout_drops_the_two_mask_bytes():
    stored, _ = layer_activation_bytes(_pb("flash"), np.array(8.0), np.array(1.0), np.array(1.0),
                                       np.array(1), np.array(True))
    assert float(stored) == pytest.approx(SBH * 32 / 8, rel=1e-12)


def test_fp8_keeps_gemm_inputs_in_one_byte():
    # norms 4 + QKV/fc1 inputs 1+1 (replicated, /t with SP); Q,K,V 6 + out 2 + its fp8 copy 1
    # + GeLU input 8 + fc2 input 4 (fp8) = 21 TP-split.
    stored, _ = layer_activation_bytes(_pb("flash", precision="fp8"), np.array(8.0), np.array(1.0),
                                       np.array(1.0), np.array(1), np.array(True))
    assert float(stored) == pytest.approx(SBH * (6 + 21) / 8, rel=1e-12)


def test_full_recompute_keeps_one_layer_of_working_activations():
    _, working = layer_activation_bytes(_pb(), np.array(8.0), np.array(1.0), np.array(1.0),
                                        np.array(2), np.array(False))
    assert float(working) == pytest.approx(SBH * (10 + 24 / 8 + 5 * A * S / (H * 8)))


@pytest.mark.parametrize("z,dpc,grad_b,per_param", [
    (0, 8, 2.0, 16.0),                       # fp16 mixed precision + Adam: 2 + 2 + 12
    (0, 8, 4.0, 18.0),                       # bf16 with fp32 main gradients
    (1, 8, 4.0, 2 + 4 + 12 / 8),             # ZeRO-1 shards the optimizer states
    (2, 8, 4.0, 2 + 4 / 8 + 12 / 8),         # ZeRO-2 also the gradients
    (3, 8, 4.0, (2 + 4 + 12) / 8),           # ZeRO-3 also the weights
])
def test_zero_stages_shard_states(z, dpc, grad_b, per_param):
    got = state_bytes(np.array(1e9), np.array(z), np.array(dpc), grad_b)
    assert float(got) == pytest.approx(1e9 * per_param)


def test_estimate_reports_memory_parts_that_add_up():
    plan = PlanSpec(tp=8, pp=8, dp=16, cp=1, ep=1, vpp=1, micro_batch=1, zero_stage=0,
                    recompute="full", sequence_parallel=False, tp_comm_overlap=False,
                    overlap_grad_reduce=False)
    est = estimate(GPT3, A100_80, HDR, 1024, Workload(seq_len=S, global_batch=1536, precision="fp16",
                                                         attention="unfused"), plan)
    mem = est.memory_gib
    parts = mem["weights"] + mem["gradients"] + mem["optimizer"] + mem["activations"] + mem["reserve"]
    assert mem["total"] == pytest.approx(parts, rel=1e-9)
    assert mem["reserve"] == pytest.approx(RESERVE_FRACTION * 80)       # "80 GB" HBM = 80 GiB
    params_per_gpu = 175e9 / 64
    assert mem["weights"] == pytest.approx(2 * params_per_gpu / 2 ** 30, rel=0.03)
    assert est.feasible and mem["total"] <= mem["capacity"]


def _cat():
    from procure.catalog.load import default_catalog
    return default_catalog()


def test_llama3_70b_without_model_parallelism_does_not_fit_80gb():
    cat = _cat()
    plan = PlanSpec(tp=1, pp=1, dp=64, cp=1, ep=1, vpp=1, micro_batch=1, zero_stage=1,
                    recompute="full", sequence_parallel=False, tp_comm_overlap=False,
                    overlap_grad_reduce=True)
    est = estimate(cat.models["llama3-70b"], cat.accelerators["h100-sxm5-80gb"],
                   cat.networks["ib-ndr400"], 64, Workload(seq_len=8192, global_batch=512), plan)
    assert not est.feasible and "GiB" in est.reason


@pytest.mark.parametrize("zero,fits", [(2, True), (1, False)])
def test_meta_llama3_405b_plan_fits_only_with_sharded_gradients(zero, fits):
    """Llama 3 paper sec. 3.3: tp8 pp16 dp64, seq 8192, no activation checkpointing, 7 layers on
    the first stage, FSDP sharding optimizer states AND gradients. With unsharded fp32 main
    gradients (Megatron ZeRO-1: 11.4 GiB) the first stage needs about 90 GiB."""
    cat = _cat()
    plan = PlanSpec(tp=8, pp=16, dp=64, cp=1, ep=1, vpp=4, micro_batch=1, zero_stage=zero,
                    recompute="none", sequence_parallel=True, tp_comm_overlap=True,
                    overlap_grad_reduce=True)
    est = estimate(cat.models["llama3-405b"], cat.accelerators["h100-sxm5-80gb"],
                   cat.networks["ib-ndr400"], 8192, Workload(seq_len=8192, global_batch=2048), plan)
    assert est.feasible is fits
    assert est.memory_gib["activations"] == pytest.approx(68.6, abs=0.5)
