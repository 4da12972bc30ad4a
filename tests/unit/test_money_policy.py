"""The one money policy (procure.money): half away from zero for amounts, rates and display;
converted unit prices to 1e-6; FX rates to 12 significant digits."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from procure.money import CONVERTED_QUANTUM, cents, convert, fx, money_sum, places, rate
from procure.report.formatting import Formatter, get_locale, number

EN = Formatter("en", "USD")
ZH = Formatter("zh-TW", "USD")
amounts = st.decimals(min_value=Decimal("-1e12"), max_value=Decimal("1e12"), places=6,
                      allow_nan=False, allow_infinity=False)


def digits(text: str) -> Decimal:
    """The number a formatted amount shows: symbols and grouping removed."""
    kept = "".join(ch for ch in text if ch.isdigit() or ch in ".-")
    return Decimal(kept)


def test_half_a_cent_rounds_away_from_zero_and_prints_as_stored():
    assert cents(Decimal("0.125")) == Decimal("0.13")
    assert EN.money(Decimal("0.125")) == "$0.13"
    assert cents(Decimal("-0.125")) == Decimal("-0.13") and EN.money(Decimal("-0.125")) == "-$0.13"
    assert rate(Decimal("0.00005")) == Decimal("0.0001") and EN.rate(Decimal("0.00005")) == "$0.0001"


@given(amounts)
def test_displayed_cents_equal_the_stored_cents(value):
    stored = cents(value)
    assert digits(EN.money(value)) == stored
    assert digits(EN.money(stored)) == stored
    assert digits(ZH.money(value)) == stored            # the same digits in every language


@given(amounts)
def test_displayed_rates_equal_the_stored_rates(value):
    assert digits(EN.rate(value)) == rate(value)


@given(amounts, st.integers(0, 6))
def test_every_display_precision_follows_the_same_rule(value, decimals):
    assert digits(number(value, get_locale("en"), decimals)) == places(value, decimals)


@given(st.lists(amounts, max_size=30))
def test_a_total_is_the_exact_sum_of_its_rounded_lines(values):
    lines = [cents(v) for v in values]
    total = money_sum(lines)
    assert total == sum(lines, Decimal(0))
    assert total == cents(total)                          # a sum of cents needs no rounding
    assert digits(EN.money(total)) == total


def test_converted_prices_carry_at_most_six_decimals():
    twd_to_usd = fx(Decimal("1") / Decimal("31.518"))
    assert twd_to_usd == Decimal("0.0317279015166")        # 12 significant digits, not 28
    price = convert(Decimal("75"), twd_to_usd)
    assert price == Decimal("2.379593")
    assert price == price.quantize(CONVERTED_QUANTUM)
    assert convert(Decimal("2.35"), Decimal(1)) == Decimal("2.35")   # same currency: as written
    assert str(convert(Decimal("100"), Decimal("1.0"))) == "100"


@given(st.decimals(min_value=Decimal("0.0001"), max_value=Decimal("100000"), places=4),
       st.decimals(min_value=Decimal("0.001"), max_value=Decimal("200"), places=6))
def test_conversion_is_the_rounded_product(price, rate_value):
    converted = convert(price, fx(rate_value))
    exact = price * fx(rate_value)
    assert abs(converted - exact) <= CONVERTED_QUANTUM / 2
    assert -converted.as_tuple().exponent <= 6


@pytest.mark.parametrize("value, text", [(Decimal("75"), "NT$75.00"), (Decimal("2.379593"), "NT$2.379593"),
                                         (Decimal("2.3"), "NT$2.30")])
def test_quoted_unit_prices_print_every_digit_they_carry(value, text):
    assert EN.unit_price(value, "TWD", as_quoted=True) == text


@pytest.mark.parametrize("value, text", [(Decimal("75"), "NT$75.00"), (Decimal("2.379593"), "NT$2.38"),
                                         (Decimal("13.805492"), "NT$13.81"), (Decimal("0.348808"), "NT$0.3488"),
                                         (Decimal("0.05"), "NT$0.05"), (Decimal("-2.3"), "-NT$2.30")])
def test_converted_unit_prices_print_cents_or_four_decimals_below_one(value, text):
    """A converted or derived price is money: cents from one unit up, four decimals below it, never
    the six decimals of the conversion."""
    assert EN.unit_price(value, "TWD") == text
