"""The typed result document: validation of saved files, the v1 upgrade, the declared precision."""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from pathlib import Path

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from procure.document import SCHEMA, QuoteDocument, json_schema, load_quote, validate_quote
from procure.errors import InputError
from procure.jsontext import parse_json, to_json_bytes
from procure.precision import SIGNIFICANT_DIGITS, round_sig

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SAMPLE = FIXTURES / "quote_sample.json"
V1 = FIXTURES / "quote_v1_example.json"     # a document procure 0.1 wrote for the shipped example


def _data() -> dict:
    return parse_json(SAMPLE.read_bytes(), "sample.json")


def test_the_sample_round_trips_byte_for_byte():
    data = SAMPLE.read_bytes()
    assert to_json_bytes(load_quote(data, "sample.json").to_data()) == data


def test_money_stays_decimal_through_a_save_and_a_load():
    doc = load_quote(SAMPLE.read_bytes(), "sample.json")
    assert isinstance(doc.bids[0].total_cost, Decimal)
    assert doc.schema_ == SCHEMA


def test_a_v1_document_is_upgraded_and_renames_the_usd_figure():
    doc = load_quote(V1.read_bytes(), "old.json")
    old = json.loads(V1.read_bytes())
    assert doc.schema_ == "procure.quote/v2"
    for new_bid, old_bid in zip(doc.bids, old["bids"]):
        assert new_bid.cost_per_million_tokens == Decimal(str(old_bid["usd_per_million_tokens"]))
        assert new_bid.id == old_bid["id"]
    assert doc.mfu_convention == old["bids"][0]["mfu_convention"]
    assert doc.methodology.knobs and doc.methodology.fitted_on == old["methodology"]["knobs"]["fitted on"]


MUTATIONS = [
    (lambda d: d["bids"][0].__setitem__("mfu", "high"), "bids[0].mfu"),
    (lambda d: d["bids"][0].__setitem__("gpus", True), "bids[0].gpus"),
    (lambda d: d["bids"][0].pop("total_cost"), "bids[0].total_cost"),
    (lambda d: d["bids"][0].__setitem__("surprise", 1), "bids[0].surprise"),
    (lambda d: d["bids"][1]["flags"].append({"code": "x"}), "bids[1].flags"),
    (lambda d: d.__setitem__("as_of", "yesterday"), "as_of"),
    (lambda d: d.__setitem__("bids", {"a": 1}), "bids"),
    (lambda d: d["inputs"][0].__setitem__("sha256", "not-a-hash"), "inputs[0].sha256"),
    (lambda d: d["bids"][0]["step_time_terms"].__setitem__("compute_s", [1]), "bids[0].step_time_terms.compute_s"),
    (lambda d: d["bids"][0]["plan"].__setitem__("recompute", "sometimes"), "bids[0].plan.recompute"),
]


@pytest.mark.parametrize("mutate, where", MUTATIONS)
def test_a_mutated_saved_document_is_a_diagnostic_naming_the_field(mutate, where):
    data = _data()
    mutate(data)
    with pytest.raises(InputError) as info:
        validate_quote(data, "result.json")
    messages = [d.format() for d in info.value.diagnostics]
    prefix = "result.json: error[bad-document]: " + where
    assert any(m.startswith(prefix) and m[len(prefix)] in ":.[" for m in messages), messages


@pytest.mark.parametrize("data", [[1, 2], {"schema": "procure.quote/v9"}, {"title": "no schema"}, "text"])
def test_what_is_not_a_quote_is_refused_by_its_schema_field(data):
    with pytest.raises(InputError) as info:
        validate_quote(data, "x.json")
    assert info.value.diagnostics[0].code == "bad-schema"


def _floats(obj):
    if isinstance(obj, float):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _floats(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _floats(v)


def test_every_float_in_a_document_has_at_most_the_declared_significant_digits():
    floats = list(_floats(load_quote(V1.read_bytes(), "old.json").to_data()))
    assert len(floats) > 100
    for value in floats:
        assert round_sig(value) == value, value


@given(st.floats(min_value=-1e30, max_value=1e30, allow_nan=False).filter(lambda x: abs(x) > 1e-30))
def test_round_sig_is_idempotent_and_keeps_the_declared_digits(x):
    r = round_sig(x)
    assert round_sig(r) == r
    assert abs(r - x) <= abs(x) * 10.0 ** (1 - SIGNIFICANT_DIGITS)
    mantissa = f"{abs(r):.{SIGNIFICANT_DIGITS + 3}e}".split("e")[0].replace(".", "")
    assert mantissa[SIGNIFICANT_DIGITS:].strip("0") == ""


def test_the_document_type_is_frozen():
    doc = load_quote(SAMPLE.read_bytes(), "sample.json")
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        doc.title = "changed"     # type: ignore[misc]


def test_the_json_schema_names_the_contract_fields():
    schema = json_schema()
    bid = schema["$defs"]["BidResult"]["properties"]
    for field in ("id", "step_time_s", "step_time_terms", "tokens_per_s", "mfu", "time_to_train_days",
                  "total_cost", "currency", "cost_per_million_tokens", "flags"):
        assert field in bid
    assert schema["properties"]["schema"]["const"] == SCHEMA


def test_a_bid_field_is_never_overwritten_by_another_producer():
    """v1 merged the economics dict over the bid (ids, vendors, conventions collided); the typed
    model has one field per name, so equal names cannot hide each other."""
    names = list(QuoteDocument.model_fields["bids"].annotation.__args__[0].model_fields)
    assert len(names) == len(set(names))
    doc = copy.deepcopy(_data())
    assert validate_quote(doc, "x").bids[0].vendor == doc["bids"][0]["vendor"]
