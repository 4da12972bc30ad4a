"""Throughput and FLOP utilisation from one step time (floats: this is physics, not money)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from procure.economics.inputs import Performance

MFU_CONVENTION = (
    "model FLOPs per step (attention counted non-causal, as Megatron and PaLM count) / (step time × "
    "GPUs × dense peak at the workload precision); HFU counts hardware FLOPs, recomputation included"
)


@dataclass(frozen=True)
class Throughput:
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    mfu: float | None
    hfu: float | None


def flops_utilisation(flops_per_step: float, step_time_s: float, gpus: int,
                      peak_flops_per_gpu: float) -> float | None:
    """FLOPs done per step over what the GPUs could do at peak in that time."""
    capacity = step_time_s * gpus * peak_flops_per_gpu
    if capacity <= 0 or flops_per_step <= 0:
        return None
    return flops_per_step / capacity


def throughput(perf: Performance, step_time_s: float | None = None) -> Throughput:
    """Tokens per second of the cluster and per GPU, MFU and HFU at ``step_time_s``."""
    step_s = perf.step_time_s if step_time_s is None else step_time_s
    if step_s <= 0 or perf.tokens_per_step <= 0 or perf.gpus <= 0:
        raise ValueError(f"step time, tokens per step and GPUs must be positive, got "
                         f"{step_s!r}, {perf.tokens_per_step!r}, {perf.gpus!r}")
    tokens_per_s = perf.tokens_per_step / step_s
    return Throughput(
        tokens_per_s=tokens_per_s,
        tokens_per_s_per_gpu=tokens_per_s / perf.gpus,
        mfu=flops_utilisation(perf.model_flops_per_step, step_s, perf.gpus,
                              perf.peak_flops_per_gpu),
        hfu=flops_utilisation(perf.hardware_flops_per_step, step_s, perf.gpus,
                              perf.peak_flops_per_gpu),
    )


def physical_floor_s(perf: Performance) -> float | None:
    """The step time at 100 % of peak: no real run can be faster."""
    capacity = perf.gpus * perf.peak_flops_per_gpu
    if capacity <= 0 or perf.model_flops_per_step <= 0:
        return None
    return perf.model_flops_per_step / capacity


def compute_share(perf: Performance) -> float:
    """Fraction of the step that is compute, the part a model-efficiency change scales.

    Taken from the model's terms relative to the model's own step time, so it also applies to a
    measured step time. Without a compute term the whole step is treated as compute.
    """
    compute_s = perf.step_time_terms.get("compute_s")
    reference_s = perf.modeled_step_time_s or perf.step_time_s
    if compute_s is None or reference_s <= 0:
        return 1.0
    return min(max(compute_s / reference_s, 0.0), 1.0)


def step_time_at_efficiency(perf: Performance, efficiency_factor: Any) -> Any:
    """Step time when compute runs ``efficiency_factor`` times as fast (float or numpy array)."""
    share = compute_share(perf)
    return perf.step_time_s * ((1.0 - share) + share / efficiency_factor)
