"""estimate(): the composition, the search, fixed plans, reasons, JSON, scaling."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from procure.model import SUM_TERMS, PlanSpec, Workload, estimate, scaling_curve
from procure.model.flops import model_flops_per_token

try:
    from test_model_fixtures import A100_80, H100, HDR, L40S, LLAMA3_405B, LLAMA3_70B, MIXTRAL, NDR, gpt
except ImportError:  # pragma: no cover
    from .test_model_fixtures import A100_80, H100, HDR, L40S, LLAMA3_405B, LLAMA3_70B, MIXTRAL, NDR, gpt

WL_70B = Workload(seq_len=8192, global_batch=2048)
GPT_175B = gpt(96, 12288, 96, vocab=51200)
NARAYANAN_175B = PlanSpec(tp=8, pp=8, dp=8, cp=1, ep=1, vpp=1, micro_batch=1, zero_stage=0,
                          recompute="full", sequence_parallel=False, tp_comm_overlap=False,
                          overlap_grad_reduce=False)


@pytest.fixture(scope="module")
def best_70b():
    return estimate(LLAMA3_70B, H100, NDR, 4096, WL_70B)


def test_search_finds_a_feasible_plan_for_llama3_70b_on_4096_h100(best_70b):
    est = best_70b
    assert est.feasible and est.reason is None
    p = est.plan
    assert p["tp"] * p["pp"] * p["dp"] * p["cp"] == 4096
    assert 2048 % (p["micro_batch"] * p["dp"]) == 0
    assert est.memory_gib["total"] <= est.memory_gib["capacity"]
    assert est.search["plans_evaluated"] > 10_000
    assert 0 < est.search["feasible"] <= est.search["plans_evaluated"]
    assert 0.2 < est.mfu < 0.75 and est.hfu >= est.mfu


def test_terms_sum_exactly_to_the_step_time(best_70b):
    assert math.fsum(best_70b.terms[k] for k in SUM_TERMS) == best_70b.step_time_s
    assert all(best_70b.terms[k] >= 0 for k in SUM_TERMS)


def test_runners_up_are_slower_than_the_best(best_70b):
    times = [r["step_time_s"] for r in best_70b.runners_up]
    assert 1 <= len(times) <= 5
    assert times == sorted(times) and times[0] >= best_70b.step_time_s


def test_fixed_plan_and_search_agree(best_70b):
    fixed = estimate(LLAMA3_70B, H100, NDR, 4096, WL_70B, PlanSpec.from_dict(best_70b.plan))
    assert fixed.search["plans_evaluated"] == 1
    assert fixed.step_time_s == pytest.approx(best_70b.step_time_s, rel=1e-12)
    assert fixed.terms == pytest.approx(best_70b.terms, rel=1e-12)


def test_partial_plan_searches_only_the_open_dimensions():
    est = estimate(LLAMA3_70B, H100, NDR, 4096, WL_70B, PlanSpec(tp=8, pp=4, recompute="selective"))
    assert (est.plan["tp"], est.plan["pp"], est.plan["recompute"]) == (8, 4, "selective")
    assert est.search["plans_evaluated"] > 10


def test_405b_on_8_l40s_is_infeasible_with_a_reason():
    est = estimate(LLAMA3_405B, L40S, NDR, 8, Workload(seq_len=8192, global_batch=64))
    assert not est.feasible
    assert "no plan fits 48 GB" in est.reason and "GiB" in est.reason
    assert est.search["plans_evaluated"] > 0 and est.search["feasible"] == 0
    assert math.isnan(est.step_time_s) and est.to_dict()["step_time_s"] is None
    assert json.loads(json.dumps(est.to_dict(), allow_nan=False))["feasible"] is False


def test_bad_fixed_plan_reports_the_broken_rule():
    bad = replace(NARAYANAN_175B, micro_batch=7)
    est = estimate(GPT_175B, A100_80, HDR, 512, Workload(seq_len=2048, global_batch=1536), bad)
    assert not est.feasible and "micro_batch x dp must divide" in est.reason
    uneven = replace(NARAYANAN_175B, dp=5)         # 1536 sequences do not split over 5 ranks
    est = estimate(GPT_175B, A100_80, HDR, 512, Workload(seq_len=2048, global_batch=1536), uneven)
    assert not est.feasible and "nearest counts that work are 256 GPUs (dp 4) or 384 GPUs (dp 6)" in est.reason
    too_many = replace(NARAYANAN_175B, dp=9)
    est = estimate(GPT_175B, A100_80, HDR, 512, Workload(seq_len=2048, global_batch=1536), too_many)
    assert "must not exceed the 512 GPUs" in est.reason
    fewer = replace(NARAYANAN_175B, dp=6)          # a stated plan may leave GPUs idle: reported
    est = estimate(GPT_175B, A100_80, HDR, 512, Workload(seq_len=2048, global_batch=1536), fewer)
    assert est.idle_gpus == 512 - 384


def test_fixed_plan_that_does_not_fit_names_its_memory():
    plan = replace(NARAYANAN_175B, tp=1, pp=1, dp=512, recompute="none")
    est = estimate(GPT_175B, A100_80, HDR, 512, Workload(seq_len=2048, global_batch=1536), plan)
    assert not est.feasible and "the plan needs" in est.reason and est.memory_gib["total"] > 80


def test_a_narayanan_style_fixed_plan_is_plausible():
    wl = Workload(seq_len=2048, global_batch=1536, precision="fp16", attention="unfused")
    est = estimate(GPT_175B, A100_80, HDR, 512, wl, NARAYANAN_175B)
    assert est.feasible
    assert 0.35 < est.hfu < 0.6          # Narayanan et al.: 44-52% of peak with full recompute
    assert est.terms["bubble_s"] > 0 and est.terms["tp_comm_s"] > 0
    assert est.terms["dp_comm_exposed_s"] > 0      # not overlapped in 2021 Megatron
    floor = model_flops_per_token(GPT_175B, 2048) * 1536 * 2048 / (512 * 312e12)
    assert est.step_time_s > floor


def test_to_dict_is_json_ready_with_the_contract_keys(best_70b):
    doc = json.loads(json.dumps(best_70b.to_dict()))
    for key in ("plan", "step_time_s", "terms", "memory_gib", "feasible", "search", "runners_up",
                "percentiles_s", "mfu", "hfu"):
        assert key in doc
    for key in ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero_stage", "recompute",
                "sequence_parallel", "tp_comm_overlap"):
        assert key in doc["plan"]
    assert {"compute_s", "tp_comm_s", "dp_comm_exposed_s", "bubble_s", "io_s"} <= set(doc["terms"])
    assert doc["search"]["seconds"] is None


def test_elapsed_seconds_are_passed_through():
    est = estimate(LLAMA3_70B, H100, NDR, 512, WL_70B, PlanSpec(tp=8, pp=4), elapsed_s=0.25)
    assert est.search["seconds"] == 0.25


def test_percentiles_grow_with_the_step_time_cv():
    plan = PlanSpec.from_dict(estimate(LLAMA3_70B, H100, NDR, 1024, WL_70B).plan)
    calm = estimate(LLAMA3_70B, H100, NDR, 1024, WL_70B, plan, step_time_cv=0.0)
    noisy = estimate(LLAMA3_70B, H100, NDR, 1024, WL_70B, plan, step_time_cv=0.05)
    assert calm.terms["straggler_s"] == 0.0
    assert noisy.step_time_s > calm.step_time_s
    pct = noisy.percentiles_s
    assert pct["p50"] <= pct["p95"] <= pct["p99"]
    assert pct["p50"] < noisy.step_time_s < pct["p99"]


def test_a_slow_measured_fabric_slows_a_dp_heavy_plan():
    plan = PlanSpec(tp=1, pp=1, dp=512, cp=1, ep=1, vpp=1, micro_batch=1, zero_stage=1,
                    recompute="full", sequence_parallel=False, tp_comm_overlap=False,
                    overlap_grad_reduce=False)
    model, wl = gpt(24, 2048, 16), Workload(seq_len=2048, global_batch=512)
    fast = estimate(model, H100, NDR, 512, wl, plan)
    slow = estimate(model, H100, NDR, 512, wl, plan, measured_busbw_gbs=20.0)
    assert slow.terms["dp_comm_exposed_s"] > 5 * fast.terms["dp_comm_exposed_s"]


def test_fp8_speeds_up_compute_on_h100():
    plan = PlanSpec(tp=8, pp=2, dp=32, cp=1, ep=1, vpp=1, micro_batch=1, zero_stage=1,
                    recompute="selective", sequence_parallel=True, tp_comm_overlap=True)
    bf16 = estimate(LLAMA3_70B, H100, NDR, 512, WL_70B, plan)
    fp8 = estimate(LLAMA3_70B, H100, NDR, 512, replace(WL_70B, precision="fp8"), plan)
    assert bf16.feasible and fp8.feasible
    assert fp8.terms["compute_s"] < 0.8 * bf16.terms["compute_s"]


def test_checkpoint_io_is_amortised_and_sync_costs_more():
    plan = PlanSpec.from_dict(estimate(LLAMA3_70B, H100, NDR, 1024, WL_70B).plan)
    base = replace(WL_70B, checkpoint_interval_steps=100)
    sync = estimate(LLAMA3_70B, H100, NDR, 1024, replace(base, checkpoint_async=False), plan)
    asyn = estimate(LLAMA3_70B, H100, NDR, 1024, base, plan)
    none = estimate(LLAMA3_70B, H100, NDR, 1024, WL_70B, plan)
    assert none.terms["io_s"] == 0.0
    assert sync.terms["io_s"] > asyn.terms["io_s"] > 0.0
    stall = estimate(LLAMA3_70B, H100, NDR, 1024, replace(WL_70B, data_stall_s=0.2), plan)
    assert stall.terms["io_s"] == pytest.approx(0.2)


def test_moe_search_uses_expert_parallelism():
    est = estimate(MIXTRAL, H100, NDR, 256, Workload(seq_len=4096, global_batch=1024))
    assert est.feasible
    forced = estimate(MIXTRAL, H100, NDR, 256, Workload(seq_len=4096, global_batch=1024),
                      PlanSpec(ep=8, tp=2))
    assert forced.plan["ep"] == 8 and forced.terms["ep_comm_s"] > 0


def test_scaling_curve_keeps_the_shape_and_the_batch(best_70b):
    curve = scaling_curve(LLAMA3_70B, H100, NDR, 4096, WL_70B, best_70b.plan)
    gpus = [pt["gpus"] for pt in curve["curve"]]
    assert gpus == sorted(gpus) and gpus[-1] == 4096
    assert curve["reference_gpus"] == gpus[0]
    assert curve["curve"][0]["efficiency"] == 1.0
    assert 0.5 < curve["efficiency"] <= 1.05
    assert "global batch fixed" in curve["note"]


def test_an_undescribed_stack_pipelines_126_layers_over_16_stages_not_63():
    """Llama 3.1 405B on 16,384 H100 (2,048 x 8K sequences) on a stack that splits any layer count
    but cannot lay out end stages: pp16 with 8 or 7 layers a stage, every GPU used (it was pp63
    with 256 GPUs idle when pp had to divide the 126 layers)."""
    from procure.catalog.calibration import load_knobs
    from procure.catalog.load import default_catalog
    from procure.catalog.software import resolve_software

    cat = default_catalog()
    accel = cat.accelerators["h100-sxm5-80gb"]
    est = estimate(cat.models["llama3-405b"], accel, cat.networks["roce-400g"], 16384,
                   Workload(seq_len=8192, global_batch=2048), knobs=load_knobs(),
                   software=resolve_software("other", when="2024-04-01", accel=accel))
    assert est.feasible and est.plan["pp"] == 16 and est.idle_gpus == 0


def test_an_estimate_is_a_frozen_record_and_timing_a_shared_one_copies_it():
    """Issue 29: ``Estimate`` is frozen; the pipeline's search timing makes a copy, so an estimate
    the memo shares between bids is never changed under another bid."""
    import dataclasses
    import time

    from procure.pipeline import _timed

    est = estimate(LLAMA3_70B, H100, NDR, 1024, WL_70B)
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.step_time_s = 1.0  # type: ignore[misc]
    shared = replace(est, search={**est.search, "seconds": None})
    timed = _timed(shared, time.perf_counter())
    assert shared.search["seconds"] is None and timed.search["seconds"] is not None
