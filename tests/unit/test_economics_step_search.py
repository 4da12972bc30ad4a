"""ranking_totals: the negotiator's step-time search evaluates only the ranking total, with the
terms and goodput resolved once; it must equal evaluating the whole bid at that step time."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procure.economics import Assumptions
from procure.economics import examples as ex
from procure.economics.bid import ranking_totals
from procure.economics.inputs import Phase
from procure.economics.cost import BASES
from procure.economics.negotiation import at_step_time, ranking_total

CASES = {
    "on-demand": ex.case("od", pricing=ex.rental("2.35")),
    "reserved-6m": ex.case("rs", pricing=ex.rental("2.10", min_commit_months=6)),
    "purchase": replace(ex.case("own", pricing=ex.purchase("31000")), lead_time_days=60.0),
    "two-phases": replace(ex.case("ph", pricing=ex.rental("2.20", min_commit_months=2)),
                          phases=(Phase("long-context", ex.performance(4096, ex.H100_BF16_FLOPS, 0.3), 2e11),)),
    "discounted": ex.case("dc", pricing=ex.rental("2.50", discount_fraction=Decimal("0.1"), setup_fee=Decimal("5000"))),
}
ASSUMPTIONS = {"default": Assumptions(), "value-of-time": Assumptions(value_of_time_per_day=Decimal("25000"))}


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(CASES)), assumptions=st.sampled_from(sorted(ASSUMPTIONS)),
       basis=st.sampled_from(BASES), factor=st.floats(1 / 1024, 1024))
def test_equals_the_whole_evaluation_at_any_step_time(name, assumptions, basis, factor):
    case, a = CASES[name], ASSUMPTIONS[assumptions]
    moved = at_step_time(case, case.performance.step_time_s * factor)
    total_of = ranking_totals(case, a, basis)
    assert total_of(moved) == ranking_total(moved, a, basis)
    assert total_of(moved) == total_of(moved)            # kept per hours used: the same value again


def test_totals_never_fall_as_the_step_time_grows():
    case = CASES["reserved-6m"]
    total_of = ranking_totals(case, Assumptions(), "commitment")
    totals = [total_of(at_step_time(case, case.performance.step_time_s * 2 ** (k / 4))) for k in range(-12, 41)]
    assert totals == sorted(totals)
    assert totals[0] == totals[1] < totals[-1]      # the reservation's minimum, then the hours used


@pytest.mark.parametrize("case", [ex.case("np", pricing=ex.rental(None)), ex.case("inf", feasible=False)])
def test_a_bid_without_a_cost_has_no_total(case):
    assert ranking_totals(case, Assumptions(), "run")(case) is None
    assert ranking_total(case, Assumptions(), "run") is None
