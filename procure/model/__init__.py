"""The step-time model: FLOPs, memory fit, collectives, composition, plan search.

Pure (no I/O, no clock). See README.md in this folder for the terms and the knobs.
"""

from procure.model.error_model import (evaluation_family, step_time_band,
                                       step_time_quantile)
from procure.model.estimate import estimate
from procure.model.flops import (MFU_CONVENTION, active_param_count, model_flops_per_token,
                                 param_count)
from procure.model.scaling import scaling_curve
from procure.model.types import (SUM_TERMS, AccelKnobs, Estimate, Knobs, PlanSpec, SoftwareStack,
                                 Workload)

__all__ = [
    "AccelKnobs", "Estimate", "Knobs", "MFU_CONVENTION", "PlanSpec", "SUM_TERMS", "SoftwareStack",
    "Workload", "active_param_count", "estimate", "evaluation_family", "model_flops_per_token",
    "param_count", "scaling_curve", "step_time_band", "step_time_quantile",
]
