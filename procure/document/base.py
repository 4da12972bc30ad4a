"""Building blocks of the result document's types: frozen models that refuse unknown keys,
floats at the declared precision, exact money."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from procure.precision import round_sig
from procure.sources.bounds import BoundedAmount, BoundedReal


def _real(value: float) -> float:
    return round_sig(float(value))


def _not_bool(value: Any) -> Any:
    """JSON true is not the number 1 (pydantic would take it for an int or a float)."""
    if isinstance(value, bool):
        raise ValueError("expected a number, not true/false")
    return value


def _exact(value: Any) -> Any:
    """Money from a saved document is parsed as Decimal; a float reaching here keeps its repr."""
    if isinstance(value, bool):
        raise ValueError("expected an amount, not true/false")
    if isinstance(value, float):
        return Decimal(repr(value))
    return value


Real = Annotated[float, BeforeValidator(_not_bool), AfterValidator(_real),
                 Field(allow_inf_nan=False), BoundedReal]
"""A float, rounded to the document's declared precision (see ``precision``)."""
Count = Annotated[int, Field(ge=0), BeforeValidator(_not_bool)]
"""A count (GPUs, steps, a rank): a whole number, never negative."""
Degree = Annotated[int, Field(ge=1), BeforeValidator(_not_bool)]
"""A parallel degree or a micro-batch size: at least 1."""
Tokens = Annotated[float, Field(allow_inf_nan=False, ge=0), BeforeValidator(_not_bool), BoundedReal]
"""A token count as given (not rounded): cost per million tokens divides by it, to the cent."""
Amount = Annotated[Decimal, BeforeValidator(_exact), Field(allow_inf_nan=False), BoundedAmount]
"""Money or a money rate: Decimal, already rounded by the money policy."""


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True,
                              ser_json_inf_nan="strings")
