"""The ``procure.sweep/v1`` schema of ``sweep.yaml``: frozen pydantic models, unknown keys refused.

A sweep reuses the pieces of ``cluster.yaml`` it shares with a quote, so the two can never drift:
a workload is a ``cluster.yaml`` workload with an ``id``; a price term is a bid's ``pricing``
block (a price book line or an inline price) with an optional ``id`` and the accelerators an
inline price applies to; ``assumptions`` is the quote's block.
"""

from __future__ import annotations

from typing import Literal, Optional, Union

from pydantic import Field, field_validator, model_validator

from procure.inputs.schema import SLUG, AssumptionsSpec, PricingSpec, Workload
from procure.sources.fields import CalendarDate, Finite, Money, Strict

SCHEMA = "procure.sweep/v1"
MAX_POINTS = 1_000_000          # a sweep this large is a typo, not a question
MAX_GPU_COUNTS = 10_000


class SweepWorkload(Workload):
    """A ``cluster.yaml`` workload with an id (several workloads: the same model at two sequence
    lengths, two model sizes...)."""

    id: str = Field(pattern=SLUG.pattern)


class GpuRange(Strict):
    """Every count from ``from`` to ``to`` in steps of ``step`` (``node``: the accelerator's
    scale-up domain, i.e. whole nodes or racks)."""

    from_: int = Field(alias="from", gt=0, le=10_000_000)
    to: int = Field(gt=0, le=10_000_000)
    step: Union[int, Literal["node"]] = "node"
    feasible_only: bool = Field(False, description="drop the counts where no plan fits in memory")

    @field_validator("step")
    @classmethod
    def _positive(cls, step: Union[int, str]) -> Union[int, str]:
        if isinstance(step, int) and step <= 0:
            raise ValueError("`step` must be a positive number of GPUs, or `node`")
        return step

    @model_validator(mode="after")
    def _ordered(self) -> "GpuRange":
        if self.to < self.from_:
            raise ValueError(f"`to` ({self.to}) is below `from` ({self.from_})")
        if isinstance(self.step, int) and (self.to - self.from_) // self.step + 1 > MAX_GPU_COUNTS:
            raise ValueError(f"the range holds more than {MAX_GPU_COUNTS:,} GPU counts")
        return self


GpuCounts = Union[list[int], GpuRange]


class AcceleratorChoice(Strict):
    """One candidate accelerator; ``networks`` and ``gpus`` override the sweep's for this part."""

    id: str
    networks: Optional[list[str]] = Field(None, min_length=1, max_length=16)
    gpus: Optional[GpuCounts] = None

    @field_validator("gpus")
    @classmethod
    def _counts(cls, gpus: Optional[GpuCounts]) -> Optional[GpuCounts]:
        return None if gpus is None else _check_counts(gpus)


class SweepTerm(PricingSpec):
    """A bid's ``pricing`` block. ``id`` names the term in the results (default: book/term); an
    inline price names the accelerators it applies to (the others are ``price-missing``)."""

    id: Optional[str] = Field(None, pattern=SLUG.pattern)
    accelerators: Optional[list[str]] = Field(None, min_length=1)

    @model_validator(mode="after")
    def _inline_needs_parts(self) -> "SweepTerm":
        if self.price_book is None and not self.accelerators:
            raise ValueError("an inline price names the `accelerators` it applies to")
        if self.price_book is None and self.id is None:
            raise ValueError("an inline price needs an `id` to name it in the results")
        return self

    @property
    def label(self) -> str:
        return self.id or f"{self.price_book}/{self.term}"


class Constraints(Strict):
    deadline_days: Optional[Finite] = Field(None, gt=0, le=36500,
                                            description="for workloads that set no deadline_days")
    budget: Optional[Money] = Field(None, description="largest cash out: the peak of cumulative cash out (capex, "
                                                      "prepayments and deposits at signing included), in the sweep currency")
    max_net_cost: Optional[Money] = Field(None, description="largest total cost on the ranking basis, in the sweep "
                                                            "currency (a separate limit from the cash `budget`)")
    max_gpus: Optional[int] = Field(None, gt=0)
    max_power_mw: Optional[Finite] = Field(None, gt=0,
                                           description="largest IT power: GPUs x system power per GPU (TDP where none is published), in MW")


class AskSpec(Strict):
    """How the suggested RFQ ask is phrased."""

    options: int = Field(2, ge=1, le=6, description="alternatives named, each a different accelerator")
    within: Finite = Field(0.05, ge=0, le=1,
                           description="GPU counts within this fraction of an option's best cost")


class SweepSpec(Strict):
    schema_: Literal["procure.sweep/v1"] = Field(alias="schema")
    title: str = Field(min_length=1, max_length=300)
    as_of: CalendarDate
    currency: str = Field("USD", pattern=r"^[A-Z]{3}$")
    cost_basis: Optional[Literal["present_value", "run", "commitment"]] = Field(
        None, description="the basis that ranks every workload (else each workload's, else the quote's default)")
    price_books: list[str] = Field(default_factory=list, max_length=100,
                                   description="folders of your own price books, as in cluster.yaml")
    workloads: list[SweepWorkload] = Field(min_length=1, max_length=100)
    accelerators: Union[Literal["all"], list[Union[str, AcceleratorChoice]]]
    networks: Optional[list[str]] = Field(None, min_length=1, max_length=16,
                                          description="default: each accelerator's own network")
    gpus: GpuCounts
    terms: list[SweepTerm] = Field(min_length=1, max_length=200)
    constraints: Constraints = Constraints()
    assumptions: AssumptionsSpec = AssumptionsSpec()
    ask: AskSpec = AskSpec()

    @field_validator("workloads")
    @classmethod
    def _unique_workloads(cls, workloads: list[SweepWorkload]) -> list[SweepWorkload]:
        _unique([w.id for w in workloads], "workload id")
        return workloads

    @field_validator("terms")
    @classmethod
    def _unique_terms(cls, terms: list[SweepTerm]) -> list[SweepTerm]:
        _unique([t.label for t in terms], "term")
        return terms

    @field_validator("gpus")
    @classmethod
    def _counts(cls, gpus: GpuCounts) -> GpuCounts:
        return _check_counts(gpus)


def _unique(names: list[str], what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{what} {name!r} appears twice; names must be unique")
        seen.add(name)


def _check_counts(gpus: GpuCounts) -> GpuCounts:
    if isinstance(gpus, list):
        if not gpus:
            raise ValueError("give at least one GPU count")
        if len(gpus) > MAX_GPU_COUNTS:
            raise ValueError(f"more than {MAX_GPU_COUNTS:,} GPU counts")
        for n in gpus:
            if n <= 0 or n > 10_000_000:
                raise ValueError(f"GPU count {n} must be between 1 and 10,000,000")
        _unique([str(n) for n in gpus], "GPU count")
    return gpus
