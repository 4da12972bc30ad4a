"""Which step time drives a bid's economics: the measured mean when its logs gave one, else the
model's prediction. The choice, and what is kept of the other figure, is made here only."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from procure.catalog.knobs import Calibration
from procure.economics.inputs import MemoryShortfall, Performance, StepTimeError
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
    memory_shortfall: MemoryShortfall | None = None


def with_error(perf: Performance, error: StepTimeError, gemm_ceiling_mfu: float | None) -> Performance:
    """The Performance with the model's error and the accelerator's GEMM ceiling attached."""
    return replace(perf, error=error, gemm_ceiling_mfu=gemm_ceiling_mfu)


def performance(modeled: Modeled, *, tokens_per_step: int, gpus: int, peak_flops_per_gpu: float,
                measured_mean_s: float | None = None, measured_p99_s: float | None = None,
                measured_gpus: int | None = None, measured_global_batch: int | None = None,
                measured_seq_len: int | None = None, seq_len: int | None = None) -> Performance:
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
        memory_shortfall=None if feasible else modeled.memory_shortfall,
        basis="measured" if use_measured else "modeled",
        measured_mean_s=measured_mean_s if use_measured else None,
        measured_p99_s=measured_p99_s if use_measured else None,
        measured_gpus=measured_gpus if use_measured else None,
        measured_global_batch=measured_global_batch if use_measured else None,
        measured_seq_len=measured_seq_len if use_measured else None, seq_len=seq_len)


def step_time_error(calibration: Calibration | None, fitted_knobs: bool) -> StepTimeError:
    """The model's step-time error for one bid, from the model's calibration record
    (``Estimate.calibration``: fitted or not, and its family's backtest residuals) when the model
    gives one. Fallback while it does not: calibrated when the accelerator has fitted knobs
    (``fitted_knobs``), with the ``step_time_sigma_calibrated`` / ``_uncalibrated`` assumptions
    as the spread and no bias."""
    if calibration is None:
        source = "fitted knobs" if fitted_knobs else "no fitted knobs"
        return StepTimeError(calibrated=fitted_knobs, source=f"fallback: {source}")
    residuals = calibration.step_time_error
    n = residuals.n
    return StepTimeError(calibrated=calibration.fitted, sigma_log=residuals.sigma_log, bias=residuals.bias,
                         family=residuals.family, source="model backtests" + (f" (n={n})" if n else "")
                         + (f"; {residuals.unseen_stack} unseen by the fit" if residuals.unseen_stack else ""))
