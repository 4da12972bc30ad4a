"""The money policy: Decimal end to end, one constructor, one rounding rule.

Prices enter as the text written in a price book (never through float); amounts are rounded
to cents only where they become a line of a bill (``cents``), and rates per million tokens to
1e-4 (``rate``). Half-even rounding, as accountants expect.
"""

from __future__ import annotations

from collections.abc import Iterable

from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Context, Decimal, InvalidOperation, localcontext

MONEY_CONTEXT = Context(prec=34, rounding=ROUND_HALF_EVEN)
CENT = Decimal("0.01")
RATE_QUANTUM = Decimal("0.0001")


def D(value: object) -> Decimal:
    """Make a Decimal from text, int or Decimal; floats go through their shortest repr."""
    if isinstance(value, Decimal):
        return value
    if isinstance(value, bool):
        raise TypeError("a bool is not money")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    try:
        return Decimal(str(value).strip().replace("_", ""))
    except InvalidOperation as exc:
        raise ValueError(f"{value!r} is not a number") from exc


def cents(value: Decimal) -> Decimal:
    with localcontext(MONEY_CONTEXT):
        return D(value).quantize(CENT, rounding=ROUND_HALF_UP)


def rate(value: Decimal) -> Decimal:
    with localcontext(MONEY_CONTEXT):
        return D(value).quantize(RATE_QUANTUM, rounding=ROUND_HALF_UP)


def money_sum(values: Iterable[object]) -> Decimal:
    total = Decimal(0)
    with localcontext(MONEY_CONTEXT):
        for v in values:
            total += D(v)
    return total
