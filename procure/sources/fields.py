"""Field types every input schema shares: frozen models that refuse unknown keys, money that
never passes through a binary float, finite floats and calendar dates."""

from __future__ import annotations

import math
from datetime import date
from decimal import Decimal
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from procure.sources.yamlpos import DecimalText


def _exact_decimal(value):
    """Money from YAML keeps the text it was written as; never via a binary float."""
    if isinstance(value, DecimalText):
        return Decimal(value.text)
    if isinstance(value, bool):
        raise ValueError("expected a number, not true/false")
    if isinstance(value, float):
        return Decimal(repr(value))
    return value


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def _date_only(value):
    """A calendar date (2026-12-01); YAML integers are not dates, though pydantic would take them."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ValueError("must be a date like 2026-12-01, not a number")
    return value


CalendarDate = Annotated[date, BeforeValidator(_date_only)]
Money = Annotated[Decimal, BeforeValidator(_exact_decimal), Field(ge=0, max_digits=24, decimal_places=10)]
Finite = Annotated[float, BeforeValidator(_finite)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)
