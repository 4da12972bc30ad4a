import time

import pytest
from hypothesis import given, settings, strategies as st

from procure.errors import InputError
from procure.sources.yamlpos import DecimalText, parse_yaml_text, read_yaml


def parse(text):
    return parse_yaml_text(text, "t.yaml")


def test_positions_are_one_based_line_and_column():
    doc = parse("a:\n  b: 1\n  c: [x, y]\n")
    assert doc.position(("a", "b")) == (2, 6)
    assert doc.key_position(("a", "c")) == (3, 3)
    assert doc.position(("a", "c", 1)) == (3, 10)


def test_numbers_yaml11_reads_as_strings_are_numbers():
    data = parse("a: 15e12\nb: 16_777_216\nc: 2.35\nd: '15e12'\n").data
    assert data["a"] == 15e12 and isinstance(data["a"], float)
    assert data["b"] == 16_777_216 and isinstance(data["b"], int)
    assert isinstance(data["c"], DecimalText) and data["c"].text == "2.35"
    assert data["d"] == "15e12"          # quoted stays a string


def test_duplicate_key_reported_at_the_duplicate():
    with pytest.raises(InputError) as info:
        parse("a: 1\nb: 2\na: 3\n")
    (diag,) = info.value.diagnostics
    assert (diag.line, diag.col, diag.code) == (3, 1, "duplicate-key")
    assert "line 1" in diag.message


def test_alias_bomb_refused_quickly():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 12):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    start = time.perf_counter()
    with pytest.raises(InputError) as info:
        parse("\n".join(lines))
    assert info.value.diagnostics[0].code == "too-large"
    assert time.perf_counter() - start < 5


def test_small_aliases_and_merge_keys_still_work():
    data = parse("base: &b {gpus: 8, vendor: X}\nbid: {<<: *b, vendor: Y}\n").data
    assert data["bid"] == {"gpus": 8, "vendor": "Y"}


def test_huge_number_and_deep_nesting_refused():
    with pytest.raises(InputError) as info:
        parse("a: 1e999\n")
    assert info.value.diagnostics[0].code == "bad-number"
    with pytest.raises(InputError) as info:
        parse("a: " + "[" * 100 + "]" * 100 + "\n")
    assert info.value.diagnostics[0].code == "too-deep"


def test_syntax_error_has_position():
    with pytest.raises(InputError) as info:
        parse("a: [1, 2\nb: 3\n")
    diag = info.value.diagnostics[0]
    assert diag.code == "yaml-syntax" and diag.line >= 2


def test_size_limit_and_non_utf8(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: 1\n" * 10)
    with pytest.raises(InputError) as info:
        read_yaml(big, limit=20)
    assert info.value.diagnostics[0].code == "too-large"
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"title: caf\xe9\n")
    with pytest.raises(InputError) as info:
        read_yaml(bad)
    diag = info.value.diagnostics[0]
    assert diag.code == "not-utf8" and (diag.line, diag.col) == (1, 11)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_parses_or_fails_cleanly(text):
    try:
        parse(text)
    except InputError as exc:
        assert exc.diagnostics and all(d.line >= 1 and d.col >= 1 for d in exc.diagnostics)


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=-1e300, max_value=1e300, allow_nan=False), st.integers(-10**30, 10**30))
def test_numbers_round_trip(x, n):
    data = parse(f"x: {x!r}\nn: {n}\n").data
    assert float(data["x"]) == x
    assert data["n"] == n


def test_an_alias_to_its_own_container_is_refused_not_expanded_forever():
    with pytest.raises(InputError, match="endless nesting"):
        parse_yaml_text("a: &x [1, *x]\n", "x.yaml")


def test_an_alias_bomb_is_sized_before_it_is_expanded():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    with pytest.raises(InputError, match="alias bomb"):
        parse_yaml_text("\n".join(lines) + "\n", "x.yaml")


def test_shared_aliases_within_the_limit_expand():
    assert parse_yaml_text("a: &x [1]\nb: [*x, *x]\n", "x.yaml").data == {"a": [1], "b": [[1], [1]]}


def test_a_huge_plain_list_is_not_called_an_alias_bomb():
    with pytest.raises(InputError) as info:
        parse_yaml_text("bids:\n" + "- 1\n" * 250_000, "x.yaml")
    assert "holds more than" in str(info.value) and "alias" not in str(info.value)


def test_a_base_60_number_of_a_megabyte_is_refused_at_once():
    with pytest.raises(InputError, match="too long"):
        parse_yaml_text("gpus: 1" + ":59" * 330_000 + "\n", "x.yaml")


def test_a_date_with_a_time_of_day_is_not_a_calendar_date():
    from datetime import datetime

    from procure.sources.fields import _date_only

    with pytest.raises(ValueError, match="time of day"):
        _date_only(datetime(2026, 12, 1, 10, 0))
