"""The deterministic JSON writer and its exact reader."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from procure.errors import InputError
from procure.jsontext import to_json_bytes
from procure.jsontext import parse_json

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


def test_a_resaved_float_keeps_its_value_and_its_bytes():
    first = to_json_bytes({"x": 1.97e-05, "y": 0.1, "z": Decimal("1E+3"), "w": Decimal("2.5000")})
    again = to_json_bytes(parse_json(first, "x.json"))
    assert json.loads(again)["x"] == 1.97e-05 and b"1.97e-05" in again
    assert again == first


def test_plain_decimals_are_read_as_decimal_and_exponents_as_float():
    data = parse_json(b'{"money": 12.30, "tiny": 1e-07}', "x.json")
    assert data["money"] == Decimal("12.30") and isinstance(data["money"], Decimal)
    assert isinstance(data["tiny"], float)


@pytest.mark.parametrize("data", [b'{"schema": ', b'{"x": NaN}', b'\xff\xfe', b"[" * 100_000 + b"]" * 100_000])
def test_what_is_not_json_is_an_input_error_naming_the_file(data):
    with pytest.raises(InputError) as info:
        parse_json(data, "old.json")
    assert info.value.diagnostics[0].code == "bad-json"
    assert info.value.diagnostics[0].source == "old.json"
