"""Throughput, MFU/HFU, goodput and time to train."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procure.document.bid import BidResult
from procure.economics import Assumptions, evaluate_core
from procure.economics import examples as ex
from procure.economics.goodput import MAX_LOST_FRACTION, goodput, lost_fraction
from procure.economics.throughput import physical_floor_s, step_time_at_efficiency

A = Assumptions()


def test_tokens_per_s_is_global_batch_tokens_over_step_time():
    case = ex.case("a")
    econ = evaluate_core(case, A)
    step_s = case.performance.step_time_s
    assert econ.throughput.tokens_per_s == pytest.approx(16_777_216 / step_s, rel=1e-12)
    assert econ.throughput.tokens_per_s_per_gpu == pytest.approx(16_777_216 / step_s / 4096,
                                                                 rel=1e-12)


def test_mfu_and_hfu_use_model_and_hardware_flops():
    econ = evaluate_core(ex.case("a", mfu=0.38), A)
    assert econ.throughput.mfu == pytest.approx(0.38, rel=1e-12)
    assert econ.throughput.hfu == pytest.approx(0.38 * 4 / 3, rel=1e-12)
    from procure.economics.throughput import MFU_CONVENTION

    assert "dense peak" in MFU_CONVENTION and "mfu_convention" not in BidResult.model_fields   # said once, per quote


def test_physical_floor_is_model_flops_at_full_peak():
    perf = ex.performance(4096, ex.H100_BF16_FLOPS)
    expected = 6 * 70e9 * 16_777_216 / (4096 * 989.4e12)
    assert physical_floor_s(perf) == pytest.approx(expected, rel=1e-12)
    assert 1.7 < expected < 1.8


STEADY_KEPT = (1 - 0.003) * (1 - 0.002)      # evaluations, data stalls


def test_goodput_matches_young_formula_by_hand():
    # a given aggregate write bandwidth of 100 GB/s: 70e9 x 16 B / 100 GB/s = 11.2 s per checkpoint
    g = goodput(4096, 70_000_000_000, replace(A, checkpoint_write_gbs=100.0))
    write_s = 70e9 * 16 / 100e9
    job_rate_s = 4096 * 419 / 21_233_664 / 3600
    tau_s = math.sqrt(2 * write_s / job_rate_s)
    lost = write_s / tau_s + job_rate_s * (tau_s / 2 + 15 * 60)
    assert g.checkpoint_write_s == pytest.approx(11.2)
    assert g.checkpoint_interval_s == pytest.approx(tau_s)
    assert g.lost_fraction == pytest.approx(lost)
    assert g.fraction == pytest.approx((1 - lost) * STEADY_KEPT)
    assert g.job_mtti_h == pytest.approx(21_233_664 / 419 / 4096)
    assert g.checkpoint_interval_min == pytest.approx(tau_s / 60)
    assert not g.clamped


def test_the_write_bandwidth_grows_with_the_cluster_up_to_the_storage():
    """Unset, the aggregate is each GPU's 0.625 GB/s (5 GB/s per 8-GPU node), at most the storage's
    2 TB/s (Llama 3's Tectonic): 128 GPUs write at 80 GB/s, 4,096 at the 2,000 GB/s cap."""
    small, large = goodput(128, 70_000_000_000, A), goodput(4096, 70_000_000_000, A)
    assert small.checkpoint_write_gbs == pytest.approx(80.0) and small.checkpoint_write_s == pytest.approx(14.0)
    assert large.checkpoint_write_gbs == pytest.approx(2000.0) and large.checkpoint_write_s == pytest.approx(0.56)
    job_rate_s = 4096 * 419 / 21_233_664 / 3600
    assert large.checkpoint_interval_s == pytest.approx(math.sqrt(2 * 0.56 / job_rate_s))


def test_the_interval_is_never_shorter_than_one_write():
    # a slow store and frequent failures: Young's optimum would start the next write before the last ends
    g = goodput(1024, 70_000_000_000, replace(A, checkpoint_write_gbs=1.0, failures_per_gpu_hour=0.05))
    assert g.checkpoint_interval_s == pytest.approx(g.checkpoint_write_s)


def test_young_interval_minimises_the_lost_fraction():
    g = goodput(4096, 70_000_000_000, A)
    job_rate_s = 4096 * A.failures_per_gpu_hour / 3600
    at = lambda tau: lost_fraction(g.checkpoint_write_s, tau, job_rate_s, 900.0)  # noqa: E731
    best = at(g.checkpoint_interval_s)
    assert best < at(g.checkpoint_interval_s * 0.8)
    assert best < at(g.checkpoint_interval_s * 1.25)


def test_given_checkpoint_interval_is_used():
    g = goodput(1024, 70_000_000_000, replace(A, checkpoint_interval_min=30.0))
    assert g.checkpoint_interval_s == 1800.0
    job_rate_s = 1024 * A.failures_per_gpu_hour / 3600
    write_s = 70e9 * 16 / (1024 * 0.625e9)          # 640 GB/s: 1.75 s
    assert g.lost_fraction == pytest.approx(write_s / 1800 + job_rate_s * (900 + 900))


def test_no_failures_and_no_interval_lose_nothing():
    g = goodput(4096, 70_000_000_000, replace(A, failures_per_gpu_hour=0.0))
    assert (g.job_mtti_h, g.checkpoint_interval_s, g.lost_fraction) == (None, None, 0.0)
    assert g.fraction == pytest.approx(STEADY_KEPT)          # evaluations and data stalls remain


def test_lost_fraction_is_clamped_and_said_so():
    g = goodput(100_000, 70_000_000_000, replace(A, failures_per_gpu_hour=0.01))
    assert g.clamped
    assert g.lost_fraction == MAX_LOST_FRACTION
    assert g.fraction == pytest.approx(0.01 * STEADY_KEPT)
    econ = evaluate_core(ex.case("a", gpus=100_000), replace(A, failures_per_gpu_hour=0.01))
    assert any("clamped" in note for note in econ.notes)


def test_time_to_train_divides_by_goodput():
    case = ex.case("a", train_tokens=1.5e13)
    econ = evaluate_core(case, A)
    tokens_per_s = 16_777_216 / case.performance.step_time_s
    expected_days = 1.5e13 / tokens_per_s / econ.goodput.fraction / 86400
    assert econ.time_to_train_days == pytest.approx(expected_days, rel=1e-12)
    assert econ.goodput.fraction < 1.0


def test_efficiency_scales_only_the_compute_term():
    perf = ex.performance(4096, ex.H100_BF16_FLOPS)
    faster = step_time_at_efficiency(perf, 1.25)
    assert faster == pytest.approx(perf.step_time_s * (0.15 + 0.85 / 1.25))
    no_terms = replace(perf, step_time_terms={})
    assert step_time_at_efficiency(no_terms, 2.0) == pytest.approx(perf.step_time_s / 2)


def test_nonpositive_step_time_is_a_bug_not_a_result():
    with pytest.raises(ValueError):
        evaluate_core(ex.case("a", step_time_s=0.0), A)


@settings(max_examples=200, deadline=None)
@given(gpus=st.integers(1, 200_000), params=st.integers(10**8, 2 * 10**12),
       rate=st.floats(0.0, 1e-3), more=st.floats(1.0, 10.0), faster=st.floats(1.0, 10.0))
def test_more_failures_never_raise_goodput_and_faster_storage_never_lowers_it(gpus, params, rate, more, faster):
    base = replace(A, failures_per_gpu_hour=rate)
    g = goodput(gpus, params, base).fraction
    assert goodput(gpus, params, replace(base, failures_per_gpu_hour=rate * more)).fraction <= g + 1e-12
    quicker = replace(base, checkpoint_write_gbs_per_gpu=base.checkpoint_write_gbs_per_gpu * faster,
                      storage_write_cap_gbs=base.storage_write_cap_gbs * faster)
    assert goodput(gpus, params, quicker).fraction >= g - 1e-12
