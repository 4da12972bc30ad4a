"""The pydantic schema of ``hardware_catalog/calibration.yaml`` (``procure.calibration/v1``).

Apart from ``procure.catalog.calibration`` so that a command reading the knobs from the catalog
cache never defines these models."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import Field, field_validator

from procure.sources.fields import Finite, Strict


class ErrorBlock(Strict):
    bias: Finite = Field(ge=-2.0, le=2.0)
    sigma_log: Finite = Field(gt=0.0, le=3.0)
    n: int = Field(ge=0)
    source_families: Optional[int] = Field(None, ge=0, description=(
        "Source families the family's fit runs come from: with two or more, its spread is "
        "cross-validated by leaving one out at a time; with one, it is its own spread plus the "
        "spread between source families pooled over the others."))


class KnobBlock(Strict):
    """One accelerator's knobs; an absent knob takes the ``default`` block's value."""

    gemm_top: Optional[Finite] = Field(None, gt=0.0, le=1.0)
    gemm_curve: Optional[list[list[Finite]]] = Field(None, min_length=2)
    membound_factor: Optional[Finite] = Field(None, gt=0.0, le=20.0)
    launch_overhead_s: Optional[Finite] = Field(None, ge=0.0, le=0.1)
    scale_up_bw_eff: Optional[Finite] = Field(None, gt=0.0, le=1.0)
    scale_out_bw_eff: Optional[Finite] = Field(None, gt=0.0, le=1.0)
    overlap_efficiency: Optional[Finite] = Field(None, ge=0.0, le=1.0)
    step_time_cv: Optional[Finite] = Field(None, ge=0.0, le=1.0)
    attention_ratio: Optional[Finite] = Field(None, gt=0.0, le=1.0)
    fp8_gemm_scale: Optional[Finite] = Field(None, gt=0.0, le=1.5)
    ceiling_scale: Optional[Finite] = Field(None, gt=0.0, le=1.0)
    grouped_gemm_scale: Optional[Finite] = Field(None, gt=0.0, le=1.0)
    moe_overhead_s: Optional[Finite] = Field(None, ge=0.0, le=0.1)
    a2a_overlap_efficiency: Optional[Finite] = Field(None, ge=0.0, le=1.0)
    fitted: bool = False
    fitted_on: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
    notes: str = ""

    @field_validator("gemm_curve")
    @classmethod
    def _curve(cls, points: Optional[list[list[float]]]) -> Optional[list[list[float]]]:
        if points is None:
            return None
        if any(len(p) != 2 for p in points):
            raise ValueError("each gemm_curve point is [ideal seconds at peak, fraction of gemm_top]")
        for t, f in points:
            if not (t > 0.0 and 0.0 < f <= 1.0):
                raise ValueError("each gemm_curve point is [ideal seconds > 0, fraction in (0, 1]]")
        times, fracs = [t for t, _ in points], [f for _, f in points]
        if times != sorted(times) or len(set(times)) != len(times):
            raise ValueError("gemm_curve points must be in increasing order of time")
        if fracs != sorted(fracs):
            raise ValueError("gemm_curve fractions must not fall as GEMMs grow")
        return points


class ImbalanceBlock(Strict):
    """The hot EP rank's load over the mean under a learned dropless router, fitted on the fit
    split's runs published both force-balanced and dropless (procure.model.problem ships it as
    DEFAULT_MOE_IMBALANCE; a test keeps the two equal)."""

    value: Finite = Field(ge=1.0, le=4.0)
    fitted_on: list[str] = Field(default_factory=list)
    log_rms: Finite = Field(ge=0.0)             # of log(predicted / measured slowdown) over the pairs


class UnseenStackBlock(Strict):
    """The extra spread of a run on a stack and release year no fit run used."""

    sigma_log: Finite = Field(ge=0.0, le=3.0, description=(
        "RMS of the per-source mean log errors when a source family is left out of the fit (the "
        "families with two or more sources): how far a source the fit never saw lands on average."))
    fitted_stacks: list[str] = Field(default_factory=list, description=(
        "`<stack> <release year>` of every scored fit run that states its software."))


class CalibrationDocument(Strict):
    schema_: Literal["procure.calibration/v1"] = Field(alias="schema")
    fitted_on: list[str] = Field(default_factory=list)
    fitted_at: str = ""
    fit_mape: dict[str, Finite] = Field(default_factory=dict)
    notes: str = ""
    default: KnobBlock = KnobBlock()
    accelerators: dict[str, KnobBlock] = Field(default_factory=dict)
    step_time_errors: dict[str, ErrorBlock] = Field(default_factory=dict)
    unseen_stack: Optional[UnseenStackBlock] = None
    moe_imbalance: Optional[ImbalanceBlock] = None

    @field_validator("fitted_at", mode="before")
    @classmethod
    def _date_text(cls, value: Any) -> Any:
        return value.isoformat() if hasattr(value, "isoformat") else value
