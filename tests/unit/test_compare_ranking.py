"""The sensitivity table re-runs the decision of a quote for each moved input, re-evaluating only
what the move can change (the moved bid; every bid when the common horizon or a shared
assumption moves). It must state exactly what the quote decides of the moved inputs from
scratch (``compare`` is ``evaluate`` then ``decide``, the band and the table aside)."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from procure.compare import compare, decide, evaluate
from procure.economics import Assumptions
from procure.economics import examples as ex
from procure.economics.cost import BASES
from procure.economics.sensitivity import BASIS_FACTOR, Trial, apply


def _fresh(cases, assumptions, basis):
    """(recommended bid id, bids, ranking ids, gap) of a quote evaluated from scratch."""
    found = decide(evaluate(cases, assumptions, basis).bids, basis)
    return found.bid_id(found.pick), found.bids, [found.bids[i].id for i in found.ranked], found.gap


def _check(cases, assumptions, basis):
    """Every row of every bid against the quote decided from scratch on the moved inputs; the
    number of rows that change the recommendation."""
    result = compare(cases, assumptions, basis)
    flips = 0
    for i, bid in enumerate(result.bids):
        for row in bid.sensitivity:
            if row.factor == BASIS_FACTOR:
                pick, bids, ranking, gap = _fresh(cases, assumptions, row.setting)
                found = bids[i].on(row.setting)
                cost = None if found is None else found.cost_per_million_tokens
            else:
                trial = Trial(row.factor, row.change, row.step, i if row.scope == "bid" else None, row.subject)
                pick, bids, ranking, gap = _fresh(*apply(trial, cases, assumptions), basis)
                cost = bids[i].cost_per_million_tokens
            stated = (row.recommended, row.winner_changes, row.cost_per_million_tokens, row.rank,
                      row.time_to_train_days, row.gap)
            actual = (pick, pick != result.recommendation["bid"], cost, ranking.index(bid.id) + 1,
                      bids[i].time_to_train_days, gap)
            assert stated == actual, (bid.id, row)
            flips += row.winner_changes
    return flips


def test_the_sensitivity_table_of_a_close_field_equals_a_fresh_compare():
    # near-equal prices, a reservation, a late purchase, an unpriced and an infeasible bid, a
    # deadline the slowest bids miss: ranks, the recommendation and the horizon move
    cases = [ex.case("a", pricing=ex.rental("2.35")), ex.case("b", pricing=ex.rental("2.40")),
             ex.case("c", pricing=ex.rental("2.38", min_commit_months=3)), ex.case("d", mfu=0.43),
             replace(ex.case("e", pricing=ex.purchase("29000")), lead_time_days=20.0),
             ex.case("f", pricing=ex.rental(None)), ex.case("g", feasible=False),
             ex.case("h", pricing=ex.rental("2.35"), mfu=0.4)]
    cases = [replace(c, deadline_days=45.0) for c in cases]
    flips = sum(_check(cases, Assumptions(monte_carlo_samples=0), basis) for basis in BASES)
    assert flips > 0, "a close field: some change must move the recommendation"


PRICES = st.sampled_from(["1.80", "2.00", "2.35", "2.40"])


@settings(max_examples=12, deadline=None)
@given(prices=st.lists(PRICES, min_size=2, max_size=3), capex=st.sampled_from(["20000", "30000"]),
       lead=st.sampled_from([0.0, 20.0, 40.0]), deadline=st.sampled_from([None, 40.0, 60.0]),
       commit=st.sampled_from([0, 3]), basis=st.sampled_from(BASES))
def test_any_small_quote_states_what_a_fresh_compare_says(prices, capex, lead, deadline, commit, basis):
    cases = [ex.case(f"r{i}", pricing=ex.rental(p, min_commit_months=commit if i == 0 else 0))
             for i, p in enumerate(prices)]
    cases.append(replace(ex.case("own", pricing=ex.purchase(capex)), lead_time_days=lead))
    cases = [replace(c, deadline_days=deadline) for c in cases]
    _check(cases, Assumptions(cost_of_capital=Decimal("0.12"), monte_carlo_samples=0), basis)
