"""How wrong the model is, by evaluation family: the step-time error an estimate carries.

The refit (benchmarks/refit.py) writes, per evaluation family, the mean of log(measured /
predicted) over the FIT split and its spread on a source family the fit never saw (leave one source
family out, refit, predict it) into calibration.yaml. An estimate takes the error of
the family it belongs to when its accelerator's knobs were fitted on its own runs, and a wide
prior (knobs.UNCALIBRATED_ERROR) otherwise. ``step_time_band`` turns it into P10-P90 of the step
time the measured run will show; the economics Monte Carlo draws from the same log-normal.
"""

from __future__ import annotations

import math
from typing import Any

from procure.catalog.knobs import UNCALIBRATED_ERROR, AccelKnobs, Calibration, Knobs, StepTimeError
from procure.catalog.software import SoftwareStack, stack_year
from procure.catalog.types import Accelerator, ModelArch
from procure.model.types import Estimate, PlanSpec, Workload

FAMILIES = ("dense-bf16-hopper", "fp8-hopper", "blackwell", "amd", "a100", "fsdp-zero3", "moe",
            "long-context")
LONG_CONTEXT_TOKENS = 32768          # sequences from here on are the long-context family
BAND = (0.10, 0.90)


def evaluation_family(arch: ModelArch, accel: Accelerator, workload: Workload,
                      plan: PlanSpec | dict[str, Any] | None) -> str:
    """The corpus's evaluation family of a run or a bid (hardware_catalog/published_runs/*.yaml `family`)."""
    zero = plan.get("zero_stage") if isinstance(plan, dict) else (plan.zero_stage if plan else None)
    gen = accel.architecture.strip().lower()
    if workload.seq_len >= LONG_CONTEXT_TOKENS:      # long-context MoE runs too (corpus rule)
        return "long-context"
    if arch.moe is not None:
        return "moe"
    if zero == 3:                       # FSDP/ZeRO-3 plans, whatever the hardware (corpus rule)
        return "fsdp-zero3"
    if accel.vendor.upper() == "AMD":
        return "amd"
    if gen.startswith("blackwell"):
        return "blackwell"
    if gen == "ampere":
        return "a100"
    if gen == "hopper":
        return "fp8-hopper" if workload.precision == "fp8" else "dense-bf16-hopper"
    return "other"


def calibration_info(knobs: Knobs, accel_knobs: AccelKnobs, accel: Accelerator,
                     family: str, software: SoftwareStack | None = None) -> Calibration:
    """Estimate.calibration: fitted or not, on what, and the family's step-time error (wider for a
    stack and release year no fit run used)."""
    fitted = knobs.fitted_for(accel.id) and accel_knobs.fitted
    return Calibration(accel.id, fitted, tuple(accel_knobs.fitted_on),
                       knobs.error_for(family, fitted, stack_year(software)))


def _error(est: Estimate) -> StepTimeError:
    return UNCALIBRATED_ERROR if est.calibration is None else est.calibration.step_time_error


def step_time_quantile(est: Estimate, q: float) -> float:
    """Quantile q of the step time a measurement will show, from the estimate's error model:
    step_time_s x exp(bias + sigma_log x Phi^-1(q))."""
    if not est.feasible or not math.isfinite(est.step_time_s):
        return math.nan
    return _error(est).quantile(est.step_time_s, q)


def step_time_band(est: Estimate, band: tuple[float, float] = BAND) -> tuple[float, float]:
    """(P10, P90) of the measured step time around the estimate (NaN when infeasible)."""
    return step_time_quantile(est, band[0]), step_time_quantile(est, band[1])
