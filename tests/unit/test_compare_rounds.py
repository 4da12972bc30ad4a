"""`procure diff`: every price in its own currency; exchange-rate movement apart from price movement."""

from __future__ import annotations

import copy
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from procure.cli import main
from procure.compare_rounds import diff_documents
from procure.document import load_quote

EUR_CASE = Path(__file__).resolve().parents[1] / "cases" / "eur-and-missing" / "expected" / "result.json"


@pytest.fixture(scope="module")
def eur_doc() -> dict:
    return load_quote(EUR_CASE.read_bytes(), "eur").to_data()


def _bid(doc: dict, bid_id: str) -> dict:
    return next(b for b in doc["bids"] if b["id"] == bid_id)


def _quoted(bid: dict, key: str) -> dict:
    return next(q for q in bid["pricing"]["quoted"] if q["key"] == key)


def _reprice(bid: dict, quoted: Decimal) -> None:
    q = _quoted(bid, "price_per_gpu_hour")
    q["quoted"] = quoted
    q["converted"] = (quoted * Decimal(str(q["fx_rate"]))).quantize(Decimal("0.000001"))
    bid["pricing"]["price_per_gpu_hour"] = q["converted"]


def test_a_price_quoted_in_another_currency_moves_in_that_currency(eur_doc):
    new = copy.deepcopy(eur_doc)
    bid = _bid(new, "neocloud-3y")                       # a USD price book in a EUR report
    _reprice(bid, Decimal("2.40"))
    (change,) = next(c for c in diff_documents(eur_doc, new)["changed"] if c["id"] == "neocloud-3y")["inputs"]
    assert change["field"] == "pricing.quoted.price_per_gpu_hour"
    assert change["currency"] == {"old": "USD", "new": "USD"}
    assert Decimal(str(change["old"])) == Decimal("2.0") and change["new"] == Decimal("2.40")
    assert change["relative"] == pytest.approx(0.2)


def test_an_exchange_rate_move_is_not_reported_as_a_price_cut(eur_doc):
    new = copy.deepcopy(eur_doc)
    bid = _bid(new, "neocloud-3y")
    rate = Decimal("0.80")
    bid["pricing"]["fx_rate"] = rate
    for q in bid["pricing"]["quoted"]:
        q["fx_rate"] = rate
        q["converted"] = Decimal(str(q["quoted"])) * rate
    bid["pricing"]["price_per_gpu_hour"] = Decimal("1.6")
    (change,) = next(c for c in diff_documents(eur_doc, new)["changed"] if c["id"] == "neocloud-3y")["inputs"]
    assert change["field"] == "pricing.fx_rate.USD" and change["label"] == "exchange rate (EUR per USD)"
    assert change["new"] == rate


def test_capex_and_terms_are_among_the_inputs_that_changed(eur_doc):
    new = copy.deepcopy(eur_doc)
    bid = _bid(new, "neocloud-3y")
    bid["pricing"]["capex_per_gpu"] = Decimal("25000")
    bid["pricing"]["terms"]["support_fraction"] = Decimal("0.05")
    fields = {c["field"] for c in next(c for c in diff_documents(eur_doc, new)["changed"]
                                        if c["id"] == "neocloud-3y")["inputs"]}
    assert {"pricing.capex_per_gpu", "pricing.terms.support_fraction"} <= fields


def test_the_diff_text_shows_the_quoted_currency_not_converted_amounts_under_its_symbol(tmp_path, eur_doc):
    from procure.jsontext import to_json_bytes

    old, new = copy.deepcopy(eur_doc), copy.deepcopy(eur_doc)
    for doc in (old, new):                               # a EUR price in a USD report
        doc["currency"] = "USD"
        for b in doc["bids"]:
            b["currency"] = "USD"
    for doc, price in ((old, Decimal("4.20")), (new, Decimal("4.80"))):
        bid = _bid(doc, "neocloud-3y")
        bid["pricing"]["book_currency"] = "EUR"
        q = _quoted(bid, "price_per_gpu_hour")
        q["currency"], q["fx_rate"] = "EUR", Decimal("1.1394")
        _reprice(bid, price)
    (tmp_path / "a.json").write_bytes(to_json_bytes(old))
    (tmp_path / "b.json").write_bytes(to_json_bytes(new))
    out = CliRunner().invoke(main, ["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")],
                             env={"COLUMNS": "160"})
    assert out.exit_code == 0, out.output
    assert "€4.20" in out.stdout and "€4.80" in out.stdout
    assert "€4.79" not in out.stdout and "€5.47" not in out.stdout    # converted dollars never carry €
