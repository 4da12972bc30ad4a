"""Cost lines in Decimal: rental, minimum commitment, purchase, totals, spreadsheet rule."""

from __future__ import annotations

from dataclasses import replace
from decimal import ROUND_HALF_UP, Decimal, localcontext

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procure.economics import Assumptions, evaluate_core
from procure.economics import examples as ex
from procure.economics.cost import cost_basis, cost_lines, residual_value, total_cost_float
from procure.economics.inputs import Pricing
from procure.money import cents, money_sum

NO_FAILURES = Assumptions(failures_per_gpu_hour=0.0)


def one_hour_per_thousand(pricing: Pricing, gpus: int = 8, hours: int = 1):
    """A bid whose training takes exactly ``hours`` hours: 1e6 tokens/s, goodput 1."""
    return ex.case("x", gpus=gpus, pricing=pricing, train_tokens=3.6e9 * hours,
                   step_time_s=1.0, tokens_per_step=1_000_000, modeled_step_time_s=1.0)


def test_rental_cost_is_gpus_times_price_times_hours_to_the_cent():
    econ = evaluate_core(one_hour_per_thousand(ex.rental("2.35")), NO_FAILURES)
    assert econ.billed_hours == Decimal("1.00")
    assert econ.total_cost == Decimal("18.80")
    assert [line.key for line in econ.cost_lines] == ["gpu_hours"]
    assert econ.cost_per_million_tokens == Decimal("0.0052")   # 18.80 / 3.6e9 × 1e6


def test_rental_cost_for_a_realistic_bid():
    econ = evaluate_core(ex.case("a", pricing=ex.rental("2.35")), Assumptions())
    hours = econ.billed_hours
    assert hours == hours.quantize(Decimal("0.01"))
    assert 0 <= hours - Decimal(repr(econ.time_to_train_days * 24)) < Decimal("0.01")
    assert econ.total_cost == (4096 * hours * Decimal("2.35")).quantize(Decimal("0.01"))
    expected_rate = (econ.total_cost / Decimal(10**12) * 10**6).quantize(Decimal("0.0001"))
    assert econ.cost_per_million_tokens == expected_rate


def test_minimum_commitment_is_paid_even_when_training_is_shorter():
    econ = evaluate_core(one_hour_per_thousand(ex.rental("2.00", min_commit_months=12)),
                         NO_FAILURES)
    assert econ.time_to_train_days == pytest.approx(1 / 24)
    assert econ.billed_hours == Decimal("8760.0")
    assert econ.total_cost == Decimal("140160.00")           # 8 × 8760 × 2.00


def test_training_longer_than_the_commitment_bills_the_hours_used():
    econ = evaluate_core(one_hour_per_thousand(ex.rental("2.00", min_commit_months=1), hours=1000),
                         NO_FAILURES)
    assert econ.billed_hours == Decimal("1000.00")
    assert econ.total_cost == Decimal("16000.00")


def test_rental_adders_and_support():
    pricing = ex.rental("2.35", storage_per_gpu_hour=Decimal("0.05"),
                        network_per_gpu_hour=Decimal("0.10"), support_fraction=Decimal("0.03"))
    econ = evaluate_core(one_hour_per_thousand(pricing, hours=10), NO_FAILURES)
    amounts = {line.key: line.amount for line in econ.cost_lines}
    assert amounts == {"gpu_hours": Decimal("188.00"), "storage": Decimal("4.00"),
                       "network": Decimal("8.00"), "support": Decimal("5.64")}
    assert econ.total_cost == Decimal("205.64")


def test_purchase_lines_by_hand():
    econ = evaluate_core(one_hour_per_thousand(ex.purchase("30000"), hours=1000), NO_FAILURES)
    amounts = {line.key: line.amount for line in econ.cost_lines}
    assert amounts == {
        "capex": Decimal("4931.51"),          # 8 × 30000 × 1000 × 0.9 / 43800
        "network_capex": Decimal("493.15"),   # 8 × 3000 × 1000 × 0.9 / 43800
        "power": Decimal("465.92"),           # 8 × 1000 h × 0.7 kW × 0.8 × 1.3 × 0.08
        "colocation": Decimal("1495.89"),     # 8 × 0.7 × 1.3 × 150 × 1000 / 730
        "support": Decimal("1369.86"),        # 8 × 1500 × 1000 / 8760
    }
    assert econ.total_cost == Decimal("8756.33")
    assert econ.residual_value == Decimal("258575.34")  # 8 × 33000 − the two capex lines
    assert econ.energy_mwh == Decimal("5.824")
    assert econ.billed_hours == Decimal("1000.00")


def test_workload_power_price_overrides_the_book():
    assumptions = replace(NO_FAILURES, power_usd_per_kwh=Decimal("0.10"))
    econ = evaluate_core(one_hour_per_thousand(ex.purchase(), hours=1000), assumptions)
    power = next(line for line in econ.cost_lines if line.key == "power")
    assert power.amount == Decimal("582.40")


def test_amortisation_stops_at_the_end_of_life():
    econ = evaluate_core(one_hour_per_thousand(ex.purchase(life_years=Decimal("0.1")), hours=1000),
                         NO_FAILURES)
    capex = next(line for line in econ.cost_lines if line.key == "capex")
    assert capex.factors["used_hours"] == Decimal("876.0")
    assert capex.amount == Decimal("216000.00")            # 8 × 30000 × 0.9, not more


def test_no_tdp_means_no_energy_and_a_note():
    econ = evaluate_core(ex.case("a", pricing=ex.rental("2.35", tdp_w=None)), Assumptions())
    assert econ.energy_mwh is None
    assert any("TDP" in note for note in econ.notes)


def test_price_missing_keeps_time_but_not_cost():
    econ = evaluate_core(ex.case("a", pricing=ex.rental(None)), Assumptions())
    assert econ.time_to_train_days > 0
    assert (econ.total_cost, econ.cost_per_million_tokens, econ.cost_lines) == (None, None, ())
    no_life = ex.purchase(capex_per_gpu="1", life_years=None)
    missing_capex = evaluate_core(ex.case("b", pricing=no_life), Assumptions())
    assert missing_capex.total_cost is None
    assert "price-missing" in missing_capex.flag_codes


# --- properties ------------------------------------------------------------------------------

def money(max_value: str, places: int = 4):
    return st.decimals(min_value=Decimal(0), max_value=Decimal(max_value), places=places,
                       allow_nan=False, allow_infinity=False)


rental_pricing = st.builds(
    lambda price, months, storage, network, support: Pricing(
        kind="rental", currency="USD", price_per_gpu_hour=price, min_commit_months=months,
        storage_per_gpu_hour=storage, network_per_gpu_hour=network, support_fraction=support,
        tdp_w=700.0),
    money("20"), st.integers(0, 36), money("1"), money("1"), money("0.3", 3))

purchase_pricing = st.builds(
    lambda capex, net, life, residual, support, power, pue, colo, tdp: Pricing(
        kind="purchase", currency="USD", price_per_gpu_hour=None, capex_per_gpu=capex,
        network_capex_per_gpu=net, life_years=life, residual_fraction=residual,
        support_per_gpu_year=support, power_per_kwh=power, pue=pue, colo_per_kw_month=colo,
        tdp_w=tdp),
    money("80000", 2), money("10000", 2), st.sampled_from([Decimal(3), Decimal(4), Decimal("5.5")]),
    money("0.5", 2), money("5000", 2), money("0.4"),
    st.sampled_from([Decimal("1.1"), Decimal("1.35")]),
    money("400", 2), st.sampled_from([300.0, 700.0, 1000.0]))

hours = st.decimals(min_value=Decimal("0.01"), max_value=Decimal(100_000), places=2)


def exact_value(line) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 60
        value = line.quantity * line.rate
        for factor in line.factors.values():
            value *= factor
        return value / line.divisor


def spreadsheet_value(line) -> float:
    """What a spreadsheet formula over the exposed inputs computes (IEEE doubles)."""
    value = float(line.quantity) * float(line.rate)
    for factor in line.factors.values():
        value *= float(factor)
    return value / float(line.divisor)


def near_half_cent(value: Decimal) -> bool:
    fraction = (value * 100) % 1
    return abs(abs(fraction) - Decimal("0.5")) < Decimal("1e-6")


@settings(max_examples=150, deadline=None)
@given(pricing=st.one_of(rental_pricing, purchase_pricing), gpus=st.integers(1, 100_000),
       used_hours=hours)
def test_total_is_the_exact_sum_and_each_line_follows_the_one_rule(pricing, gpus, used_hours):
    basis = cost_basis(pricing, gpus, Assumptions())
    lines = cost_lines(basis, used_hours)
    assert money_sum(line.amount for line in lines) == sum((line.amount for line in lines),
                                                            Decimal(0))
    for line in lines:
        assert line.amount == cents(exact_value(line))
        assert line.amount == exact_value(line).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)  # as ROUND() in a spreadsheet
        in_sheet = round(spreadsheet_value(line), 2)
        assert Decimal(repr(in_sheet)) == line.amount or near_half_cent(exact_value(line))
        assert line.to_dict()["amount"] == line.amount


@settings(max_examples=100, deadline=None)
@given(pricing=st.one_of(rental_pricing, purchase_pricing), gpus=st.integers(1, 20_000),
       used_hours=hours)
def test_the_monte_carlo_float_total_matches_the_decimal_total(pricing, gpus, used_hours):
    basis = cost_basis(pricing, gpus, Assumptions())
    lines = cost_lines(basis, used_hours)
    decimal_total = sum((line.amount for line in lines), Decimal(0))
    float_total = float(total_cost_float(basis, float(used_hours)))
    assert float_total == pytest.approx(float(decimal_total), rel=1e-9, abs=0.01 * len(lines))


@settings(max_examples=60, deadline=None)
@given(pricing=purchase_pricing, gpus=st.integers(1, 20_000), used_hours=hours)
def test_residual_plus_amortised_capex_is_the_capex(pricing, gpus, used_hours):
    basis = cost_basis(pricing, gpus, Assumptions())
    lines = cost_lines(basis, used_hours)
    amortised = sum((line.amount for line in lines if line.key in ("capex", "network_capex")),
                    Decimal(0))
    capex = cents(gpus * pricing.capex_per_gpu) + (
        cents(gpus * pricing.network_capex_per_gpu) if pricing.network_capex_per_gpu else 0)
    assert residual_value(basis, lines) + amortised == capex
