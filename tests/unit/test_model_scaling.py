"""The scaling curve's four fixed plans in one vectorised evaluation equal four separate
estimates (to the 6 significant digits the result document keeps), infeasible points included."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from procure.catalog.calibration import load_knobs
from procure.catalog.software import software_for
from procure.model import PlanSpec, Workload, estimate, scaling_curve
from procure.model.scaling import FRACTIONS

try:
    from test_model_fixtures import A100_40, A100_80, H100, HDR, LLAMA3_70B, MIXTRAL, NDR, gpt
except ImportError:  # pragma: no cover
    from .test_model_fixtures import A100_40, A100_80, H100, HDR, LLAMA3_70B, MIXTRAL, NDR, gpt

WL_70B = Workload(seq_len=8192, global_batch=2048)
SIGNIFICANT = 6


def per_plan_points(arch, accel, network, gpus, workload, plan, **kwargs) -> list[dict]:
    """The scaling curve's points the slow way: one ``estimate`` per fraction of the GPUs."""
    spec = PlanSpec.from_dict(plan)
    points = []
    for frac in FRACTIONS:
        if spec.dp % frac:
            continue
        est = estimate(arch, accel, network, gpus // frac, workload, replace(spec, dp=spec.dp // frac), **kwargs)
        if est.feasible:
            points.append({"gpus": gpus // frac, "step_time_s": est.step_time_s,
                           "tokens_per_s_per_gpu": est.tokens_per_s / (gpus // frac)})
    return points


def same_to_6_digits(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=0.5 * 10 ** (1 - SIGNIFICANT), abs_tol=0.0)


def assert_curve_equals_per_plan(arch, accel, network, gpus, workload, plan, **kwargs) -> dict:
    curve = scaling_curve(arch, accel, network, gpus, workload, plan, **kwargs)
    slow = per_plan_points(arch, accel, network, gpus, workload, plan, **kwargs)
    assert [p["gpus"] for p in curve["curve"]] == [p["gpus"] for p in slow]
    for fast, ref in zip(curve["curve"], slow):
        assert same_to_6_digits(fast["step_time_s"], ref["step_time_s"]), (fast, ref)
        assert same_to_6_digits(fast["tokens_per_s_per_gpu"], ref["tokens_per_s_per_gpu"]), (fast, ref)
    if slow:
        assert curve["reference_gpus"] == slow[0]["gpus"]
        ratio = slow[-1]["tokens_per_s_per_gpu"] / slow[0]["tokens_per_s_per_gpu"]
        assert same_to_6_digits(curve["curve"][-1]["efficiency"], ratio)
    return curve


@pytest.mark.parametrize("gpus", [1024, 4096])
def test_the_searched_plan_of_llama3_70b_on_h100(gpus):
    plan = estimate(LLAMA3_70B, H100, NDR, gpus, WL_70B).plan
    curve = assert_curve_equals_per_plan(LLAMA3_70B, H100, NDR, gpus, WL_70B, plan)
    assert len(curve["curve"]) >= 2 and curve["curve"][-1]["gpus"] == gpus


def test_points_that_do_not_fit_in_memory_are_left_out_as_one_by_one():
    # ZeRO-1 on 80 GB A100s: at 1/8 of the GPUs each holds 8x the optimizer share, and no longer fits
    wl = Workload(seq_len=4096, global_batch=512)
    plan = PlanSpec(tp=8, pp=1, dp=16, cp=1, ep=1, vpp=1, micro_batch=1, zero_stage=1, recompute="full",
                    sequence_parallel=True, tp_comm_overlap=False, overlap_grad_reduce=True)
    est = estimate(LLAMA3_70B, A100_80, HDR, 128, wl, plan)
    assert est.feasible
    curve = assert_curve_equals_per_plan(LLAMA3_70B, A100_80, HDR, 128, wl, est.plan)
    assert [p["gpus"] for p in curve["curve"]] == [32, 64, 128]      # 16 GPUs do not fit
    assert curve["reference_gpus"] == 32


def test_a_small_part_runs_every_point_like_one_by_one():
    plan = estimate(LLAMA3_70B, A100_40, HDR, 2048, WL_70B).plan
    assert_curve_equals_per_plan(LLAMA3_70B, A100_40, HDR, 2048, WL_70B, plan)


def test_dp_not_divisible_by_eight_skips_those_fractions():
    wl = Workload(seq_len=8192, global_batch=1536)
    plan = dict(estimate(LLAMA3_70B, H100, NDR, 384, wl, PlanSpec(tp=8, pp=4)).plan)
    assert plan["dp"] == 12          # 1/8 does not divide it, 1/4 and 1/2 do
    curve = assert_curve_equals_per_plan(LLAMA3_70B, H100, NDR, 384, wl, plan)
    assert 384 // 8 not in [p["gpus"] for p in curve["curve"]]


def test_moe_with_knobs_software_measured_bandwidth_and_cv():
    wl = Workload(seq_len=4096, global_batch=1024)
    plan = estimate(MIXTRAL, H100, NDR, 256, wl).plan
    stack = software_for(None, None, __import__("datetime").date(2026, 12, 1), H100)
    assert_curve_equals_per_plan(MIXTRAL, H100, NDR, 256, wl, plan, knobs=load_knobs(),
                                 measured_busbw_gbs=180.0, step_time_cv=0.03, software=stack)


def test_a_plan_the_rules_refuse_at_a_smaller_size_is_skipped():
    # tp x pp x dp must equal the GPUs: a plan whose dp is odd has no 1/2, 1/4, 1/8 points at all
    arch = gpt(32, 4096, 32, vocab=32000)
    plan = dict(estimate(arch, H100, NDR, 24, Workload(seq_len=2048, global_batch=96), PlanSpec(tp=8, pp=1)).plan)
    assert plan["dp"] == 3
    curve = assert_curve_equals_per_plan(arch, H100, NDR, 24, Workload(seq_len=2048, global_batch=96), plan)
    assert [p["gpus"] for p in curve["curve"]] == [24] and curve["efficiency"] == 1.0
