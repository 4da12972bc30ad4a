"""The step-time model: FLOPs, memory fit, collectives, composition, plan search.

Pure (no I/O, no clock). See README.md in this folder for the terms and the knobs.
"""

from procure.model.estimate import estimate, scaling_curve
from procure.model.flops import active_param_count, model_flops_per_token, param_count
from procure.model.types import (SUM_TERMS, AccelKnobs, Estimate, Knobs, PlanSpec, Workload)

__all__ = [
    "AccelKnobs", "Estimate", "Knobs", "PlanSpec", "SUM_TERMS", "Workload", "active_param_count",
    "estimate", "model_flops_per_token", "param_count", "scaling_curve",
]
