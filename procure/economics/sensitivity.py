"""One-at-a-time changes to a bid's inputs, for the sensitivity table.

Each factor moves one input of one bid by a relative ``change``; everything else is held at
base. Ranking the moved bid against the others is ``procure.compare``'s job.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from procure.economics.cost import power_basis
from procure.economics.inputs import Assumptions, BidCase, Performance
from procure.economics.throughput import step_time_at_efficiency
from procure.money import D

FACTOR_LABELS = {
    "price": "price",                    # price per GPU-hour (rental) or every capex item (purchase)
    "efficiency": "model efficiency",    # compute term of the step time scaled by 1/(1+x)
    "failure_rate": "failure rate",      # interruptions per GPU-hour
    "power_price": "power price",        # $/kWh (moves purchase bids only: rent includes power)
    "lead_time": "lead time",            # days until the capacity is usable (deadline, value of time)
}
BASIS_FACTOR = "cost_basis"              # the other cost basis ranks every bid (one row per bid)
SENSITIVITY_CHANGES = (-0.2, -0.1, 0.1, 0.2)


@dataclass(frozen=True)
class SensitivityRow:
    factor: str
    change: float
    cost_per_million_tokens: Decimal | None
    time_to_train_days: float | None
    rank: int                      # among the other bids held at base
    winner_changes: bool
    setting: str | None = None     # a setting instead of a change (the cost basis tried)

    def describe(self, bid_id: str) -> str:
        if self.factor == BASIS_FACTOR:
            return f"the {(self.setting or '').replace('_', ' ')} cost basis"   # "present value", "run"
        return f"{FACTOR_LABELS[self.factor]} {self.change:+.0%} on {bid_id}"

    def to_dict(self) -> dict[str, Any]:
        return {"factor": self.factor, "change": self.change,
                "cost_per_million_tokens": self.cost_per_million_tokens,
                "time_to_train_days": self.time_to_train_days, "rank": self.rank,
                "winner_changes": self.winner_changes, "setting": self.setting}


def _scaled(value: Decimal | None, scale: Decimal) -> Decimal | None:
    return None if value is None else value * scale


def _price(case: BidCase, scale: Decimal) -> BidCase:
    p = case.pricing
    if p.kind == "rental":
        pricing = replace(p, price_per_gpu_hour=_scaled(p.price_per_gpu_hour, scale))
    else:
        pricing = replace(p, capex_per_gpu=_scaled(p.capex_per_gpu, scale),
                          network_capex_per_gpu=_scaled(p.network_capex_per_gpu, scale),
                          capex_per_node=_scaled(p.capex_per_node, scale),
                          network_capex=_scaled(p.network_capex, scale))
    return replace(case, pricing=pricing)


def _lead_time(case: BidCase, change: float) -> BidCase:
    return replace(case, lead_time_days=case.lead_time_days * (1.0 + change))


def _at_efficiency(perf: Performance, change: float) -> Performance:
    return replace(perf, step_time_s=float(step_time_at_efficiency(perf, 1.0 + change)))


def _efficiency(case: BidCase, change: float) -> BidCase:
    """Compute efficiency moves every phase of the workload (one model, one cluster)."""
    phases = tuple(replace(p, performance=_at_efficiency(p.performance, change)) for p in case.phases)
    return replace(case, performance=_at_efficiency(case.performance, change), phases=phases)


def perturb(case: BidCase, assumptions: Assumptions, factor: str,
            change: float) -> tuple[BidCase, Assumptions]:
    """The bid and assumptions with ``factor`` moved by ``change`` (e.g. +0.2 = 20 % more)."""
    if factor not in FACTOR_LABELS:
        raise ValueError(f"unknown sensitivity factor {factor!r}")
    if change <= -1.0:
        raise ValueError(f"a change of {change!r} leaves nothing")
    scale = 1 + D(change)
    if factor == "price":
        return _price(case, scale), assumptions
    if factor == "efficiency":
        return _efficiency(case, change), assumptions
    if factor == "lead_time":
        return _lead_time(case, change), assumptions
    if factor == "failure_rate":
        rate = assumptions.failures_per_gpu_hour * (1.0 + change)
        return case, replace(assumptions, failures_per_gpu_hour=rate)
    price = power_basis(case.pricing, assumptions).price_per_kwh
    if price is None:
        return case, assumptions
    return case, replace(assumptions, power_usd_per_kwh=price * scale)
