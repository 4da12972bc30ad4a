"""Issue 29: the workbook renderer reads the typed ``procure.quote/v2`` document, never its plain
data by string keys, so a renamed field is a mypy error and not a blank cell; and a saved
document renders to the same workbook bytes as the one in memory."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from procure import api
from procure.document import load_quote
from procure.document.bid import Plan
from procure.jsontext import to_json_bytes
from procure.report.bid_view import PLAN_KEYS
from procure.report.xlsx_report import render_xlsx
from typed_reads import functions, literal_key_reads, parameters

REPO = Path(__file__).resolve().parents[2]
MODULES = sorted((REPO / "procure" / "report").glob("xlsx_*.py"))

# Parameters that may be untyped: none of them holds the document or a part of it.
UNTYPED_PARAMETERS = {
    ("xlsx_cells.py", "_write_sheet", "wb"): "xlsxwriter's Workbook (the library ships no types)",
    ("xlsx_cells.py", "_write_sheet", "ws"): "xlsxwriter's Worksheet",
    ("xlsx_cells.py", "_write_sheet", "formats"): "xlsxwriter's Format objects, by the workbook's own Style",
    ("xlsx_cells.py", "_chart", "wb"): "xlsxwriter's Workbook",
    ("xlsx_cells.py", "clean_text", "value"): "any cell content, made text",
}
# Lookups by a literal key that are not the document's fields: the table looked up, and why.
LITERAL_KEY_TABLES = {
    "FMT": "the workbook's own number formats (xlsx_cells.FMT)",
    "scalars": "one bid's named cells on the Cash flow sheet (xlsx_cash.Block.scalars)",
    "chain": "Chain.get(case, key): a bid's chain of Model cells, by the chain's own row keys",
    "counts": "the workbook's own counts of formulas, inputs and names (xlsx_report.counts)",
    "terms": "PricingRef.terms is a dict by the schema: its keys are data (the terms in force), not fields",
}
# Parameter names that always hold the document or one of its parts, and the type they must have.
DOCUMENT_PARAMETERS = {"doc": "QuoteDocument", "bid": "BidResult", "line": "CostLine", "tax": "TaxSummary"}


def literal_key_lookups(source: str) -> list[tuple[int, str]]:
    """(line, table) of every ``x["literal"]`` read and ``x.get("literal", ...)`` call."""
    return [(node.lineno, table) for node, table in literal_key_reads(ast.parse(source))]


def test_the_grep_finds_a_lookup_by_string_key():
    """The check below can fail: a document read by key is found, a workbook table is named."""
    source = 'def f(doc):\n    return doc["bids"], doc.get("title"), FMT["int"], doc.bids\n'
    assert literal_key_lookups(source) == [(2, "doc"), (2, "doc"), (2, "FMT")]


def test_no_workbook_module_reads_the_document_by_string_keys():
    used, unexpected = set(), []
    for path in MODULES:
        for line, table in literal_key_lookups(path.read_text(encoding="utf-8")):
            if table in LITERAL_KEY_TABLES:
                used.add(table)
            else:
                unexpected.append(f"{path.name}:{line}: {table}[...]")
    assert unexpected == []
    assert used == set(LITERAL_KEY_TABLES)          # every exception still has a use (none left stale)


def test_no_workbook_module_turns_the_document_into_plain_data():
    calls = [f"{path.name}:{node.lineno}" for path in MODULES
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr in ("to_data", "model_dump", "model_dump_json")]
    assert calls == []


def test_parameters_holding_the_document_are_typed():
    untyped, mistyped, seen = [], [], set()
    for path in MODULES:
        for fn in functions(ast.parse(path.read_text(encoding="utf-8"))):
            for arg in parameters(fn):
                text = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                key = (path.name, fn.name, arg.arg)
                if not text or any(word in text for word in ("Any", "Mapping", "object")) or text == "dict":
                    if key in UNTYPED_PARAMETERS:
                        seen.add(key)
                    elif arg.arg not in ("self", "cls"):
                        untyped.append(f"{path.name}: {fn.name}({arg.arg}: {text or '?'})")
                if arg.arg in DOCUMENT_PARAMETERS and DOCUMENT_PARAMETERS[arg.arg] not in text:
                    mistyped.append(f"{path.name}: {fn.name}({arg.arg}: {text})")
    assert untyped == [] and mistyped == []
    assert seen == set(UNTYPED_PARAMETERS)


def test_the_plan_keys_the_step_time_sheet_reads_are_fields_of_the_plan():
    """The Step time sheet writes a plan as ``tp=8 pp=4 ...`` by getattr over these keys."""
    assert set(PLAN_KEYS) <= set(Plan.model_fields)


@pytest.fixture(scope="module")
def example():
    return api.quote_document(REPO / "examples" / "cluster.yaml")


def test_a_saved_document_renders_the_same_workbook(example):
    """render(load(save(doc))) == render(doc), byte for byte: the workbook reads nothing the JSON loses."""
    saved = to_json_bytes(example.to_data())
    again = load_quote(saved, "example.json")
    assert render_xlsx(again) == render_xlsx(example)
