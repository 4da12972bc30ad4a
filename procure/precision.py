"""The precision policy of the result document and of the step time the economics uses.

A float in the document carries at most ``SIGNIFICANT_DIGITS`` significant digits. numpy takes
different SIMD paths on different CPUs (AVX2, AVX-512, SVML log/exp/power), which moves the last
digits of the model's arithmetic; rounding to six digits keeps the JSON and XLSX bytes identical
across machines (a flip needs a value within a few ulps of a rounding boundary, about one chance
in 10^7 per number) and is still far finer than anything the model can claim. The economics starts from the rounded step time, so every
figure derived from it (days, billed hours, cents) is the same on every machine too. Money is
Decimal and follows ``procure.money`` instead.
"""

from __future__ import annotations

import math

SIGNIFICANT_DIGITS = 6


def round_sig(value: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    """``value`` rounded to ``digits`` significant digits (integers and non-finite values pass)."""
    if value == 0 or not math.isfinite(value):
        return float(value)
    return float(f"{value:.{digits - 1}e}")
