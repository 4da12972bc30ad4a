"""The ``procure.published-runs/v1`` schema (published training runs with measured step times) and
the vTrain ground-truth CSV reader, both reporting every problem as a ``file:line:col``
diagnostic (InputError), never a traceback.

The schema covers ../shared/data/published_runs/, benchmarks/holdout_runs.yaml and the
validation corpus (hardware_catalog/published_runs/*.yaml), whose runs add: url, source_family, split (fit |
holdout), family (the evaluation family), software {stack, version, date}, tuned_recipe,
model.head_dim / moe / mla / attention_window, parallelism.etp / fsdp / tp_comm_overlap and
measured.{how, tokens_per_s_per_gpu, model_tflops_per_gpu, peak_memory_gib}.
"""

from __future__ import annotations

import csv
import io
import math
from datetime import date
from pathlib import Path
from typing import Any, Literal, Optional, Union

from pydantic import Field, field_validator

from procure.catalog.software import STACKS
from procure.errors import Diagnostic, InputError
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


def read_runs(path: Path | str) -> list[dict[str, Any]]:
    """The runs of a published-runs file as plain dicts (validated; defaults filled in).
    InputError with every problem's position otherwise (duplicate ids included)."""
    from procure.sources.validate import validate_document
    from procure.sources.yamlpos import read_yaml

    doc = read_yaml(path)
    model = validate_document(doc, PublishedRuns)
    problems: list[Diagnostic] = []
    seen: dict[str, int] = {}
    for i, run in enumerate(model.runs):
        if run.id in seen:
            problems.append(doc.diagnostic(("runs", i, "id"), "duplicate-id",
                                           f"run id {run.id!r} appears twice (first as run {seen[run.id] + 1})"))
        seen.setdefault(run.id, i)
    if problems:
        raise InputError(problems)
    return [run.model_dump(exclude_none=True) for run in model.runs]


# ---------------------------------------------------------------------------- vTrain CSV

VTRAIN_SINGLE_COLUMNS = 11
VTRAIN_INTEGER_COLUMNS = 10          # every column but the last (iteration time) is a count


def parse_vtrain_rows(text: str, multi: bool, source: str = "vtrain.csv") -> list[tuple[int, list[float]]]:
    """(line, values) of every data row; InputError listing every bad row (file:line:col)."""
    lines = text.lstrip("\ufeff")
    reader = csv.reader(io.StringIO(lines))
    header = next(reader, None)
    width = VTRAIN_SINGLE_COLUMNS + (1 if multi else 0)
    if header is None:
        raise InputError(Diagnostic(source, 1, 1, "empty", "the CSV has no header row"))
    if len(header) != width:
        raise InputError(Diagnostic(source, 1, 1, "bad-header",
                                    f"expected {width} columns (vTrain ground truth), found {len(header)}"))
    rows, problems = [], []
    for cells in reader:
        line = reader.line_num
        if not cells or all(not c.strip() for c in cells):
            continue
        if len(cells) != width:
            problems.append(Diagnostic(source, line, 1, "bad-row",
                                       f"expected {width} cells, found {len(cells)}"))
            continue
        values, ok = [], True
        for j, cell in enumerate(cells):
            col = sum(len(c) + 1 for c in cells[:j]) + 1
            value = _cell(cell, j, width, multi)
            if isinstance(value, str):
                problems.append(Diagnostic(source, line, col, "bad-value", value))
                ok = False
            else:
                values.append(value)
        if ok:
            rows.append((line, values))
    if problems:
        raise InputError(problems)
    return rows


def _cell(cell: str, j: int, width: int, multi: bool) -> Union[float, str]:
    """The number in a cell, or the message saying why it is not one."""
    try:
        value = float(cell)
    except ValueError:
        return f"column {j + 1} must be a number, got {cell.strip()!r}"
    if not math.isfinite(value) or value <= 0:
        return f"column {j + 1} must be a positive number, got {cell.strip()!r}"
    counts = range(1 if multi else 0, width - 1)
    if j in counts and value != int(value):
        return f"column {j + 1} must be a whole number, got {cell.strip()!r}"
    return value
