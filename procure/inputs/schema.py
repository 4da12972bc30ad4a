"""The ``procure/v1`` schema of ``cluster.yaml``: frozen pydantic models, unknown keys refused.

Field names are the contract of product.md. Units are in the names. Every optional assumption
has a documented default (see ``procure.economics.inputs.Assumptions``).
"""

from __future__ import annotations

import re
from typing import Literal, Optional, Union

from pydantic import Field, field_validator, model_validator

from procure.assumptions import BY_KEY as ASSUMPTION_DEFS
from procure.catalog.entries import ArchitectureSpec, MoESpec  # noqa: F401  (re-exported: the inline model schema)
from procure.sources.fields import CalendarDate, Finite, Money, Strict  # noqa: F401

SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class SoftwareSpec(Strict):
    """The training stack a bid runs (hardware_catalog/software/); default: the mainstream stack of
    the accelerator's vendor, its newest release on or before ``date`` (else the quote's as_of)."""

    stack: Optional[str] = None
    version: Optional[str] = None
    date: Optional[str] = Field(None, pattern=r"^\d{4}-\d{2}(-\d{2})?$")

    @field_validator("version", "date", mode="before")
    @classmethod
    def _as_text(cls, value):
        if hasattr(value, "isoformat"):
            return value.isoformat()
        return getattr(value, "text", value) if not isinstance(value, (str, bool)) else value

    @model_validator(mode="after")
    def _known(self):
        from procure.catalog.software import check_software

        check_software(self.stack, self.version)
        return self


class PlanSpecModel(Strict):
    tp: Optional[int] = Field(None, ge=1, le=1024)
    pp: Optional[int] = Field(None, ge=1, le=4096)
    dp: Optional[int] = Field(None, ge=1, le=10_000_000)
    cp: Optional[int] = Field(None, ge=1, le=1024)
    ep: Optional[int] = Field(None, ge=1, le=4096)
    vpp: Optional[int] = Field(None, ge=1, le=128)
    micro_batch: Optional[int] = Field(None, ge=1, le=65536)
    zero_stage: Optional[Literal[0, 1, 2, 3]] = None
    recompute: Optional[Literal["none", "selective", "full"]] = None
    sequence_parallel: Optional[bool] = None
    tp_comm_overlap: Optional[bool] = None
    etp: Optional[int] = Field(None, ge=1, le=1024)
    a2a_overlap: Optional[bool] = None
    moe_dispatcher: Optional[Literal["alltoall", "deepep", "hybridep"]] = None
    cp_comm: Optional[Literal["p2p", "a2a", "allgather"]] = None


class PhaseSpec(Strict):
    """A further training phase after the workload's main one (a long-context extension, for
    example): its own sequence length, batch and tokens; time to train and cost add up."""

    name: str = Field(min_length=1, max_length=100)
    seq_len: int = Field(gt=0, le=10_000_000)
    global_batch_tokens: Optional[int] = Field(None, gt=0)
    global_batch: Optional[int] = Field(None, gt=0, description="sequences per step")
    train_tokens: Optional[Finite] = Field(None, gt=0, le=1e18)
    steps: Optional[int] = Field(None, gt=0, le=1_000_000_000)
    plan: Optional[PlanSpecModel] = None

    @model_validator(mode="after")
    def _one_batch_one_length(self):
        if (self.global_batch_tokens is None) == (self.global_batch is None):
            raise ValueError("give exactly one of `global_batch_tokens` or `global_batch` (sequences)")
        if self.global_batch_tokens is not None and self.global_batch_tokens % self.seq_len:
            raise ValueError(f"global_batch_tokens {self.global_batch_tokens} is not a multiple of "
                             f"seq_len {self.seq_len}")
        if (self.train_tokens is None) == (self.steps is None):
            raise ValueError("give exactly one of `train_tokens` or `steps`")
        return self

    @property
    def global_batch_seqs(self) -> int:
        if self.global_batch is not None:
            return self.global_batch
        return (self.global_batch_tokens or 0) // self.seq_len

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch_seqs * self.seq_len

    @property
    def tokens(self) -> float:
        return float(self.train_tokens) if self.train_tokens is not None else float(self.steps or 0) * self.tokens_per_step


class Workload(Strict):
    model: Optional[str] = None
    architecture: Optional[ArchitectureSpec] = None
    seq_len: int = Field(gt=0, le=10_000_000)
    global_batch_tokens: Optional[int] = Field(None, gt=0)
    global_batch: Optional[int] = Field(None, gt=0, description="sequences per step")
    train_tokens: Finite = Field(gt=0, le=1e18)
    precision: Literal["bf16", "fp16", "fp8"] = "bf16"
    deadline_days: Optional[Finite] = Field(None, gt=0, le=36500)
    software: Optional[SoftwareSpec] = None
    name: str = Field("main", min_length=1, max_length=100)
    phases: list[PhaseSpec] = Field(default_factory=list, max_length=20)
    moe_imbalance: Optional[Finite] = Field(None, ge=1.0, le=4.0)
    fp8_dispatch: Optional[bool] = None

    @model_validator(mode="after")
    def _one_model_one_batch(self):
        if (self.model is None) == (self.architecture is None):
            raise ValueError("give exactly one of `model` (a preset id) or `architecture` (inline)")
        if (self.global_batch_tokens is None) == (self.global_batch is None):
            raise ValueError("give exactly one of `global_batch_tokens` or `global_batch` (sequences)")
        if self.global_batch_tokens is not None and self.global_batch_tokens % self.seq_len:
            raise ValueError(f"global_batch_tokens {self.global_batch_tokens} is not a multiple of "
                             f"seq_len {self.seq_len}")
        names = [self.name] + [p.name for p in self.phases]
        if len(set(names)) != len(names):
            raise ValueError(f"phase names must be unique (the main phase is {self.name!r})")
        return self

    @property
    def global_batch_seqs(self) -> int:
        if self.global_batch is not None:
            return self.global_batch
        return self.global_batch_tokens // self.seq_len

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch_seqs * self.seq_len


def _assumption(key: str):
    """The schema field of assumption ``key``: bounds and description from procure.assumptions."""
    spec = ASSUMPTION_DEFS[key]
    bounds = {k: v for k, v in (("ge", spec.ge), ("gt", spec.gt), ("le", spec.le)) if v is not None}
    return Field(None, description=f"{spec.description} Default: {spec.default_text or spec.default} "
                                   f"({spec.source}).", **bounds)


class AssumptionsSpec(Strict):
    """Overrides of the documented defaults in ``procure.assumptions`` (one field per settable key)."""

    power_usd_per_kwh: Optional[Money] = _assumption("power_usd_per_kwh")
    pue: Optional[Finite] = _assumption("pue")
    failures_per_gpu_hour: Optional[Finite] = _assumption("failures_per_gpu_hour")
    restart_min: Optional[Finite] = _assumption("restart_min")
    checkpoint_write_gbs: Optional[Finite] = _assumption("checkpoint_write_gbs")
    checkpoint_interval_min: Optional[Finite] = _assumption("checkpoint_interval_min")
    checkpoint_bytes_per_param: Optional[Finite] = _assumption("checkpoint_bytes_per_param")
    gpu_utilisation_power: Optional[Finite] = _assumption("gpu_utilisation_power")
    mfu_ceiling: Optional[Finite] = _assumption("mfu_ceiling")
    committed_tolerance: Optional[Finite] = _assumption("committed_tolerance")
    step_time_cv: Optional[Finite] = _assumption("step_time_cv")
    monte_carlo_samples: Optional[int] = _assumption("monte_carlo_samples")
    seed: Optional[int] = _assumption("seed")


class PricingSpec(Strict):
    kind: Literal["rental", "purchase"] = "rental"
    price_book: Optional[str] = None
    term: Optional[str] = None
    usd_per_gpu_hour: Optional[Money] = None
    price_per_gpu_hour: Optional[Money] = None
    currency: Optional[str] = Field(None, pattern=r"^[A-Z]{3}$")

    @model_validator(mode="after")
    def _book_or_inline(self):
        inline = self.usd_per_gpu_hour is not None or self.price_per_gpu_hour is not None
        if self.usd_per_gpu_hour is not None and self.price_per_gpu_hour is not None:
            raise ValueError("give `usd_per_gpu_hour` or `price_per_gpu_hour` (with `currency`), not both")
        if inline and self.price_book is not None:
            raise ValueError("give a `price_book` (with `term`) or an inline price, not both")
        if not inline and self.price_book is None:
            raise ValueError("give a `price_book` and `term`, or an inline `usd_per_gpu_hour`")
        if self.price_book is not None and self.term is None:
            raise ValueError("a `price_book` needs a `term` (a line of that book)")
        if self.price_per_gpu_hour is not None and self.currency is None:
            raise ValueError("`price_per_gpu_hour` needs a `currency`")
        return self


class CommittedSpec(Strict):
    step_time_s: Optional[Finite] = Field(None, gt=0, le=1e6)
    p99_step_time_s: Optional[Finite] = Field(None, gt=0, le=1e6)
    scaling_efficiency: Optional[Finite] = Field(None, gt=0, le=1.5)


class Bid(Strict):
    id: str = Field(pattern=SLUG.pattern)
    vendor: str = Field(min_length=1, max_length=200)
    accelerator: str
    gpus: int = Field(gt=0, le=10_000_000)
    network: Optional[str] = None
    pricing: PricingSpec
    committed: CommittedSpec = CommittedSpec()
    plan: Union[Literal["auto"], PlanSpecModel] = "auto"
    measured: list[str] = Field(default_factory=list, max_length=10_000)
    software: Optional[SoftwareSpec] = None

    @field_validator("vendor")
    @classmethod
    def _printable(cls, value: str) -> str:
        return "".join(ch for ch in value if ch.isprintable() or ch == " ")


class Cluster(Strict):
    schema_: Literal["procure/v1"] = Field(alias="schema")
    title: str = Field(min_length=1, max_length=300)
    as_of: CalendarDate
    currency: str = Field("USD", pattern=r"^[A-Z]{3}$")
    workload: Workload
    assumptions: AssumptionsSpec = AssumptionsSpec()
    bids: list[Bid] = Field(min_length=1, max_length=1000)

    @field_validator("bids")
    @classmethod
    def _unique_ids(cls, bids: list[Bid]) -> list[Bid]:
        seen: set[str] = set()
        for bid in bids:
            if bid.id in seen:
                raise ValueError(f"bid id {bid.id!r} appears twice; ids must be unique")
            seen.add(bid.id)
        return bids
