"""The band draws the financial terms a bid's cost depends on (cost of capital, resale decline
and haircut, the exchange rate of a bid quoted in another currency), and never excludes its own
median."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from procure.economics import Assumptions
from procure.economics import examples as ex
from procure.economics.uncertainty import band

A = Assumptions(monte_carlo_samples=2000)


def _width(found) -> Decimal:
    p10, _, p90 = found.cost_per_million_tokens
    return p90 - p10


def test_a_purchase_on_the_commitment_basis_draws_resale_and_the_cost_of_capital():
    case = ex.case("own", pricing=ex.purchase("30000"))
    found = band(case, A, "commitment")
    drawn = found.distributions
    assert {"cost_of_capital", "resale_decline", "resale_haircut"} <= set(drawn)
    assert "fx" not in drawn
    run = band(case, A, "run").distributions
    assert "cost_of_capital" in run and "resale_decline" not in run       # the run basis sells nothing


def test_a_rental_in_the_report_currency_draws_no_financial_term():
    found = band(ex.case("r", pricing=ex.rental("2.35")), A, "commitment")
    assert set(found.distributions) == {"price", "step_time", "failure_rate", "power_price"}


def test_a_bid_quoted_in_another_currency_draws_its_exchange_rate_and_is_wider():
    usd = ex.case("usd", pricing=ex.rental("2.35"))
    twd = ex.case("twd", pricing=replace(ex.rental("2.35"), quoted_currency="TWD", fx_rate=Decimal("0.0317")))
    a, b = band(usd, A, "commitment"), band(twd, A, "commitment")
    assert "fx" in b.distributions and "fx" not in a.distributions
    assert _width(b) > _width(a)
    # the rate is drawn around the quoted one: the medians stay close
    assert abs(a.cost_per_million_tokens[1] - b.cost_per_million_tokens[1]) < a.cost_per_million_tokens[1] / 50


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(["rental", "purchase"]), price=st.sampled_from(["0.01", "2.35", "40"]),
       capex=st.sampled_from(["1", "30000", "400000"]), commit=st.sampled_from([0, 12, 36]),
       prepay=st.sampled_from(["0", "0.5"]), decline=st.sampled_from(["0", "0.33", "0.9"]),
       haircut=st.sampled_from(["0", "0.15", "0.8"]), coc=st.sampled_from(["0", "0.08", "0.5"]),
       foreign=st.booleans(), gpus=st.sampled_from([8, 4096]), tokens=st.sampled_from([1e9, 1e12]),
       basis=st.sampled_from(["run", "commitment"]), seed=st.integers(0, 2**16))
def test_the_band_never_excludes_its_own_median(kind, price, capex, commit, prepay, decline, haircut, coc,
                                                 foreign, gpus, tokens, basis, seed):
    pricing = (ex.rental(price, min_commit_months=commit, prepay_fraction=Decimal(prepay)) if kind == "rental"
               else ex.purchase(capex))
    if foreign:
        pricing = replace(pricing, quoted_currency="EUR", fx_rate=Decimal("1.08"))
    assumptions = Assumptions(monte_carlo_samples=500, seed=seed, cost_of_capital=Decimal(coc),
                              resale_decline_per_year=Decimal(decline), resale_haircut=Decimal(haircut))
    found = band(ex.case("x", gpus=gpus, pricing=pricing, train_tokens=tokens), assumptions, basis)
    p10, p50, p90 = found.cost_per_million_tokens
    assert p10 <= p50 <= p90
    d10, d50, d90 = found.time_to_train_days
    assert d10 <= d50 <= d90
