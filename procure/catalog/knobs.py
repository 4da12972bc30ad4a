"""The fitted step-time knobs of each accelerator, as catalog data (hardware_catalog/calibration.yaml).

They live in the catalog layer because they are facts about hardware that the catalog loads and the
model reads; the model imports them from here, never the other way round.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

# The step-time error of a part nobody fitted: no bias assumed, a wide spread. sigma_log 0.25 is
# about the spread of the v1 model on parts it was never fitted to (issue 10: B200/GB200/MI300X
# predicted 30-60% too fast, 26 of 29 unseen runs optimistic, mean signed error -19%).
UNCALIBRATED_SIGMA_LOG = 0.25
UNCALIBRATED_FAMILY = "uncalibrated"


# The scalar knobs of an accelerator, as calibration.yaml names them (gemm_curve apart).
SCALAR_KNOBS = ("gemm_top", "membound_factor", "launch_overhead_s", "scale_up_bw_eff", "scale_out_bw_eff",
                "overlap_efficiency", "step_time_cv", "attention_ratio", "fp8_gemm_scale", "ceiling_scale",
                "grouped_gemm_scale", "moe_overhead_s", "a2a_overlap_efficiency")

@dataclass(frozen=True)
class StepTimeError:
    """How far measured step times fall from the model's, in log space, over one evaluation family
    of the FIT split: measured = predicted x exp(bias + sigma_log x z)."""

    family: str
    bias: float                 # mean of log(measured / predicted)
    sigma_log: float            # spread of log(measured / predicted)
    n: int                      # runs it was estimated from (0: a prior, not a fit)
    # "<stack> <release year>" of the run when no fit run used that stack in that year: the spread
    # then includes the between-source spread (empty: the fit saw it, or the run states no stack)
    unseen_stack: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"family": self.family, "bias": self.bias, "sigma_log": self.sigma_log, "n": self.n}
        if self.unseen_stack:
            out["unseen_stack"] = self.unseen_stack
        return out

    def quantile(self, predicted_s: float, q: float) -> float:
        """Quantile ``q`` of the step time a measurement will show around ``predicted_s``."""
        from statistics import NormalDist

        return predicted_s * math.exp(self.bias + self.sigma_log * NormalDist().inv_cdf(q))


UNCALIBRATED_ERROR = StepTimeError(UNCALIBRATED_FAMILY, 0.0, UNCALIBRATED_SIGMA_LOG, 0)


@dataclass(frozen=True)
class Calibration:
    """What the fitted knobs say about one estimate: whether its accelerator's knobs were fitted,
    on which runs, and the step-time error of its evaluation family (the model writes it, the
    economics draws the band from it, the result document states it)."""

    accelerator: str
    fitted: bool
    fitted_on: tuple[str, ...]
    step_time_error: StepTimeError

    def to_dict(self) -> dict[str, Any]:
        """The JSON form ``procure estimate`` prints."""
        return {"accelerator": self.accelerator, "fitted": self.fitted, "fitted_on": list(self.fitted_on),
                "step_time_error": self.step_time_error.to_dict()}


@dataclass(frozen=True)
class AccelKnobs:
    """The few fitted numbers of one accelerator (see procure/model/README.md "Knobs").

    ``gemm_curve``: (ideal GEMM time in seconds at peak, fraction of ``gemm_top``) points,
    interpolated linearly in log10(time) and clamped at both ends. Using the ideal time F/peak
    as the abscissa makes the curve transferable between accelerators of different speed.
    The defaults are the ``default`` block of hardware_catalog/calibration.yaml when this was
    written; ``procure.catalog.calibration.load_knobs()`` is authoritative.
    """

    gemm_top: float | None = None           # best fraction of peak; None -> matmul_ceiling/peak
    gemm_curve: tuple[tuple[float, float], ...] = (
        (2.962e-06, 0.1), (2.962e-05, 0.2612), (2.962e-04, 0.8107), (2.962e-03, 0.8471),
        (2.962e-02, 0.8471), (8.887e-02, 1.0))
    membound_factor: float = 0.7071         # x the physical byte count of elementwise kernels
    launch_overhead_s: float = 8.246e-4     # host time per layer per forward-equivalent pass
    scale_up_bw_eff: float = 0.8224         # achieved / per-direction scale-up link bandwidth
    scale_out_bw_eff: float = 0.9           # achieved / per-direction NIC bandwidth
    overlap_efficiency: float = 1.0         # share of overlappable comm that runs under compute
    #                                         (its contention cost: collectives.OVERLAP_CONTENTION)
    step_time_cv: float = 0.01              # default per-GPU step-time coefficient of variation
    # The fused-attention kernel's forward+backward efficiency on long non-causal sequences at
    # head dim 128, as a fraction of the GEMM ceiling (model/attention.py shapes it by sequence,
    # head dim and causal masking; never above 1).
    attention_ratio: float = 0.675
    # Fraction of the measured fp8/bf16 ceiling ratio that training-shaped fp8 GEMMs keep (the fp8
    # casts are counted separately): the fp8 top = 16-bit top x (fp8 / bf16 MAMF fraction) x this.
    fp8_gemm_scale: float = 1.0019
    # Fraction of the measured 16-bit matmul ceiling (MAMF) the largest training GEMMs reach: it
    # carries over to a part of the same family with its own ceiling (MI355X from MI300X/MI325X).
    ceiling_scale: float = 1.0
    # MoE (issue 11): the share of the plain-GEMM efficiency of the same per-expert shape that a
    # grouped expert GEMM keeps (per-expert launches or tile tails, the grouped-GEMM setup);
    # host/synchronisation time of one MoE layer pass that nothing hides (the dropless
    # dispatcher's device-to-host token count, the permute and grouped-GEMM launches); and the
    # share of EP all-to-all that an overlap schedule hides (Megatron's EP A2A overlap, DualPipe).
    grouped_gemm_scale: float = 1.0
    moe_overhead_s: float = 0.0
    a2a_overlap_efficiency: float = 0.8
    fitted: bool = False                    # fitted on this part's own runs
    fitted_on: tuple[str, ...] = ()         # what it was fitted on (files or source families)
    sources: tuple[str, ...] = ()           # where the priors it was not fitted on come from


DEFAULT_GEMM_TOP = 0.80                     # when an accelerator has no measured matmul ceiling


@dataclass(frozen=True)
class Knobs:
    """Per-accelerator knobs plus a default for parts without calibration data, and the step-time
    error of each evaluation family (from the backtest residuals on the fit split)."""

    default: AccelKnobs = field(default_factory=AccelKnobs)
    by_accelerator: Mapping[str, AccelKnobs] = field(default_factory=dict)
    fitted_on: tuple[str, ...] = ()
    fitted_at: str = ""
    fit_mape: Mapping[str, float] = field(default_factory=dict)
    step_time_errors: Mapping[str, StepTimeError] = field(default_factory=dict)
    unseen_stack_sigma_log: float = 0.0                     # added in quadrature for a stack/year never fitted
    fitted_stacks: frozenset[str] = frozenset()             # "<stack> <release year>" of the fit runs

    def for_accelerator(self, accel_id: str, step_time_cv: float | None = None) -> AccelKnobs:
        """The accelerator's knobs; ``step_time_cv`` (a workload's assumption) overrides the fitted one."""
        found = self.by_accelerator.get(accel_id, self.default)
        return found if step_time_cv is None else replace(found, step_time_cv=step_time_cv)

    def fitted_for(self, accel_id: str) -> bool:
        """Whether the accelerator has knobs fitted on its own runs (else its error is the prior)."""
        return accel_id in self.by_accelerator and self.by_accelerator[accel_id].fitted

    def error_for(self, family: str, fitted: bool, stack: str = "") -> StepTimeError:
        """The family's fitted error; a part without its own fit gets the wide prior. ``stack``:
        "<stack> <release year>" of the run; one no fit run used widens the spread by the
        between-source spread (the fit's cross-validation: how far an unseen source lands)."""
        if not fitted:
            return UNCALIBRATED_ERROR
        error = self.step_time_errors.get(family, UNCALIBRATED_ERROR)
        if error is UNCALIBRATED_ERROR or not stack or not self.fitted_stacks or stack in self.fitted_stacks:
            return error
        return replace(error, sigma_log=math.hypot(error.sigma_log, self.unseen_stack_sigma_log), unseen_stack=stack)

    def describe(self) -> dict[str, Any]:
        """JSON-ready summary for a report's methodology section."""
        def block(k: AccelKnobs) -> dict[str, Any]:
            out: dict[str, Any] = {name: getattr(k, name) for name in SCALAR_KNOBS}
            out["gemm_curve"] = [list(p) for p in k.gemm_curve]
            return out

        return {"fitted_on": list(self.fitted_on), "fitted_at": self.fitted_at,
                "fit_mape": dict(self.fit_mape), "default": block(self.default),
                "accelerators": {i: block(k) for i, k in sorted(self.by_accelerator.items())}}
