"""Cost lines in Decimal on both bases: rental, commitment, purchase, totals, spreadsheet rule."""

from __future__ import annotations

from dataclasses import replace
from decimal import ROUND_HALF_UP, Decimal, localcontext

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procure.economics import Assumptions, evaluate_core
from procure.economics import examples as ex
from procure.economics.cashflow import cash_summary, present_value_float
from procure.economics.cost import BASES, book_value_left, capex_total, cost_lines, resale_fraction, terms
from procure.economics.cost_float import total_cost_float
from procure.economics.inputs import Pricing
from procure.money import cents, money_sum

NO_FAILURES = Assumptions(failures_per_gpu_hour=0.0, eval_fraction=0.0, data_stall_fraction=0.0)   # goodput 1
NO_CAPITAL = replace(NO_FAILURES, cost_of_capital=Decimal(0))


def one_hour_per_thousand(pricing: Pricing, gpus: int = 8, hours: int = 1):
    """A bid whose training takes exactly ``hours`` hours: 1e6 tokens/s, goodput 1."""
    return ex.case("x", gpus=gpus, pricing=pricing, train_tokens=3.6e9 * hours,
                   step_time_s=1.0, tokens_per_step=1_000_000, modeled_step_time_s=1.0)


def amounts(econ, basis: str) -> dict[str, Decimal]:
    return {line.key: line.amount for line in econ.on(basis).cost_lines}


def test_rental_cost_is_gpus_times_price_times_hours_to_the_cent():
    econ = evaluate_core(one_hour_per_thousand(ex.rental("2.35")), NO_FAILURES, "commitment")
    assert econ.billed_hours == Decimal("1.00")
    assert econ.total_cost == Decimal("18.80")
    assert [line.key for line in econ.cost_lines] == ["gpu_hours"]
    assert econ.cost_per_million_tokens == Decimal("0.0052")   # 18.80 / 3.6e9 × 1e6


def test_rental_cost_for_a_realistic_bid():
    econ = evaluate_core(ex.case("a", pricing=ex.rental("2.35")), Assumptions(), "commitment")
    hours = econ.billed_hours
    assert hours == hours.quantize(Decimal("0.01"))
    assert 0 <= hours - Decimal(repr(econ.time_to_train_days * 24)) < Decimal("0.01")
    assert econ.total_cost == (4096 * hours * Decimal("2.35")).quantize(Decimal("0.01"))
    expected_rate = (econ.total_cost / Decimal(10**12) * 10**6).quantize(Decimal("0.0001"))
    assert econ.cost_per_million_tokens == expected_rate


def test_on_demand_without_a_minimum_is_the_same_on_both_bases():
    pricing = ex.rental("2.35", storage_per_gpu_hour=Decimal("0.05"), support_fraction=Decimal("0.03"),
                        setup_fee=Decimal("5000"))
    econ = evaluate_core(ex.case("a", pricing=pricing), Assumptions())
    run, commitment = econ.on("run"), econ.on("commitment")
    assert run.cost_lines == commitment.cost_lines
    assert run.total_cost == commitment.total_cost and run.cost_per_million_tokens == commitment.cost_per_million_tokens
    assert commitment.idle_commitment_hours == 0 and econ.idle_commitment_hours == 0


def test_a_reservation_is_charged_its_hours_used_on_run_and_in_full_on_commitment():
    case = one_hour_per_thousand(ex.rental("2.00", min_commit_months=12))
    run_econ = evaluate_core(case, NO_FAILURES, "run")
    econ = evaluate_core(case, NO_FAILURES, "commitment")
    assert econ.time_to_train_days == pytest.approx(1 / 24)
    assert amounts(econ, "run") == {"gpu_hours": Decimal("16.00")}             # 8 GPUs × 1 h × 2.00
    assert amounts(econ, "commitment") == {"gpu_hours": Decimal("16.00"),
                                           "idle_commitment": Decimal("140144.00")}   # 8 × 8759 h × 2.00
    assert econ.billed_hours == Decimal("8760.0") and econ.total_cost == Decimal("140160.00")
    assert econ.idle_commitment_hours == Decimal("8759.00")
    assert run_econ.billed_hours == Decimal("1.00") and run_econ.total_cost == Decimal("16.00")
    assert run_econ.bases == econ.bases                                    # both bases, whichever ranks


def test_training_longer_than_the_commitment_bills_the_hours_used():
    econ = evaluate_core(one_hour_per_thousand(ex.rental("2.00", min_commit_months=1), hours=1000),
                         NO_FAILURES, "commitment")
    assert econ.billed_hours == Decimal("1000.00")
    assert econ.total_cost == Decimal("16000.00")
    assert econ.idle_commitment_hours == 0


def test_rental_adders_and_support():
    pricing = ex.rental("2.35", storage_per_gpu_hour=Decimal("0.05"),
                        network_per_gpu_hour=Decimal("0.10"), support_fraction=Decimal("0.03"))
    econ = evaluate_core(one_hour_per_thousand(pricing, hours=10), NO_FAILURES, "commitment")
    assert amounts(econ, "commitment") == {"gpu_hours": Decimal("188.00"), "storage": Decimal("4.00"),
                                           "network": Decimal("8.00"), "support": Decimal("5.64")}
    assert econ.total_cost == Decimal("205.64")


def test_inline_rental_terms_discount_setup_egress_and_prepayment():
    pricing = ex.rental("2.00", min_commit_months=1, discount_fraction=Decimal("0.10"),
                        setup_fee=Decimal("2500"), egress_tb=Decimal("40"), egress_per_tb=Decimal("90"),
                        prepay_fraction=Decimal("0.5"))
    econ = evaluate_core(one_hour_per_thousand(pricing, hours=100), NO_FAILURES, "commitment")
    commitment = amounts(econ, "commitment")
    assert commitment["gpu_hours"] == Decimal("1440.00")            # 8 × 100 h × 2.00 × 0.9
    assert commitment["idle_commitment"] == Decimal("9072.00")      # 8 × 630 h × 2.00 × 0.9
    assert commitment["setup"] == Decimal("2500.00")
    assert commitment["egress"] == Decimal("3600.00")               # 40 TB × 90
    # (1440 + 9072) × 0.5 prepaid × 8 % a year × 365 h (half the 730-h term) / 8760
    assert commitment["prepay_financing"] == Decimal("17.52")
    run = amounts(econ, "run")
    assert run == {"gpu_hours": Decimal("1440.00"), "setup": Decimal("2500.00"), "egress": Decimal("3600.00")}


def test_purchase_lines_by_hand_on_both_bases():
    econ = evaluate_core(one_hour_per_thousand(ex.purchase("30000"), hours=1000), NO_FAILURES)
    # run: straight-line depreciation to the book residual, financing and opex for the hours used
    assert amounts(econ, "run") == {
        "capex": Decimal("4931.51"),          # 8 × 30000 × 1000 × 0.9 / 43800
        "network_capex": Decimal("493.15"),   # 8 × 3000 × 1000 × 0.9 / 43800
        "financing": Decimal("2410.96"),      # 264000 × 0.08 × 1000 / 8760
        "power": Decimal("465.92"),           # 8 × 1000 h × 0.7 kW × 0.8 × 1.3 × 0.08
        "colocation": Decimal("1150.68"),     # 8 × 0.7 kW × 150 × 1000 / 730 (no PUE: per kW of IT load)
        "support": Decimal("1369.86"),        # 8 × 1500 × 1000 / 8760
    }
    # commitment: capex bought outright, the same financing and opex, minus resale at the end
    fraction = resale_fraction(terms(ex.purchase("30000"), 8, NO_FAILURES), Decimal("1000.00"))
    # market value 0.67 ** (1000 / 8760) = 0.955313, less the 15% used-market haircut and the 5%
    # transaction cost: 0.955313 × 0.85 × 0.95 = 0.771415
    assert fraction == Decimal("0.771415")
    commitment = amounts(econ, "commitment")
    assert commitment["capex"] == Decimal("240000.00") and commitment["network_capex"] == Decimal("24000.00")
    assert commitment["resale"] == Decimal("-203653.56")            # − 264000 × 0.771415
    # 264000 capex + 2410.96 financing + 465.92 + 1150.68 + 1369.86 opex − 203653.56 resale
    assert econ.on("commitment").total_cost == Decimal("65743.86")
    assert econ.upfront_capex == Decimal("264000.00")
    assert econ.residual_value == Decimal("258575.34")              # 264000 − the two depreciation lines
    assert econ.energy_mwh == Decimal("5.824")
    assert econ.billed_hours == Decimal("1000.00")


def test_purchase_inline_terms_nodes_fabric_and_staff():
    pricing = ex.purchase("30000", capex_per_node=Decimal("50000"), gpus_per_node=8,
                          network_capex=Decimal("100000"), staff_per_year=Decimal("876000"))
    econ = evaluate_core(one_hour_per_thousand(pricing, gpus=12, hours=1000), NO_CAPITAL)
    commitment = amounts(econ, "commitment")
    assert commitment["node_capex"] == Decimal("100000.00")         # ceil(12 / 8) = 2 nodes
    assert commitment["fabric_capex"] == Decimal("100000.00")
    assert commitment["staff"] == Decimal("100000.00")              # 876000 × 1000 / 8760
    assert econ.upfront_capex == Decimal("596000.00")               # 12×30000 + 2×50000 + 12×3000 + 100000
    assert "financing" not in commitment                            # no cost of capital, no line


def test_the_bids_own_power_price_and_pue_win_over_the_workloads_and_the_conflict_is_noted():
    """8 GPUs × 0.7 kW × 0.8 draw × 1.3 PUE × 1000 h = 5,824 kWh; at the bid's 0.08 = 465.92."""
    assumptions = replace(NO_FAILURES, power_price_per_kwh=Decimal("0.10"), pue=Decimal("1.5"))
    econ = evaluate_core(one_hour_per_thousand(ex.purchase(), hours=1000), assumptions)
    assert amounts(econ, "run")["power"] == Decimal("465.92")
    assert econ.energy_mwh == Decimal("5.824")
    flag = next(f for f in econ.flags if f.code == "facility-conflict")
    assert flag.severity == "warning"
    assert flag.reason == ("power price: the bid's 0.08 USD/kWh is used, not the workload's 0.1 USD/kWh (converted "
                           "from USD); PUE: the bid's 1.3 is used, not the workload's 1.5")


def test_the_workload_power_price_and_pue_serve_a_bid_that_states_none():
    """5,824 kWh × 1.5 / 1.3 = 6,720 kWh at the workload's 0.10 = 672.00; no conflict to note."""
    assumptions = replace(NO_FAILURES, power_price_per_kwh=Decimal("0.10"), pue=Decimal("1.5"))
    pricing = ex.purchase(power_per_kwh=None, pue=None)
    econ = evaluate_core(one_hour_per_thousand(pricing, hours=1000), assumptions)
    assert amounts(econ, "run")["power"] == Decimal("672.00")
    assert "facility-conflict" not in [f.code for f in econ.flags]


def test_rented_and_owned_hours_give_the_same_energy_at_the_same_pue():
    """A rental whose book states no PUE counts the assumed 1.3 of a rented cluster (not the buyer's
    workload PUE, and not 1): 1000 identical hours give 5.824 MWh rented and owned."""
    assumptions = replace(NO_FAILURES, pue=Decimal("1.5"))
    rented = evaluate_core(one_hour_per_thousand(ex.rental("2.35"), hours=1000), assumptions)
    owned = evaluate_core(one_hour_per_thousand(ex.purchase(), hours=1000), assumptions)
    assert rented.energy_mwh == owned.energy_mwh == Decimal("5.824")
    assert any("assumed PUE 1.3 of a rented cluster" in n for n in rented.notes)
    provider = evaluate_core(one_hour_per_thousand(ex.rental("2.35", pue=Decimal("1.1")), hours=1000), assumptions)
    assert provider.energy_mwh == Decimal("4.928")                  # the provider's own 1.1: 5.824 × 1.1 / 1.3


def test_power_and_colocation_by_hand_from_a_dgx_h100_spec():
    """DGX H100: 10.2 kW for 8 GPUs plus 81 W of fabric = 1.356 kW of IT load per GPU."""
    kw = Decimal("10.2") / 8 + Decimal("0.081")
    assert kw == Decimal("1.356")
    pricing = ex.purchase(kw_per_gpu=kw, power_source="system:dgx-h100", colo_per_kw_month=Decimal("200"))
    econ = evaluate_core(one_hour_per_thousand(pricing, gpus=4096, hours=1000), NO_FAILURES)
    run = amounts(econ, "run")
    # power: 4096 GPUs × 1000 h × 1.356 kW × 0.8 average draw × 1.3 PUE × 0.08 per kWh
    assert run["power"] == Decimal("462107.44")
    # colocation: 4096 × 1.356 kW × 200 per kW-month × 1000 h / 730 h per month, no PUE
    assert run["colocation"] == Decimal("1521692.05")
    assert econ.energy_mwh == Decimal("5776.343")                   # 4096 × 1.356 × 0.8 × 1.3 × 1000 h / 1000
    assert not any("TDP" in note for note in econ.notes)


def test_amortisation_stops_at_the_end_of_life():
    econ = evaluate_core(one_hour_per_thousand(ex.purchase(life_years=Decimal("0.1")), hours=1000),
                         NO_FAILURES, "run")
    capex = next(line for line in econ.cost_lines if line.key == "capex")
    assert capex.factors["used_hours"] == Decimal("876.0")
    assert capex.amount == Decimal("216000.00")            # 8 × 30000 × 0.9, not more


def test_tdp_only_power_is_noted_and_no_tdp_means_no_energy():
    econ = evaluate_core(ex.case("a", pricing=ex.rental("2.35", tdp_w=None)), Assumptions())
    assert econ.energy_mwh is None
    assert any("TDP" in note for note in econ.notes)
    tdp = evaluate_core(ex.case("b", pricing=ex.rental("2.35")), Assumptions())
    assert any("TDP only" in note or "TDP" in note for note in tdp.notes)


def test_price_missing_keeps_time_but_not_cost():
    econ = evaluate_core(ex.case("a", pricing=ex.rental(None)), Assumptions())
    assert econ.time_to_train_days > 0
    assert (econ.total_cost, econ.cost_per_million_tokens, econ.cost_lines, econ.bases) == (None, None, (), ())
    no_life = ex.purchase(capex_per_gpu="1", life_years=None)
    missing_capex = evaluate_core(ex.case("b", pricing=no_life), Assumptions())
    assert missing_capex.total_cost is None
    assert "price-missing" in missing_capex.flag_codes


def test_value_of_time_adds_to_the_ranking_figure_not_the_cost():
    vot = replace(NO_FAILURES, value_of_time_per_day=Decimal("24000"))
    case = replace(one_hour_per_thousand(ex.rental("2.00"), hours=48), lead_time_days=10.0)
    econ = evaluate_core(case, vot)
    basis = econ.on("commitment")
    assert basis.time_value == Decimal("288000.00")                  # 24000 × (10 + 2 days)
    assert basis.total_cost == Decimal("768.00")
    assert basis.ranking_cost_per_million_tokens > basis.cost_per_million_tokens
    assert econ.days_to_finish == pytest.approx(12.0)


def test_an_unknown_basis_is_refused():
    with pytest.raises(ValueError, match="cost basis"):
        evaluate_core(ex.case("a"), Assumptions(), "cash")


# --- properties ------------------------------------------------------------------------------

def money(max_value: str, places: int = 4):
    return st.decimals(min_value=Decimal(0), max_value=Decimal(max_value), places=places,
                       allow_nan=False, allow_infinity=False)


rental_pricing = st.builds(
    lambda price, months, storage, network, support, discount, setup, prepay: Pricing(
        kind="rental", currency="USD", price_per_gpu_hour=price, min_commit_months=months,
        storage_per_gpu_hour=storage, network_per_gpu_hour=network, support_fraction=support,
        discount_fraction=discount, setup_fee=setup, prepay_fraction=prepay, tdp_w=700.0),
    money("20"), st.integers(0, 36), money("1"), money("1"), money("0.3", 3), money("0.5", 2),
    money("100000", 2), money("1", 2))

purchase_pricing = st.builds(
    lambda capex, net, life, residual, support, power, pue, colo, kw, node, staff, coc: Pricing(
        kind="purchase", currency="USD", price_per_gpu_hour=None, capex_per_gpu=capex,
        network_capex_per_gpu=net, life_years=life, residual_fraction=residual,
        support_per_gpu_year=support, power_per_kwh=power, pue=pue, colo_per_kw_month=colo,
        kw_per_gpu=kw, power_source="given", capex_per_node=node, staff_per_year=staff, cost_of_capital=coc),
    money("80000", 2), money("10000", 2), st.sampled_from([Decimal(3), Decimal(4), Decimal("5.5")]),
    money("0.5", 2), money("5000", 2), money("0.4"),
    st.sampled_from([Decimal("1.1"), Decimal("1.35")]),
    money("400", 2), st.sampled_from([Decimal("0.7"), Decimal("1.356"), Decimal("1.914")]),
    money("60000", 2), money("3000000", 2), money("0.2", 3))

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


def spreadsheet_round(value: float, places: int = 2) -> Decimal:
    """ROUND() of a spreadsheet: half away from zero on the decimal value it shows."""
    return Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


@settings(max_examples=150, deadline=None)
@given(pricing=st.one_of(rental_pricing, purchase_pricing), gpus=st.integers(1, 100_000),
       used_hours=hours, basis=st.sampled_from(BASES))
def test_total_is_the_exact_sum_and_each_line_follows_the_one_rule(pricing, gpus, used_hours, basis):
    t = terms(pricing, gpus, Assumptions())
    lines = cost_lines(t, used_hours, basis)
    assert money_sum(line.amount for line in lines) == sum((line.amount for line in lines), Decimal(0))
    for line in lines:
        assert line.amount == cents(exact_value(line))
        assert line.amount == exact_value(line).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)  # as ROUND() in a spreadsheet
        in_sheet = spreadsheet_round(spreadsheet_value(line))
        assert in_sheet == line.amount or near_half_cent(exact_value(line))


@settings(max_examples=100, deadline=None)
@given(pricing=st.one_of(rental_pricing, purchase_pricing), gpus=st.integers(1, 20_000),
       used_hours=hours, basis=st.sampled_from(BASES))
def test_the_monte_carlo_float_total_matches_the_decimal_total(pricing, gpus, used_hours, basis):
    t = terms(pricing, gpus, Assumptions())
    lines = cost_lines(t, used_hours, basis)
    decimal_total = sum((line.amount for line in lines), Decimal(0))
    if basis == "present_value":       # the dated cash, discounted: one cent per flow at most
        cash = cash_summary(t, 0.0, used_hours)
        decimal_total, lines = cash.present_value, list(cash.flows)
    float_total = float(present_value_float(t, float(used_hours)) if basis == "present_value"
                        else total_cost_float(t, float(used_hours), basis=basis))
    scale = max(abs(float(decimal_total)), float(capex_total(t)) if pricing.kind == "purchase" else 0.0)
    assert float_total == pytest.approx(float(decimal_total), rel=0, abs=0.01 * len(lines) + 2e-6 * scale)


@settings(max_examples=60, deadline=None)
@given(pricing=purchase_pricing, gpus=st.integers(1, 20_000), used_hours=hours)
def test_book_value_plus_depreciation_is_the_capex(pricing, gpus, used_hours):
    t = terms(pricing, gpus, Assumptions())
    run = cost_lines(t, used_hours, "run")
    depreciation = sum((line.amount for line in run if line.key.endswith("capex")), Decimal(0))
    assert book_value_left(t, run) + depreciation == capex_total(t)
    commitment = cost_lines(t, used_hours, "commitment")
    bought = sum((line.amount for line in commitment if line.key.endswith("capex")), Decimal(0))
    assert bought == capex_total(t)


@settings(max_examples=60, deadline=None)
@given(pricing=rental_pricing, gpus=st.integers(1, 20_000), used_hours=hours)
def test_an_on_demand_rental_costs_the_same_on_both_bases(pricing, gpus, used_hours):
    pricing = replace(pricing, min_commit_months=0, prepay_fraction=Decimal(0))
    t = terms(pricing, gpus, Assumptions())
    assert cost_lines(t, used_hours, "run") == cost_lines(t, used_hours, "commitment")
