"""The recommendation's facts, as a typed record, and the English paragraph written from that record
alone.

``compare.recommendation_facts`` decides the facts once (winner, runner-up and gap, deadline verdict,
the cheapest bid when it is not the winner, flags, band, what flips it, the bids left out or ranked
after, the other basis's order); :func:`write_recommendation` writes English from them, as
``procure.report.generated`` writes every other language from the document's copy
(``recommendation.facts``).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Sequence, TypedDict

from procure.economics.sensitivity import FACTOR_LABELS, SensitivityRow


class Recommendation(TypedDict):
    bid: str | None    # None when no bid can be costed
    text: str


#: Below a cent per million tokens a bid costs about nothing: the gap to it is stated in money.
RELATIVE_FLOOR = Decimal("0.01")
#: Hard constraints: a bid that breaks one ranks after those that keep it.
CONSTRAINT_CODES = ("misses-deadline", "over-budget", "over-net-cost")
#: The flags that leave a bid without a cost.
UNCOSTED_CODES = ("infeasible", "price-missing")
#: The second view shown beside the ranking basis (and the basis the sensitivity table's last
#: row ranks every bid on).
SECOND_VIEW = {"present_value": "run", "run": "present_value", "commitment": "present_value"}


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


def factor_words(factors: Sequence[str]) -> list[str]:
    return [FACTOR_LABELS.get(f, "cost basis") for f in factors]


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
        tested = ", ".join(factor_words(facts.tested))
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
