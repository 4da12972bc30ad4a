"""The seeded Monte-Carlo band."""

from __future__ import annotations

from dataclasses import replace

import pytest

from procure.economics import Assumptions, evaluate_bid, evaluate_core
from procure.economics import examples as ex
from procure.economics.uncertainty import band

A = Assumptions()


def test_same_inputs_give_an_identical_band():
    case = ex.case("a", pricing=ex.purchase())
    first, second = evaluate_bid(case, A).uncertainty, evaluate_bid(case, A).uncertainty
    assert first == second
    assert first.seed == 20261201 and first.samples == 2000


def test_another_seed_gives_another_band():
    case = ex.case("a")
    base, other = band(case, A), band(case, replace(A, seed=7))
    assert (base.cost_per_million_tokens, base.time_to_train_days) != \
        (other.cost_per_million_tokens, other.time_to_train_days)


@pytest.mark.parametrize("pricing", [ex.rental("2.35"), ex.purchase()])
def test_band_is_ordered_and_centred_on_the_base(pricing):
    case = ex.case("a", pricing=pricing)
    base = evaluate_core(case, A)
    result = band(case, A)
    p10, p50, p90 = result.cost_per_million_tokens
    d10, d50, d90 = result.time_to_train_days
    assert p10 < p50 < p90 and d10 < d50 < d90
    assert float(p50) == pytest.approx(float(base.cost_per_million_tokens), rel=0.03)
    assert d50 == pytest.approx(base.time_to_train_days, rel=0.03)
    assert p50 == p50.quantize(result.cost_quantum)        # reported to the precision the sample supports


def test_a_reservation_longer_than_training_only_moves_with_price():
    case = ex.case("a", pricing=ex.rental("2.00", min_commit_months=12))
    p10, _, p90 = band(case, A).cost_per_million_tokens
    base = float(evaluate_core(case, A).cost_per_million_tokens)
    assert base * 0.9 <= float(p10) < float(p90) <= base * 1.1   # triangular ±10 % price only


def test_a_bids_band_does_not_depend_on_other_bids():
    a, b = ex.case("a"), ex.case("b", gpus=2048, pricing=ex.rental("1.9"))
    assert band(a, A) == band(a, A)
    alone = evaluate_bid(a, A).uncertainty
    band(b, A)
    assert evaluate_bid(a, A).uncertainty == alone


def test_price_missing_has_a_time_band_only_and_infeasible_none():
    missing = band(ex.case("a", pricing=ex.rental(None)), A)
    assert missing.cost_per_million_tokens is None and missing.time_to_train_days[1] > 0
    assert band(ex.case("b", feasible=False), A) is None
    assert band(ex.case("c"), replace(A, monte_carlo_samples=0)) is None


# --- issue 12: the model's own error, both bases, the precision the sample supports ---------------

import math  # noqa: E402
from decimal import Decimal  # noqa: E402

from procure.economics.inputs import StepTimeError  # noqa: E402
from procure.economics.uncertainty import step_error, supported_quantum  # noqa: E402


def spread(result) -> float:
    d10, _, d90 = result.time_to_train_days
    return d90 / d10


def test_an_uncalibrated_accelerator_gets_a_wider_band():
    calibrated = band(ex.case("a", error=StepTimeError(calibrated=True)), A)
    uncalibrated = band(ex.case("a", error=StepTimeError(calibrated=False)), A)
    assert uncalibrated.step_error.sigma_log == A.step_time_sigma_uncalibrated
    assert calibrated.step_error.sigma_log == A.step_time_sigma_calibrated
    assert spread(uncalibrated) > 1.6 > spread(calibrated) > 1.1
    # P90/P10 of a lognormal with sigma 0.25 is exp(2 × 1.2816 × 0.25) = 1.90 (failures add a little)
    assert spread(uncalibrated) == pytest.approx(1.90, rel=0.08)


def test_the_family_residuals_replace_the_assumption_and_a_bias_moves_the_median():
    family = StepTimeError(calibrated=True, sigma_log=0.2, bias=math.log(1.25), family="dense-bf16-hopper",
                           source="backtests")
    case = ex.case("a", error=family)
    result = band(case, A)
    assert result.step_error.sigma_log == 0.2 and result.step_error.family == "dense-bf16-hopper"
    base_days = evaluate_core(case, A).time_to_train_days
    # measured = predicted × exp(bias + sigma z): a bias of ln 1.25 makes the median run 1.25 times longer
    assert result.time_to_train_days[1] == pytest.approx(1.25 * base_days, rel=0.03)
    assert "lognormal sigma 0.20, bias +0.223 in ln" in result.distributions["step_time"]


def test_a_measured_step_time_draws_no_model_error():
    measured = ex.case("m", basis="measured", measured_mean_s=4.3, error=StepTimeError(calibrated=False))
    error = step_error(measured.performance, A)
    assert error.sigma_log == 0.0 and error.source == "measured"
    assert spread(band(measured, A)) < 1.1


def test_percentiles_are_rounded_to_the_precision_the_sample_supports():
    result = band(ex.case("a", pricing=ex.purchase()), A)
    q = result.cost_quantum
    assert q >= Decimal("0.0001")
    for value in result.cost_per_million_tokens:
        assert value == value.quantize(q)
    for value in result.time_to_train_days:
        assert round(value / result.days_quantum, 6) == round(value / result.days_quantum)
    fewer = band(ex.case("a", pricing=ex.purchase()), replace(A, monte_carlo_samples=200))
    assert fewer.days_quantum >= result.days_quantum           # fewer samples, fewer digits


def test_the_supported_quantum_is_the_decade_of_the_standard_error():
    import numpy as np

    samples = np.random.Generator(np.random.PCG64(1)).normal(100.0, 10.0, 2000)
    # SE of the median of N(100, 10) with n = 2000: 1.2533 × 10 / sqrt(2000) = 0.28 -> 0.1
    assert supported_quantum(samples, 50) == pytest.approx(0.1)
    assert supported_quantum(np.full(100, 3.0), 50) == 0.0


@pytest.mark.parametrize("basis", ["run", "commitment"])
def test_the_cost_band_is_on_the_ranking_basis(basis):
    case = ex.case("r", pricing=ex.rental("2.00", min_commit_months=12))
    result = band(case, A, basis)
    base = evaluate_core(case, A, basis).cost_per_million_tokens
    assert result.basis == basis
    assert float(result.cost_per_million_tokens[1]) == pytest.approx(float(base), rel=0.05)


def test_the_models_calibration_record_is_read_as_the_model_writes_it():
    from procure.catalog.knobs import UNCALIBRATED_ERROR, Calibration
    from procure.catalog.knobs import StepTimeError as Residuals
    from procure.economics.basis import step_time_error

    record = Calibration("b200-sxm-180gb", False, (), UNCALIBRATED_ERROR)
    error = step_time_error(record, fitted_knobs=True)
    assert (error.calibrated, error.sigma_log, error.bias, error.family) == (False, 0.25, 0.0, "uncalibrated")
    fitted = step_time_error(Calibration("h100-sxm-80gb", True, ("run-a",), Residuals("dense-bf16-hopper", 0.05, 0.08,
                                                                                       41)), False)
    assert fitted.calibrated and fitted.source == "model backtests (n=41)"
    fallback = step_time_error(None, fitted_knobs=False)
    assert not fallback.calibrated and fallback.sigma_log is None and "fallback" in fallback.source
