"""Flags a bid can carry: small pure checks, each returning a Flag or None."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from procure.economics.inputs import Assumptions, Commitment, Performance
from procure.economics.statistical import PENALTY_FLAG, BatchChoice
from procure.economics.throughput import flops_utilisation, physical_floor_s

FLAG_CODES = ("impossible", "implausible", "optimistic", "conservative", "not-comparable", "misses-deadline",
              "over-budget", "over-net-cost", "batch-beyond-critical", "infeasible", "sla-breach", "price-missing", "uncalibrated",
              "facility-conflict")
ERROR_CODES = frozenset({"impossible", "infeasible", "price-missing"})


@dataclass(frozen=True)
class Flag:
    code: str
    severity: str          # error | warning
    reason: str            # one line, with the numbers
    numbers: dict[str, float] = field(default_factory=dict)


def make_flag(code: str, reason: str, **numbers: float) -> Flag:
    if code not in FLAG_CODES:
        raise ValueError(f"unknown flag {code!r}")
    severity = "error" if code in ERROR_CODES else "warning"
    return Flag(code, severity, reason, numbers)


def _implied_mfu(perf: Performance, committed_s: float | None) -> float | None:
    if committed_s is None or committed_s <= 0:
        return None
    return flops_utilisation(perf.model_flops_per_step, committed_s, perf.gpus, perf.peak_flops_per_gpu)


def impossible(perf: Performance, commitment: Commitment) -> Flag | None:
    """Committed step time below the floor at the accelerator's measured GEMM ceiling (or at 100 %
    of peak where none is measured), or a committed scaling efficiency above 1."""
    parts, numbers = [], {}
    efficiency = commitment.scaling_efficiency
    if efficiency is not None and efficiency > 1.0:
        parts.append(f"committed scaling efficiency {efficiency:.2f} is above 1 (more than linear)")
        numbers["committed_scaling_efficiency"] = efficiency
    peak_floor_s, committed_s = physical_floor_s(perf), commitment.step_time_s
    ceiling = perf.gemm_ceiling_mfu if perf.gemm_ceiling_mfu else 1.0
    if committed_s is not None and peak_floor_s is not None and committed_s < peak_floor_s / ceiling:
        floor_s = peak_floor_s / ceiling
        where = (f"the accelerator's measured GEMM ceiling ({ceiling:.0%} of peak)" if ceiling < 1.0
                 else "100% of peak")
        parts.append(f"committed {committed_s:.3g} s{commitment.converted_from} is below the floor of "
                     f"{floor_s:.3g} s (model FLOPs at {where} on {perf.gpus} GPUs)")
        numbers.update(committed_s=committed_s, floor_s=floor_s, peak_floor_s=peak_floor_s,
                       gemm_ceiling_mfu=ceiling, implied_mfu=_implied_mfu(perf, committed_s) or 0.0)
    if not parts:
        return None
    return make_flag("impossible", "; ".join(parts), **numbers)


def implausible(perf: Performance, commitment: Commitment, assumptions: Assumptions) -> Flag | None:
    """The commitment implies an MFU above the large-run record but not above the GEMM ceiling."""
    committed_s = commitment.step_time_s
    mfu = _implied_mfu(perf, committed_s)
    ceiling = perf.gemm_ceiling_mfu if perf.gemm_ceiling_mfu else 1.0
    if mfu is None or committed_s is None or mfu <= assumptions.mfu_ceiling or mfu > ceiling:
        return None
    return make_flag("implausible",
                     f"committed {committed_s:.3g} s{commitment.converted_from} implies {mfu:.0%} MFU, above the "
                     f"{assumptions.mfu_ceiling:.0%} large runs have shown",
                     committed_s=committed_s, implied_mfu=mfu, mfu_ceiling=assumptions.mfu_ceiling)


def versus_model(perf: Performance, commitment: Commitment,
                 assumptions: Assumptions) -> Flag | None:
    """Optimistic / conservative: committed step time beyond ±tolerance of the model."""
    committed_s, modeled_s = commitment.step_time_s, perf.modeled_step_time_s
    if committed_s is None or modeled_s is None or modeled_s <= 0:
        return None
    deviation = committed_s / modeled_s - 1.0
    if abs(deviation) <= assumptions.committed_tolerance:
        return None
    code, word = ("optimistic", "below") if deviation < 0 else ("conservative", "above")
    return make_flag(code,
                     f"committed {committed_s:.2f} s{commitment.converted_from} is {abs(deviation):.0%} {word} the modeled "
                     f"{modeled_s:.2f} s (tolerance {assumptions.committed_tolerance:.0%})",
                     committed_s=committed_s, modeled_s=modeled_s, deviation=deviation)


def sla_breach(perf: Performance, commitment: Commitment) -> Flag | None:
    """Measured P99 above the committed P99, or measured mean above the committed step time."""
    parts, numbers = [], {}
    pairs = (("P99", perf.measured_p99_s, commitment.p99_step_time_s, "p99"),
             ("mean", perf.measured_mean_s, commitment.step_time_s, "mean"))
    for label, measured, committed, key in pairs:
        if measured is not None and committed is not None and measured > committed:
            parts.append(f"measured {label} {measured:.3g} s exceeds the committed "
                         f"{committed:.3g} s{commitment.converted_from}")
            numbers.update({f"measured_{key}_s": measured, f"committed_{key}_s": committed})
    if not parts:
        return None
    return make_flag("sla-breach", "; ".join(parts), **numbers)


def misses_deadline(time_to_train_days: float | None, deadline_days: float | None,
                    lead_time_days: float = 0.0) -> Flag | None:
    """Training cannot start before the capacity is available: lead time + time to train."""
    if time_to_train_days is None or deadline_days is None:
        return None
    finish = lead_time_days + time_to_train_days
    if finish <= deadline_days:
        return None
    if lead_time_days > 0:
        reason = (f"available after {lead_time_days:g} days, it finishes training on day {finish:.1f}, "
                  f"after the {deadline_days:g}-day deadline")
    else:
        reason = f"time to train {time_to_train_days:.1f} days exceeds the {deadline_days:g}-day deadline"
    return make_flag("misses-deadline", reason, time_to_train_days=time_to_train_days,
                     deadline_days=deadline_days, lead_time_days=lead_time_days, days_to_finish=finish)


def over_budget(peak_cash_out: Decimal | None, budget: Decimal | None, currency: str) -> Flag | None:
    """The bid needs more cash at its peak (upfront capex and prepayments included) than the budget."""
    if peak_cash_out is None or budget is None or peak_cash_out <= budget:
        return None
    over = peak_cash_out - budget
    return make_flag("over-budget", f"needs {peak_cash_out:,.2f} {currency} of cash at its peak, {over:,.2f} "
                     f"{currency} over the {budget:,.2f} {currency} budget", peak_cash_out=float(peak_cash_out),
                     budget=float(budget), over_by=float(over))


def over_net_cost(total_cost: Decimal | None, limit: Decimal | None, currency: str) -> Flag | None:
    """The bid's total cost on the ranking basis is above the net-cost limit."""
    if total_cost is None or limit is None or total_cost <= limit:
        return None
    over = total_cost - limit
    return make_flag("over-net-cost", f"costs {total_cost:,.2f} {currency}, {over:,.2f} {currency} over the "
                     f"{limit:,.2f} {currency} net-cost limit", total_cost=float(total_cost), limit=float(limit),
                     over_by=float(over))


def not_comparable(commitment: Commitment) -> Flag | None:
    """The vendor stated its commitment at conditions too far from the bid's to convert."""
    stated = commitment.stated
    if stated is None or stated.comparable:
        return None
    numbers = {"stated_step_time_s": stated.step_time_s or 0.0,
               "stated_batch_tokens": float(stated.conditions.global_batch_tokens),
               "bid_batch_tokens": float(stated.bid_conditions.global_batch_tokens)}
    if stated.modeled_at_stated_s and stated.modeled_at_bid_s:
        numbers["model_factor"] = stated.modeled_at_bid_s / stated.modeled_at_stated_s
    return make_flag("not-comparable", f"committed {stated.describe()}: {stated.reason}", **numbers)


def batch_beyond_critical(batch: BatchChoice | None) -> Flag | None:
    """The bid's batch costs more than PENALTY_FLAG extra tokens to reach the target."""
    if batch is None or batch.critical is None or batch.token_penalty <= PENALTY_FLAG:
        return None
    critical = batch.critical
    return make_flag(
        "batch-beyond-critical",
        f"a global batch of {batch.tokens_per_step:,} tokens needs {batch.token_penalty:.1%} more tokens than the "
        f"workload's {critical.reference_batch_tokens:,.0f} to reach the same loss (critical batch "
        f"{critical.effective_tokens / 1e6:.3g}M tokens over the run)",
        token_penalty=batch.token_penalty, batch_tokens=float(batch.tokens_per_step),
        reference_batch_tokens=critical.reference_batch_tokens, critical_batch_tokens=critical.effective_tokens)


def infeasible(perf: Performance) -> Flag | None:
    if perf.feasible:
        return None
    reason = perf.infeasible_reason or "no parallel plan fits the model in memory on this hardware"
    short = perf.memory_shortfall
    if short is None:
        return make_flag("infeasible", reason, gpus=perf.gpus)
    return make_flag("infeasible", reason, gpus=perf.gpus, needed_gib=short.needed_gib,
                     capacity_gib=short.capacity_gib, headroom_fraction=short.headroom_fraction)


def uncalibrated(perf: Performance, assumptions: Assumptions) -> Flag | None:
    """The step-time model has no fitted knobs for this accelerator: its prediction is a guess."""
    error = perf.error
    if error is None or error.calibrated or perf.basis == "measured":
        return None
    sigma = error.sigma_log if error.sigma_log is not None else assumptions.step_time_sigma_uncalibrated
    return make_flag("uncalibrated",
                     "the step-time model has no fitted knobs for this accelerator; its prediction "
                     f"carries a wider error band (lognormal sigma {sigma:.2f})",
                     sigma_log=sigma)


def measured_elsewhere(perf: Performance) -> Flag | None:
    """Measured logs whose world size, global batch or sequence length is not the bid's: their
    step time is another job's (each difference named with both values)."""
    seq = perf.seq_len
    batch = perf.tokens_per_step // seq if seq else None
    pairs = [("world size", perf.measured_gpus, perf.gpus, "GPUs"),
             ("global batch", perf.measured_global_batch, batch, "sequences"),
             ("sequence length", perf.measured_seq_len, seq, "tokens")]
    differ = [(name, measured, bid, unit) for name, measured, bid, unit in pairs
              if measured is not None and bid is not None and measured != bid]
    if not differ:
        return None
    said = "; ".join(f"a {name} of {measured:,} {unit} where the bid has {bid:,}" for name, measured, bid, unit in differ)
    key = {"world size": "gpus", "global batch": "global_batch", "sequence length": "seq_len"}
    values = {f"measured_{key[name]}": float(measured) for name, measured, _b, _u in differ}
    values.update({f"bid_{key[name]}": float(bid) for name, _m, bid, _u in differ})
    return make_flag("not-comparable", f"the measured logs state {said}: their step time is another job's",
                     **values)


def price_missing(reason: str | None) -> Flag | None:
    return None if reason is None else make_flag("price-missing", reason)


def commitment_flags(perf: Performance, commitment: Commitment,
                     assumptions: Assumptions) -> list[Flag]:
    """Every flag about the commitment itself (valid even when the bid is infeasible)."""
    found = [impossible(perf, commitment), implausible(perf, commitment, assumptions),
             versus_model(perf, commitment, assumptions), sla_breach(perf, commitment), not_comparable(commitment),
             measured_elsewhere(perf)]
    return [flag for flag in found if flag is not None]


def facility_conflict(conflicts: tuple[str, ...]) -> Flag | None:
    """The bid and the workload both state a power price or a PUE and they differ: the bid's own is
    used; the flag names both so the reader can see which."""
    if not conflicts:
        return None
    return make_flag("facility-conflict", "; ".join(conflicts))


def in_order(flags: list[Flag | None]) -> tuple[Flag, ...]:
    """Drop Nones and sort in FLAG_CODES order, so reports list flags the same way every time."""
    present = [flag for flag in flags if flag is not None]
    return tuple(sorted(present, key=lambda flag: FLAG_CODES.index(flag.code)))
