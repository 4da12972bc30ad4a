"""The recommendation's facts are decided once (``compare.recommendation_facts``); the English
paragraph is written from them alone (``recommendation.write_recommendation``)."""

from __future__ import annotations

from decimal import Decimal

from procure.compare import compare
from procure.recommendation import (CostGap, FlagFact, HeldBid, NamedBid, RecommendationFacts, RecommendedBid,
                                   write_recommendation)
from procure.economics import Assumptions
from procure.economics import examples as ex

A = Assumptions()


def _facts(**changes: object) -> RecommendationFacts:
    """A hand-made record: two bids, the winner on time, nothing flagged."""
    winner = RecommendedBid("a", Decimal("0.0050"), "USD", 10.0, 10.0, False, vendor="Acme")
    fields: dict[str, object] = dict(
        compared=2, basis="run", winner=winner, deadline_days=None, cheapest=None,
        runner_up=NamedBid("b", Decimal("0.0075"), "USD", 12.34, 12.34, False),
        gap=CostGap(None, Decimal("0.0025")), flags=(), modeled_step_time=False, band=None, flips=(),
        tested=("price", "cost_basis"), uncosted=(), constrained=(), other_basis="present_value",
        other_order=("b", "a"))
    fields.update(changes)
    return RecommendationFacts(**fields)  # type: ignore[arg-type]


def test_the_english_paragraph_is_written_from_the_facts_alone():
    # worked by hand: the winner costs below a cent, so the gap is stated in money (0.0075 - 0.0050)
    assert write_recommendation(_facts())["text"] == (
        "Recommend a (Acme) at 0.0050 USD per million tokens (economic cost of this job) and 10.0 days to "
        "train. The runner-up, b, costs 0.0075 USD per million tokens (0.0025 USD per million tokens more) "
        "and takes 12.3 days. a carries no flags. No single change tested (price, cost basis) changes the "
        "recommended bid. Ranked on the economic cost of this job on an amortised cluster, constraints first. "
        "On present value (every bid's dated cash over the same horizon, discounted at the cost of capital) "
        "the order is b, a.")


def test_each_fact_reaches_its_sentence():
    late = NamedBid("c", Decimal("0.0040"), "USD", 50.0, 50.0, True)
    facts = _facts(deadline_days=30.0, cheapest=late, gap=CostGap(Decimal("-12.34"), None),
                   flags=(FlagFact("optimistic", "committed 1 s is 20% below the modeled 1.25 s"),),
                   modeled_step_time=True, constrained=(HeldBid("c", ("misses-deadline",), ("too late",)),),
                   uncosted=(HeldBid("d", ("price-missing",), ()),), other_order=())
    text = write_recommendation(facts)["text"]
    assert "It finishes within the 30-day deadline. The cheapest bid, c (0.0040 USD per million tokens), misses " \
           "it, finishing on day 50.0." in text
    assert "(12.3% less)" in text
    assert ("Flags on a: optimistic (committed 1 s is 20% below the modeled 1.25 s). Its figures use the modeled "
            "step time, not the commitment.") in text
    assert "Not costed: d (price-missing). Ranked after the bids that meet the constraints: c (too late)." in text
    assert text.endswith("Ranked on the economic cost of this job on an amortised cluster, constraints first.")


def test_no_winner_and_no_bids():
    assert write_recommendation(_facts(compared=0, winner=None)) == {"bid": None, "text": "No bids to compare."}
    none = _facts(winner=None, uncosted=(HeldBid("a", ("infeasible",), ()),))
    assert write_recommendation(none) == {"bid": None, "text": "No bid can be costed. Not costed: a (infeasible)."}


def test_compare_writes_its_recommendation_from_the_facts_it_records():
    on_time = ex.case("ontime", pricing=ex.rental("2.35"), deadline_days=30)
    late = ex.case("late", gpus=256, peak_flops=ex.A100_BF16_FLOPS, pricing=ex.rental("0.50"), deadline_days=30)
    close = ex.case("close", pricing=ex.rental("2.40"), deadline_days=30)
    result = compare([late, on_time, close], A)
    facts = result.facts
    assert write_recommendation(facts) == result.recommendation
    assert facts.winner is not None and facts.winner.id == "ontime" == result.recommendation["bid"]
    assert facts.cheapest is not None and facts.cheapest.id == "late" and facts.cheapest.misses_deadline
    assert facts.runner_up is not None and facts.runner_up.id == "close"
    assert facts.gap is not None and facts.gap.percent == (
        facts.runner_up.cost_per_million_tokens / facts.winner.cost_per_million_tokens - 1) * 100
    assert [held.id for held in facts.constrained] == ["late"] and facts.constrained[0].codes == ("misses-deadline",)
    assert [flip.describe() for flip in facts.flips] == result.sensitivity_summary["winner_changes_under"]
    assert all(flip.row.winner_changes for flip in facts.flips)
