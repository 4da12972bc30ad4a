"""Statistical efficiency of the global batch: how many tokens a run needs to reach the loss
the workload's train tokens reach at its reference batch, when it runs at another batch.

The law (``hardware_catalog/batch_scaling/<family>.yaml``, McCandlish et al. 2018 and Kaplan
et al. 2020): tokens at batch B are ``E(B) = E_min (1 + B / B_crit)``, and the critical batch
grows as the loss falls, ``B_crit(L) = B_star / L^(1 / alpha_B)``, along the loss after D tokens
``L(D) = ((N_c / N)^(alpha_N / alpha_D) + D_c / D)^alpha_D``. A run at a constant batch needs

    E(B) = ∫_0^E_min (1 + B / B_crit(e)) de = E_min (1 + B / B_eff),

``B_eff`` the harmonic mean of ``B_crit`` over the run's tokens. The workload states its train
tokens D_ref at its reference batch B_ref, so ``D_ref = E_min (1 + B_ref / B_eff)`` fixes E_min,
and at batch B the run needs D_ref × token_factor tokens:

    token_factor(B) = (1 + B / B_eff) / (1 + B_ref / B_eff),   token_penalty = token_factor − 1.

At B = B_ref the factor is exactly 1. The Monte-Carlo band draws B_star (lognormal, the law's
``b_star_sigma_log``); B_eff scales with it, E_min is held at its central value.

Pure: no I/O; plain floats (and numpy arrays in ``token_factor``, for the band).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from procure.catalog.types import BatchScalingLaw
from procure.precision import round_sig

PENALTY_FLAG = 0.05          # a batch that costs more than 5 % extra tokens is flagged
QUADRATURE_INTERVALS = 512   # Simpson intervals of each of the two smooth integrands
FIXED_POINT_STEPS = 60
MAX_MODEL_PARALLEL = 4096    # the largest tp × pp × cp × ep group whose data-parallel size is tried
MAX_CANDIDATES = 24          # batches the plan search is run at, at most, per bid
TIE_TOLERANCE = 0.01         # times to target within 1 % of the shortest are a tie: the smallest batch wins


# --- the law -------------------------------------------------------------------------------

def loss_nats(law: BatchScalingLaw, params: float, tokens: float) -> float:
    """Kaplan et al. 2020 eq. 1.5: the loss after ``tokens`` tokens, ``params`` as the law counts them."""
    base: float = (law.n_c / params) ** (law.alpha_n / law.alpha_d) + law.d_c_tokens / tokens
    return float(base ** law.alpha_d)


def critical_batch_at(law: BatchScalingLaw, params: float, tokens: float) -> float:
    """B_crit, tokens, after ``tokens`` tokens of training (eq. 1.4 at the loss of eq. 1.5)."""
    return float(law.b_star_tokens / loss_nats(law, params, tokens) ** (1.0 / law.alpha_b))


def _simpson(values: list[float]) -> float:
    """Simpson's rule on [0, 1] over an odd number of equally spaced values."""
    n = len(values) - 1
    weights = [1.0 if i in (0, n) else (4.0 if i % 2 else 2.0) for i in range(n + 1)]
    return math.fsum(w * v for w, v in zip(weights, values)) / (3.0 * n)


def tokens_integral(a: float, c: float, k: float) -> float:
    """∫_0^1 (a + c / u)^k du for a ≥ 0, c > 0, 0 < k < 1, by two smooth substitutions.

    Below u0 = c / a (where c / u dominates) u = u0 s^m with m = 1 / (1 − k) turns the integrand
    into m u0^(1−k) (a u0 s^m + c)^k, bounded and smooth; above u0 (where a dominates, the
    integrand varies on the scale of u0) u = u0^(1−t) spaces the points evenly in log u."""
    n = QUADRATURE_INTERVALS
    m = 1.0 / (1.0 - k)
    u0 = min(c / a, 1.0) if a > 0 else 1.0
    low = float(m * u0 ** (1.0 - k) * _simpson([(a * u0 * (i / n) ** m + c) ** k for i in range(n + 1)]))
    if u0 >= 1.0:
        return low
    log_span = -math.log(u0)
    points = [math.exp((1.0 - i / n) * math.log(u0)) for i in range(n + 1)]
    high = float(log_span * _simpson([(a + c / u) ** k * u for u in points]))
    return low + high


def harmonic_critical_batch(law: BatchScalingLaw, params: float, e_min: float) -> float:
    """B_eff = e_min / ∫_0^e_min de / B_crit(e): the critical batch a constant-batch run sees.

    With u = e / e_min and k = alpha_D / alpha_B, 1 / B_crit = (a + c / u)^k / B_star with
    a = (N_c / N)^(alpha_N / alpha_D) and c = D_c / e_min (k < 1 is checked when the catalog is
    read, so the integral is finite)."""
    k = law.alpha_d / law.alpha_b
    a = (law.n_c / params) ** (law.alpha_n / law.alpha_d)
    return float(law.b_star_tokens / tokens_integral(a, law.d_c_tokens / e_min, k))


@dataclass(frozen=True)
class CriticalBatch:
    """The workload's critical batch under its family's law (tokens throughout)."""

    family: str
    params: float                 # N as the law counts it (non-embedding, or active non-embedding)
    train_tokens: float           # D_ref: the workload's train tokens, stated at its reference batch
    reference_batch_tokens: float  # B_ref
    effective_tokens: float       # B_eff: harmonic mean of B_crit over the run
    final_tokens: float           # B_crit at the end of the run
    min_tokens: float             # E_min: tokens at a batch far below critical
    final_loss_nats: float        # the law's loss at the end (its own data's scale)
    sigma_log: float              # spread of ln(B_star) the band draws

    @property
    def reference_factor(self) -> float:
        """D_ref / E_min: what the reference batch already costs over a very small one."""
        return 1.0 + self.reference_batch_tokens / self.effective_tokens

    def factor(self, batch_tokens: float) -> float:
        return float(token_factor(batch_tokens, self.reference_batch_tokens, self.effective_tokens))


def critical_batch(law: BatchScalingLaw, params: float, train_tokens: float,
                   reference_batch_tokens: float) -> CriticalBatch:
    """Solve D_ref = E_min (1 + B_ref / B_eff(E_min)) for E_min by fixed point (B_eff grows slowly
    with E_min, so the iteration contracts), then report B_eff and the end-of-run B_crit."""
    if params <= 0 or train_tokens <= 0 or reference_batch_tokens <= 0:
        raise ValueError("parameters, train tokens and the reference batch must be positive")
    e_min = train_tokens
    for _ in range(FIXED_POINT_STEPS):
        b_eff = harmonic_critical_batch(law, params, e_min)
        new = train_tokens / (1.0 + reference_batch_tokens / b_eff)
        done = abs(new - e_min) <= 1e-13 * e_min
        e_min = new
        if done:
            break
    b_eff = harmonic_critical_batch(law, params, e_min)
    return CriticalBatch(law.family, params, train_tokens, reference_batch_tokens, b_eff,
                         critical_batch_at(law, params, e_min), e_min, loss_nats(law, params, e_min),
                         law.b_star_sigma_log)


def law_params(law: BatchScalingLaw, params: int, active_params: int, embedding_params: int) -> float:
    """N as the law counts it: non-embedding parameters, or (MoE) the active non-embedding ones."""
    counted = active_params if law.parameter_count == "active_non_embedding" else params
    return float(max(counted - embedding_params, 1))


def token_factor(batch_tokens: Any, reference_batch_tokens: float, critical_tokens: Any) -> Any:
    """(1 + B / B_eff) / (1 + B_ref / B_eff): tokens at batch B over tokens at the reference batch.
    Floats or numpy arrays (the band passes an array of critical batches)."""
    return (1.0 + batch_tokens / critical_tokens) / (1.0 + reference_batch_tokens / critical_tokens)


# --- the batch a bid runs at ----------------------------------------------------------------

@dataclass(frozen=True)
class BatchOption:
    """One global batch the plan search was run at (from the model, as plain numbers)."""

    global_batch_seqs: int
    tokens_per_step: int
    step_time_s: float | None            # None: no plan fits or divides this batch
    terms: dict[str, float] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None

    @property
    def feasible(self) -> bool:
        return self.step_time_s is not None and self.step_time_s > 0


@dataclass(frozen=True)
class BatchChoice:
    """The batch a bid is evaluated at and what it costs in tokens (economics input and output)."""

    global_batch_seqs: int
    tokens_per_step: int
    origin: str                          # workload (the stated batch) | range (chosen by the search)
    critical: CriticalBatch | None       # None: no law for the model's family
    token_factor: float = 1.0
    options: tuple[BatchOption, ...] = ()   # every batch tried (range only)
    note: str = ""

    @property
    def token_penalty(self) -> float:
        return self.token_factor - 1.0


def fixed_batch(global_batch_seqs: int, tokens_per_step: int, critical: CriticalBatch | None) -> BatchChoice:
    """The workload's own batch: the factor is exactly 1 (no penalty by construction)."""
    return BatchChoice(global_batch_seqs, tokens_per_step, "workload", critical, 1.0)


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _powers_of_two_in(lo: int, hi: int) -> list[int]:
    out, p = [], 1
    while p <= hi:
        if p >= lo:
            out.append(p)
        p *= 2
    return out


def candidate_batches(lo_seqs: int, hi_seqs: int, gpus: int, reference_seqs: int) -> tuple[int, ...]:
    """The global batches (sequences) the plan search is run at, within [lo, hi]:

    * the reference batch, when the range holds it;
    * every power of two;
    * for every data-parallel size the cluster admits, d = gpus / m with m a divisor of gpus of at
      most MAX_MODEL_PARALLEL (the tp × pp × cp × ep group), the batches d × 2^j (a batch the
      search can split evenly over d replicas with power-of-two micro-batching).

    More than MAX_CANDIDATES: the reference and an even spread in log of the others are kept."""
    if lo_seqs < 1 or hi_seqs < lo_seqs or gpus < 1:
        raise ValueError(f"bad batch range [{lo_seqs}, {hi_seqs}] or GPU count {gpus}")
    found = set(_powers_of_two_in(lo_seqs, hi_seqs))
    for d in _divisors(gpus):
        if gpus // d > MAX_MODEL_PARALLEL:
            continue
        found.update(d * p for p in _powers_of_two_in(math.ceil(lo_seqs / d), hi_seqs // d))
    found = {b for b in found if lo_seqs <= b <= hi_seqs}
    keep_reference = lo_seqs <= reference_seqs <= hi_seqs
    others = sorted(found - {reference_seqs})
    budget = MAX_CANDIDATES - (1 if keep_reference else 0)
    if len(others) > budget:
        step = (len(others) - 1) / (budget - 1)
        others = sorted({others[round(i * step)] for i in range(budget)})
    return tuple(sorted(others + ([reference_seqs] if keep_reference else [])))


def days_to_target(option: BatchOption, factor: float, train_tokens: float, goodput_fraction: float) -> float:
    """Wall-clock days to the target at this batch: train tokens × factor / throughput / goodput
    (the step time at the document's precision, as the economics takes it)."""
    if not option.feasible or option.step_time_s is None:
        return math.inf
    step_s = round_sig(option.step_time_s)
    return train_tokens * factor * step_s / option.tokens_per_step / goodput_fraction / 86400.0


def choose_batch(options: Sequence[BatchOption], critical: CriticalBatch) -> int | None:
    """The option with the shortest time to target after the token penalty; None when no option has
    a plan. Times within TIE_TOLERANCE of the shortest are a tie, won by the smallest batch: the
    same time for fewer tokens (the model's error is far larger than such a difference). Goodput
    does not depend on the batch, so it is left out."""
    times = {i: critical.factor(o.tokens_per_step) * o.step_time_s / o.tokens_per_step
             for i, o in enumerate(options) if o.feasible and o.step_time_s is not None}
    if not times:
        return None
    shortest = min(times.values())
    tied = [i for i, t in times.items() if t <= shortest * (1.0 + TIE_TOLERANCE)]
    return min(tied, key=lambda i: (options[i].tokens_per_step, times[i]))


def chosen_batch(options: Sequence[BatchOption], critical: CriticalBatch, index: int) -> BatchChoice:
    option = options[index]
    # at the document's precision, as the step time: the workbook rebuilds time and cost from it exactly
    return BatchChoice(option.global_batch_seqs, option.tokens_per_step, "range", critical,
                       round_sig(critical.factor(option.tokens_per_step)), tuple(options))
