"""Field types every input schema shares: frozen models that refuse unknown keys, money that
never passes through a binary float, finite floats and calendar dates."""

from __future__ import annotations

import math
import types
import typing
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from procure.sources.yamlpos import DecimalText


def _exact_decimal(value: object) -> object:
    """Money from YAML keeps the text it was written as; never via a binary float."""
    if isinstance(value, DecimalText):
        return Decimal(value.text)
    if isinstance(value, bool):
        raise ValueError("expected a number, not true/false")
    if isinstance(value, float):
        return Decimal(repr(value))
    return value


def _finite(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def _date_only(value: object) -> object:
    """A calendar date (2026-12-01); YAML integers are not dates, though pydantic would take them,
    and a time of day (2026-12-01 10:00:00) is refused rather than silently dropped."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ValueError("must be a date like 2026-12-01, not a number")
    if isinstance(value, datetime):
        raise ValueError(f"must be a date like {value.date().isoformat()}, without a time of day")
    return value


class YamlBool(str):
    """A true/false written where a number belongs; fails number validation with its own text."""


_NUMBER_TYPES = (int, float, Decimal)


def _numeric_only(annotation: object) -> bool:
    """True when a field takes numbers (int, float, Decimal, Optional/Annotated of them), not bools."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Literal:   # zero_stage: 0..3
        return all(isinstance(a, int) and not isinstance(a, bool) for a in args)
    if typing.get_origin(annotation) is Annotated:
        return _numeric_only(args[0])
    if args and typing.get_origin(annotation) in (Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        return bool(kinds) and all(_numeric_only(a) for a in kinds)
    return isinstance(annotation, type) and issubclass(annotation, _NUMBER_TYPES) \
        and not issubclass(annotation, bool)


CalendarDate = Annotated[date, BeforeValidator(_date_only)]
Money = Annotated[Decimal, BeforeValidator(_exact_decimal), Field(ge=0, max_digits=24, decimal_places=10)]
Finite = Annotated[float, BeforeValidator(_finite)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _no_bools_as_numbers(cls, data: object) -> object:
        """`gpus: yes` is YAML's true, and pydantic would count it as 1 GPU: refuse it at its key."""
        if not isinstance(data, dict) or not any(isinstance(v, bool) for v in data.values()):
            return data
        numeric = _numeric_keys(cls)
        return {key: YamlBool(str(value).lower()) if isinstance(value, bool) and key in numeric
                else value for key, value in data.items()}


_NUMERIC_KEYS: dict[type[BaseModel], frozenset[str]] = {}


def _numeric_keys(cls: type[BaseModel]) -> frozenset[str]:
    """The keys of a model's number fields, worked out once per class (a corpus of 1,440 vTrain
    runs asks for them thousands of times)."""
    known = _NUMERIC_KEYS.get(cls)
    if known is None:
        fields = {(f.alias or name): f for name, f in cls.model_fields.items()}
        known = _NUMERIC_KEYS[cls] = frozenset(key for key, f in fields.items() if _numeric_only(f.annotation))
    return known
