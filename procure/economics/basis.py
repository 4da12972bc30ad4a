"""Which step time drives a bid's economics: the measured mean when its logs gave one, else the
model's prediction. The choice, and what is kept of the other figure, is made here only."""

from __future__ import annotations

from dataclasses import dataclass, field

from procure.economics.inputs import Performance
from procure.precision import round_sig


@dataclass(frozen=True)
class Modeled:
    """What the step-time model said about one bid (plain numbers: economics does not import it)."""

    feasible: bool
    step_time_s: float | None
    p99_step_time_s: float | None
    model_flops_per_step: float
    hardware_flops_per_step: float
    terms: dict[str, float] = field(default_factory=dict)
    reason: str | None = None


def performance(modeled: Modeled, *, tokens_per_step: int, gpus: int, peak_flops_per_gpu: float,
                measured_mean_s: float | None = None, measured_p99_s: float | None = None) -> Performance:
    """The Performance the economics evaluates, from the model and an optional measurement."""
    use_measured = measured_mean_s is not None and measured_mean_s > 0
    modeled_step = modeled.step_time_s if modeled.feasible else None
    # The economics starts from the step time at the document's precision, so days, hours and
    # cents do not move with the last digits of the CPU's SIMD arithmetic.
    step = round_sig((measured_mean_s if use_measured else modeled_step) or 0.0)
    feasible = modeled.feasible or use_measured
    return Performance(
        step_time_s=step, step_time_terms=dict(modeled.terms) if modeled.feasible else {},
        p99_step_time_s=measured_p99_s if use_measured else modeled.p99_step_time_s,
        tokens_per_step=tokens_per_step, gpus=gpus, model_flops_per_step=modeled.model_flops_per_step,
        hardware_flops_per_step=modeled.hardware_flops_per_step, peak_flops_per_gpu=peak_flops_per_gpu,
        modeled_step_time_s=modeled_step, feasible=feasible,
        infeasible_reason=None if feasible else modeled.reason,
        basis="measured" if use_measured else "modeled",
        measured_mean_s=measured_mean_s if use_measured else None,
        measured_p99_s=measured_p99_s if use_measured else None)
