"""Invariants of the step-time model (hypothesis)."""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procure.model import SUM_TERMS, PlanSpec, Workload, estimate
from procure.model.flops import model_flops_per_token

try:
    from test_model_fixtures import A100_80, H100, HDR, NDR, gpt
except ImportError:  # pragma: no cover
    from .test_model_fixtures import A100_80, H100, HDR, NDR, gpt

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

plans = st.builds(
    PlanSpec,
    tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4]), dp=st.sampled_from([1, 2, 4, 8]),
    cp=st.just(1), ep=st.just(1), vpp=st.just(1), micro_batch=st.sampled_from([1, 2, 4]),
    zero_stage=st.sampled_from([0, 1]), recompute=st.sampled_from(["none", "selective", "full"]),
    sequence_parallel=st.booleans(), tp_comm_overlap=st.booleans(), overlap_grad_reduce=st.booleans())
models = st.builds(lambda layers, hidden: gpt(layers, hidden, 16),
                   layers=st.sampled_from([8, 16, 24, 32]), hidden=st.sampled_from([1024, 2048, 4096]))
WL = Workload(seq_len=2048, global_batch=256)


def _gpus(plan: PlanSpec) -> int:
    return plan.tp * plan.pp * plan.dp * plan.cp


@SETTINGS
@given(plan=plans, arch=models)
def test_terms_always_sum_to_the_step_time(plan, arch):
    est = estimate(arch, H100, NDR, _gpus(plan), WL, plan)
    if est.feasible:
        assert math.fsum(est.terms[k] for k in SUM_TERMS) == est.step_time_s
        assert min(est.terms[k] for k in SUM_TERMS) >= 0.0


@SETTINGS
@given(plan=plans, arch=models)
def test_a_plan_that_fits_keeps_fitting_with_more_memory(plan, arch):
    gpus = _gpus(plan)
    small = replace(A100_80, hbm_gb=40.0)
    if estimate(arch, small, HDR, gpus, WL, plan).feasible:
        assert estimate(arch, A100_80, HDR, gpus, WL, plan).feasible
        assert estimate(arch, replace(A100_80, hbm_gb=141.0), HDR, gpus, WL, plan).feasible


@SETTINGS
@given(arch=models, log2_gpus=st.integers(0, 12))
def test_the_physical_floor_is_never_beaten_and_only_falls_with_more_gpus(arch, log2_gpus):
    gpus = 2 ** log2_gpus
    flops = model_flops_per_token(arch, WL.seq_len) * WL.global_batch * WL.seq_len
    floor = flops / (gpus * H100.peak_flops("bf16"))
    floor_more = flops / (2 * gpus * H100.peak_flops("bf16"))
    assert floor_more <= floor
    est = estimate(arch, H100, NDR, gpus, WL)
    if est.feasible:
        assert est.step_time_s >= floor
        assert est.mfu <= 1.0


@SETTINGS
@given(plan=plans, layers=st.sampled_from([8, 16]), hidden=st.sampled_from([1024, 2048]))
def test_step_time_grows_with_the_model(plan, layers, hidden):
    gpus = _gpus(plan)
    small = estimate(gpt(layers, hidden, 16), H100, NDR, gpus, WL, plan)
    deeper = estimate(gpt(2 * layers, hidden, 16), H100, NDR, gpus, WL, plan)
    wider = estimate(gpt(layers, 2 * hidden, 16), H100, NDR, gpus, WL, plan)
    for bigger in (deeper, wider):
        if small.feasible and bigger.feasible:
            assert bigger.step_time_s > small.step_time_s
