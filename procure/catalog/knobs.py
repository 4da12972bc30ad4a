"""The fitted step-time knobs of each accelerator, as catalog data (hardware_catalog/calibration.yaml).

They live in the catalog layer because they are facts about hardware that the catalog loads and the
model reads; the model imports them from here, never the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping


@dataclass(frozen=True)
class AccelKnobs:
    """The few fitted numbers of one accelerator (see README.md "Knobs").

    ``gemm_curve``: (ideal GEMM time in seconds at peak, fraction of ``gemm_top``) points,
    interpolated linearly in log10(time) and clamped at both ends. Using the ideal time F/peak
    as the abscissa makes the curve transferable between accelerators of different speed.
    The defaults are the ``default`` block of hardware_catalog/calibration.yaml when this was
    written; ``procure.catalog.calibration.load_knobs()`` is authoritative.
    """

    gemm_top: float | None = None           # best fraction of peak; None -> matmul_ceiling/peak
    gemm_curve: tuple[tuple[float, float], ...] = (
        (1.928e-06, 0.1), (1.928e-05, 0.2566), (1.928e-04, 0.8538), (1.928e-03, 0.8784),
        (1.928e-02, 0.8784), (5.785e-02, 1.0))
    membound_factor: float = 1.5007         # x the physical byte count of elementwise kernels
    launch_overhead_s: float = 8.223e-4     # host time per layer per forward-equivalent pass
    scale_up_bw_eff: float = 0.7572         # achieved / per-direction scale-up link bandwidth
    scale_out_bw_eff: float = 0.9           # achieved / per-direction NIC bandwidth
    overlap_efficiency: float = 1.0         # share of overlappable comm that runs under compute
    #                                         (its contention cost: core.OVERLAP_CONTENTION)
    step_time_cv: float = 0.01              # default per-GPU step-time coefficient of variation


DEFAULT_GEMM_TOP = 0.80                     # when an accelerator has no measured matmul ceiling


@dataclass(frozen=True)
class Knobs:
    """Per-accelerator knobs plus a default for parts without calibration data."""

    default: AccelKnobs = field(default_factory=AccelKnobs)
    by_accelerator: Mapping[str, AccelKnobs] = field(default_factory=dict)
    fitted_on: tuple[str, ...] = ()
    fitted_at: str = ""
    fit_mape: Mapping[str, float] = field(default_factory=dict)

    def for_accelerator(self, accel_id: str) -> AccelKnobs:
        return self.by_accelerator.get(accel_id, self.default)

    def describe(self) -> dict:
        """JSON-ready summary for a report's methodology section."""
        def block(k: AccelKnobs) -> dict:
            out = {name: getattr(k, name) for name in (
                "gemm_top", "membound_factor", "launch_overhead_s", "scale_up_bw_eff",
                "scale_out_bw_eff", "overlap_efficiency", "step_time_cv")}
            out["gemm_curve"] = [list(p) for p in k.gemm_curve]
            return out

        return {"fitted_on": list(self.fitted_on), "fitted_at": self.fitted_at,
                "fit_mape": dict(self.fit_mape), "default": block(self.default),
                "accelerators": {i: block(k) for i, k in sorted(self.by_accelerator.items())}}
