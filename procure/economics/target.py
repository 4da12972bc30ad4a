"""Time and cost to the target: what the buyer wants is the loss the workload's train tokens
reach at its batch, not the shortest step.

At the workload's own batch the target is the train tokens. At another batch (a batch range
lets the search choose) the run needs the *equivalent* tokens, train tokens × token factor
(``procure.economics.statistical``); the difference is the statistical-efficiency penalty,
reported on its own line in days and in cost (negative when the batch is smaller than the
workload's: the same loss in fewer tokens, at more steps).

With workload phases the batch chosen (or grown) is the main phase's, so the factor applies to the
main phase's tokens; time and cost to the target count every phase.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from procure.economics.bid import BidEconomics, evaluate_core
from procure.economics.inputs import Assumptions, BidCase
from procure.economics.ratios import Ratios, ratios
from procure.economics.statistical import days_to_target


@dataclass(frozen=True)
class TimeToTarget:
    basis: str                               # the cost basis of the costs below
    target_tokens: float                     # the workload's train tokens, every phase (at their batches)
    token_factor: float                      # the main phase's (its batch is the one chosen)
    equivalent_tokens: float                 # what the run processes: main phase × token factor + the rest
    days_at_target_tokens: float             # at this bid's throughput, the target tokens alone
    penalty_days: float                      # days − days_at_target_tokens
    days: float                              # time to target (= time to train)
    cost_at_target_tokens: Decimal | None
    penalty_cost: Decimal | None
    cost: Decimal | None

    @property
    def token_penalty(self) -> float:
        return self.token_factor - 1.0

    @property
    def penalty_tokens(self) -> float:
        return self.equivalent_tokens - self.target_tokens


def time_to_target(case: BidCase, econ: BidEconomics, assumptions: Assumptions) -> TimeToTarget | None:
    """The bid's time and cost to the target, the penalty apart; None when the bid has no time."""
    if econ.time_to_train_days is None:
        return None
    factor = case.token_factor
    plain = econ
    if factor != 1.0 and case.batch is not None:
        plain = evaluate_core(replace(case, batch=replace(case.batch, token_factor=1.0)), assumptions, econ.basis,
                              ranking_only=True)   # only its time and cost are read
    days_plain = plain.time_to_train_days if plain.time_to_train_days is not None else econ.time_to_train_days
    cost, cost_plain = econ.total_cost, plain.total_cost
    return TimeToTarget(
        basis=econ.basis, target_tokens=case.total_tokens, token_factor=factor,
        equivalent_tokens=case.total_tokens + case.train_tokens * (factor - 1.0), days_at_target_tokens=days_plain,
        penalty_days=econ.time_to_train_days - days_plain, days=econ.time_to_train_days,
        cost_at_target_tokens=cost_plain,
        penalty_cost=None if cost is None or cost_plain is None else cost - cost_plain, cost=cost)


@dataclass(frozen=True)
class CandidateRow:
    """One batch the plan search was run at, with its plan's ratios and time to target."""

    global_batch_seqs: int
    global_batch_tokens: int
    chosen: bool
    feasible: bool
    reason: str | None
    plan: dict[str, Any] | None           # None: no plan runs at this batch
    step_time_s: float | None
    token_penalty: float | None
    time_to_target_days: float | None
    ratios: Ratios | None


def candidate_rows(case: BidCase, econ: BidEconomics) -> tuple[CandidateRow, ...]:
    """Every batch tried for this bid (a batch range only), at the bid's goodput; the batch is the
    main phase's, and time to target adds the further phases' days (their batch is their own)."""
    batch = case.batch
    if batch is None or not batch.options or batch.critical is None:
        return ()
    fraction = econ.goodput.fraction if econ.goodput else None
    further_days = sum(phase.time_to_train_days for phase in econ.phases[1:])
    rows = []
    for option in batch.options:
        factor = batch.critical.factor(option.tokens_per_step)
        feasible = option.feasible and option.step_time_s is not None
        days = (days_to_target(option, factor, case.train_tokens, fraction) + further_days
                if feasible and fraction else None)
        found = (ratios(option.terms, option.step_time_s, tokens_per_step=option.tokens_per_step,
                        step_time_s=option.step_time_s, gpus=case.performance.gpus, goodput_fraction=fraction,
                        token_factor=factor) if feasible else None)
        rows.append(CandidateRow(option.global_batch_seqs, option.tokens_per_step,
                                 option.global_batch_seqs == batch.global_batch_seqs, feasible, option.reason,
                                 dict(option.plan) or None, option.step_time_s, factor - 1.0 if feasible else None, days,
                                 found))
    return tuple(rows)
