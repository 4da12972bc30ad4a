"""Hostile saved results for `procure render` (and `diff`): the sample quote mutated at random
places (values of the wrong type, huge, NaN-like, nested; keys deleted or added), and damaged as
text (truncated, bytes inserted, deep nesting). Each must render or end in an InputError; never
another exception.

Saved results are validated against the typed result document on load (procure.document), so a
mutated document either still validates and renders, or is an InputError naming the field.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from fuzz_budget import fuzz_settings
from procure import api
from procure.errors import InputError
from procure.document import load_quote
from procure.jsontext import to_json_bytes

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "quote_sample.json"
DOC = load_quote(SAMPLE.read_bytes(), "sample").to_data()
BATCH = 4
ODD = [None, True, 0, -1, 10 ** 30, 1e308, -0.0, "", "x" * 2000, "\x1b[31m", "[/]", [], {}, [[[]]], {"a": {"b": {}}},
       "2026-02-30", "NaN", 3.5, ["x"], {"id": None}]


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, child in node.items():
            yield from _paths(child, prefix + (key,))
    elif isinstance(node, list):
        for i, child in enumerate(node):
            yield from _paths(child, prefix + (i,))


def mutated(rng: random.Random) -> dict:
    doc = copy.deepcopy(DOC)
    for _ in range(rng.randint(1, 3)):
        paths = [p for p in _paths(doc) if p and p != ("schema",)]
        path = rng.choice(paths)
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        action = rng.random()
        if action < 0.6:
            parent[path[-1]] = rng.choice(ODD)
        elif action < 0.85:
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[rng.choice(["extra", "", "__class__"])] = rng.choice(ODD)
    return doc


def render(path: Path, out: Path, formats: list[str]) -> None:
    try:
        api.render_saved(path, out, formats, force=True)
    except InputError as exc:
        assert exc.diagnostics and all(d.message.strip() for d in exc.diagnostics)


@fuzz_settings("saved results: mutated, JSON", 40, BATCH)
@given(seed=st.integers(0, 2 ** 64 - 1))
def test_mutated_saved_results_render_to_json_or_end_in_an_input_error(tmp_path_factory, seed):
    rng = random.Random(seed)
    folder = tmp_path_factory.getbasetemp() / "saved"
    folder.mkdir(exist_ok=True)
    for _ in range(BATCH):
        doc = mutated(rng)
        path = folder / "result.json"
        path.write_bytes(to_json_bytes(doc))
        render(path, folder / "out", ["json"])


@fuzz_settings("saved results: mutated, HTML and XLSX", 10, 1, deadline_ms=20000)
@given(seed=st.integers(0, 2 ** 64 - 1))
def test_mutated_saved_results_render_to_html_and_xlsx_or_end_in_an_input_error(tmp_path_factory, seed):
    rng = random.Random(seed)
    folder = tmp_path_factory.getbasetemp() / "saved-html"
    folder.mkdir(exist_ok=True)
    path = folder / "result.json"
    path.write_bytes(to_json_bytes(mutated(rng)))
    render(path, folder / "out", ["html", "xlsx"])


@fuzz_settings("saved results: damaged text", 60, BATCH)
@given(seed=st.integers(0, 2 ** 64 - 1))
def test_damaged_saved_result_text_ends_in_an_input_error_or_renders(tmp_path_factory, seed):
    """Text-level damage: most of it is no longer JSON or not a procure result (read_quote
    refuses it); the rest is the sample itself."""
    rng = random.Random(seed)
    folder = tmp_path_factory.getbasetemp() / "damaged"
    folder.mkdir(exist_ok=True)
    text = SAMPLE.read_bytes()
    for _ in range(BATCH):
        cut = rng.randint(0, len(text))
        damaged = rng.choice([text[:cut], text[:cut] + rng.randbytes(rng.randint(1, 4)) + text[cut:],
                              text[:cut] + b"NaN" + text[cut:], rng.randbytes(rng.randint(0, 64)),
                              b"[" * rng.randint(1, 200) + b"]" * rng.randint(0, 200), b"\xef\xbb\xbf" + text])
        path = folder / "result.json"
        path.write_bytes(damaged)
        render(path, folder / "out", ["json"])


@pytest.mark.parametrize("payload, fragment", [
    (b"[" * 100_000 + b"]" * 100_000, "deeper than"),
    (b"[" + b"{}," * 2_000_000 + b"{}]", "parse bomb"),
    (b"\xff\xfe{}", "JSON"),
])
def test_saved_result_bombs_are_refused_quickly(tmp_path, payload, fragment):
    path = tmp_path / "result.json"
    path.write_bytes(payload)
    with pytest.raises(InputError, match=fragment):
        api.render_saved(path, tmp_path / "out", ["json"])


def test_deep_nesting_is_refused_before_the_decoder_recurses(tmp_path):
    path = tmp_path / "result.json"
    path.write_bytes(b'{"schema": "procure.quote/v1", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}" + b" " * 200_000)
    with pytest.raises(InputError, match="deeper than"):
        api.render_saved(path, tmp_path / "out", ["json"])


def test_the_unmutated_sample_renders(tmp_path):
    written = api.render_saved(SAMPLE, tmp_path, ["json"])
    assert json.loads(written[0].read_bytes())["schema"].startswith("procure.quote/v")
