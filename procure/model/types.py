"""Public value types of the step-time model: the workload, a (partial) plan, the knobs, the estimate."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from procure.catalog.knobs import DEFAULT_GEMM_TOP, AccelKnobs, Calibration, Knobs, StepTimeError
from procure.catalog.software import SoftwareStack

__all__ = ["AccelKnobs", "CP_COMM", "DEFAULT_GEMM_TOP", "DISPATCHERS", "Estimate", "INFO_TERMS",
           "Knobs", "LAYOUT_KEYS", "PIPELINE_SCHEDULES", "PLAN_KEYS", "PlanSpec", "RECOMPUTE", "RECOMPUTE_MODULES",
           "SUM_TERMS", "SoftwareStack", "StepTimeError", "Workload"]

PLAN_KEYS = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero_stage", "recompute",
             "sequence_parallel", "tp_comm_overlap", "overlap_grad_reduce", "activation_offload")
# Expert- and context-parallel choices: a complete plan that leaves them unset takes their
# defaults (etp 1, no all-to-all overlap, the stack's best dispatcher, the p2p ring); the search
# explores them.
LAYOUT_KEYS = ("etp", "a2a_overlap", "moe_dispatcher", "cp_comm", "uneven_stages")
PIPELINE_SCHEDULES = ("1f1b", "dualpipe")
RECOMPUTE = ("none", "selective", "full")
# MoE token dispatchers: Megatron's all-to-all (one copy per routed expert), DeepEP (one copy per
# destination node over the scale-out network, forwarded over NVLink inside it) and HybridEP
# (NVLink-domain aware, the same deduplication; NVL72 racks).
DISPATCHERS = ("alltoall", "deepep", "hybridep")
# Context-parallel communication: the p2p ring of K/V chunks (Megatron/TE default, overlapped
# with the attention of the current chunk), all-to-all over heads (DeepSpeed-Ulysses, TE a2a),
# all-gather of K/V (Llama 3).
CP_COMM = ("p2p", "a2a", "allgather")
# What "selective" recomputation re-runs, as Megatron-Core --recompute-modules names it.
RECOMPUTE_MODULES = ("core_attn", "mlp", "moe", "mla_up_proj", "moe_act", "layernorm",
                     "shared_experts")


@dataclass(frozen=True)
class Workload:
    """What is trained per step. ``global_batch`` is in sequences."""

    seq_len: int
    global_batch: int
    precision: str = "bf16"                 # bf16 | fp16 | fp8 (fp8: the linear layers' GEMMs)
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
    # Under fp8 the LM head (output layer) stays bf16 in Megatron-Core/NeMo (a plain
    # ColumnParallelLinear) and torchtitan (kept nn.Linear, #469); a recipe may say otherwise.
    fp8_lm_head: bool = False
    # Parameter-efficient fine-tuning (LoRA): the base weights are frozen, so their weight
    # gradients, gradient reduction and optimizer state do not exist (adapters are negligible).
    frozen_base: bool = False
    # Weights kept only in fp8 (Transformer Engine fp8 parameters / fp8_model_init; the fp32
    # master copy stays in the optimizer). None: only a frozen (LoRA) base under fp8, which must
    # be: a 70B base in 16 bits (140 GB) does not fit the 8-GPU MLPerf LoRA plans at tp 1.
    fp8_params: bool | None = None
    # MoE routing: the hot EP rank's load over the mean under dropless routing (1.0: a
    # force-balanced router, as in vendor benchmarks; None: problem.DEFAULT_MOE_IMBALANCE).
    moe_imbalance: float | None = None
    # A benchmark router that sends token i to the aligned block of top_k consecutive experts
    # starting at i x top_k (NeMo AutoModel's FakeBalancedGate without noise): balanced, and a token
    # reaches only the one or two EP ranks and scale-up domains holding its block.
    moe_block_routing: bool = False
    # Pipeline schedules run per step: Megatron runs one over all of a step's micro-batches;
    # NeMo AutoModel runs one per gradient-accumulation step (each fills and drains the pipeline).
    pipeline_flushes: int = 1
    # MoE dispatch in fp8 (DeepSeek-V3; DeepEP/HybridEP under fp8 recipes). None: when the stack
    # has the feature and the run trains in fp8.
    fp8_dispatch: bool | None = None


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
    # Stored activations moved to host memory during the forward and back for the backward
    # (NeMo cpu_offloading, Megatron-Core fine-grained activation offloading).
    activation_offload: bool | None = None
    # Not searched; stated by a fixed plan. Hybrid sharding: ZeRO-3/FSDP shards over groups of
    # this many ranks and all-reduces the shards across the replicas (None: all of dp x cp).
    fsdp_shard_group: int | None = None
    # Full recomputation of only this many layers per stage (Megatron --recompute-num-layers
    # with the block method); the rest keep their activations. None: every layer.
    recompute_layers: int | None = None
    # Expert tensor parallelism, separate from attention TP (Megatron-Core MoE parallel folding:
    # the expert grid etp x ep x edp refolds tp x dp x cp).
    etp: int | None = None
    # EP all-to-all hidden under another micro-batch's compute (Megatron
    # --overlap-moe-expert-parallel-comm, DeepSeek DualPipe).
    a2a_overlap: bool | None = None
    moe_dispatcher: str | None = None       # one of DISPATCHERS
    cp_comm: str | None = None              # one of CP_COMM
    # Selective recomputation by module (RECOMPUTE_MODULES); None: the stack's policy.
    recompute_modules: tuple[str, ...] | None = None
    # A custom pipeline layout: the last stage (output layer, MTP modules) holds fewer layers so
    # that no stage is slower than the rest (Megatron --pipeline-model-parallel-layout).
    uneven_stages: bool | None = None
    # The pipeline schedule (PIPELINE_SCHEDULES): None is Megatron's (interleaved) 1F1B;
    # "dualpipe" is DeepSeek-V3's bidirectional schedule (its report's Table 2 bubble). Stated by
    # the corpus's DeepSeek runs only: no catalog stack runs it, so the search never proposes it.
    pipeline_schedule: str | None = None

    @classmethod
    def from_dict(cls, plan: Mapping[str, Any]) -> "PlanSpec":
        extra = {k: plan.get(k) for k in ("fsdp_shard_group", "recompute_layers", "pipeline_schedule", *LAYOUT_KEYS)}
        modules = plan.get("recompute_modules")
        return cls(**{k: plan.get(k) for k in PLAN_KEYS}, **extra,
                   recompute_modules=tuple(modules) if modules else None)

    def is_complete(self) -> bool:
        """Every dimension stated (activation offload unstated means none)."""
        return all(getattr(self, k) is not None for k in PLAN_KEYS if k != "activation_offload")


@dataclass(frozen=True)
class Estimate:
    """One plan's predicted step time, explained.

    ``terms`` are seconds per step. These sum EXACTLY to ``step_time_s`` (see SUM_TERMS):
    compute_s, overhead_s, tp_comm_s, pp_comm_s, dp_comm_exposed_s, ep_comm_s, cp_comm_s,
    optimizer_s, bubble_s, io_s, straggler_s. Every *_comm_s term is the EXPOSED time of that
    dimension. Informational, not summed: comm_overlappable_s (all comm that may run under
    compute: bucketed DP, ZeRO-3 gathers, CP ring, TP with comm overlap, EP all-to-all with
    overlap), comm_exposed_s (the part of it that did not hide) and ep_comm_total_s (every MoE
    dispatch and combine all-to-all of the step, hidden or not; ep_comm_s is its exposed part).

    ``calibration`` says whether the accelerator's knobs were fitted on its own runs, on what,
    and the step-time error of the evaluation family this estimate belongs to (the fit split's
    backtest residuals): ``procure.model.step_time_band`` turns it into P10-P90.
    """

    feasible: bool
    reason: str | None
    plan: dict[str, Any]
    step_time_s: float
    terms: dict[str, float]
    percentiles_s: dict[str, float]
    memory_gib: dict[str, float]
    model_flops_per_step: float
    hardware_flops_per_step: float
    mfu: float
    hfu: float
    search: dict[str, Any]
    runners_up: list[dict[str, Any]]
    tokens_per_step: int = 0
    tokens_per_s: float = 0.0
    gpus: int = 0
    calibration: Calibration | None = None      # None: not evaluated against the fitted knobs
    software: SoftwareStack | None = None       # None: no feature restriction
    # GPUs of the bid the plan leaves idle (tp x pp x dp x cp < gpus): the search may leave some
    # when no plan uses them all or when that is faster (every GPU is paid for either way).
    idle_gpus: int = 0
    # share of HBM the memory verdict keeps free when no plan fits (the search's headroom, or the
    # reserve a stated plan must leave); 0 when a plan fits
    memory_headroom_fraction: float = 0.0

    def to_dict(self) -> dict[str, Any]:
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
            "calibration": self.calibration.to_dict() if self.calibration is not None else {},
            "software": self.software.to_dict() if self.software is not None else None,
            "idle_gpus": self.idle_gpus,
        }


SUM_TERMS = ("compute_s", "overhead_s", "tp_comm_s", "pp_comm_s", "dp_comm_exposed_s",
             "ep_comm_s", "cp_comm_s", "optimizer_s", "bubble_s", "io_s", "straggler_s")
INFO_TERMS = ("comm_overlappable_s", "comm_exposed_s", "ep_comm_total_s")
