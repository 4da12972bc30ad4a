"""Compare bids: rank by cost per million tokens on one cost basis (by default the present
value of each bid's dated cash over one horizon), constraints first, test what moves the ranking
(a second basis included), give each bid its negotiator's figures, recommend.

Constraints first: a bid that misses a hard constraint (the deadline, the cash budget, the
net-cost limit) ranks after every bid that misses fewer, whatever it costs; the recommendation
is the first costed bid in that order.

Pure: every figure comes from ``procure.economics``. The recommendation's facts (winner,
runner-up and gap, deadline verdict, flags, band, what flips it, the bids left out or ranked after)
are decided once, in :func:`recommendation_facts`; the English paragraph is written from them
alone (``procure.recommendation``), as every other language's is (``procure.report.generated``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Sequence, TypedDict

from procure.economics.bid import BidEconomics, commitment_end, evaluate_core, pinned
from procure.economics import flags as checks
from procure.economics.cost import BASES, DEFAULT_BASIS, check_basis
from procure.economics.inputs import Assumptions, BidCase
from procure.economics.negotiation import negotiate
from procure.economics.sensitivity import (BASIS_FACTOR, SENSITIVITY_CHANGES, SLIP_DAYS,
                                           SensitivityRow, Trial, apply, bid_trials, quote_trials)
from procure.economics.target import candidate_rows, time_to_target
from procure.economics.uncertainty import band
from procure.recommendation import (CONSTRAINT_CODES, RELATIVE_FLOOR, SECOND_VIEW, UNCOSTED_CODES, BandFacts,
                                   CostGap, FlagFact, Flip, HeldBid, NamedBid, Recommendation, RecommendationFacts, RecommendedBid, factor_words,
                                   write_recommendation)

INFINITY = float("inf")

Rankings = dict[str, tuple[str, ...]]   # cost basis -> bid ids, best first
RankKey = tuple[int, int, Decimal, float, int]



class SensitivityTested(TypedDict):
    factors: list[str]
    changes: list[float]
    method: str


class SensitivitySummary(TypedDict):
    winner: str | None
    winner_changes_under: list[str]   # one sentence per change that moves the winner
    tested: SensitivityTested


@dataclass(frozen=True)
class Comparison:
    bids: tuple[BidEconomics, ...]          # input order, rank and sensitivity set
    ranking: tuple[str, ...]                # bid ids, best first, on ``basis``
    recommendation: Recommendation          # the English paragraph, written from ``facts``
    sensitivity_summary: SensitivitySummary
    facts: RecommendationFacts              # what the recommendation states, in every language
    basis: str = DEFAULT_BASIS              # the cost basis that ranks
    rankings: Rankings = field(default_factory=dict)


def missed_constraints(econ: BidEconomics) -> tuple[str, ...]:
    """The hard constraints the bid breaks, by flag code."""
    return tuple(code for code in econ.flag_codes if code in CONSTRAINT_CODES)


def rank_key(econ: BidEconomics, index: int, basis: str | None = None) -> RankKey:
    """Costed bids first; among them those that break fewer hard constraints; then cheapest per
    million tokens (time value included when given), ties by time to finish; bids without a cost
    last, by time."""
    days = INFINITY if econ.days_to_finish is None else econ.days_to_finish
    value = econ.ranking_value(basis)
    if value is None:
        return (1, 0, Decimal(0), days, index)
    return (0, len(missed_constraints(econ)), value, days, index)


def order(econs: list[BidEconomics], basis: str | None = None) -> list[int]:
    """Indices of ``econs`` in rank order (on each bid's own basis unless ``basis`` is given)."""
    return sorted(range(len(econs)), key=lambda i: rank_key(econs[i], i, basis))


@dataclass(frozen=True)
class Decision:
    """What a quote decides from its bids' economics: the order on ``basis``, the recommended
    bid (``_pick``: constraints first) and the runner-up the recommendation names."""

    bids: tuple[BidEconomics, ...]
    ranked: list[int]
    pick: int | None
    runner_up: int | None
    basis: str
    places: dict[int, int] = field(default_factory=dict)   # bid index -> 1-based rank

    def rank(self, index: int) -> int:
        return self.places[index]

    def bid_id(self, index: int | None) -> str | None:
        return None if index is None else self.bids[index].id

    @property
    def gap(self) -> Decimal | None:
        """What ranks the runner-up less what ranks the recommended bid, per million tokens
        (negative when the recommended bid costs more and wins on a constraint)."""
        if self.pick is None or self.runner_up is None:
            return None
        runner, chosen = (self.bids[i].ranking_value(self.basis) for i in (self.runner_up, self.pick))
        return None if runner is None or chosen is None else runner - chosen


def decide(bids: Sequence[BidEconomics], basis: str) -> Decision:
    """The ranking, recommendation and runner-up of a quote: what ``compare`` decides."""
    ranked = order(list(bids), basis)
    pick = _pick(tuple(bids), ranked)
    return Decision(tuple(bids), ranked, pick, None if pick is None else _runner_up(tuple(bids), ranked, pick),
                    basis, {index: place for place, index in enumerate(ranked, start=1)})


@dataclass(frozen=True)
class Evaluated:
    """Every bid of a quote evaluated over the quote's common horizon (``assumptions`` carry it,
    pinned), with the budget's and net-cost limit's flags (what ranks). ``ends``: each bid's
    commitment or run end, which set the horizon."""

    ends: tuple[Decimal | None, ...]
    assumptions: Assumptions
    bids: tuple[BidEconomics, ...]


def _end(case: BidCase, assumptions: Assumptions) -> Decimal | None:
    return commitment_end(evaluate_core(case, assumptions, "run", ranking_only=True))


def evaluate(cases: Sequence[BidCase], assumptions: Assumptions, basis: str,
             base: Evaluated | None = None, moved: int | None = None) -> Evaluated:
    """Evaluate every bid as a quote does: the horizon from every bid's end (unless
    ``horizon_months`` sets it), then each bid's costs and cash over it. With ``base`` and
    ``moved``, only bid ``moved`` changed since ``base`` (the others keep their figures unless the
    common horizon moved)."""
    partial = base is not None and moved is not None
    ends = tuple(_end(case, assumptions) if base is None or moved is None or i == moved else base.ends[i]
                 for i, case in enumerate(cases))
    over = pinned(assumptions, [end for end in ends if end is not None])
    same = partial and base is not None and over.horizon_hours == base.assumptions.horizon_hours
    bids = tuple(base.bids[i] if same and base is not None and i != moved
                 else _limits(case, evaluate_core(case, over, basis)) for i, case in enumerate(cases))
    return Evaluated(ends, over, bids)


def _row(trial: Trial, index: int, found: Decision, base: Decision) -> SensitivityRow:
    econ, gap = found.bids[index], found.gap
    return SensitivityRow(trial.factor, trial.change, econ.cost_per_million_tokens, econ.time_to_train_days,
                          found.rank(index), found.bid_id(found.pick) != base.bid_id(base.pick),
                          step=trial.step, subject=trial.subject,
                          scope="quote" if trial.bid is None else "bid", recommended=found.bid_id(found.pick),
                          gap=gap, gap_change=None if gap is None or base.gap is None else gap - base.gap)


def _other_basis_row(index: int, bids: tuple[BidEconomics, ...], other: Decision,
                     base: Decision) -> SensitivityRow:
    found = bids[index].on(other.basis)
    gap = other.gap
    return SensitivityRow(BASIS_FACTOR, 0.0, None if found is None else found.cost_per_million_tokens,
                          bids[index].time_to_train_days, other.rank(index),
                          other.bid_id(other.pick) != base.bid_id(base.pick), setting=other.basis,
                          scope="quote", recommended=other.bid_id(other.pick), gap=gap,
                          gap_change=None if gap is None or base.gap is None else gap - base.gap)


def trial_decision(trial: Trial, cases: Sequence[BidCase], assumptions: Assumptions, basis: str,
                   base: Evaluated) -> Decision:
    """What the quote decides with ``trial``'s input moved: every step of ``compare`` re-run
    (costs, cash over the horizon, flags, deadline and limits, ranking, recommendation)."""
    moved_cases, moved_assumptions = apply(trial, cases, assumptions)
    return decide(evaluate(moved_cases, moved_assumptions, basis, base, trial.bid).bids, basis)


def sensitivity_table(cases: Sequence[BidCase], assumptions: Assumptions, basis: str,
                      base: Evaluated) -> list[tuple[SensitivityRow, ...]]:
    """Every bid's sensitivity rows: its own inputs moved one at a time, then every shared
    assumption (a row for each bid), then the other cost basis. A bid without a time to train
    has none."""
    decided = decide(base.bids, basis)
    shown = [i for i, econ in enumerate(base.bids) if econ.time_to_train_days is not None]
    rows: dict[int, list[SensitivityRow]] = {i: [] for i in shown}
    for i in shown:
        for trial in bid_trials(i, cases[i]):
            rows[i].append(_row(trial, i, trial_decision(trial, cases, assumptions, basis, base), decided))
    if shown:
        for trial in quote_trials(cases, assumptions):
            found = trial_decision(trial, cases, assumptions, basis, base)
            for i in shown:
                rows[i].append(_row(trial, i, found, decided))
        other = decide(base.bids, _other_basis(basis))
        for i in shown:
            rows[i].append(_other_basis_row(i, base.bids, other, decided))
    return [tuple(rows.get(i, ())) for i in range(len(cases))]


def _other_basis(basis: str) -> str:
    return SECOND_VIEW[basis]


def _tested(bids: tuple[BidEconomics, ...]) -> list[str]:
    """The factors tried (their keys): every bid's rows merged in their order (a factor one bid
    lacks keeps its place after the factor before it in the bids that have it)."""
    found: list[str] = []
    for bid in bids:
        previous = -1
        for factor in dict.fromkeys(row.factor for row in bid.sensitivity):
            if factor not in found:
                found.insert(previous + 1, factor)
            previous = found.index(factor)
    return found


def _flips(bids: tuple[BidEconomics, ...]) -> tuple[Flip, ...]:
    """The sensitivity rows that change the recommended bid, in the order of the bids and their
    rows, each move once (by its words)."""
    found: dict[str, Flip] = {}
    for bid in bids:
        for row in bid.sensitivity:
            flip = Flip(bid.id, row)
            if row.winner_changes:
                found.setdefault(flip.describe(), flip)
    return tuple(found.values())


def summarise_sensitivity(bids: tuple[BidEconomics, ...], pick: int | None,
                          flips: tuple[Flip, ...]) -> SensitivitySummary:
    return {
        "winner": None if pick is None else bids[pick].id,
        "winner_changes_under": [flip.describe() for flip in flips],
        "tested": {"factors": factor_words(_tested(bids)),
                   "changes": list(SENSITIVITY_CHANGES),
                   "method": "one input at a time, everything else at base: a bid's own input (price, "
                             "model efficiency, lead time, a delivery slip of "
                             + " or ".join(f"{d:g}" for d in SLIP_DAYS) + " days) or an assumption every "
                             "bid shares; each trial re-runs the whole quote (costs, cash, deadline and "
                             "budget checks, ranking, recommendation); then every bid on the other cost basis"},
    }


def _negotiation_target(i: int, bids: list[BidEconomics], costed: list[int]) -> BidEconomics | None:
    """The bid to tie: the winner, or for the winner the runner-up (both with a cost).
    ``costed``: the first two costed bids in rank order (or fewer)."""
    if not costed:
        return None
    if costed[0] != i:
        return bids[costed[0]]
    return bids[costed[1]] if len(costed) > 1 else None


def _limits(case: BidCase, econ: BidEconomics) -> BidEconomics:
    """The bid with the cash budget's and the net-cost limit's flags, when it breaks them."""
    found: list[checks.Flag | None] = list(econ.flags)
    found += [checks.over_budget(None if econ.cash is None else econ.cash.peak_cash_out, case.budget, econ.currency),
              checks.over_net_cost(econ.total_cost, case.max_net_cost, econ.currency)]
    return replace(econ, flags=checks.in_order(found))


def compare(cases: list[BidCase], assumptions: Assumptions, basis: str = DEFAULT_BASIS) -> Comparison:
    """Evaluate, rank on ``basis`` and stress every bid; give each its negotiator's figures;
    recommend one."""
    check_basis(basis)
    ids = [case.id for case in cases]
    if len(set(ids)) != len(ids):
        raise ValueError(f"bid ids must be unique: {ids}")
    evaluated = evaluate(cases, assumptions, basis)
    pinned_assumptions = evaluated.assumptions    # the band and the negotiator's searches: the quote's months
    base = list(evaluated.bids)
    by_basis = {b: decide(base, b) for b in BASES}
    decided, ranked = by_basis[basis], by_basis[basis].ranked
    costed = [j for j in ranked if base[j].has_cost][:2]
    table = sensitivity_table(cases, assumptions, basis, evaluated)
    bids = tuple(
        replace(econ, rank=decided.rank(i), uncertainty=band(cases[i], pinned_assumptions, basis),
                sensitivity=table[i],
                negotiation=negotiate(cases[i], econ, _negotiation_target(i, base, costed), pinned_assumptions,
                                      basis),
                time_to_target=time_to_target(cases[i], econ, pinned_assumptions),
                batch_candidates=candidate_rows(cases[i], econ))
        for i, econ in enumerate(base))
    flips = _flips(bids)
    summary = summarise_sensitivity(bids, decided.pick, flips)
    rankings = {b: tuple(base[i].id for i in by_basis[b].ranked) for b in BASES}
    facts = recommendation_facts(bids, ranked, flips, basis, rankings)
    return Comparison(bids, tuple(bids[i].id for i in ranked), write_recommendation(facts), summary, facts,
                      basis, rankings)


# --- the recommendation's facts, decided once (procure.recommendation writes English from them) ---

def _cost(bid: BidEconomics) -> Decimal:
    """The cost per million tokens of a bid chosen among those that have one."""
    if bid.cost_per_million_tokens is None:
        raise ValueError(f"bid {bid.id} has no cost")
    return bid.cost_per_million_tokens


def _pick(bids: tuple[BidEconomics, ...], ranked: list[int]) -> int | None:
    """The first costed bid in rank order: constraints first, so the cheapest that breaks the
    fewest hard constraints."""
    return next((i for i in ranked if bids[i].has_cost), None)


def _cheapest(bids: tuple[BidEconomics, ...], ranked: list[int]) -> int:
    """The cheapest costed bid on the ranking basis, constraints aside."""
    costed = [i for i in ranked if bids[i].has_cost]
    return min(costed, key=lambda i: (rank_key(bids[i], i)[2:]))


def _runner_up(bids: tuple[BidEconomics, ...], ranked: list[int], pick: int) -> int | None:
    """The cheapest costed bid other than the recommended one."""
    return next((i for i in ranked if i != pick and bids[i].has_cost), None)


def _named_bid(bid: BidEconomics) -> NamedBid:
    return NamedBid(bid.id, _cost(bid), bid.currency, bid.time_to_train_days, bid.days_to_finish,
                    "misses-deadline" in bid.flag_codes)


def _recommended_bid(bid: BidEconomics) -> RecommendedBid:
    named = _named_bid(bid)
    return RecommendedBid(named.id, named.cost_per_million_tokens, named.currency, named.time_to_train_days,
                          named.days_to_finish, named.misses_deadline, vendor=bid.vendor,
                          upfront_capex=bid.upfront_capex, lead_time_days=bid.lead_time_days)


def _gap(other: Decimal, chosen: Decimal) -> CostGap:
    """A percentage, or the difference in money when ``chosen`` is below ``RELATIVE_FLOOR`` (a
    percentage of about nothing is no figure a reader can use, and a cost of zero cannot be
    divided by)."""
    if abs(chosen) < RELATIVE_FLOOR:
        return CostGap(None, other - chosen)
    return CostGap((other / chosen - 1) * 100, None)


def _band(chosen: BidEconomics) -> BandFacts | None:
    band = chosen.uncertainty
    if band is None or band.cost_per_million_tokens is None:
        return None
    p10, _, p90 = band.cost_per_million_tokens
    d10, _, d90 = band.time_to_train_days
    day_places = max(0, -math.floor(math.log10(band.days_quantum))) if band.days_quantum > 0 else 1
    return BandFacts(p10, p90, d10, d90, day_places)


def _uncosted_codes(bid: BidEconomics) -> tuple[str, ...]:
    return tuple(code for code in bid.flag_codes if code in UNCOSTED_CODES)


def _held(bids: tuple[BidEconomics, ...], ranked: list[int]) -> tuple[tuple[HeldBid, ...], tuple[HeldBid, ...]]:
    """The uncosted bids, and the costed bids ranked after others for a hard constraint."""
    uncosted = tuple(HeldBid(bids[i].id, _uncosted_codes(bids[i]), ()) for i in ranked if not bids[i].has_cost)
    constrained = tuple(
        HeldBid(b.id, missed_constraints(b), tuple(f.reason for f in b.flags if f.code in CONSTRAINT_CODES))
        for b in (bids[i] for i in ranked) if b.has_cost and missed_constraints(b))
    return uncosted, constrained


def _doubts_commitment(chosen: BidEconomics) -> bool:
    return chosen.step_time_basis == "modeled" and bool(
        {"impossible", "implausible", "optimistic"} & set(chosen.flag_codes))


def recommendation_facts(bids: tuple[BidEconomics, ...], ranked: list[int], flips: tuple[Flip, ...],
                         basis: str = DEFAULT_BASIS, rankings: Rankings | None = None) -> RecommendationFacts:
    """Everything the recommendation states, from the ranked, stressed bids: the one place it is
    decided."""
    pick = _pick(bids, ranked)
    uncosted, constrained = _held(bids, ranked)
    other = _other_basis(basis)
    costed = {b.id for b in bids if b.has_cost}
    chosen = None if pick is None else bids[pick]
    cheapest = None if pick is None else _cheapest(bids, ranked)
    runner = None if pick is None else _runner_up(bids, ranked, pick)
    return RecommendationFacts(
        compared=len(bids), basis=basis, winner=None if chosen is None else _recommended_bid(chosen),
        deadline_days=None if chosen is None else chosen.deadline_days,
        cheapest=None if cheapest is None or cheapest == pick else _named_bid(bids[cheapest]),
        runner_up=None if runner is None else _named_bid(bids[runner]),
        gap=None if runner is None or chosen is None else _gap(_cost(bids[runner]), _cost(chosen)),
        flags=() if chosen is None else tuple(FlagFact(f.code, f.reason) for f in chosen.flags
                                              if f.code != "misses-deadline"),
        modeled_step_time=chosen is not None and _doubts_commitment(chosen),
        band=None if chosen is None else _band(chosen), flips=flips, tested=tuple(_tested(bids)),
        uncosted=uncosted, constrained=constrained, other_basis=other,
        other_order=tuple(i for i in (rankings or {}).get(other, ()) if i in costed))
