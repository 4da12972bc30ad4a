"""The money policy: Decimal end to end, one constructor, one rounding rule.

The rule, written once here and used by the cost lines, the FX conversion and the display
(``procure.report.formatting``):

* **Rounding is half away from zero** (``ROUND_HALF_UP`` in ``decimal``), the rule of a
  spreadsheet's ``ROUND()``, so a workbook that rebuilds a line from its inputs gets the
  stored cents, and a printed figure never disagrees with the stored one
  (``cents(0.125)`` is 0.13 and prints "0.13").
* **Amounts** are rounded to cents only where they become a line of a bill (``cents``);
  totals are exact sums of the rounded lines (``money_sum``).
* **Rates per million tokens** are rounded to 1e-4 (``rate``).
* **Converted unit prices** (a price quoted in another currency, times the FX rate) are
  rounded to 1e-6 of a unit (``convert``); the **FX rates** themselves carry at most 12
  significant digits (``fx``), so no figure carries the 28 digits of a Decimal division.
* Prices enter as the text written in a price book (never through a binary float).
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation, localcontext

ROUNDING = ROUND_HALF_UP                    # half away from zero, as ROUND() in a spreadsheet
MONEY_CONTEXT = Context(prec=34, rounding=ROUNDING)
CENT = Decimal("0.01")
RATE_QUANTUM = Decimal("0.0001")
CONVERTED_QUANTUM = Decimal("0.000001")     # a converted unit price: 1e-6 of a unit
FX_SIGNIFICANT_DIGITS = 12
FX_STALE_DAYS = 30                          # an FX table older than this before the report date is a warning


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


def quantize(value: object, quantum: Decimal) -> Decimal:
    """``value`` rounded to a multiple of ``quantum`` by the one rule of this module."""
    with localcontext(MONEY_CONTEXT):
        return D(value).quantize(quantum, rounding=ROUNDING)


def places(value: object, decimals: int) -> Decimal:
    """``value`` rounded to ``decimals`` decimal places (the display uses this)."""
    return quantize(value, Decimal(1).scaleb(-decimals))


def cents(value: Decimal) -> Decimal:
    return quantize(value, CENT)


def rate(value: Decimal) -> Decimal:
    return quantize(value, RATE_QUANTUM)


def fx(value: Decimal) -> Decimal:
    """An FX rate at ``FX_SIGNIFICANT_DIGITS`` significant digits (1/32.31 -> 0.0309501702259)."""
    value = D(value)
    if value == 0:
        return value
    exponent = value.copy_abs().adjusted() - FX_SIGNIFICANT_DIGITS + 1
    return trim(quantize(value, Decimal(1).scaleb(exponent)))


def convert(amount: Decimal, fx_rate: Decimal) -> Decimal:
    """A unit price quoted in another currency, in the report currency, to 1e-6 of a unit.

    The same currency (rate 1) keeps the figure as written."""
    if D(fx_rate) == 1:
        return D(amount)
    with localcontext(MONEY_CONTEXT):
        return trim(quantize(D(amount) * D(fx_rate), CONVERTED_QUANTUM))


def trim(value: Decimal) -> Decimal:
    """Trailing zeros dropped, never in exponent form: 2.350000 -> 2.35, 1E+2 -> 100."""
    value = D(value)
    if value == value.to_integral_value():
        return value.quantize(Decimal(1))
    return value.normalize()


def money_sum(values: Iterable[object]) -> Decimal:
    total = Decimal(0)
    with localcontext(MONEY_CONTEXT):
        for v in values:
            total += D(v)
    return total
