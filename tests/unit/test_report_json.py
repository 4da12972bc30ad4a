"""The deterministic JSON writer and the loader of saved quotes."""

from __future__ import annotations

import json
import math
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procure.errors import InputError
from procure.report.json_report import load_document, to_json_bytes

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "quote_sample.json"


def test_keys_sorted_indent_two_utf8_and_trailing_newline():
    out = to_json_bytes({"b": 1, "a": {"d": [], "c": {}}, "名": "台灣"})
    assert out == '{\n  "a": {\n    "c": {},\n    "d": []\n  },\n  "b": 1,\n  "名": "台灣"\n}\n'.encode()


def test_decimal_is_written_with_its_exact_digits():
    out = to_json_bytes({"total": Decimal("84312345.67"), "rate": Decimal("5.6200"), "big": Decimal("1E+3")})
    assert b'"total": 84312345.67' in out
    assert b'"rate": 5.6200' in out
    assert json.loads(out, parse_float=Decimal)["total"] == Decimal("84312345.67")


def test_float_uses_shortest_round_trip_repr_and_bools_stay_bools():
    out = to_json_bytes([0.1, 1.5e13, 1e-05, True, False, None, 3])
    assert json.loads(out) == [0.1, 1.5e13, 1e-05, True, False, None, 3]
    assert b"0.1," in out and b"15000000000000.0" in out and b"true" in out


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), Decimal("NaN"), Decimal("Infinity")])
def test_not_a_number_is_refused(bad):
    with pytest.raises(ValueError):
        to_json_bytes({"x": [bad]})


def test_dates_tuples_and_non_string_keys():
    assert to_json_bytes({"d": date(2026, 12, 1), "t": (1, 2)}) == b'{\n  "d": "2026-12-01",\n  "t": [\n    1,\n    2\n  ]\n}\n'
    with pytest.raises(TypeError):
        to_json_bytes({1: "x"})
    with pytest.raises(TypeError):
        to_json_bytes({"x": object()})


def test_the_sample_document_round_trips_byte_for_byte():
    data = SAMPLE.read_bytes()
    assert to_json_bytes(load_document(data)) == data


def test_a_resaved_float_keeps_its_value_and_its_bytes():
    first = to_json_bytes({"schema": "procure.quote/v1", "x": 1.97e-05, "y": 0.1, "z": Decimal("1E+3")})
    again = to_json_bytes(load_document(first))
    assert json.loads(again)["x"] == 1.97e-05 and b"1.97e-05" in again
    assert again == first


def test_load_document_reads_money_as_decimal():
    doc = load_document(SAMPLE.read_bytes())
    assert isinstance(doc["bids"][0]["total_cost"], Decimal)


@pytest.mark.parametrize("data, code", [
    (b'{"schema": "procure.quote/v2"}', "bad-schema"),
    (b'[1, 2]', "bad-schema"),
    (b'{"title": "no schema"}', "bad-schema"),
    (b'{"schema": ', "bad-json"),
    (b'{"schema": "procure.quote/v1", "x": NaN}', "bad-json"),
    (b'\xff\xfe', "bad-json"),
])
def test_load_document_refuses_what_is_not_a_quote(data, code):
    with pytest.raises(InputError) as info:
        load_document(data, source="old.json")
    assert [d.code for d in info.value.diagnostics] == [code]
    assert info.value.diagnostics[0].source == "old.json"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.decimals(allow_nan=False, allow_infinity=False, places=4),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20)


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return isinstance(b, Decimal) and (Decimal(repr(a)) == b) or (a == 0 and b == 0) or math.isclose(a, float(b))
    if isinstance(a, Decimal):
        return Decimal(b) == a
    return a == b


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_any_value_round_trips_and_writing_is_stable(value):
    out = to_json_bytes(value)
    assert out.endswith(b"\n")
    back = json.loads(out, parse_float=Decimal)
    assert _same(value, back)
    assert to_json_bytes(back) == to_json_bytes(json.loads(to_json_bytes(back), parse_float=Decimal))
