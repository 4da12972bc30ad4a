"""Public value types of the step-time model: the workload, a (partial) plan, the knobs, the estimate."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from procure.catalog.knobs import DEFAULT_GEMM_TOP, AccelKnobs, Knobs  # noqa: F401  (the model's knob types)

PLAN_KEYS = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero_stage", "recompute",
             "sequence_parallel", "tp_comm_overlap", "overlap_grad_reduce")
RECOMPUTE = ("none", "selective", "full")


@dataclass(frozen=True)
class Workload:
    """What is trained per step. ``global_batch`` is in sequences."""

    seq_len: int
    global_batch: int
    precision: str = "bf16"                 # bf16 | fp16 | fp8 (fp8: matmuls at the fp8 peak where present)
    checkpoint_interval_steps: int | None = None   # None -> no checkpoint IO term
    checkpoint_storage_gbs: float = 100.0          # aggregate write GB/s to storage
    checkpoint_async: bool = True                  # async -> only the GPU->host copy blocks
    data_stall_s: float = 0.0
    # The attention kernel: "flash" (fused, causal blocks skipped, no s^2 tensors in HBM) or
    # "unfused" (Megatron's scale-mask-softmax of 2020-2022: full s x s scores in HBM).
    attention: str = "flash"
    # Dropout after attention and MLP (1-byte masks kept for the backward). None: the recipes of
    # the unfused-attention era (GPT-2/3, Megatron 2020-22: 0.1) had it; modern pretraining
    # recipes (Llama, Mistral, DeepSeek, NeMo/MLPerf) run without.
    dropout: bool | None = None


@dataclass(frozen=True)
class PlanSpec:
    """A fixed plan from cluster.yaml; a None field means "search this dimension"."""

    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    cp: int | None = None
    ep: int | None = None
    vpp: int | None = None
    micro_batch: int | None = None
    zero_stage: int | None = None
    recompute: str | None = None            # none | selective | full
    sequence_parallel: bool | None = None
    tp_comm_overlap: bool | None = None
    # Bucketed DP gradient reduce overlapped with the backward (Megatron --overlap-grad-reduce,
    # torch DDP). False models "all-reduce after the backward" (old Megatron local DDP, vTrain).
    overlap_grad_reduce: bool | None = None

    @classmethod
    def from_dict(cls, plan: Mapping[str, Any]) -> "PlanSpec":
        return cls(**{k: plan.get(k) for k in PLAN_KEYS})

    def is_complete(self) -> bool:
        return all(getattr(self, k) is not None for k in PLAN_KEYS)


@dataclass
class Estimate:
    """One plan's predicted step time, explained.

    ``terms`` are seconds per step. These sum EXACTLY to ``step_time_s`` (see SUM_TERMS):
    compute_s, overhead_s, tp_comm_s, pp_comm_s, dp_comm_exposed_s, ep_comm_s, cp_comm_s,
    optimizer_s, bubble_s, io_s, straggler_s. Every *_comm_s term is the EXPOSED time of that
    dimension. Informational, not summed: comm_overlappable_s (all comm that may run under
    compute: bucketed DP, ZeRO-3 gathers, CP ring, TP with comm overlap) and comm_exposed_s (the
    part of it that did not hide = dp_comm_exposed_s + cp_comm_s + exposed overlapped TP).
    """

    feasible: bool
    reason: str | None
    plan: dict
    step_time_s: float
    terms: dict[str, float]
    percentiles_s: dict[str, float]
    memory_gib: dict[str, float]
    model_flops_per_step: float
    hardware_flops_per_step: float
    mfu: float
    hfu: float
    search: dict
    runners_up: list[dict]
    tokens_per_step: int = 0
    tokens_per_s: float = 0.0
    gpus: int = 0

    def to_dict(self) -> dict:
        """JSON-ready, keys as one bid of ``procure.estimate/v1`` (no step time: null)."""
        return {
            "feasible": self.feasible,
            "reason": self.reason,
            "plan": dict(self.plan),
            "step_time_s": self.step_time_s if math.isfinite(self.step_time_s) else None,
            "terms": dict(self.terms),
            "percentiles_s": dict(self.percentiles_s),
            "memory_gib": dict(self.memory_gib),
            "model_flops_per_step": self.model_flops_per_step,
            "hardware_flops_per_step": self.hardware_flops_per_step,
            "mfu": self.mfu,
            "hfu": self.hfu,
            "tokens_per_step": self.tokens_per_step,
            "tokens_per_s": self.tokens_per_s,
            "gpus": self.gpus,
            "search": dict(self.search),
            "runners_up": [dict(r) for r in self.runners_up],
        }


SUM_TERMS = ("compute_s", "overhead_s", "tp_comm_s", "pp_comm_s", "dp_comm_exposed_s",
             "ep_comm_s", "cp_comm_s", "optimizer_s", "bubble_s", "io_s", "straggler_s")
INFO_TERMS = ("comm_overlappable_s", "comm_exposed_s")
