"""One set of bounds for every source of a value.

The inline terms of ``cluster.yaml``, a price book's lines, adders and facility figures, the
catalog's accelerators and FX tables all name their figures with these types, so a value that one
source refuses is refused by every other (a price book cannot carry a ``residual_fraction`` of 5 or
a PUE of 0 that the inline term would refuse).
"""

from __future__ import annotations

import math
from datetime import date, timedelta
from decimal import Decimal
from typing import Annotated

from pydantic import AfterValidator, Field

from procure.sources.fields import Finite, Money



def _above_zero(value: Decimal) -> Decimal:
    if value <= 0:
        raise ValueError("must be above zero (costs per token and comparisons divide by it)")
    return value


#: A price (per GPU-hour, per GPU, per kWh, an FX rate): above zero.
Price = Annotated[Money, AfterValidator(_above_zero)]
#: A fraction of an amount (support, prepay, residual value, cost of capital): 0 to 1.
Fraction = Annotated[Money, Field(le=1)]
#: A fraction that must stay below 1 (a discount, a yearly resale decline).
FractionBelowOne = Annotated[Money, Field(lt=1)]
#: A depreciation life in years.
LifeYears = Annotated[Money, Field(gt=0, le=30)]
#: Power usage effectiveness: facility power over IT power.
Pue = Annotated[Money, Field(ge=1, le=3)]
#: The shortest and longest training step procure takes from a commitment or a measured log: a
#: microsecond (no step of a model worth pricing a cluster for is shorter) to about 11.6 days.
MIN_STEP_S = 1e-6
MAX_STEP_S = 1e6
#: A step time in seconds, committed or measured.
StepSeconds = Annotated[Finite, Field(ge=MIN_STEP_S, le=MAX_STEP_S)]
#: A physical rate (bandwidth, peak TFLOP/s, memory): finite and above zero.
PositiveFinite = Annotated[Finite, Field(gt=0, le=1e12)]

#: The largest amount of money a figure may hold (a saved document's totals, rates and prices): far
#: above any cluster's cost in any currency, and small enough that rounding it to the money policy's
#: places stays within the money context's 34 digits.
MAX_AMOUNT = Decimal("1e18")
#: The largest magnitude of a saved document's other figures: above 1e18 training tokens and any
#: FLOP count per token, and small enough that a renderer rounding it to a few places stays within
#: the money context's 34 digits.
MAX_REAL = 1e24


def _bounded_amount(value: Decimal) -> Decimal:
    if abs(value) > MAX_AMOUNT:
        raise ValueError(f"must be at most {MAX_AMOUNT:,.0f} in magnitude")
    return value


def _bounded_real(value: float) -> float:
    if abs(value) > MAX_REAL:
        raise ValueError(f"must be at most {MAX_REAL:g} in magnitude")
    return value


#: Money in a saved document: within ±MAX_AMOUNT.
BoundedAmount = AfterValidator(_bounded_amount)
#: Any other figure of a saved document: within ±MAX_REAL.
BoundedReal = AfterValidator(_bounded_real)


def days_after(start: date, days: float) -> date | None:
    """``start`` plus ``days`` (rounded up to a whole day); None when that is past 9999-12-31, the
    last day a date can name (a lead time or a time to train beyond the calendar)."""
    if not math.isfinite(days) or math.ceil(days) > (date.max - start).days:
        return None
    return start + timedelta(days=math.ceil(days))
