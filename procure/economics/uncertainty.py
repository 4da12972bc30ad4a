"""A seeded Monte-Carlo band on $/Mtok and time to train.

Floats are fine here: the samples are an uncertainty estimate, and only the reported
percentiles of $/Mtok pass through ``money.rate``. Every bid draws from a fresh
``Generator(PCG64(seed))``, so a bid's band does not depend on the other bids or their order
(the bids share their random numbers, which also makes their bands comparable).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from procure.economics.cost import cost_basis, missing_price_reason, total_cost_float
from procure.economics.goodput import (MAX_LOST_FRACTION, checkpoint_write_s, interval_s,
                                      lost_fraction)
from procure.economics.inputs import Assumptions, BidCase
from procure.economics.throughput import step_time_at_efficiency
from procure.money import D, rate

PRICE_SPREAD = 0.10          # triangular, ±10 % around the quoted price (capex for a purchase)
EFFICIENCY_SIGMA = 0.08      # lognormal, median 1: compute term scaled by 1/efficiency
FAILURE_SIGMA = 0.5          # lognormal, median 1: interruptions per GPU-hour
POWER_SPREAD = 0.15          # uniform, ±15 % on the power price
PERCENTILES = (10, 50, 90)
DISTRIBUTIONS = {
    "price": f"triangular ±{PRICE_SPREAD:.0%}",
    "efficiency": f"lognormal sigma {EFFICIENCY_SIGMA}",
    "failure_rate": f"lognormal sigma {FAILURE_SIGMA}",
    "power_price": f"uniform ±{POWER_SPREAD:.0%}",
}


@dataclass(frozen=True)
class Uncertainty:
    seed: int
    samples: int
    cost_per_million_tokens: tuple[Decimal, Decimal, Decimal] | None   # P10, P50, P90
    time_to_train_days: tuple[float, float, float]

    def to_dict(self) -> dict:
        usd = self.cost_per_million_tokens
        return {
            "seed": self.seed, "samples": self.samples,
            "cost_per_million_tokens": None if usd is None else _named(usd),
            "time_to_train_days": _named(self.time_to_train_days),
            "distributions": dict(DISTRIBUTIONS),
            "checkpoint_interval": "held at the base plan's interval",
        }


def _named(values: tuple) -> dict:
    return {f"p{p}": v for p, v in zip(PERCENTILES, values)}


def _draws(assumptions: Assumptions):
    """The four multipliers, drawn in a fixed order from one seeded stream."""
    import numpy as np

    rng = np.random.Generator(np.random.PCG64(assumptions.seed))
    n = assumptions.monte_carlo_samples
    price = 1.0 + rng.triangular(-PRICE_SPREAD, 0.0, PRICE_SPREAD, n)
    efficiency = rng.lognormal(0.0, EFFICIENCY_SIGMA, n)
    failures = rng.lognormal(0.0, FAILURE_SIGMA, n)
    power = 1.0 + rng.uniform(-POWER_SPREAD, POWER_SPREAD, n)
    return price, efficiency, failures, power


def _training_hours(case: BidCase, assumptions: Assumptions, efficiency, failures):
    """Wall-clock hours per sample; the checkpoint interval stays at the base plan's choice."""
    import numpy as np

    perf = case.performance
    write_s = checkpoint_write_s(case.params, assumptions.checkpoint_bytes_per_param,
                                 assumptions.checkpoint_write_gbs)
    tau_s = interval_s(perf.gpus, case.params, assumptions)
    job_rate_s = perf.gpus * assumptions.failures_per_gpu_hour * failures / 3600.0
    lost = lost_fraction(write_s, tau_s, job_rate_s, assumptions.restart_min * 60.0)
    goodput = 1.0 - np.clip(lost, 0.0, MAX_LOST_FRACTION)
    seconds = sum(p.train_tokens * step_time_at_efficiency(p.performance, efficiency)
                  / p.performance.tokens_per_step for p in case.all_phases()) / goodput
    return seconds / 3600.0


def band(case: BidCase, assumptions: Assumptions) -> Uncertainty | None:
    """P10/P50/P90 of $/Mtok and days to train; None for an infeasible bid."""
    import numpy as np

    if not case.performance.feasible or assumptions.monte_carlo_samples <= 0:
        return None
    price, efficiency, failures, power = _draws(assumptions)
    hours = _training_hours(case, assumptions, efficiency, failures)
    days = np.percentile(hours / 24.0, PERCENTILES)
    usd = None
    if missing_price_reason(case.pricing) is None:
        basis = cost_basis(case.pricing, case.performance.gpus, assumptions)
        cost = total_cost_float(basis, hours, price, power)
        per_mtok = np.percentile(cost / case.total_tokens * 1e6, PERCENTILES)
        usd = tuple(rate(D(float(v))) for v in per_mtok)
    return Uncertainty(assumptions.seed, assumptions.monte_carlo_samples, usd,
                       tuple(round(float(v), 4) for v in days))
