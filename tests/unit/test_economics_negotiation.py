"""The negotiator's figures: break-even price, step time to win, credible commitment, idle hours."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procure.compare import compare
from procure.economics import Assumptions, Commitment, evaluate_core
from procure.economics import examples as ex
from procure.economics.cost import BASES
from procure.economics.negotiation import break_even_price, credible_step_time, ranking_total

A = Assumptions()


def rerank_at(case, key: str, price: Decimal, basis: str):
    return evaluate_core(replace(case, pricing=replace(case.pricing, **{key: price})), A, basis)


@pytest.mark.parametrize("basis", BASES)
def test_break_even_prices_re_ranked_give_a_tie_to_the_cent(basis):
    cases = [ex.case("rent", pricing=ex.rental("2.35")),
             ex.case("reserve", pricing=ex.rental("2.10", min_commit_months=3)),
             ex.case("buy", pricing=ex.purchase("30000"))]
    result = compare(cases, A, basis)
    for case, econ in zip(cases, result.bids):
        n = econ.negotiation
        target = next(b for b in result.bids if b.id == n.target_bid)
        if n.break_even_price is None:
            # no price ties: a fresh quote at a price of 0 still costs more than the target (a
            # purchase keeps its network capex, whose haircut and transaction cost alone exceed it)
            free = rerank_at(case, n.price_key, Decimal(0), basis)
            assert free.ranking_value() > target.ranking_value(basis)
            assert any("no price ties" in note for note in n.notes)
            continue
        moved = rerank_at(case, n.price_key, n.break_even_price, basis)
        # the ranking figure ties the target's to its 1e-4 quantum (finer than a cent); the total
        # is within half the 1e-6 price quantum per GPU-hour (or capex unit) billed
        assert moved.ranking_value() == target.ranking_value(basis)
        units = max(moved.on(basis).billed_hours * case.performance.gpus, Decimal(case.performance.gpus))
        assert abs(moved.on(basis).total_cost - target.on(basis).total_cost) <= units * Decimal("0.0000005") + Decimal("0.02")
        assert n.break_even_quoted == n.break_even_price              # quoted in USD: the same figure


@settings(max_examples=40, deadline=None)
@given(price=st.decimals(min_value=Decimal("0.5"), max_value=Decimal("8"), places=2),
       other=st.decimals(min_value=Decimal("0.5"), max_value=Decimal("8"), places=2),
       months=st.integers(0, 3))
def test_the_break_even_of_a_rental_ties_any_target(price, other, months):
    case = ex.case("a", pricing=ex.rental(price, min_commit_months=months))
    target = evaluate_core(ex.case("b", pricing=ex.rental(other)), A)
    target_total = target.on("commitment").total_cost
    found = break_even_price(case, A, "commitment", target_total)
    assert found is not None
    total = ranking_total(replace(case, pricing=replace(case.pricing, price_per_gpu_hour=found)), A, "commitment")
    gpu_hours = Decimal(case.performance.gpus) * max(target.used_hours, Decimal(months * 730))
    assert abs(total - target_total) <= gpu_hours * Decimal("0.0000005") + Decimal("0.01")


def test_a_quote_in_another_currency_gets_its_break_even_in_that_currency():
    rate = Decimal("0.0317279015166")                                  # USD per TWD
    twd = ex.rental("2.379593", quoted_currency="TWD", fx_rate=rate)
    result = compare([ex.case("tw", pricing=twd), ex.case("us", pricing=ex.rental("2.00"))], A)
    n = result.bids[0].negotiation
    assert n.quoted_currency == "TWD"
    assert n.break_even_quoted == (n.break_even_price / rate).quantize(Decimal("0.000001"))


def test_step_time_to_win_ties_the_target():
    slow = ex.case("slow", pricing=ex.rental("2.00"), mfu=0.3)
    fast = ex.case("fast", pricing=ex.rental("2.00"), mfu=0.45)
    result = compare([slow, fast], A)
    n = result.bids[0].negotiation
    assert n.target_bid == "fast" and n.step_time_to_win_s < n.step_time_s
    moved = evaluate_core(replace(slow, performance=replace(slow.performance, step_time_s=n.step_time_to_win_s)), A)
    assert moved.on("commitment").total_cost <= result.bids[1].on("commitment").total_cost
    assert n.step_time_to_win_mfu == pytest.approx(0.45, rel=0.01)


def test_a_reservation_that_covers_the_run_cannot_win_on_speed_and_shows_its_idle_hours():
    reserved = ex.case("reserved", pricing=ex.rental("2.00", min_commit_months=12))
    result = compare([reserved, ex.case("od", pricing=ex.rental("2.35"))], A)
    n = result.bids[0].negotiation
    assert n.step_time_to_win_s is None and any("step time does not decide" in x for x in n.notes)
    econ = result.bids[0]
    assert n.idle_commitment_hours == econ.idle_commitment_hours > 8000
    idle_line = next(line for line in econ.on("commitment").cost_lines if line.key == "idle_commitment")
    assert n.idle_commitment_cost == idle_line.amount


def test_the_winner_is_measured_against_the_runner_up_and_may_raise_its_price():
    result = compare([ex.case("cheap", pricing=ex.rental("1.80")), ex.case("dear", pricing=ex.rental("2.40"))], A)
    n = result.bids[0].negotiation
    assert n.target_bid == "dear" and n.break_even_change > 0
    assert result.bids[1].negotiation.target_bid == "cheap" and result.bids[1].negotiation.break_even_change < 0


def test_credible_step_time_is_the_slower_of_the_record_and_the_model_tolerance():
    case = ex.case("c", mfu=0.4)
    value, bound = credible_step_time(case, A)
    assert bound == "model-tolerance" and value == pytest.approx(case.performance.modeled_step_time_s * 0.85)
    lean = ex.case("c", mfu=0.7)                     # the model itself is near the record
    value, bound = credible_step_time(lean, A)
    floor = lean.performance.model_flops_per_step / (lean.performance.gpus * lean.performance.peak_flops_per_gpu)
    assert bound == "mfu-record" and value == pytest.approx(floor / 0.65)
    at_credible = evaluate_core(replace(lean, commitment=Commitment(step_time_s=value * 1.0001)), A)
    assert not {"implausible", "optimistic"} & set(at_credible.flag_codes)
    faster = evaluate_core(replace(lean, commitment=Commitment(step_time_s=value * 0.99)), A)
    assert "implausible" in faster.flag_codes


def test_a_lone_bid_has_no_target():
    n = compare([ex.case("only")], A).bids[0].negotiation
    assert n.target_bid is None and n.break_even_price is None
