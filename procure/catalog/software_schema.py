"""The pydantic schema of ``hardware_catalog/software/*.yaml`` (one training stack's releases).

Apart from ``procure.catalog.software`` so that a command reading the stacks from the catalog
cache never defines these models."""

from __future__ import annotations

from datetime import date
from typing import Any, Literal, Optional, Union

from pydantic import Field, field_validator

from procure.catalog.software_names import ATTENTION_KERNELS, FEATURES, STACKS
from procure.sources.fields import Strict


class ReleaseEntry(Strict):
    version: str
    released: date
    features: list[Literal[FEATURES]]   # type: ignore[valid-type]
    attention_kernel: Literal[ATTENTION_KERNELS]   # type: ignore[valid-type]
    host_overhead_factor: float = Field(1.0, gt=0.0, le=4.0)
    zero3_prefetch_efficiency: float = Field(1.0, ge=0.0, le=1.0)
    fp32_grads: bool = True
    fp8_params: bool = False
    selective_policy: Literal["attention_core", "dots_except_mlp_in", "qkv_proj"] = "attention_core"
    logit_bytes: float = Field(8.0, gt=0.0, le=16.0)
    fp32_params: bool = False
    optimizer_bytes: float = Field(12.0, ge=4.0, le=16.0)
    fp8_activation_cache: bool = False
    source: Union[str, list[str]]
    verified: bool = True
    notes: str = ""

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        return getattr(value, "text", value) if not isinstance(value, str) else value


class StackEntry(Strict):
    stack: Literal[STACKS]   # type: ignore[valid-type]
    name: str
    runs_on: Optional[str] = None     # the engine it drives (nemo -> megatron-core)
    notes: str = ""
    releases: list[ReleaseEntry] = Field(min_length=1)
