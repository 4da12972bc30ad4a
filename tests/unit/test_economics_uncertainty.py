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
    assert first.to_dict() == second.to_dict()
    assert first.seed == 20261201 and first.samples == 2000


def test_another_seed_gives_another_band():
    case = ex.case("a")
    assert band(case, A).to_dict() != band(case, replace(A, seed=7)).to_dict()


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
    assert p50 == p50.quantize(p50.__class__("0.0001"))   # reported through money.rate


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
