"""The sensitivity table places a moved bid among the others by bisection on the sorted base
ranking; it must give exactly what re-ranking every bid gives (the O(n² log n) way it was done)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from procure.compare import SECOND_VIEW, Ranking, compare, order, quote_horizon, winner
from procure.economics import Assumptions
from procure.economics import examples as ex
from procure.economics.bid import evaluate_core
from procure.economics.cost import BASES
from procure.economics.sensitivity import BASIS_FACTOR, FACTOR_LABELS, SENSITIVITY_CHANGES, perturb


@dataclass(frozen=True)
class Econ:
    """What the ranking reads of a bid: its ranking value per basis and its days to finish."""

    values: tuple[Decimal | None, Decimal | None, Decimal | None]      # present value, run, commitment
    days_to_finish: float | None
    basis: str = "present_value"
    flag_codes: tuple[str, ...] = ()                   # hard constraints missed rank a bid after

    def ranking_value(self, basis: str | None = None) -> Decimal | None:
        return self.values[BASES.index(basis or self.basis)]

    @property
    def has_cost(self) -> bool:
        return self.values[BASES.index(self.basis)] is not None


# few distinct values, so that ties on cost and on days are common
VALUES = st.one_of(st.none(), st.sampled_from([Decimal(v) for v in ("0.5", "1", "1.25", "2", "3.5")]))
DAYS = st.one_of(st.none(), st.sampled_from([10.0, 20.0, 20.0, 35.5, 90.0]))
MISSED = st.sampled_from([(), (), ("misses-deadline",), ("over-budget", "misses-deadline"), ("implausible",)])
ECON = st.builds(lambda pv, run, commitment, days, missed: Econ((pv, run, commitment), days, flag_codes=missed),
                 VALUES, VALUES, VALUES, DAYS, MISSED)


def naive(base: list[Econ], index: int, moved: Econ, basis: str | None = None) -> tuple[int, int | None]:
    """Re-rank every bid with bid ``index`` moved: its rank and the winner."""
    trial = [moved if i == index else econ for i, econ in enumerate(base)]
    ranked = order(trial, basis)          # type: ignore[arg-type]
    return ranked.index(index) + 1, winner(trial, ranked)    # type: ignore[arg-type]


@settings(max_examples=400, deadline=None)
@given(base=st.lists(ECON, min_size=1, max_size=12), moved=ECON, data=st.data())
def test_a_moved_bid_ranks_as_a_full_re_rank_says(base, moved, data):
    index = data.draw(st.integers(0, len(base) - 1))
    ranking = Ranking(base)                # type: ignore[arg-type]
    assert ranking.moved(index, moved) == naive(base, index, moved)        # type: ignore[arg-type]
    # unmoved, it keeps its base rank and the base winner
    assert ranking.moved(index, base[index]) == (ranking.rank(index), ranking.winner)   # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(base=st.lists(ECON, min_size=1, max_size=12), basis=st.sampled_from(BASES))
def test_base_ranks_and_winner_on_either_basis_match_a_sort(base, basis):
    ranking = Ranking(base, basis)         # type: ignore[arg-type]
    ranked = order(base, basis)            # type: ignore[arg-type]
    assert ranking.ranked == ranked
    assert [ranking.rank(i) for i in range(len(base))] == [ranked.index(i) + 1 for i in range(len(base))]
    assert ranking.winner == winner(base, ranked)       # type: ignore[arg-type]


def naive_sensitivity(index, cases, base, assumptions, basis):
    """The table as it was computed before: every bid re-ranked for every change."""
    if base[index].time_to_train_days is None:
        return []
    base_winner = winner(base, order(base))
    rows = []
    for factor in FACTOR_LABELS:
        for change in SENSITIVITY_CHANGES:
            case, moved_assumptions = perturb(cases[index], assumptions, factor, change)
            moved = evaluate_core(case, moved_assumptions, basis)
            trial = [moved if i == index else econ for i, econ in enumerate(base)]
            ranked = order(trial)
            rows.append((factor, change, moved.cost_per_million_tokens, ranked.index(index) + 1,
                         winner(trial, ranked) != base_winner))
    other = SECOND_VIEW[basis]
    ranked = order(base, other)
    rows.append((BASIS_FACTOR, 0.0, None, ranked.index(index) + 1, winner(base, ranked) != base_winner))
    return rows


def test_the_sensitivity_table_of_a_close_field_equals_the_full_re_rank():
    # near-equal prices, one reservation, a purchase, an unpriced and an infeasible bid: ranks move
    cases = [ex.case("a", pricing=ex.rental("2.35")), ex.case("b", pricing=ex.rental("2.40")),
             ex.case("c", pricing=ex.rental("2.38", min_commit_months=3)), ex.case("d", mfu=0.43),
             ex.case("e", pricing=ex.purchase("29000")), ex.case("f", pricing=ex.rental(None)),
             ex.case("g", feasible=False), ex.case("h", pricing=ex.rental("2.35"), mfu=0.4)]
    assumptions = quote_horizon(cases, Assumptions())     # the quote's horizon, as compare pins it
    flips = 0
    for basis in BASES:
        result = compare(cases, Assumptions(), basis)
        base = [evaluate_core(c, assumptions, basis) for c in cases]
        for i, bid in enumerate(result.bids):
            expected = naive_sensitivity(i, cases, base, assumptions, basis)
            got = [(r.factor, r.change, None if r.factor == BASIS_FACTOR else r.cost_per_million_tokens,
                    r.rank, r.winner_changes) for r in bid.sensitivity]
            assert got == expected, bid.id
            flips += sum(r.winner_changes for r in bid.sensitivity)
    assert flips > 0, "a close field: some change must move the winner"
