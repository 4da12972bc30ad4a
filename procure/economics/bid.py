"""One bid's economics: throughput, goodput, time to train, cost lines, flags, band."""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal

from procure.economics import flags as checks
from procure.economics.cost import (CostLine, billed_hours, cost_basis, cost_lines, cost_notes,
                                    energy_mwh, hours_from_seconds, missing_price_reason,
                                    per_million_tokens, residual_value, total_cost)
from procure.economics.flags import Flag, in_order
from procure.economics.goodput import Goodput, goodput
from procure.economics.inputs import Assumptions, BidCase
from procure.economics.sensitivity import SensitivityRow
from procure.economics.throughput import Throughput, throughput
from procure.economics.uncertainty import Uncertainty, band

ENERGY_QUANTUM = Decimal("0.001")  # MWh, i.e. 1 kWh


@dataclass(frozen=True)
class PhaseEconomics:
    """One phase of the workload: its step time, tokens and share of the time to train."""

    name: str
    step_time_s: float
    tokens_per_step: int
    train_tokens: float
    tokens_per_s: float
    time_to_train_days: float

    def to_dict(self) -> dict:
        return {"name": self.name, "step_time_s": self.step_time_s, "tokens_per_step": self.tokens_per_step,
                "train_tokens": self.train_tokens, "tokens_per_s": self.tokens_per_s,
                "time_to_train_days": self.time_to_train_days}


@dataclass(frozen=True)
class BidEconomics:
    id: str
    vendor: str
    currency: str
    step_time_basis: str
    step_time_s: float | None
    throughput: Throughput | None
    goodput: Goodput | None
    time_to_train_days: float | None
    billed_hours: Decimal | None
    energy_mwh: Decimal | None
    cost_lines: tuple[CostLine, ...]
    total_cost: Decimal | None
    residual_value: Decimal | None
    cost_per_million_tokens: Decimal | None
    flags: tuple[Flag, ...]
    notes: tuple[str, ...] = ()
    deadline_days: float | None = None
    uncertainty: Uncertainty | None = None
    sensitivity: tuple[SensitivityRow, ...] = ()   # set by procure.compare
    rank: int | None = None                        # set by procure.compare
    phases: tuple[PhaseEconomics, ...] = ()        # only for a workload with further phases

    @property
    def has_cost(self) -> bool:
        return self.cost_per_million_tokens is not None

    @property
    def flag_codes(self) -> tuple[str, ...]:
        return tuple(flag.code for flag in self.flags)

    def to_dict(self) -> dict:
        tp = self.throughput
        return {
            "id": self.id, "vendor": self.vendor, "rank": self.rank,
            "step_time_basis": self.step_time_basis, "step_time_s": self.step_time_s,
            "tokens_per_s": tp and tp.tokens_per_s,
            "tokens_per_s_per_gpu": tp and tp.tokens_per_s_per_gpu,
            "mfu": tp and tp.mfu, "hfu": tp and tp.hfu,
            "goodput": self.goodput and self.goodput.to_dict(),
            "time_to_train_days": self.time_to_train_days, "billed_hours": self.billed_hours,
            "energy_mwh": self.energy_mwh, "total_cost": self.total_cost,
            "currency": self.currency,
            "cost_lines": [line.to_dict() for line in self.cost_lines],
            "residual_value": self.residual_value,
            "cost_per_million_tokens": self.cost_per_million_tokens,
            "flags": [flag.to_dict() for flag in self.flags],
            "sensitivity": [row.to_dict() for row in self.sensitivity],
            "uncertainty": self.uncertainty and self.uncertainty.to_dict(),
            "notes": list(self.notes),
            "phases": [phase.to_dict() for phase in self.phases],
        }


def _infeasible(case: BidCase, found: list[Flag | None]) -> BidEconomics:
    """No plan fits: the bid is listed with its flags and no time or cost."""
    perf = case.performance
    return BidEconomics(case.id, case.vendor, case.pricing.currency, perf.basis, None, None,
                        None, None, None, None, (), None, None, None,
                        in_order(found + [checks.infeasible(perf)]),
                        deadline_days=case.deadline_days)


def _goodput_notes(gp: Goodput) -> list[str]:
    if not gp.clamped:
        return []
    return ["the goodput formula left no useful time; "
            f"lost fraction clamped to {gp.lost_fraction:.2f}"]


def evaluate_core(case: BidCase, assumptions: Assumptions) -> BidEconomics:
    """Everything but the Monte-Carlo band (what the sensitivity table re-evaluates)."""
    perf = case.performance
    if case.train_tokens <= 0:
        raise ValueError(f"bid {case.id!r}: train_tokens must be positive")
    missing = missing_price_reason(case.pricing)
    found = [*checks.commitment_flags(perf, case.commitment, assumptions),
             checks.price_missing(missing)]
    blocked = next((p for p in case.phases if not p.performance.feasible), None)
    if not perf.feasible or blocked is not None:
        if blocked is not None and perf.feasible:
            perf = replace(perf, feasible=False, infeasible_reason=f"phase {blocked.name}: "
                           f"{blocked.performance.infeasible_reason or 'no plan fits'}")
            case = replace(case, performance=perf)
        return _infeasible(case, found)
    tp = throughput(perf)
    gp = goodput(perf.gpus, case.params, assumptions)
    phase_s = [p.train_tokens / throughput(p.performance).tokens_per_s / gp.fraction
               for p in case.all_phases()]
    phases = _phases(case, phase_s)
    seconds = sum(phase_s)
    days = seconds / 86400.0
    used_hours = hours_from_seconds(seconds)
    basis = cost_basis(case.pricing, perf.gpus, assumptions)
    energy = energy_mwh(perf.gpus, basis.power, used_hours)
    lines = () if missing else tuple(cost_lines(basis, used_hours))
    total = None if missing else total_cost(list(lines))
    found.append(checks.misses_deadline(days, case.deadline_days))
    return BidEconomics(
        id=case.id, vendor=case.vendor, currency=case.pricing.currency,
        step_time_basis=perf.basis, step_time_s=perf.step_time_s, throughput=tp, goodput=gp,
        time_to_train_days=days, billed_hours=billed_hours(basis, used_hours),
        energy_mwh=None if energy is None else energy.quantize(ENERGY_QUANTUM),
        cost_lines=lines, total_cost=total,
        residual_value=None if missing else residual_value(basis, list(lines)),
        cost_per_million_tokens=(None if total is None
                                else per_million_tokens(total, case.total_tokens)),
        flags=in_order(found), notes=tuple(_goodput_notes(gp) + cost_notes(basis)),
        deadline_days=case.deadline_days, phases=phases if case.phases else (),
    )


def _phases(case: BidCase, seconds: list[float]) -> tuple[PhaseEconomics, ...]:
    """Every phase's time at its own throughput and the bid's goodput (same GPUs throughout)."""
    return tuple(PhaseEconomics(p.name, p.performance.step_time_s, p.performance.tokens_per_step,
                                p.train_tokens, throughput(p.performance).tokens_per_s, s / 86400.0)
                 for p, s in zip(case.all_phases(), seconds))


def evaluate_bid(case: BidCase, assumptions: Assumptions) -> BidEconomics:
    """The economics of one bid, with its seeded uncertainty band (rank/sensitivity unset)."""
    return replace(evaluate_core(case, assumptions), uncertainty=band(case, assumptions))
