"""The ``procure.published-runs/v1`` schema: published training runs with measured step times,
as frozen typed records. Every reader of runs (the backtest, the recipe comparison, the refit)
reads these attributes; ``procure.backtest.runs`` reads and validates the files.

The schema covers ../shared/data/published_runs/, benchmarks/holdout_runs.yaml and the
validation corpus (hardware_catalog/published_runs/*.yaml), whose runs add: url, source_family, split (fit |
holdout), family (the evaluation family), software {stack, version, date}, tuned_recipe,
model.head_dim / moe / mla / attention_window, parallelism.etp / fsdp / tp_comm_overlap and
measured.{how, tokens_per_s_per_gpu, model_tflops_per_gpu, peak_memory_gib}.

Apart from the reader so that a quote, which reads the corpus's tuned recipes back from the catalog
cache, builds these records without importing the YAML reader.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Literal, Optional, Union

from pydantic import Field, field_validator

from procure.catalog.software import STACKS
from procure.sources.fields import Finite, Strict

SCHEMA = "procure.published-runs/v1"
FAMILIES = ("dense-bf16-hopper", "fp8-hopper", "blackwell", "amd", "a100", "fsdp-zero3", "moe",
            "long-context")
RUN_ID = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,199}$"


def _text(value: Any) -> Any:
    """A version or date YAML read as a number or a date stays the text it was written as."""
    if isinstance(value, bool):
        return value
    if hasattr(value, "text"):
        return value.text
    if isinstance(value, (int, float, date)):
        return value.isoformat() if isinstance(value, date) else str(value)
    return value


class RunMoE(Strict):
    experts: int = Field(gt=1, le=4096)
    top_k: int = Field(ge=1, le=64)
    expert_ffn_hidden: int = Field(gt=0)
    shared_experts: int = Field(0, ge=0)
    dense_layers: int = Field(0, ge=0)
    moe_layer_freq: int = Field(1, ge=1)
    capacity_factor: Optional[Finite] = Field(None, ge=1.0, le=8.0)    # null = dropless


class RunMLA(Strict):
    q_lora_rank: Optional[int] = Field(None, gt=0)
    kv_lora_rank: int = Field(gt=0)
    qk_nope_head_dim: int = Field(gt=0)
    qk_rope_head_dim: int = Field(gt=0)
    v_head_dim: int = Field(gt=0)


class RunWindow(Strict):
    size: int = Field(gt=0)
    global_every: Optional[int] = Field(None, ge=1)


class RunModel(Strict):
    layers: int = Field(gt=0, le=10_000)
    hidden: int = Field(gt=0, le=1_000_000)
    heads: int = Field(gt=0, le=10_000)
    kv_heads: Optional[int] = Field(None, gt=0)
    head_dim: Optional[int] = Field(None, gt=0, le=4096)
    ffn_hidden: int = Field(gt=0)
    vocab: int = Field(gt=0, le=10_000_000)
    seq_len: int = Field(gt=0, le=100_000_000)
    gated_mlp: bool = False
    tied_embeddings: bool = False
    moe: Optional[RunMoE] = None
    mla: Optional[RunMLA] = None
    attention_window: Optional[RunWindow] = None
    mtp_layers: int = Field(0, ge=0, le=64)          # multi-token-prediction layers (DeepSeek-V3)


class RunHardware(Strict):
    accelerator: str = Field(min_length=1)
    gpus: int = Field(gt=0, le=10_000_000)
    gpus_per_node: Optional[int] = Field(None, gt=0, le=1024)
    scale_out_gbps_per_gpu: Finite = Field(gt=0, le=100_000)


class RunParallelism(Strict):
    tp: int = Field(ge=1, le=1024)
    pp: int = Field(ge=1, le=4096)
    dp: int = Field(ge=1, le=10_000_000)
    cp: int = Field(1, ge=1, le=1024)
    ep: int = Field(1, ge=1, le=4096)
    etp: Optional[int] = Field(None, ge=1, le=1024)
    vpp: int = Field(1, ge=1, le=128)
    micro_batch: int = Field(ge=1, le=65536)
    global_batch: int = Field(ge=1, le=100_000_000)
    zero_stage: Literal[0, 1, 2, 3] = 0
    recompute: Literal["none", "selective", "full"] = "none"
    sequence_parallel: bool = False
    tp_comm_overlap: bool = False
    fsdp: bool = False
    fsdp_shard_group: Optional[int] = Field(None, ge=1)     # hybrid sharding: the FSDP group < dp
    recompute_layers: Optional[int] = Field(None, ge=0)     # layers under full recompute (rest none)
    activation_offload: bool = False
    # pipeline schedules per step (NeMo AutoModel: one per gradient-accumulation step, "GA")
    pipeline_flushes: int = Field(1, ge=1, le=65536)
    # recorded by the MoE/long-context corpus, not (yet) read by the model
    a2a_overlap: Optional[bool] = None
    moe_dispatcher: Optional[str] = None
    moe_shared_expert_overlap: Optional[bool] = None
    cp_comm: Optional[str] = None
    cuda_graphs: Optional[Union[bool, str]] = None
    pp_layout: Optional[str] = None
    pp_schedule: Optional[str] = None
    recompute_modules: Optional[list[str]] = None


class RunSoftware(Strict):
    stack: Literal[STACKS]   # type: ignore[valid-type]
    version: Optional[str] = None
    date: Optional[str] = None
    # bytes per logit the run's cross entropy holds (logits and their gradient), where its recipe
    # differs from the stack's: 4.0 for bf16 logits (NeMo AutoModel's fp32_upcast: false)
    logit_bytes: Optional[Finite] = Field(None, gt=0.0, le=16.0)

    @field_validator("version", "date", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        return _text(value)


class RunMeasured(Strict):
    step_time_s: Finite = Field(gt=0, le=1e6)
    step_time_derived: bool = False
    how: str = ""
    tokens_per_s_per_gpu: Optional[Finite] = Field(None, gt=0)
    model_tflops_per_gpu: Optional[Finite] = Field(None, gt=0)
    mfu_published: Optional[Finite] = Field(None, gt=0, le=1.5)   # the publisher's convention
    peak_memory_gib: Optional[Finite] = Field(None, gt=0, le=10_000)
    # The same run with the learned router (dropless, not force-balanced), where the table gives
    # both: what benchmarks/refit.py fits the default MoE load imbalance on.
    dropless_model_tflops_per_gpu: Optional[Finite] = Field(None, gt=0)


class RunFinetune(Strict):
    """Parameter-efficient fine-tuning: the base weights are frozen (no weight gradients, no
    gradient reduction, no optimizer state for them)."""

    method: Literal["lora"]
    rank: Optional[int] = Field(None, ge=1)
    alpha: Optional[Finite] = None
    targets: str = ""
    base_weights: Literal["frozen"] = "frozen"


class PublishedRun(Strict):
    id: str = Field(pattern=RUN_ID)
    source: str = Field(min_length=1)
    url: Optional[str] = None
    source_family: Optional[str] = None
    split: Optional[Literal["fit", "holdout"]] = None
    family: Optional[Literal[FAMILIES]] = None   # type: ignore[valid-type]
    software: Optional[RunSoftware] = None
    tier: Literal["A", "B"]
    tuned_recipe: bool = False
    model: RunModel
    hardware: RunHardware
    parallelism: RunParallelism
    precision: Literal["bf16", "fp16", "fp8"]
    measured: RunMeasured
    finetune: Optional[RunFinetune] = None
    assumed: list[str] = Field(default_factory=list)
    notes: str = ""
    # A benchmark router in place of the model's learned one: "blocks" sends token i to the aligned
    # block of top_k consecutive experts at i x top_k (NeMo AutoModel's FakeBalancedGate, noise 0).
    router: Optional[Literal["blocks"]] = None
    # the software era where a run states it (older files); see backtest.software_era
    attention: Optional[Literal["flash", "unfused"]] = None
    overlap_dp: Optional[bool] = None
    group: Optional[str] = None


class PublishedRuns(Strict):
    schema_: Literal["procure.published-runs/v1"] = Field(alias="schema")
    runs: list[PublishedRun] = Field(default_factory=list)
