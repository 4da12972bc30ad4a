"""Text the report generates from the document's structured fields, in the report's language.

The document carries some sentences in English (a flag's reason, the recommendation, notes); they
are what an English report prints. Another language never translates those sentences: it writes
its own from the same structured fields (a flag's code and numbers, the ranking, the uncertainty
bands, the sensitivity rows) with its message catalog. A field it has no template for keeps the
document's text, so nothing is ever dropped.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import TYPE_CHECKING, Literal, cast

from procure.document import quote as Q
from procure.money import FX_STALE_DAYS
from procure.recommendation import CONSTRAINT_CODES, RELATIVE_FLOOR, SECOND_VIEW, UNCOSTED_CODES
from procure.report.formatting import Formatter

if TYPE_CHECKING:
    from procure.document import QuoteDocument
    from procure.document.bid import BidResult, CostLine, Flag, Measured, SensitivityRow

CostBasis = Literal["present_value", "run", "commitment"]

MFU_CAUSAL = ("model FLOPs = 3 x forward matmul FLOPs with the causal attention core (2 × sequence length × heads × "
              "head size per layer per token forward: the work a causal kernel does; Megatron/PaLM count it non-causal, "
              "twice that), over the dense peak at the workload precision")
MFU_CAUSAL_V2 = MFU_CAUSAL.replace("2 × sequence length × heads × head size", "2·s·heads·head_dim")  # older documents
ATTENTION_CAUSAL = "causal (the work a causal kernel does; Megatron/PaLM count twice that)"
# conventions the document names by a fixed text (model v1 and v2): the message that says the same in
# every language; a text not listed here is printed as the document has it
KNOWN_TEXTS = {
    "model FLOPs per step (attention counted non-causal, as Megatron and PaLM count) / (step time × "
    "GPUs × dense peak at the workload precision); HFU counts hardware FLOPs, recomputation included":
        "text.mfu_convention_noncausal",
    "non-causal (Megatron/PaLM)": "text.attention_noncausal",
    MFU_CAUSAL: "text.mfu_convention_causal",
    MFU_CAUSAL_V2: "text.mfu_convention_causal",
    ATTENTION_CAUSAL: "text.attention_causal",
    "checkpoint writes are charged in goodput (lost fraction), not in io_s": "text.checkpoint_note",
    "checkpoint writes are charged in goodput (lost fraction), not in the I/O term": "text.checkpoint_note",
}


def own_language(f: Formatter) -> bool:
    """True when the report writes its own sentences instead of the document's English ones."""
    return f.msg.lang != "en"


def known_text(value: str | None, f: Formatter) -> str:
    """A fixed convention text in the report's language (the document's text in English)."""
    key = KNOWN_TEXTS.get(str(value)) if value is not None else None
    return f.msg(key) if key else f.text(value)     # an older document's wording in today's words too


def keyed(f: Formatter, key: str, fallback: str | None) -> str:
    """The catalog's text for a structured key (a cost line, an assumption, a plan value) in a
    language other than English, when the document's text is the very one this version writes for
    that key; otherwise (English, an unknown key, a text another version wrote) the document's own
    text, so a label whose meaning changed is never given an old translation."""
    from procure.report.messages import catalog

    if own_language(f) and fallback is not None and catalog("en").get(key) == str(fallback):
        text = f.msg.get(key, "")
        if text:
            return text
    return f.text(fallback)


def cost_formula(line: CostLine, f: Formatter) -> str:
    """How a cost line is computed, in the report's language when the document's formula is one of
    the texts this version writes for that kind of line (``cost_formula.<key>`` and its variants,
    e.g. with a discount); any other formula is the document's own text."""
    from procure.report.messages import catalog

    formula = line.formula
    prefix = f"cost_formula.{line.key}"
    for key, text in catalog("en").items():
        if (key == prefix or key.startswith(prefix + ".")) and text == formula:
            return keyed(f, key, formula)
    return f.text(formula)


def _impossible_reason(numbers: dict[str, float], bid: BidResult, f: Formatter) -> str:
    """The same limit the English reason states: a committed scaling efficiency above 1, and a
    commitment below the floor at the accelerator's measured GEMM ceiling (or at 100 % of peak)."""
    parts = []
    if "committed_scaling_efficiency" in numbers:
        parts.append(f.msg("reason.impossible_scaling", efficiency=f.number(numbers["committed_scaling_efficiency"], 2)))
    if "committed_s" in numbers and "floor_s" in numbers:
        ceiling = float(numbers.get("gemm_ceiling_mfu") or 1.0)
        args = {"committed": f.seconds(numbers["committed_s"]), "floor": f.seconds(numbers["floor_s"]),
                "gpus": f.integer(bid.gpus)}
        parts.append(f.msg("reason.impossible_ceiling", ceiling=f.percent(ceiling, 0), **args) if ceiling < 1.0
                     else f.msg("reason.impossible", **args))
    if not parts:
        raise KeyError("committed_s")
    return f.msg("reason.join").join(parts)


def flag_reason(flag: Flag, bid: BidResult, doc: QuoteDocument, f: Formatter) -> str:
    """Why ``bid`` carries ``flag``: the document's sentence in English, else one written from the
    flag's numbers (and the bid and assumptions it refers to). The numbers are a dict field of the
    schema: its keys are the flag's own quantities (``committed_s``, ``deadline_days``, ...)."""
    reason = f.text(flag.reason)
    if not own_language(f):
        return reason
    code, numbers = str(flag.code), flag.numbers
    tolerance = next((a.value for a in doc.assumptions if a.key == "committed_tolerance"), None)
    try:
        if code == "impossible":
            return _impossible_reason(numbers, bid, f)
        if code == "implausible":
            return f.msg("reason.implausible", committed=f.seconds(numbers["committed_s"]),
                         mfu=f.percent(numbers["implied_mfu"], 0), ceiling=f.percent(numbers["mfu_ceiling"], 0))
        if code in ("optimistic", "conservative"):
            return f.msg(f"reason.{code}", committed=f.seconds(numbers["committed_s"]),
                         modeled=f.seconds(numbers["modeled_s"]),
                         deviation=f.percent(abs(float(numbers["deviation"])), 0), tolerance=f.percent(tolerance, 0))
        if code == "sla-breach":
            parts = [f.msg(f"reason.sla_{key}", measured=f.seconds(numbers[f"measured_{key}_s"]),
                           committed=f.seconds(numbers[f"committed_{key}_s"]))
                     for key in ("p99", "mean") if f"measured_{key}_s" in numbers and f"committed_{key}_s" in numbers]
            if parts:
                return f.msg("reason.join").join(parts)
        if code == "misses-deadline":
            if float(numbers.get("lead_time_days") or 0) > 0:
                return f.msg("reason.misses_deadline_lead", lead=f.days(numbers["lead_time_days"]),
                             finish=f.number(numbers["days_to_finish"], 1), deadline=f.days(numbers["deadline_days"]))
            return f.msg("reason.misses_deadline", days=f.days(numbers["time_to_train_days"]),
                         deadline=f.days(numbers["deadline_days"]))
        if code == "infeasible":
            if "needed_gib" in numbers:        # memory: the least a plan needs and what the GPU holds
                return f.msg("reason.infeasible_memory", gpus=f.integer(bid.gpus),
                             capacity=f.number(numbers["capacity_gib"], 0),
                             headroom=f.percent(numbers["headroom_fraction"], 0),
                             needed=f.number(numbers["needed_gib"], 1))
            return f.msg("reason.infeasible", gpus=f.integer(bid.gpus))
        if code == "price-missing":
            pricing = bid.pricing
            if pricing.price_book and pricing.term:
                return f.msg("reason.price_missing_line", book=pricing.price_book, term=pricing.term,
                             accelerator=bid.accelerator.id)
            return f.msg("reason.price_missing")
    except (KeyError, TypeError, ValueError):
        pass
    return reason


def recommendation_facts(doc: QuoteDocument) -> Q.RecommendationFacts:
    """What the recommendation states, as the comparison decided it (the facts the English text was
    written from); for a document saved before the facts were recorded, :func:`derived_facts`."""
    return doc.recommendation.facts or derived_facts(doc)


def recommendation(doc: QuoteDocument, f: Formatter) -> str | None:
    """The recommendation written in the report's language from :func:`recommendation_facts`, the
    facts the English text was written from (which bids were left out when none can be costed);
    None in English (the document's own text is printed)."""
    if not own_language(f):
        return None
    facts = recommendation_facts(doc)
    winner = facts.winner
    if winner is None:
        return _no_winner_text(facts, f)
    m, ccy = f.msg, winner.currency or f.currency
    parts = [m("rec.lead", bid=winner.id, vendor=f.text(winner.vendor),
               usd_mtok=f.rate(winner.cost_per_million_tokens, ccy), days=f.days(winner.time_to_train_days)),
             _deadline_text(facts, winner, f), _runner_up_text(facts, ccy, f)]
    codes = [str(flag.code) for flag in facts.flags]
    if codes:
        parts.append(m("rec.flags", bid=winner.id, flags=m("rec.list_sep").join(codes)))
    else:
        parts.append(m("rec.no_other_flags" if winner.misses_deadline else "rec.no_flags", bid=winner.id))
    band = facts.band
    if band is not None:
        parts.append(m("rec.band", cost_lo=f.rate(band.cost_p10, ccy), cost_hi=f.rate(band.cost_p90, ccy),
                       days_lo=f.number(band.days_p10, 1), days_hi=f.days(band.days_p90)))
    parts.append(_sensitivity_sentence(facts, f))
    parts.append(_constraints_text(facts, f))
    return m("rec.join").join(p for p in parts if p)


def _deadline_text(facts: Q.RecommendationFacts, winner: Q.RecommendedBid, f: Formatter) -> str:
    """Met or missed (its ``misses-deadline`` flag, which counts the lead time), and the day it finishes."""
    if facts.deadline_days is None:
        return ""
    deadline = f.days(facts.deadline_days)
    if not winner.misses_deadline:
        return f.msg("rec.deadline_met", deadline=deadline)
    return f.msg("rec.deadline_missed", deadline=deadline, finish=f.number(winner.days_to_finish, 1))


def _no_winner_text(facts: Q.RecommendationFacts, f: Formatter) -> str:
    """No bid to compare, or none with a cost: which bids, and why each is left out."""
    if facts.compared == 0:
        return f.msg("rec.no_bids")
    left = [f.msg("rec.uncosted_item", bid=held.id, codes=f.msg("rec.list_sep").join(held.codes))
            for held in facts.uncosted]
    return f.msg("rec.none_costed", bids=f.msg("rec.list_sep").join(left))


def _runner_up_text(facts: Q.RecommendationFacts, ccy: str, f: Formatter) -> str:
    """The runner-up and how much more (or less) it costs: a percentage, or money per million tokens
    when the recommended bid costs about nothing."""
    runner, gap = facts.runner_up, facts.gap
    if runner is None or gap is None:
        return ""
    if gap.percent is not None:
        less, more = gap.percent < 0, f.percent(abs(Decimal(str(gap.percent))) / 100)
    else:
        amount = gap.amount or Decimal(0)
        less, more = amount < 0, f.rate(abs(amount), runner.currency or ccy)
    return f.msg("rec.runner_up_less" if less else "rec.runner_up", bid=runner.id,
                 usd_mtok=f.rate(runner.cost_per_million_tokens, runner.currency or ccy), more=more,
                 days=f.days(runner.time_to_train_days))


def recommended_line(doc: QuoteDocument, f: Formatter) -> str:
    """One line naming the recommended bid and why, from :func:`recommendation_facts` (the same
    facts in every language); empty when there is no recommended bid."""
    facts = recommendation_facts(doc)
    winner, m = facts.winner, f.msg
    if winner is None:
        return ""
    rate = f.rate(winner.cost_per_million_tokens, winner.currency or f.currency)
    deadline = f.days(facts.deadline_days) if facts.deadline_days is not None else ""
    if facts.deadline_days is not None and winner.misses_deadline:
        why = m("rec.why_none_on_time", usd_mtok=rate, deadline=deadline)
    elif facts.cheapest is not None:
        why = m("rec.why_on_time", usd_mtok=rate, deadline=deadline, cheapest=facts.cheapest.id)
    elif facts.runner_up is None:
        why = m("rec.why_only", usd_mtok=rate)
    else:
        why = m("rec.why_cheapest", usd_mtok=rate)
    return m("summary.recommended", bid=winner.id, why=why)


def constraints_line(doc: QuoteDocument, f: Formatter) -> str:
    """The bids the ranking puts after those that meet every hard constraint, each with the
    constraints it misses (in the report's language); empty when no costed bid misses one."""
    return _constraints_text(recommendation_facts(doc), f)


def _constraints_text(facts: Q.RecommendationFacts, f: Formatter) -> str:
    late = [f.msg("rank.after_item", bid=held.id,
                  missed=f.msg("reason.join").join(f.msg(f"constraint.{c}") for c in held.codes))
            for held in facts.constrained]
    return f.msg("summary.ranked_after", bids="; ".join(late)) if late else ""


# --- the fallback: facts derived from a document saved before the comparison recorded them ---

# the comparison's vocabulary (procure.recommendation): hard constraints, uncosted codes, the second
# view and the floor below which the gap is stated in money


def _costed(bid: BidResult | None) -> bool:
    return bid is not None and bid.cost_per_million_tokens is not None


def _ranking_value(bid: BidResult, basis: CostBasis) -> Decimal | None:
    found = bid.cost_bases.get(basis)
    value = found.ranking_cost_per_million_tokens if found is not None else None
    return bid.cost_per_million_tokens if value is None else value


def _cheapest(doc: QuoteDocument, by_id: dict[str, BidResult]) -> str | None:
    """The cheapest costed bid on the ranking basis, constraints aside (the ranking puts bids that
    miss a constraint after the others, so this may rank lower)."""
    costed = [str(i) for i in doc.ranking if _costed(by_id.get(i))]
    if not costed:
        return None
    return min(costed, key=lambda i: float(_ranking_value(by_id[i], doc.cost_basis) or 0))


def _finish(bid: BidResult) -> float | None:
    late = next((fl for fl in bid.flags if fl.code == "misses-deadline"), None)
    finish = bid.delivery.days_to_finish if bid.delivery is not None else None
    return late.numbers.get("days_to_finish", finish) if late else finish


def _misses(bid: BidResult) -> bool:
    return any(fl.code == "misses-deadline" for fl in bid.flags)


def _named_bid(bid: BidResult) -> Q.NamedBid | None:
    cost = bid.cost_per_million_tokens
    return None if cost is None else Q.NamedBid(
        id=bid.id, cost_per_million_tokens=cost, currency=bid.currency, time_to_train_days=bid.time_to_train_days,
        days_to_finish=_finish(bid), misses_deadline=_misses(bid))


def _recommended_bid(bid: BidResult) -> Q.RecommendedBid | None:
    cost = bid.cost_per_million_tokens
    return None if cost is None else Q.RecommendedBid(
        id=bid.id, cost_per_million_tokens=cost, currency=bid.currency, time_to_train_days=bid.time_to_train_days,
        days_to_finish=_finish(bid), misses_deadline=_misses(bid), vendor=bid.vendor, upfront_capex=bid.upfront_capex,
        lead_time_days=bid.delivery.lead_time_days if bid.delivery is not None else 0.0)


def _gap(runner: BidResult, winner: BidResult) -> Q.CostGap | None:
    other, chosen = runner.cost_per_million_tokens, winner.cost_per_million_tokens
    if other is None or chosen is None:
        return None
    if abs(chosen) < RELATIVE_FLOOR:
        return Q.CostGap(percent=None, amount=other - chosen)
    return Q.CostGap(percent=float((other / chosen - 1) * 100), amount=None)


def _band(bid: BidResult) -> Q.BandFacts | None:
    unc = bid.uncertainty
    cost = unc.cost_per_million_tokens if unc is not None else None
    if unc is None or cost is None:
        return None
    quantum = unc.precision.time_to_train_days if unc.precision is not None else 0.0
    places = max(0, -math.floor(math.log10(quantum))) if quantum > 0 else 1
    return Q.BandFacts(cost_p10=cost.p10, cost_p90=cost.p90, days_p10=unc.time_to_train_days.p10,
                       days_p90=unc.time_to_train_days.p90, day_places=places)


def _flips(doc: QuoteDocument) -> list[Q.FlipFact]:
    """The rows that change the recommended bid, each move once, in the order of the bids and their rows."""
    found: dict[tuple[object, ...], Q.FlipFact] = {}
    for bid in doc.bids:
        for row in bid.sensitivity:
            move = (bid.id if row.scope == "bid" else None, row.factor, row.change, row.step, row.subject, row.setting)
            if row.winner_changes:
                found.setdefault(move, Q.FlipFact(bid=bid.id, factor=row.factor, change=row.change, step=row.step,
                                                  subject=row.subject, setting=row.setting, scope=row.scope))
    return list(found.values())


def _held(bid: BidResult, codes: tuple[str, ...], reasons: bool) -> Q.HeldBid:
    held = [fl for fl in bid.flags if fl.code in codes]
    return Q.HeldBid(id=bid.id, codes=[str(fl.code) for fl in held], reasons=[fl.reason for fl in held] if reasons else [])


def derived_facts(doc: QuoteDocument) -> Q.RecommendationFacts:
    """FALLBACK for a document without ``recommendation.facts`` (saved before they were recorded):
    the same facts derived from its fields (the recommended bid, the ranking, the flags, the bands
    and the sensitivity rows). A document that has the facts never comes here."""
    by_id = {b.id: b for b in doc.bids}
    ranked = [by_id[i] for i in doc.ranking if i in by_id]
    found = by_id.get(doc.recommendation.bid) if doc.recommendation.bid is not None else None
    winner = found if _costed(found) else None
    runner = None if winner is None else next((b for b in ranked if b.id != winner.id and _costed(b)), None)
    cheapest = None if winner is None else _cheapest(doc, by_id)
    flags = winner.flags if winner is not None else []
    doubted = {"impossible", "implausible", "optimistic"} & {str(fl.code) for fl in flags}
    other = cast(CostBasis, SECOND_VIEW[doc.cost_basis])
    return Q.RecommendationFacts(
        compared=len(doc.bids), basis=doc.cost_basis, winner=None if winner is None else _recommended_bid(winner),
        deadline_days=None if winner is None else doc.workload.deadline_days,
        cheapest=None if cheapest is None or winner is None or cheapest == winner.id else _named_bid(by_id[cheapest]),
        runner_up=None if runner is None else _named_bid(runner),
        gap=None if runner is None or winner is None else _gap(runner, winner),
        flags=[Q.FlagFact(code=str(fl.code), reason=fl.reason) for fl in flags if fl.code != "misses-deadline"],
        modeled_step_time=winner is not None and winner.step_time_basis == "modeled" and bool(doubted),
        band=None if winner is None else _band(winner), flips=_flips(doc), tested=tested_factors(doc),
        uncosted=[_held(b, UNCOSTED_CODES, False) for b in ranked if not _costed(b)],
        constrained=[_held(b, CONSTRAINT_CODES, True) for b in ranked
                     if _costed(b) and any(fl.code in CONSTRAINT_CODES for fl in b.flags)],
        other_basis=other, other_order=[i for i in doc.rankings.get(other, []) if _costed(by_id.get(i))])


def _converts(doc: QuoteDocument) -> bool:
    """Whether any price of any bid was quoted in another currency than the report's."""
    return any(b.pricing.book_currency != doc.currency or any(q.currency != doc.currency for q in b.pricing.quoted)
               for b in doc.bids)


def fx_warning(doc: QuoteDocument, f: Formatter) -> str:
    """A warning for the summary when the exchange rates may not hold: the table is more than
    FX_STALE_DAYS before the report date, or its rates are unverified (carried forward); empty
    otherwise, and when no rate converts anything."""
    fx = doc.fx
    if fx is None or not _converts(doc):
        return ""
    parts = []
    age = (doc.as_of - fx.as_of).days
    if age > FX_STALE_DAYS:
        parts.append(f.msg("fx.stale", as_of=f.date(fx.as_of), days=f.integer(age), limit=f.integer(FX_STALE_DAYS)))
    if not fx.verified:
        parts.append(f.msg("fx.unverified", as_of=f.date(fx.as_of)))
    return f.msg("fx.warning", reasons=f.msg("reason.join").join(parts)) if parts else ""


def factor_text(row: SensitivityRow | Q.FlipFact, f: Formatter) -> str:
    """The factor a row moved, in the reader's words (an exchange rate names its currency)."""
    if row.subject:
        return f.msg("factor.fx_of", currency=f.text(row.subject))
    return f.msg.get(f"factor.{row.factor}", str(row.factor))


def change_text(row: SensitivityRow | Q.FlipFact, f: Formatter) -> str:
    """How a row moved its factor: a percentage, a slip in days, a reuse share or the basis tried."""
    if row.setting:
        return f.msg.get(f"basis.{row.setting}", str(row.setting))
    step = row.step
    if step is None:
        return f.change(row.change)
    if row.factor == "lead_time_slip":
        return f.msg("change.later_days", days=f.integer(step))
    return f.percent(step, 0)


def move_text(row: SensitivityRow | Q.FlipFact, bid_id: str, f: Formatter) -> str:
    """One move that a sensitivity row tried, naming the bid when the input was that bid's own."""
    if row.setting:
        return f.msg("move.basis", basis=change_text(row, f))
    move = f"{factor_text(row, f)} {change_text(row, f)}"
    return f.msg("move.on_bid", move=move, bid=bid_id) if row.scope == "bid" else move


def decision_movers(doc: QuoteDocument, f: Formatter) -> list[str]:
    """Every move that changes the recommended bid, each once, in the order of the bids and their
    rows (the recommendation's facts, in the report's language)."""
    return [move_text(flip, flip.bid, f) for flip in recommendation_facts(doc).flips]


def tested_factors(doc: QuoteDocument) -> list[str]:
    """The factors the sensitivity tried, every bid's rows merged in their order (a factor one
    bid lacks keeps its place after the factor before it in the bids that have it)."""
    order: list[str] = []
    for bid in doc.bids:
        previous = -1
        for factor in dict.fromkeys(str(row.factor) for row in bid.sensitivity):
            if factor not in order:
                order.insert(previous + 1, factor)
            previous = order.index(factor)
    return order


def _sensitivity_sentence(facts: Q.RecommendationFacts, f: Formatter, limit: int = 4) -> str:
    """What the English recommendation says of the sensitivity: the moves that change the
    recommended bid (the first ``limit``, and how many more), or the factors tried."""
    movers = [move_text(flip, flip.bid, f) for flip in facts.flips]
    if not movers:
        if not facts.tested:
            return ""
        factors = f.msg("rec.list_sep").join(f.msg.get(f"factor.{k}", k) for k in facts.tested)
        return f.msg("rec.stable", factors=factors)
    more = f.msg("rec.more", count=f.integer(len(movers) - limit)) if len(movers) > limit else ""
    return f.msg("rec.unstable", changes=f.msg("rec.list_sep").join(movers[:limit]) + more)


def busbw_note(measured: Measured, f: Formatter) -> str:
    """Whether a measured nccl-tests bandwidth replaced the catalog's inter-node rate."""
    note = f.text(measured.busbw_note) if measured.busbw_note else ""
    if not own_language(f) or not note:
        return note
    gbs = measured.busbw_gbs
    if gbs is None:
        return note
    return f.msg("text.busbw_used" if measured.busbw_used else "text.busbw_not_used", value=f.sig(gbs, 3))
