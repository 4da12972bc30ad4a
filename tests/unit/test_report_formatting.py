"""Numbers, money and dates as text in English and Traditional Chinese; the message catalogs."""

from __future__ import annotations

import re
import string
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from procure.report.formatting import (Formatter, compact, get_locale, iso_date, money, number, percent,
                                       plain, signed_percent, significant)
from procure.report.messages import LANGUAGES, Messages, catalog

EN, ZH = get_locale("en"), get_locale("zh-TW")


@pytest.mark.parametrize("value, decimals, text", [
    (1234567.125, 2, "1,234,567.13"), (Decimal("1234567.135"), 2, "1,234,567.14"), (0, 2, "0.00"),
    (-1234.5, 1, "-1,234.5"), (Decimal("-0.125"), 2, "-0.13"), (999, 0, "999"), (1000, 0, "1,000"), (Decimal("0.00001"), 3, "0.000"),
    (1.5e13, 0, "15,000,000,000,000"),
])
def test_number_groups_digits_and_rounds_half_away_from_zero(value, decimals, text):
    assert number(value, EN, decimals) == text


def test_money_per_locale_and_currency():
    assert money(Decimal("84312345.67"), "USD", EN) == "$84,312,345.67"
    assert money(Decimal("84312345.67"), "USD", ZH) == "US$84,312,345.67"
    assert money(Decimal("-5"), "CHF", EN) == "-CHF 5.00"
    assert money(Decimal("89"), "TWD", ZH) == "$89.00"
    assert money(Decimal("5.62085"), "USD", EN, 4) == "$5.6209"       # half away from zero (procure.money)


def test_null_is_not_available_in_each_language():
    for fn in (lambda v, l: number(v, l), lambda v, l: money(v, "USD", l), percent, compact, significant, plain):
        assert fn(None, EN) == "n/a"
        assert fn(None, ZH) == "無資料"
    assert iso_date(None, EN) == "n/a"


def test_percent_compact_and_significant():
    assert percent(0.4123, EN) == "41.2%"
    assert signed_percent(-0.2, EN) == "\u221220%" and signed_percent(0.1, EN) == "+10%"
    assert compact(70553706496, EN) == "70.6B" and compact(70553706496, ZH) == "705.5億"
    assert compact(1.5e13, EN) == "15.0T" and compact(1.5e13, ZH) == "15.0兆"
    assert compact(512, EN) == "512"
    assert significant(5.7134, EN) == "5.71" and significant(0.012345, EN) == "0.0123"
    assert significant(41.03, EN) == "41.0" and significant(1234.5, EN) == "1,235"
    assert plain(1.97e-5, EN) == "0.0000197" and plain(Decimal("32.150"), EN) == "32.15"


def test_dates_per_locale_and_text_that_is_no_date_is_kept():
    assert iso_date("2026-12-01", EN) == "December 1, 2026"
    assert iso_date("2026-12-01", ZH) == "2026年12月1日"
    assert iso_date("snapshot <= 2026-08", EN) == "snapshot <= 2026-08"


def test_unknown_language_is_refused():
    with pytest.raises(ValueError):
        get_locale("fr")
    with pytest.raises(ValueError):
        catalog("fr")


@given(st.decimals(min_value=Decimal("-1e15"), max_value=Decimal("1e15"), places=2))
def test_money_digits_are_the_same_in_both_languages(value):
    en, zh = money(value, "USD", EN), money(value, "USD", ZH)
    assert en.replace("$", "") == zh.replace("US$", "")
    assert Decimal(en.replace("$", "").replace(",", "")) == value


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_catalogs_have_the_same_keys_and_placeholders():
    en, zh = catalog("en"), catalog("zh-TW")
    assert en.keys() == zh.keys()
    mismatched = [k for k in en if en[k] and zh[k] and _fields(en[k]) != _fields(zh[k])]
    assert mismatched == []
    assert LANGUAGES == ("en", "zh-TW")


def test_chinese_catalog_is_translated():
    zh = catalog("zh-TW")
    han = re.compile(r"[\u4e00-\u9fff]")
    sentences = [k for k in zh if k.startswith(("method.", "flag.", "summary.", "bid."))]
    untranslated = [k for k in sentences if zh[k] and not han.search(zh[k])]
    assert untranslated == []


def test_formatter_units_follow_the_language():
    en, zh = Formatter("en", "USD"), Formatter("zh-TW", "USD")
    assert en.days(61.34) == "61.3 days" and zh.days(61.34) == "61.3 天"
    assert en.seconds(5.7134) == "5.71 s" and zh.seconds(5.7134) == "5.71 秒"
    assert en.price(Decimal("2.35")) == "$2.35" and en.price(Decimal("2.7683")) == "$2.7683"
    assert en.days(None) == "n/a"
    assert Messages("en")("unit.gib", value="3.0") == "3.0 GiB"
