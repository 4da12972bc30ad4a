"""Throughput, MFU/HFU, goodput and time to train."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

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

    assert "dense peak" in MFU_CONVENTION and "mfu_convention" not in econ.to_dict()


def test_physical_floor_is_model_flops_at_full_peak():
    perf = ex.performance(4096, ex.H100_BF16_FLOPS)
    expected = 6 * 70e9 * 16_777_216 / (4096 * 989.4e12)
    assert physical_floor_s(perf) == pytest.approx(expected, rel=1e-12)
    assert 1.7 < expected < 1.8


def test_goodput_matches_young_formula_by_hand():
    g = goodput(4096, 70_000_000_000, A)
    write_s = 70e9 * 16 / 100e9
    job_rate_s = 4096 * 419 / 21_233_664 / 3600
    tau_s = math.sqrt(2 * write_s / job_rate_s)
    lost = write_s / tau_s + job_rate_s * (tau_s / 2 + 15 * 60)
    assert g.checkpoint_write_s == pytest.approx(11.2)
    assert g.checkpoint_interval_s == pytest.approx(tau_s)
    assert g.lost_fraction == pytest.approx(lost)
    assert g.fraction == pytest.approx(1 - lost)
    assert g.job_mtti_h == pytest.approx(21_233_664 / 419 / 4096)
    assert g.to_dict()["checkpoint_interval_min"] == pytest.approx(tau_s / 60)
    assert not g.clamped


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
    assert g.lost_fraction == pytest.approx(11.2 / 1800 + job_rate_s * (900 + 900))


def test_no_failures_and_no_interval_lose_nothing():
    g = goodput(4096, 70_000_000_000, replace(A, failures_per_gpu_hour=0.0))
    assert (g.fraction, g.job_mtti_h, g.checkpoint_interval_s) == (1.0, None, None)


def test_lost_fraction_is_clamped_and_said_so():
    g = goodput(100_000, 70_000_000_000, replace(A, failures_per_gpu_hour=0.01))
    assert g.clamped
    assert g.lost_fraction == MAX_LOST_FRACTION
    assert g.fraction == pytest.approx(0.01)
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
