"""Compare bids: rank by cost per million tokens on one cost basis (by default the present
value of each bid's dated cash over one horizon), constraints first, test what moves the ranking
(a second basis included), give each bid its negotiator's figures, recommend.

Constraints first: a bid that misses a hard constraint (the deadline, the cash budget, the
net-cost limit) ranks after every bid that misses fewer, whatever it costs; the recommendation
is the first costed bid in that order.

Pure: every figure comes from ``procure.economics``. The recommendation's facts (winner,
runner-up and gap, deadline verdict, flags, band, what flips it, the bids left out or ranked after)
are decided once, in :func:`recommendation_facts`; the English paragraph is written from them
alone, as every other language's is (``procure.report.generated``).
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
from procure.economics.sensitivity import (BASIS_FACTOR, FACTOR_LABELS, SENSITIVITY_CHANGES, SLIP_DAYS,
                                           SensitivityRow, Trial, apply, bid_trials, quote_trials)
from procure.economics.target import candidate_rows, time_to_target
from procure.economics.uncertainty import band

INFINITY = float("inf")

Rankings = dict[str, tuple[str, ...]]   # cost basis -> bid ids, best first
RankKey = tuple[int, int, Decimal, float, int]

#: Hard constraints: a bid that breaks one ranks after those that keep it.
CONSTRAINT_CODES = ("misses-deadline", "over-budget", "over-net-cost")

#: The second view shown beside the ranking basis (and the basis the sensitivity table's last
#: row ranks every bid on).
SECOND_VIEW = {"present_value": "run", "run": "present_value", "commitment": "present_value"}


class Recommendation(TypedDict):
    bid: str | None    # None when no bid can be costed
    text: str


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


def _factor_words(factors: Sequence[str]) -> list[str]:
    return [FACTOR_LABELS.get(f, "cost basis") for f in factors]


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
        "tested": {"factors": _factor_words(_tested(bids)),
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


# --- the recommendation: its facts, decided once, then the English paragraph written from them ---

#: Below a cent per million tokens a bid costs about nothing: the gap to it is stated in money.
RELATIVE_FLOOR = Decimal("0.01")


@dataclass(frozen=True)
class NamedBid:
    """A costed bid the recommendation names beside the recommended one."""

    id: str
    cost_per_million_tokens: Decimal
    currency: str
    time_to_train_days: float | None
    days_to_finish: float | None          # lead time + time to train, from as_of
    misses_deadline: bool


@dataclass(frozen=True)
class RecommendedBid(NamedBid):
    """The recommended bid: its figures, and what it needs before the run."""

    vendor: str = ""
    upfront_capex: Decimal | None = None  # purchase: cash out before the run
    lead_time_days: float = 0.0


@dataclass(frozen=True)
class CostGap:
    """How much more the runner-up costs than the recommended bid (negative: less): a percentage,
    or the difference per million tokens when the recommended bid costs below ``RELATIVE_FLOOR``."""

    percent: Decimal | None
    amount: Decimal | None


@dataclass(frozen=True)
class FlagFact:
    code: str
    reason: str


@dataclass(frozen=True)
class BandFacts:
    """The recommended bid's P10 and P90 cost per million tokens and days to train."""

    cost_p10: Decimal
    cost_p90: Decimal
    days_p10: float
    days_p90: float
    day_places: int                       # decimals the days' quantum supports


@dataclass(frozen=True)
class Flip:
    """A change the sensitivity tried that moves the recommended bid: a row of ``bid``'s table."""

    bid: str
    row: SensitivityRow

    # the row's move, by the names the document's record reads
    @property
    def factor(self) -> str:
        return self.row.factor

    @property
    def change(self) -> float:
        return self.row.change

    @property
    def step(self) -> float | None:
        return self.row.step

    @property
    def subject(self) -> str | None:
        return self.row.subject

    @property
    def setting(self) -> str | None:
        return self.row.setting

    @property
    def scope(self) -> str:
        return self.row.scope

    def describe(self) -> str:
        return self.row.describe(self.bid)


@dataclass(frozen=True)
class HeldBid:
    """A bid ranked after others (a hard constraint it breaks) or left uncosted, with the codes
    of the flags that put it there and their reasons."""

    id: str
    codes: tuple[str, ...]
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class RecommendationFacts:
    """What the recommendation states, decided once: every language writes its sentences from
    these (English by :func:`write_recommendation`)."""

    compared: int                         # how many bids were compared
    basis: str                            # the cost basis that ranks
    winner: RecommendedBid | None         # None: no bid can be costed
    deadline_days: float | None
    cheapest: NamedBid | None             # the cheapest costed bid, constraints aside, when not the winner
    runner_up: NamedBid | None
    gap: CostGap | None                   # runner-up against the winner
    flags: tuple[FlagFact, ...]           # the winner's flags besides missing the deadline
    modeled_step_time: bool               # a flag doubts the commitment: the figures use the modeled step time
    band: BandFacts | None
    flips: tuple[Flip, ...]               # what changes the recommended bid, each move once
    tested: tuple[str, ...]               # the factors tried (sensitivity factor keys)
    uncosted: tuple[HeldBid, ...]
    constrained: tuple[HeldBid, ...]      # costed bids ranked after the others, in rank order
    other_basis: str
    other_order: tuple[str, ...]          # the costed bids, best first, on ``other_basis``


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
    return tuple(code for code in bid.flag_codes if code in ("infeasible", "price-missing"))


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


# --- the English paragraph, written from the facts alone ---

def _money(value: Decimal, currency: str) -> str:
    return f"{value:.4f} {currency} per million tokens"


def _deadline_sentence(facts: RecommendationFacts, chosen: RecommendedBid) -> str:
    deadline = facts.deadline_days
    if deadline is None:
        return ""
    if chosen.misses_deadline:
        return f"No costed bid finishes within the {deadline:g}-day deadline."
    text = f"It finishes within the {deadline:g}-day deadline."
    other = facts.cheapest
    if other is not None:
        text += (f" The cheapest bid, {other.id} ({_money(other.cost_per_million_tokens, other.currency)}), "
                 f"misses it, finishing on day {other.days_to_finish:.1f}.")
    return text


def _runner_up_sentence(facts: RecommendationFacts) -> str:
    runner, gap = facts.runner_up, facts.gap
    if runner is None or gap is None:
        return "It is the only bid with a cost."
    late = " (missing the deadline)" if runner.misses_deadline else ""
    return (f"The runner-up, {runner.id}, costs {_money(runner.cost_per_million_tokens, runner.currency)} "
            f"({_gap_text(gap, runner.currency)}) and takes {runner.time_to_train_days:.1f} days{late}.")


def _gap_text(gap: CostGap, currency: str) -> str:
    if gap.amount is not None:
        word = "more" if gap.amount >= 0 else "less"
        return f"{abs(gap.amount):.4f} {currency} per million tokens {word}"
    percent = gap.percent or Decimal(0)
    word = "more" if percent >= 0 else "less"
    return f"{abs(percent):.1f}% {word}"


def _flags_sentence(facts: RecommendationFacts, chosen: RecommendedBid) -> str:
    if not facts.flags:
        if chosen.misses_deadline:
            return f"{chosen.id} carries no flags besides missing the deadline."
        return f"{chosen.id} carries no flags."
    listed = "; ".join(f"{flag.code} ({flag.reason})" for flag in facts.flags)
    text = f"Flags on {chosen.id}: {listed}."
    if facts.modeled_step_time:
        text += " Its figures use the modeled step time, not the commitment."
    return text


def _sensitivity_sentence(facts: RecommendationFacts, limit: int = 4) -> str:
    flips = [flip.describe() for flip in facts.flips]
    if not flips:
        tested = ", ".join(_factor_words(facts.tested))
        return f"No single change tested ({tested}) changes the recommended bid."
    more = f" and {len(flips) - limit} more" if len(flips) > limit else ""
    shown = ", ".join(flips[:limit]) + more
    return f"The recommended bid changes under: {shown}."


def _band_sentence(facts: RecommendationFacts, chosen: RecommendedBid) -> str:
    band = facts.band
    if band is None:
        return ""
    places = band.day_places
    return (f"Its P10–P90 band is {band.cost_p10}–{band.cost_p90} {chosen.currency} per million tokens "
            f"and {band.days_p10:.{places}f}–{band.days_p90:.{places}f} days.")


LONG_LIST = 50          # a sentence naming more bids than this names the first NAMED_SHOWN ...
NAMED_SHOWN = 20        # ... and counts the rest (the ranking lists every bid)


def _named(items: list[str]) -> str:
    if len(items) <= LONG_LIST:
        return ", ".join(items)
    return f"{', '.join(items[:NAMED_SHOWN])} and {len(items) - NAMED_SHOWN} more"


BASIS_WORDS = {"present_value": "present value (every bid's dated cash over the same horizon, discounted "
                                 "at the cost of capital)",
               "run": "the economic cost of this job on an amortised cluster",
               "commitment": "the terms committed to, costed to the end of the run, undiscounted"}
BASIS_SHORT = {"present_value": "present value", "run": "economic cost of this job",
               "commitment": "undiscounted commitment"}


def _basis_sentence(facts: RecommendationFacts) -> str:
    text = f"Ranked on {BASIS_WORDS[facts.basis]}, constraints first."
    if facts.other_order:
        text += f" On {BASIS_WORDS[facts.other_basis]} the order is {_named(list(facts.other_order))}."
    return text


def _constraint_sentence(facts: RecommendationFacts) -> str:
    """The bids ranked after others because they break a hard constraint, with the reason."""
    if not facts.constrained:
        return ""
    reasons = [f"{b.id} ({'; '.join(b.reasons)})" for b in facts.constrained]
    return f"Ranked after the bids that meet the constraints: {_named(reasons)}."


def _capex_sentence(chosen: RecommendedBid) -> str:
    if chosen.upfront_capex is None:
        return ""
    return (f"It needs {chosen.upfront_capex:,.2f} {chosen.currency} of upfront capex and is usable "
            f"{chosen.lead_time_days:g} days after the RFQ date.")


def _uncosted_sentence(facts: RecommendationFacts) -> str:
    if not facts.uncosted:
        return ""
    return f"Not costed: {_named([_held_text(b) for b in facts.uncosted])}."


def _held_text(bid: HeldBid) -> str:
    return f"{bid.id} ({', '.join(bid.codes)})"


def write_recommendation(facts: RecommendationFacts) -> Recommendation:
    """The English paragraph, from the facts alone: basis, winner, deadline, runner-up gap, capex,
    flags, band, sensitivity, the bids left out or ranked after, the other basis."""
    chosen = facts.winner
    if facts.compared == 0:
        return {"bid": None, "text": "No bids to compare."}
    if chosen is None:
        return {"bid": None, "text": "No bid can be costed. " + _uncosted_sentence(facts)}
    parts = [
        f"Recommend {chosen.id} ({chosen.vendor}) at "
        f"{_money(chosen.cost_per_million_tokens, chosen.currency)} ({BASIS_SHORT[facts.basis]}) and "
        f"{chosen.time_to_train_days:.1f} days to train.",
        _deadline_sentence(facts, chosen), _runner_up_sentence(facts), _capex_sentence(chosen),
        _flags_sentence(facts, chosen), _band_sentence(facts, chosen), _sensitivity_sentence(facts),
        _uncosted_sentence(facts), _constraint_sentence(facts), _basis_sentence(facts),
    ]
    return {"bid": chosen.id, "text": " ".join(part for part in parts if part)}
