"""Pydantic schemas of the catalog and price-book YAML files (see hardware_catalog/README.md)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Literal, Optional, Union

from pydantic import Field, ValidationInfo, field_validator, model_validator

from procure.catalog.arch_entries import (ArchitectureSpec, AttentionWindowSpec, MLASpec,  # noqa: F401
                                           MoESpec)
from procure.sources.bounds import Fraction, LifeYears, PositiveFinite, Price, Pue
from procure.sources.fields import Finite, Money, Strict

SourceList = Union[str, list[str]]


class SourcedEntry(Strict):
    source: SourceList = Field(description="Where the numbers come from: one text or a list (URLs, papers, fact sheets). Must not be empty.")
    as_of: Union[str, date, int] = Field(description="When the source was read or the figures observed (free text or a date).")
    verified: bool = Field(True, description="`true` when the core numbers were seen in the cited source.")
    notes: str = Field("", description="Caveats, conflicts between sources, derivations.")
    unverified_fields: list[str] = Field(default_factory=list, description="Fields whose values were not confirmed in the source.")

    @field_validator("source")
    @classmethod
    def _non_empty(cls, value: SourceList) -> SourceList:
        items = [value] if isinstance(value, str) else value
        if not items or not all(str(s).strip() for s in items):
            raise ValueError("every catalog entry needs a non-empty source")
        return value


class ScaleUpEntry(Strict):
    tech: str = Field(description="Interconnect name.")
    bw_gbs_per_direction: PositiveFinite = Field(description="Bandwidth per accelerator per direction inside the domain.")
    domain_size: int = Field(ge=1, description="Accelerators per scale-up domain as usually sold.")


class AcceleratorEntry(SourcedEntry):
    id: str = Field(description="Id, equal to the file name: `<model>-<form>-<memory>` in lower case.")
    vendor: str = Field(description="Maker (NVIDIA, AMD, Google, ...).")
    name: str = Field(description="Display name.")
    architecture: str = Field("", description="Micro-architecture (Hopper, CDNA 3, ...).")
    release_year: int = Field(description="Year of release.")
    peak_tflops: dict[Literal["fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4"], PositiveFinite] = Field(description="DENSE peak TFLOP/s (no 2:4 sparsity) per precision; omit a precision the part lacks.")
    hbm_gb: Finite = Field(gt=0, description="Usable device memory (GB = 1e9 bytes).")
    hbm_bw_tbs: Finite = Field(gt=0, description="Memory bandwidth (TB/s = 1e12 bytes/s).")
    scale_up: ScaleUpEntry = Field(description="The scale-up domain (NVLink, xGMI, ICI, NeuronLink).")
    tdp_w: Optional[Finite] = Field(None, gt=0, description="Board power; unset where the vendor publishes none.")
    matmul_ceiling_tflops: dict[str, PositiveFinite] = Field(default_factory=dict, description="Measured maximum achievable matmul TFLOP/s per precision (`{}` when unknown).")
    default_network: Optional[str] = Field(None, description="A network id used when a bid names none.")


class NetworkEntry(SourcedEntry):
    id: str = Field(description="Id, equal to the file name.")
    name: str = Field(description="Display name.")
    kind: str = Field(description="infiniband, roce, efa, tcpx, ethernet or dcn.")
    scale_out_gbps_per_gpu: Finite = Field(gt=0, description="Inter-node bandwidth per accelerator per direction (node NIC total / accelerators per node).")
    latency_us: Finite = Field(gt=0, description="Per-step latency (alpha) of the alpha-beta collective model.")
    rail_optimised: bool = Field(True, description="GPU i of every node is on rail (leaf) i.")


class ModelEntry(SourcedEntry):
    id: str = Field(description="Id, equal to the file name.")
    name: str = Field(description="Display name.")
    layers: int = Field(gt=0, description="Transformer layers.")
    hidden: int = Field(gt=0, description="Hidden width.")
    heads: int = Field(gt=0, description="Attention heads.")
    kv_heads: int = Field(gt=0, description="Key/value heads.")
    head_dim: Optional[int] = Field(None, gt=0, le=4096, description="Attention head width where it is not hidden / heads.")
    ffn_hidden: int = Field(gt=0, description="Dense MLP width (for MoE: the dense layers' width).")
    vocab: int = Field(gt=0, description="Vocabulary size.")
    gated_mlp: bool = Field(description="SwiGLU/GeGLU MLP.")
    tied_embeddings: bool = Field(False, description="Input and output embeddings share weights.")
    max_seq_len: Optional[int] = Field(None, description="Longest sequence the model was trained for (informational).")
    moe: Optional[MoESpec] = Field(None, description="Mixture-of-experts layers (fields as in cluster.yaml `workload.architecture.moe`).")
    mla: Optional[MLASpec] = Field(None, description="Multi-head latent attention (fields as in cluster.yaml `workload.architecture.mla`).")
    attention_window: Optional[AttentionWindowSpec] = Field(None, description="Local attention (fields as in cluster.yaml `workload.architecture.attention_window`).")
    mtp_layers: int = Field(0, ge=0, le=16, description="Multi-token-prediction modules.")


class SystemEntry(SourcedEntry):
    """A system (node or rack) an accelerator ships in: its wall power per GPU for the facility lines."""

    id: str = Field(description="System id, equal to the file name.")
    name: str = Field(description="Display name.")
    accelerators: list[str] = Field(min_length=1, description="The accelerator ids this system ships (the first system listing an accelerator is its system).")
    gpus_per_node: int = Field(gt=0, le=1024, description="Accelerators per node (or per rack for a rack-scale system); the node capex line counts nodes with it.")
    node_power_kw: Finite = Field(gt=0, le=2000, description="Maximum power of one node, CPUs, memory, NICs, scale-up switches and fans included.")
    fabric_w_per_gpu: Finite = Field(0, ge=0, le=2000, description="Each GPU's share of the scale-out fabric's power (switches and optics).")


class AddersEntry(Strict):
    storage_per_gpu_hour: Money = Field(Decimal(0), description="Storage charge per GPU-hour.")
    network_per_gpu_hour: Money = Field(Decimal(0), description="Network/egress charge per GPU-hour.")
    support_fraction: Fraction = Field(Decimal(0), description="Support as a fraction of the GPU-hours bill.")


class FacilityEntry(Strict):
    power_per_kwh: Optional[Price] = Field(None, description="Electricity price per kWh, in the book's `currency`.")
    power_usd_per_kwh: Optional[Price] = Field(None, description="The older name of `power_per_kwh`, read only in a book whose `currency` is USD (the name says USD).")
    pue: Pue = Field(description="Power usage effectiveness.")
    colo_per_kw_month: Money = Field(description="Colocation price per kW of IT load per month.")

    @model_validator(mode="after")
    def _one_power_price(self) -> "FacilityEntry":
        if (self.power_per_kwh is None) == (self.power_usd_per_kwh is None):
            raise ValueError("state the power price once, as `power_per_kwh` (in the book's currency)")
        return self

    @property
    def price_per_kwh(self) -> Decimal:
        """The power price per kWh in the book's currency, whichever name stated it."""
        price = self.power_per_kwh if self.power_per_kwh is not None else self.power_usd_per_kwh
        if price is None:               # the validator refuses such an entry
            raise ValueError("a facility entry without a power price")
        return price


class PriceLineEntry(SourcedEntry):
    accelerator: str = Field(description="An accelerator id of the catalog.")
    term: str = Field(description="The term a bid names (`on-demand`, `reserved-1y`, `reserved-3y`, `spot`, `capacity-block`, `purchase`, ...).")
    price_per_gpu_hour: Optional[Price] = Field(None, description="Rental price per GPU-hour (instance price / accelerators per instance).")
    min_commit_months: int = Field(0, ge=0, le=120, description="Minimum billed months (reserved-1y: 12, reserved-3y: 36).")
    sku: str = Field("", description="Instance type or product the price is for.")
    region: str = Field("", description="Region of the price.")
    capex_per_gpu: Optional[Money] = Field(None, description="Purchase: the accelerator's share of its server or rack.")
    network_capex_per_gpu: Optional[Money] = Field(None, description="Purchase: fabric cost per accelerator.")
    life_years: Optional[LifeYears] = Field(None, description="Purchase: depreciation life.")
    residual_fraction: Optional[Fraction] = Field(None, description="Purchase: resale value at the end of life, as a fraction of capex.")
    support_per_gpu_year: Optional[Money] = Field(None, description="Purchase: support contract per accelerator per year.")
    capex_per_node: Optional[Money] = Field(None, description="Purchase: capex per node on top of the GPUs' share.")
    lead_time_days: Optional[Finite] = Field(None, ge=0, le=3650, description="Days from order to a usable cluster (a bid's own lead time wins).")


class PriceBookEntry(SourcedEntry):
    id: str = Field(description="Id, equal to the file name: provider and quarter (`aws-2026q3`).")
    provider: str = Field(description="Who sells at these prices.")
    kind: Literal["rental", "purchase"] = Field(description="`rental` or `purchase`; a bid's `pricing.kind` must match.")
    currency: str = Field(pattern=r"^[A-Z]{3}$", description="Currency of every amount in the book (ISO 4217).")
    effective: date = Field(description="Date the prices were observed; a cluster.yaml with an earlier `as_of` cannot use the book.")
    adders: AddersEntry = Field(AddersEntry(), description="Charges added per GPU-hour to rental lines.")
    facility: Optional[FacilityEntry] = Field(None, description="Facility figures of a purchase book.")
    facility_source: SourceList = Field("", description="Sources of the facility figures.")
    lines: list[PriceLineEntry] = Field(min_length=1, description="One line per (accelerator, term).")

    @field_validator("facility")
    @classmethod
    def _power_price_in_the_books_currency(cls, facility: Optional[FacilityEntry],
                                           info: ValidationInfo) -> Optional[FacilityEntry]:
        currency = info.data.get("currency")
        if facility is not None and facility.power_usd_per_kwh is not None and currency not in (None, "USD"):
            raise ValueError(f"the book is in {currency} but `power_usd_per_kwh` says USD: state the price in "
                             f"{currency} as `power_per_kwh`")
        return facility


class FxTableEntry(Strict):
    as_of: date = Field(description="Date of the rates.")
    rates: dict[str, Price] = Field(description="Units of each currency per 1 unit of `base` (quoted strings).")
    source: SourceList = Field(description="Where these rates come from.")
    verified: bool = Field(True, description="`true` when every rate was seen in the source for this date.")
    notes: str = Field("", description="Caveats.")


class FxEntry(Strict):
    base: str = Field("USD", description="The currency every rate is quoted against.")
    source: SourceList = Field("", description="Sources of the tables.")
    notes: str = Field("", description="How the rates were computed.")
    tables: list[FxTableEntry] = Field(min_length=1, description="Dated tables; a quote uses the newest one dated on or before its `as_of`.")
