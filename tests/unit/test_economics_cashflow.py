"""Dated cash over one horizon: present value, leftover value, upfront and peak cash (issue 28).

The figures are worked by hand in the comments; the assertions recompute them in Decimal."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from procure.compare import compare
from procure.economics import Assumptions, evaluate_bid
from procure.economics import examples as ex
from procure.economics.cashflow import (CashFlow, discount_factor, peak_cash_out, present_value,
                                        resale_net_fraction)
from procure.economics.cost import terms
from procure.money import cents

NO_FAILURES = Assumptions(failures_per_gpu_hour=0.0, eval_fraction=0.0, data_stall_fraction=0.0)   # goodput 1


def hours_job(bid_id: str, pricing, gpus: int, hours: int):
    """A bid whose training takes exactly ``hours`` hours (1e6 tokens/s, goodput 1)."""
    return ex.case(bid_id, gpus=gpus, pricing=pricing, train_tokens=3.6e9 * hours,
                   step_time_s=1.0, tokens_per_step=1_000_000, modeled_step_time_s=1.0)


def bare_purchase(capex_per_gpu: str):
    """Capex only: no network capex, support, power or colocation (every flow is capex or resale)."""
    return ex.purchase(capex_per_gpu, network_capex_per_gpu=None, support_per_gpu_year=None,
                       power_per_kwh=None, colo_per_kw_month=None)


def test_discount_factor_is_the_annual_rate_compounded_by_month():
    # 1.08^(−12/12) = 0.925926; 1.08^(−1/12) = 0.993607
    assert discount_factor(Decimal("0.08"), 12) == Decimal("0.925926")
    assert discount_factor(Decimal("0.08"), 1) == Decimal("0.993607")
    assert discount_factor(Decimal("0.08"), 0) == 1


def test_peak_cash_out_is_the_largest_cumulative_outflow():
    flows = [CashFlow(0, Decimal(100), "capex"), CashFlow(1, Decimal(20), "power"),
             CashFlow(2, Decimal(-90), "resale")]
    assert peak_cash_out(flows) == Decimal(120)                       # 100, 120, 30
    assert present_value(flows, Decimal(0)) == Decimal(30)


def test_a_purchase_for_a_short_job_costs_its_haircut_and_transaction_cost_and_the_rental_wins():
    # 256 GPUs × 43,750 = 11,200,000 of capex at signing, for a 15-hour job. The horizon is the
    # run (no longer commitment): held to hour 15 (month 1), sold 3 months later (month 4) at
    # age 4 × 730 h = 1/3 year: 0.67^(1/3) = 0.875 of market, × 0.85 (haircut) × 0.95
    # (transaction) = 0.7066 of capex, 7.91M, worth 7.71M today at 1.08^(−4/12) = 0.9747:
    # the purchase costs about 3.49M in present value, far above 5% of capex (560,000).
    buy = hours_job("own", bare_purchase("43750"), gpus=256, hours=15)
    rent = hours_job("rent", ex.rental("2.35"), gpus=256, hours=15)
    result = compare([buy, rent], NO_FAILURES)
    own, rental = result.bids
    cash = own.cash
    assert cash is not None and rental.cash is not None
    capex = Decimal("11200000.00")
    assert cash.upfront_cash == capex and cash.peak_cash_out == capex
    fraction = resale_net_fraction(own.terms, Decimal(4 * 730), replace(_defaults(), months_to_sell=3))
    assert abs(fraction - Decimal("0.7066")) < Decimal("0.0001")
    resale = cents(capex * fraction)
    assert [(f.month, f.amount, f.kind) for f in cash.flows] == [(0, capex, "capex"), (4, -resale, "resale")]
    assert cash.nominal_total == capex - resale
    assert cash.present_value == capex - cents(resale * discount_factor(Decimal("0.08"), 4))
    assert abs(cash.present_value - Decimal("3486000")) < Decimal("5000")
    assert cash.present_value >= capex * Decimal("0.05")
    # the rental: 256 × 15 h × 2.35 = 9,024.00, invoiced at the end of month 1
    assert rental.cash.nominal_total == Decimal("9024.00") and rental.cash.upfront_cash == 0
    assert rental.cash.present_value == cents(Decimal("9024.00") * Decimal("0.993607"))
    assert rental.cash.present_value < cash.present_value
    assert cash.horizon_months == rental.cash.horizon_months == 1


def _defaults():
    from procure.economics.bid import leftover
    return leftover(NO_FAILURES)


def test_a_three_year_reservation_and_a_purchase_held_three_years_share_one_horizon():
    # A 36-month reservation of 256 GPUs at 2.00 sets the horizon: 36 × 730 = 26,280 h. It is
    # invoiced 256 × 730 × 2.00 = 373,760.00 at the end of each of 36 months: 13,455,360.00
    # nominal; at 8% the present value is 373,760 × Σ 1.08^(−k/12), about 11% less.
    # The purchase (30,000 per GPU: 7,680,000) is held the same 36 months, sold in month 39 at
    # 0.67^(39/12) = 0.2721, × 0.85 × 0.95 = 0.2197 of capex.
    reserve = hours_job("reserve", ex.rental("2.00", min_commit_months=36), gpus=256, hours=15)
    buy = hours_job("own", bare_purchase("30000"), gpus=256, hours=15)
    result = compare([reserve, buy], NO_FAILURES)
    reserved, own = result.bids
    assert reserved.cash is not None and own.cash is not None
    assert reserved.cash.horizon_months == own.cash.horizon_months == 36
    invoices = [f for f in reserved.cash.flows if f.kind == "invoice"]
    assert [f.month for f in invoices] == list(range(1, 37))
    assert all(f.amount == Decimal("373760.00") for f in invoices)
    assert reserved.cash.nominal_total == Decimal("13455360.00")
    expected_pv = sum(cents(Decimal("373760.00") * discount_factor(Decimal("0.08"), k)) for k in range(1, 37))
    assert reserved.cash.present_value == expected_pv
    assert Decimal("0.10") < 1 - reserved.cash.present_value / reserved.cash.nominal_total < Decimal("0.12")
    capex = Decimal("7680000.00")
    resale = [f for f in own.cash.flows if f.kind == "resale"]
    assert [f.month for f in resale] == [39]
    fraction = resale_net_fraction(own.terms, Decimal(39 * 730), _defaults())
    assert abs(fraction - Decimal("0.2197")) < Decimal("0.0001")
    assert resale[0].amount == -cents(capex * fraction)
    assert own.cash.present_value == capex - cents(cents(capex * fraction) * discount_factor(Decimal("0.08"), 39))


def test_a_prepaid_reservation_pays_its_share_at_signing_and_not_again():
    # 8 GPUs, 1 month at 2.00, half prepaid: 8 × 730 × 2 = 11,680; 5,840 at signing, 5,840 in month 1.
    pricing = ex.rental("2.00", min_commit_months=1, prepay_fraction=Decimal("0.5"))
    econ = evaluate_bid(hours_job("r", pricing, gpus=8, hours=10), NO_FAILURES)
    assert econ.cash is not None
    assert [(f.month, f.amount, f.kind) for f in econ.cash.flows] == [
        (0, Decimal("5840.00"), "prepayment"), (1, Decimal("5840.00"), "invoice")]
    assert econ.cash.upfront_cash == Decimal("5840.00") and econ.cash.peak_cash_out == Decimal("11680.00")


def test_leftover_reserved_hours_are_credited_at_the_reuse_share():
    # 1 month reserved, 10 h used: 720 h left over × 8 GPUs × 2.00 × 0.5 = 5,760 back in month 1.
    pricing = ex.rental("2.00", min_commit_months=1)
    econ = evaluate_bid(hours_job("r", pricing, gpus=8, hours=10),
                        replace(NO_FAILURES, leftover_hours_reuse_share=Decimal("0.5")))
    assert econ.cash is not None
    assert (1, Decimal("-5760.00"), "leftover-hours") in [(f.month, f.amount, f.kind) for f in econ.cash.flows]
    assert econ.cash.nominal_total == Decimal("11680.00") - Decimal("5760.00")


def test_a_given_horizon_holds_the_purchase_longer_and_pays_its_facility_every_month():
    # horizon 12 months: colocation 8 GPUs × 0.7 kW × 150 per kW-month = 840.00 each held month.
    pricing = ex.purchase("30000", network_capex_per_gpu=None, support_per_gpu_year=None, power_per_kwh=None)
    econ = evaluate_bid(hours_job("own", pricing, gpus=8, hours=10), replace(NO_FAILURES, horizon_months=12))
    assert econ.cash is not None
    colo = [f for f in econ.cash.flows if f.kind == "colocation"]
    assert [f.month for f in colo] == list(range(1, 13)) and all(f.amount == Decimal("840.00") for f in colo)
    assert [f.month for f in econ.cash.flows if f.kind == "resale"] == [15]


def test_every_costed_bid_has_a_present_value():
    cases = [ex.case("a", pricing=ex.rental("2.35")), ex.case("b", pricing=ex.purchase()),
             ex.case("c", pricing=ex.rental("1.90", min_commit_months=12))]
    result = compare(cases, Assumptions())
    assert all(bid.cash is not None and bid.cash.present_value > 0 for bid in result.bids)
    assert len({bid.cash.horizon_months for bid in result.bids if bid.cash}) == 1
    assert terms(cases[0].pricing, 4096, Assumptions()).cost_of_capital == result.bids[0].cash.cost_of_capital


def test_a_bid_whose_cash_exceeds_the_budget_is_flagged_with_the_excess():
    # the 11,200,000 purchase for a 15-hour job against a 5,000,000 cash budget: its peak cash out
    # is the capex, 6,200,000 over; the rental (9,024.00 in month 1) is within it. On a 4,000,000
    # net-cost limit the purchase (commitment basis total) is checked separately.
    buy = replace(hours_job("own", bare_purchase("43750"), gpus=256, hours=15), budget=Decimal("5000000"))
    rent = replace(hours_job("rent", ex.rental("2.35"), gpus=256, hours=15), budget=Decimal("5000000"))
    own, rental = compare([buy, rent], NO_FAILURES).bids
    flag = next(f for f in own.flags if f.code == "over-budget")
    assert flag.numbers["over_by"] == 6_200_000.0
    assert "6,200,000.00 USD over the 5,000,000.00 USD budget" in flag.reason
    assert "over-budget" not in rental.flag_codes
    assert compare([buy, rent], NO_FAILURES).recommendation is not None
    limited = replace(buy, budget=None, max_net_cost=Decimal("1"))
    found = compare([limited], NO_FAILURES).bids[0]
    assert found.flag_codes.count("over-net-cost") == 1 and "over-budget" not in found.flag_codes


def test_on_the_commitment_basis_a_purchase_for_a_short_job_pays_the_haircut_and_the_rental_is_recommended():
    # commitment basis (undiscounted; no market price given, so resale follows the capex): 11,200,000 capex + 1,534.25 financing
    # (11.2M × 0.08 × 15 / 8760) − resale at 0.67^(15/8760) × 0.85 × 0.95 = 0.806946 of capex
    # (9,037,795.20): 2,163,739.05, i.e. 19.3% of capex, at least the 5% the used market takes
    buy = hours_job("own", bare_purchase("43750"), gpus=256, hours=15)
    rent = hours_job("rent", ex.rental("2.35"), gpus=256, hours=15)
    result = compare([buy, rent], NO_FAILURES, "commitment")
    own, rental = result.bids
    capex = Decimal("11200000.00")
    assert own.basis == "commitment"
    assert own.on("commitment").resale_fraction == Decimal("0.806946")
    assert own.total_cost == capex + Decimal("1534.25") - cents(capex * Decimal("0.806946")) == Decimal("2163739.05")
    assert own.total_cost >= capex * Decimal("0.05")
    assert rental.total_cost == Decimal("9024.00")
    assert result.recommendation["bid"] == "rent" and result.ranking[0] == "rent"


def test_an_endless_run_bills_its_remainder_in_its_last_month():
    """A run past the calendar (1e18 tokens on 8 GPUs) must not build a flow per month: the spans
    stay few and their hours still add up to the run."""
    from decimal import Decimal

    from procure.economics.cashflow import MAX_MONTHLY_FLOWS, _month_hours

    month = Decimal(730)
    spans = _month_hours(Decimal(0), month * Decimal(10**9) + 5, month)
    assert len(spans) == MAX_MONTHLY_FLOWS
    assert sum(h for _, h in spans) == month * Decimal(10**9) + 5
    assert spans[-1][0] == 10**9 + 1 and [m for m, _ in spans[:3]] == [1, 2, 3]
    short = _month_hours(Decimal(100), Decimal(2000), month)
    assert [m for m, _ in short] == [1, 2, 3] and sum(h for _, h in short) == 1900
