"""Ranking, sensitivity across bids and the recommendation."""

from __future__ import annotations

from decimal import Decimal

import pytest

from procure.compare import compare
from procure.economics import Assumptions, Commitment
from procure.economics import examples as ex

A = Assumptions()


def test_ranking_is_by_cost_per_million_tokens_with_uncosted_bids_last():
    cases = [ex.case("mid", pricing=ex.rental("2.40")),
             ex.case("oom", feasible=False),
             ex.case("cheap", pricing=ex.rental("1.80")),
             ex.case("noprice", pricing=ex.rental(None)),
             ex.case("dear", pricing=ex.rental("3.10"))]
    result = compare(cases, A)
    assert result.ranking == ("cheap", "mid", "dear", "noprice", "oom")
    assert [b.id for b in result.bids] == ["mid", "oom", "cheap", "noprice", "dear"]
    assert [b.rank for b in result.bids] == [2, 5, 1, 4, 3]
    costs = [b.cost_per_million_tokens for b in result.bids if b.has_cost]
    assert sorted(costs) == [result.bids[2].cost_per_million_tokens,
                             result.bids[0].cost_per_million_tokens,
                             result.bids[4].cost_per_million_tokens]


def test_ties_on_cost_go_to_the_faster_bid():
    # same 12-month reservation, same price: same cost, different speed
    slow = ex.case("slow", mfu=0.3, pricing=ex.rental("2.00", min_commit_months=12))
    fast = ex.case("fast", mfu=0.45, pricing=ex.rental("2.00", min_commit_months=12))
    result = compare([slow, fast], A)
    assert result.bids[0].cost_per_million_tokens == result.bids[1].cost_per_million_tokens
    assert result.ranking == ("fast", "slow")


def test_a_small_price_move_flips_a_close_race():
    close = [ex.case("a", pricing=ex.rental("2.35")), ex.case("b", pricing=ex.rental("2.40"))]
    result = compare(close, A)
    rows = {(r.factor, r.change if r.step is None else r.step): r for r in result.bids[0].sensitivity}
    # price and efficiency × 4 changes, 2 slips; failure rate and cost of capital × 4 (no purchase:
    # no power price or resale; no reservation: no reuse); the other cost basis
    assert len(rows) == 19
    assert {r.scope for r in result.bids[0].sensitivity if r.factor in ("failure_rate", "cost_of_capital")} == {"quote"}
    assert rows[("price", 0.1)].winner_changes and rows[("price", 0.1)].rank == 2
    assert not rows[("price", -0.1)].winner_changes and rows[("price", -0.1)].rank == 1
    assert rows[("price", 0.1)].cost_per_million_tokens > result.bids[0].cost_per_million_tokens
    base_usd = result.bids[0].cost_per_million_tokens
    # present value (the default basis): the same invoices discounted more, or paid a month later
    assert rows[("cost_of_capital", 0.2)].cost_per_million_tokens < base_usd
    assert rows[("lead_time_slip", 30.0)].cost_per_million_tokens < base_usd
    undiscounted = compare(close, A, "commitment")
    moved = {(r.factor, r.change if r.step is None else r.step): r for r in undiscounted.bids[0].sensitivity}
    same = undiscounted.bids[0].cost_per_million_tokens      # nothing prepaid or owned
    assert moved[("cost_of_capital", 0.2)].cost_per_million_tokens == same
    assert moved[("lead_time_slip", 30.0)].cost_per_million_tokens == same
    assert rows[("efficiency", 0.2)].time_to_train_days < result.bids[0].time_to_train_days
    assert rows[("failure_rate", 0.2)].time_to_train_days > result.bids[0].time_to_train_days
    summary = result.sensitivity_summary
    assert summary["winner"] == "a"
    assert "price +10% on a" in summary["winner_changes_under"]
    assert "price -10% on b" in summary["winner_changes_under"]
    assert "price -10% on a" not in summary["winner_changes_under"]
    assert "changes under" in result.recommendation["text"]


def test_a_wide_gap_is_robust_and_says_so():
    result = compare([ex.case("a", pricing=ex.rental("1.50")),
                      ex.case("b", pricing=ex.rental("3.00"))], A)
    assert result.sensitivity_summary["winner_changes_under"] == []
    assert "No single" in result.recommendation["text"]


def test_recommendation_names_winner_runner_up_and_gap():
    result = compare([ex.case("a", pricing=ex.rental("2.00")),
                      ex.case("b", pricing=ex.rental("2.50"))], A)
    a, b = result.bids
    text = result.recommendation["text"]
    assert result.recommendation["bid"] == "a"
    gap = (b.cost_per_million_tokens / a.cost_per_million_tokens - 1) * 100
    assert f"{a.cost_per_million_tokens:.4f} USD per million tokens" in text
    assert "runner-up, b" in text and f"{gap:.1f}% more" in text
    assert f"{a.time_to_train_days:.1f} days" in text


def test_recommendation_prefers_a_bid_that_meets_the_deadline():
    cheap_late = ex.case("late", gpus=256, peak_flops=ex.A100_BF16_FLOPS,
                         pricing=ex.rental("0.50"), deadline_days=30)
    on_time = ex.case("ontime", pricing=ex.rental("2.35"), deadline_days=30)
    result = compare([cheap_late, on_time], A)
    assert result.ranking == ("ontime", "late")          # constraints first: the late bid ranks after
    assert result.bids[0].total_cost < result.bids[1].total_cost
    assert result.recommendation["bid"] == "ontime"
    assert "misses it" in result.recommendation["text"]
    assert "30-day deadline" in result.recommendation["text"]


def test_recommendation_mentions_flags_on_the_chosen_bid():
    case = ex.case("a", commitment=Commitment(step_time_s=0.01))
    text = compare([case], A).recommendation["text"]
    assert "impossible" in text and "modeled step time" in text and "only bid" in text


def test_no_costed_bid_means_no_recommendation():
    result = compare([ex.case("a", pricing=ex.rental(None)), ex.case("b", feasible=False)], A)
    assert result.recommendation["bid"] is None
    assert "a (price-missing)" in result.recommendation["text"]
    assert result.sensitivity_summary["winner"] is None
    assert compare([], A).recommendation == {"bid": None, "text": "No bids to compare."}


def test_every_costed_bid_carries_what_the_document_reads():
    """The result document reads these records by attribute (test_document_crossing)."""
    result = compare([ex.case("a", pricing=ex.purchase()), ex.case("b")], A)
    assert set(result.ranking) == {"a", "b"} and set(result.rankings) >= {result.basis}
    for bid in result.bids:
        assert bid.throughput is not None and bid.goodput is not None and bid.uncertainty is not None
        assert isinstance(bid.total_cost, Decimal) and bid.rank in (1, 2)
        assert bid.total_cost == sum((line.amount for line in bid.cost_lines), Decimal(0))
        assert bid.sensitivity and all(row.rank in (1, 2) for row in bid.sensitivity)


def test_duplicate_ids_are_refused():
    with pytest.raises(ValueError):
        compare([ex.case("a"), ex.case("a")], A)


def test_a_winner_that_misses_the_deadline_is_not_said_to_carry_no_flags():
    late = ex.case("late", gpus=256, peak_flops=ex.A100_BF16_FLOPS, pricing=ex.rental("0.50"), deadline_days=30)
    result = compare([late], A)
    text = result.recommendation["text"]
    assert "misses-deadline" in result.bids[0].flag_codes
    assert "carries no flags." not in text
    assert "late carries no flags besides missing the deadline." in text
