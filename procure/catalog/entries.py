"""Pydantic schemas of the catalog and price-book YAML files (see hardware_catalog/README.md)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Literal, Optional, Union

from pydantic import Field, ValidationInfo, field_validator

from procure.sources.fields import Finite, Money, Strict

SourceList = Union[str, list[str]]


class MoESpec(Strict):
    experts: int = Field(gt=1, le=4096)
    top_k: int = Field(ge=1, le=64)
    expert_ffn_hidden: int = Field(gt=0)
    shared_experts: int = Field(0, ge=0)
    shared_expert_ffn_hidden: Optional[int] = Field(None, gt=0)
    dense_layers: int = Field(0, ge=0)
    layer_freq: int = Field(1, ge=1, le=64)
    capacity_factor: Optional[Finite] = Field(None, ge=1.0, le=8.0)
    groups: Optional[int] = Field(None, ge=1, le=4096)
    group_topk: Optional[int] = Field(None, ge=1, le=4096)

    @field_validator("top_k")
    @classmethod
    def _top_k_le_experts(cls, value: int, info: ValidationInfo) -> int:
        experts = info.data.get("experts")
        if experts is not None and value > experts:
            raise ValueError(f"top_k {value} exceeds the {experts} experts")
        return value


class MLASpec(Strict):
    q_lora_rank: Optional[int] = Field(None, gt=0)
    kv_lora_rank: int = Field(gt=0)
    qk_nope_head_dim: int = Field(gt=0)
    qk_rope_head_dim: int = Field(gt=0)
    v_head_dim: int = Field(gt=0)


class AttentionWindowSpec(Strict):
    size: int = Field(gt=0, le=100_000_000)
    global_every: Optional[int] = Field(None, ge=1, le=1000)
    kind: Literal["sliding", "chunked"] = "sliding"


class ArchitectureSpec(Strict):
    """An inline model architecture (instead of a preset id)."""

    name: str = "custom model"
    layers: int = Field(gt=0, le=10_000)
    hidden: int = Field(gt=0, le=1_000_000)
    heads: int = Field(gt=0, le=10_000)
    kv_heads: Optional[int] = Field(None, gt=0)
    head_dim: Optional[int] = Field(None, gt=0, le=4096)
    ffn_hidden: Optional[int] = Field(None, gt=0)
    vocab: int = Field(gt=0, le=10_000_000)
    gated_mlp: bool = False
    tied_embeddings: bool = False
    moe: Optional[MoESpec] = None
    mla: Optional[MLASpec] = None
    attention_window: Optional[AttentionWindowSpec] = None
    mtp_layers: int = Field(0, ge=0, le=16)


class SourcedEntry(Strict):
    source: SourceList
    as_of: Union[str, date, int]
    verified: bool = True
    notes: str = ""
    unverified_fields: list[str] = Field(default_factory=list)

    @field_validator("source")
    @classmethod
    def _non_empty(cls, value: SourceList) -> SourceList:
        items = [value] if isinstance(value, str) else value
        if not items or not all(str(s).strip() for s in items):
            raise ValueError("every catalog entry needs a non-empty source")
        return value


class ScaleUpEntry(Strict):
    tech: str
    bw_gbs_per_direction: Finite = Field(ge=0)
    domain_size: int = Field(ge=1)


class AcceleratorEntry(SourcedEntry):
    id: str
    vendor: str
    name: str
    architecture: str = ""
    release_year: int
    peak_tflops: dict[Literal["fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4"], Finite]
    hbm_gb: Finite = Field(gt=0)
    hbm_bw_tbs: Finite = Field(gt=0)
    scale_up: ScaleUpEntry
    tdp_w: Optional[Finite] = Field(None, gt=0)
    matmul_ceiling_tflops: dict[str, Finite] = Field(default_factory=dict)
    default_network: Optional[str] = None


class NetworkEntry(SourcedEntry):
    id: str
    name: str
    kind: str
    scale_out_gbps_per_gpu: Finite = Field(gt=0)
    latency_us: Finite = Field(gt=0)
    rail_optimised: bool = True


class ModelEntry(SourcedEntry):
    id: str
    name: str
    layers: int = Field(gt=0)
    hidden: int = Field(gt=0)
    heads: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    head_dim: Optional[int] = Field(None, gt=0, le=4096)
    ffn_hidden: int = Field(gt=0)
    vocab: int = Field(gt=0)
    gated_mlp: bool
    tied_embeddings: bool = False
    max_seq_len: Optional[int] = None
    moe: Optional[MoESpec] = None
    mla: Optional[MLASpec] = None
    attention_window: Optional[AttentionWindowSpec] = None
    mtp_layers: int = Field(0, ge=0, le=16)


class SystemEntry(SourcedEntry):
    """A system (node or rack) an accelerator ships in: its wall power per GPU for the facility lines."""

    id: str
    name: str
    accelerators: list[str] = Field(min_length=1)
    gpus_per_node: int = Field(gt=0, le=1024)
    node_power_kw: Finite = Field(gt=0, le=2000)
    fabric_w_per_gpu: Finite = Field(0, ge=0, le=2000)


class AddersEntry(Strict):
    storage_per_gpu_hour: Money = Decimal(0)
    network_per_gpu_hour: Money = Decimal(0)
    support_fraction: Money = Decimal(0)


class FacilityEntry(Strict):
    power_usd_per_kwh: Money
    pue: Money
    colo_per_kw_month: Money


class PriceLineEntry(SourcedEntry):
    accelerator: str
    term: str
    price_per_gpu_hour: Optional[Money] = None
    min_commit_months: int = Field(0, ge=0, le=120)
    sku: str = ""
    region: str = ""
    capex_per_gpu: Optional[Money] = None
    network_capex_per_gpu: Optional[Money] = None
    life_years: Optional[Money] = None
    residual_fraction: Optional[Money] = None
    support_per_gpu_year: Optional[Money] = None
    capex_per_node: Optional[Money] = None
    lead_time_days: Optional[Finite] = Field(None, ge=0, le=3650)


class PriceBookEntry(SourcedEntry):
    id: str
    provider: str
    kind: Literal["rental", "purchase"]
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    effective: date
    adders: AddersEntry = AddersEntry()
    facility: Optional[FacilityEntry] = None
    facility_source: SourceList = ""
    lines: list[PriceLineEntry] = Field(min_length=1)


class FxTableEntry(Strict):
    as_of: date
    rates: dict[str, Money]
    source: SourceList
    verified: bool = True
    notes: str = ""


class FxEntry(Strict):
    base: str = "USD"
    source: SourceList = ""
    notes: str = ""
    tables: list[FxTableEntry] = Field(min_length=1)
