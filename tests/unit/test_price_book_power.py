"""A purchase book's power price is in the book's currency, under a name that says so: the older
`power_usd_per_kwh` is read only where it is true (a USD book)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from procure.catalog.entries import PriceBookEntry
from procure.errors import InputError
from procure.sources.validate import validate_document
from procure.sources.yamlpos import parse_yaml_text

SHIPPED = Path(__file__).resolve().parents[2] / "price_books" / "purchase-2026.yaml"
BOOK = """\
id: owned-2026
provider: Own cluster
kind: purchase
currency: {currency}
effective: 2026-01-01
source: ["a test"]
as_of: "2026-01"
facility:
  {power}
  pue: "1.3"
  colo_per_kw_month: "150"
lines:
  - accelerator: h100-sxm5-80gb
    term: purchase
    capex_per_gpu: "30000"
    life_years: "5"
    source: ["a test"]
    as_of: "2026-01"
"""


def _book(currency: str, power: str) -> PriceBookEntry:
    text = BOOK.format(currency=currency, power=power)
    return validate_document(parse_yaml_text(text, "owned-2026.yaml"), PriceBookEntry)


def test_the_power_price_is_read_in_the_books_currency():
    book = _book("EUR", 'power_per_kwh: "0.21"')
    assert book.facility is not None and book.facility.price_per_kwh == Decimal("0.21")


def test_the_older_usd_name_is_read_in_a_usd_book():
    book = _book("USD", 'power_usd_per_kwh: "0.08"')
    assert book.facility is not None and book.facility.price_per_kwh == Decimal("0.08")


def test_a_usd_name_in_another_currency_is_refused_at_its_place():
    with pytest.raises(InputError) as caught:
        _book("EUR", 'power_usd_per_kwh: "0.21"')
    text = str(caught.value)
    assert "owned-2026.yaml:" in text and "power_per_kwh" in text and "EUR" in text


@pytest.mark.parametrize("power", ['power_per_kwh: "0.1"\n  power_usd_per_kwh: "0.1"', 'pue_only: "1"'])
def test_the_power_price_is_stated_once(power):
    with pytest.raises(InputError):
        _book("USD", power)


def test_the_shipped_purchase_book_uses_the_name_that_says_what_it_holds():
    assert "power_usd_per_kwh" not in SHIPPED.read_text(encoding="utf-8")
