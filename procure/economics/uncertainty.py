"""A seeded Monte-Carlo band on cost per million tokens and time to train.

Floats are fine here: the samples are an uncertainty estimate, and only the reported
percentiles of cost per million tokens pass through ``money``. Every bid draws from a fresh
``Generator(PCG64(seed))``, so a bid's band does not depend on the other bids or their order
(the bids share their random numbers, which also makes their bands comparable).

The largest uncertainty of a modeled bid is the model's own error: the step time is drawn
from ``predicted × exp(bias + sigma_log × N(0, 1))`` with the bias and spread of the bid's
family (``Performance.error``, the model's calibration record), wider for an accelerator
without fitted knobs. A measured
step time carries no model error. When the bid runs at another batch than the workload's, the
critical batch of the statistical-efficiency law is drawn too (lognormal on B_star, the law's
``b_star_sigma_log``): at the workload's own batch the token factor is 1 for every draw. The
financial terms a bid's cost depends on are drawn too (``financial_terms``): the cost of capital
(an owned cluster's financing, a prepayment's), the resale decline and haircut (an owned
cluster on the commitment basis) and, for a bid quoted in another currency, its exchange rate.
Each percentile is reported to the precision the sample supports: rounded to the decade of its
standard error (from the order statistics).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from procure.economics.cashflow import present_value_float
from procure.economics.cost import DEFAULT_BASIS, Terms, missing_price_reason, terms
from procure.economics.cost_float import DrawnRates, total_cost_float
from procure.economics.goodput import MAX_LOST_FRACTION, interval_s, lost_fraction, steady_kept, write_s_of
from procure.economics.inputs import Assumptions, BidCase, Performance, Phase
from procure.economics.statistical import token_factor
from procure.money import RATE_QUANTUM, D, quantize

PRICE_SPREAD = 0.10          # triangular, ±10 % around the quoted price (capex for a purchase)
FAILURE_SIGMA = 0.5          # lognormal, median 1: interruptions per GPU-hour
POWER_SPREAD = 0.15          # uniform, ±15 % on the power price
# triangular, ±20 % (relative) around the assumption: the sensitivity table's widest step. The cost
# of capital's source gives 7-10 % around 8 %; resale residuals (v2-pseo-ai guide) give 25-35 % at
# 3 years around (1 - 0.33)^3 = 30 %, a decline of 0.30-0.37; the haircut's 15-25 points
FINANCE_SPREAD = 0.20
FX_SPREAD = 0.10             # uniform, ±10 % on every amount of a bid quoted in another currency
PERCENTILES = (10, 50, 90)
DAYS_QUANTUM_FLOOR = 0.001   # finer than this a day count means nothing
CHECKPOINT_INTERVAL = "held at the base plan's interval"   # each draw keeps the base run's checkpoints


@dataclass(frozen=True)
class StepError:
    """The model error the band draws for one bid (resolved from Performance.error)."""

    sigma_log: float
    bias: float
    calibrated: bool
    family: str
    source: str

    def describe(self) -> str:
        if self.sigma_log == 0:
            return "none (measured step time)"
        bias = f", bias {self.bias:+.3f} in ln" if self.bias else ""
        kind = "calibrated" if self.calibrated else "uncalibrated"
        family = f" of {self.family}" if self.family else ""
        return f"lognormal sigma {self.sigma_log:.2f}{bias} ({kind}{family}; {self.source})"


def step_error(perf: Performance, assumptions: Assumptions) -> StepError:
    """The step-time error of this bid: the model's family residuals, else the assumption."""
    if perf.basis == "measured":
        return StepError(0.0, 0.0, True, "", "measured")
    error = perf.error
    calibrated = True if error is None else error.calibrated
    default = (assumptions.step_time_sigma_calibrated if calibrated
               else assumptions.step_time_sigma_uncalibrated)
    if error is None or error.sigma_log is None:
        source = "assumption step_time_sigma_" + ("calibrated" if calibrated else "uncalibrated")
        if error is not None and error.source:
            source = f"{error.source}; {source}"
        return StepError(default, error.bias if error else 0.0, calibrated,
                         error.family if error else "", source)
    return StepError(error.sigma_log, error.bias, calibrated, error.family, error.source or "model backtests")


@dataclass(frozen=True)
class Uncertainty:
    seed: int
    samples: int
    cost_per_million_tokens: tuple[Decimal, Decimal, Decimal] | None   # P10, P50, P90
    time_to_train_days: tuple[float, float, float]
    cost_quantum: Decimal | None            # the precision the sample supports for each figure
    days_quantum: float
    step_error: StepError
    basis: str = DEFAULT_BASIS
    critical_batch_sigma_log: float | None = None   # drawn when the bid's batch is not the workload's
    financial: tuple[str, ...] = ()         # the financial terms drawn (financial_terms)

    @property
    def distributions(self) -> dict[str, str]:
        """The distribution of every input this band drew."""
        return distributions(self.step_error, self.critical_batch_sigma_log, self.financial)


def distributions(error: StepError, critical_batch_sigma_log: float | None = None,
                  drawn: tuple[str, ...] = ()) -> dict[str, str]:
    """The distribution of every input drawn; ``drawn``: the financial terms this bid's cost
    depends on (``financial_terms``)."""
    found = {
        "price": f"triangular ±{PRICE_SPREAD:.0%}",
        "step_time": error.describe(),
        "failure_rate": f"lognormal sigma {FAILURE_SIGMA}",
        "power_price": f"uniform ±{POWER_SPREAD:.0%}",
    }
    for term in drawn:
        found[term] = (f"uniform ±{FX_SPREAD:.0%} on every amount quoted in another currency" if term == "fx"
                       else f"triangular ±{FINANCE_SPREAD:.0%} of the assumption")
    if critical_batch_sigma_log is not None:
        found["critical_batch"] = f"lognormal sigma {critical_batch_sigma_log:.2f} on B_star (statistical efficiency)"
    return found


def _draws(assumptions: Assumptions) -> tuple[Any, Any, Any, Any, Any, DrawnRates, Any]:
    """Standardised draws, in a fixed order from one seeded stream (those added later drawn
    after the others, so that they move none of them): price, step time, failures, power, the
    critical batch, the financial terms, the exchange rate."""
    import numpy as np

    rng = np.random.Generator(np.random.PCG64(assumptions.seed))
    n = assumptions.monte_carlo_samples
    price = 1.0 + rng.triangular(-PRICE_SPREAD, 0.0, PRICE_SPREAD, n)
    step_z = rng.standard_normal(n)
    failures = rng.lognormal(0.0, FAILURE_SIGMA, n)
    power = 1.0 + rng.uniform(-POWER_SPREAD, POWER_SPREAD, n)
    batch_z = rng.standard_normal(n)
    rates = DrawnRates(*(1.0 + rng.triangular(-FINANCE_SPREAD, 0.0, FINANCE_SPREAD, n) for _ in range(3)))
    fx = 1.0 + rng.uniform(-FX_SPREAD, FX_SPREAD, n)
    return price, step_z, failures, power, batch_z, rates, fx


def financial_terms(t: Terms, basis: str) -> tuple[str, ...]:
    """The financial terms the bid's cost on ``basis`` depends on (what the band draws)."""
    p = t.pricing
    found = []
    discounted = basis == "present_value" and t.cost_of_capital    # every dated flow is discounted
    if discounted or (p.kind == "purchase" and t.cost_of_capital) or (basis == "commitment" and p.prepay_fraction):
        found.append("cost_of_capital")
    if p.kind == "purchase" and basis in ("commitment", "present_value"):
        found += ["resale_decline", "resale_haircut"]
    if p.quoted_currency and p.quoted_currency != p.currency:
        found.append("fx")
    return tuple(found)


def token_factors(case: BidCase, batch_z: Any) -> tuple[Any, float | None]:
    """The main phase's token factor per sample, and the spread drawn (None: the workload's batch,
    factor 1)."""
    import numpy as np

    batch = case.batch
    critical = None if batch is None else batch.critical
    if batch is None or critical is None or batch.tokens_per_step == critical.reference_batch_tokens:
        return np.full(len(batch_z), case.token_factor), None
    scale = np.exp(critical.sigma_log * batch_z)
    return (token_factor(float(batch.tokens_per_step), critical.reference_batch_tokens,
                         critical.effective_tokens * scale), critical.sigma_log)


def _phase_seconds(phase: Phase, assumptions: Assumptions, step_z: Any, factors: Any = 1.0) -> Any:
    """Compute seconds of one phase per sample (before goodput), each step time drawn with the
    phase's own model error on the shared draw ``step_z``: one model, one bid, so the phases'
    errors move together. ``factors``: the phase's token factor per sample (its batch's statistical
    efficiency; 1 for a phase whose batch is the workload's)."""
    import numpy as np

    perf = phase.performance
    error = step_error(perf, assumptions)
    step_s = perf.step_time_s * np.exp(error.bias + error.sigma_log * step_z)
    return phase.train_tokens * factors * step_s / perf.tokens_per_step


def _training_hours(case: BidCase, assumptions: Assumptions, step_z: Any, failures: Any,
                    factors: Any = 1.0) -> Any:
    """Wall-clock hours per sample over every phase; the checkpoint interval stays at the base
    plan's choice. ``factors`` apply to the main phase (the one whose batch is chosen)."""
    import numpy as np

    perf = case.performance
    write_s = write_s_of(perf.gpus, case.params, assumptions)
    tau_s = interval_s(perf.gpus, case.params, assumptions)
    job_rate_s = perf.gpus * assumptions.failures_per_gpu_hour * failures / 3600.0
    lost = lost_fraction(write_s, tau_s, job_rate_s, assumptions.restart_min * 60.0)
    goodput = (1.0 - np.clip(lost, 0.0, MAX_LOST_FRACTION)) * steady_kept(assumptions)
    seconds = sum(_phase_seconds(phase, assumptions, step_z, factors if i == 0 else 1.0)
                  for i, phase in enumerate(case.all_phases())) / goodput
    return seconds / 3600.0


def supported_quantum(samples: Any, percentile: float) -> float:
    """The decade of the standard error of a sample percentile (order-statistic interval).

    With n samples the p-quantile's rank has a standard deviation of sqrt(n p (1 - p)); half the
    spread of the values one such deviation either side is the quantile's standard error."""
    import numpy as np

    n = len(samples)
    p = percentile / 100.0
    spread = math.sqrt(p * (1.0 - p) / n) * 100.0
    lo, hi = np.percentile(samples, [max(percentile - spread, 0.0), min(percentile + spread, 100.0)])
    error = (float(hi) - float(lo)) / 2.0
    if error <= 0 or not math.isfinite(error):
        return 0.0
    return 10.0 ** math.floor(math.log10(error))


def _rounded(values: Any, quantum: float, floor: float) -> tuple[float, float, float]:
    q = max(quantum, floor)
    return tuple(round(round(float(v) / q) * q, 12) for v in values)  # type: ignore[return-value]


def band(case: BidCase, assumptions: Assumptions, basis: str = DEFAULT_BASIS) -> Uncertainty | None:
    """P10/P50/P90 of cost per million tokens (on ``basis``, over the tokens of every phase) and
    days to train (every phase); None if infeasible (the main phase or a further one)."""
    import numpy as np

    feasible = all(phase.performance.feasible for phase in case.all_phases())
    if not feasible or assumptions.monte_carlo_samples <= 0:
        return None
    error = step_error(case.performance, assumptions)
    price, step_z, failures, power, batch_z, rates, fx = _draws(assumptions)
    factors, batch_sigma = token_factors(case, batch_z)
    hours = _training_hours(case, assumptions, step_z, failures, factors)
    day_samples = hours / 24.0
    days_q = max(max(supported_quantum(day_samples, p) for p in PERCENTILES), DAYS_QUANTUM_FLOOR)
    days = _rounded(np.percentile(day_samples, PERCENTILES), days_q, DAYS_QUANTUM_FLOOR)
    cost, cost_q = None, None
    drawn: tuple[str, ...] = ()
    if missing_price_reason(case.pricing) is None:
        t = terms(case.pricing, case.performance.gpus, assumptions)
        drawn = financial_terms(t, basis)
        total = (present_value_float(t, hours, price, power, case.lead_time_days * 24.0, rates)
                 if basis == "present_value" else total_cost_float(t, hours, price, power, basis, rates)) * (
            fx if "fx" in drawn else 1.0)
        per_mtok = total / case.total_tokens * 1e6
        worst = max(supported_quantum(per_mtok, p) for p in PERCENTILES)
        cost_q = max(D(repr(worst)), RATE_QUANTUM) if worst > 0 else RATE_QUANTUM
        cost = tuple(quantize(D(float(v)), cost_q) for v in np.percentile(per_mtok, PERCENTILES))
    return Uncertainty(assumptions.seed, assumptions.monte_carlo_samples, cost, days,  # type: ignore[arg-type]
                       cost_q, days_q, error, basis, batch_sigma, drawn)
