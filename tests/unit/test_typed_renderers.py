"""The renderers read the typed result document (issue 29): no view indexes the document by string
keys, no signature takes it as ``Any`` or a plain dict, the plain data is made only to serialise it,
and ``render(load(save(doc)))`` is byte-identical to ``render(doc)``."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from procure import api
from procure.document import load_quote
from procure.jsontext import to_json_bytes
from procure.report import render_bytes
from typed_reads import functions, literal_key_reads, parameters

REPO = Path(__file__).resolve().parents[2]
REPORT = REPO / "procure" / "report"
EXAMPLE = REPO / "examples" / "cluster.yaml"

# The HTML/PDF, terminal and sweep views: every function here reads the typed documents.
TYPED_FILES = ("document.py", "generated.py", "bid_pages.py", "bid_view.py", "commercial_view.py", "target_view.py",
               "model_view.py", "moe_view.py", "straggler_view.py", "text_report.py", "html_report.py",
               "pdf_report.py", "acceptance_page.py", "__init__.py", "sweep/__init__.py", "sweep/chart.py",
               "sweep/text.py", "sweep/view.py")

# A string-key read is a view-model read when the dict it reads is named so: the view model is a dict
# of strings for the templates, and the terminal prints the same rows.
VIEW_NAMES = ("view", "row")

# Every other string-key read, each with its reason: (file, function, the dict's name) -> why.
STRING_KEY_READS = {
    ("generated.py", "_impossible_reason", "numbers"): "a flag's numbers: a dict field whose keys are data",
    ("generated.py", "flag_reason", "numbers"): "a flag's numbers: a dict field whose keys are data",
    ("generated.py", "_finish", "numbers"): "a flag's numbers: a dict field whose keys are data",
    ("__init__.py", "produce", "paths"): "the output files by format name, not the document",
    ("__init__.py", "produce", "rendered"): "the rendered bytes by format name, not the document",
}

# Parameters typed ``Any`` (or a dict of ``Any``) that are not the document nor a part of it.
ANY_PARAMETERS = {
    ("html_report.py", "call_binop"): "Jinja's sandbox hook: its context and operands",
    ("html_report.py", "get_source"): "Jinja's loader hook",
    ("html_report.py", "_bounded_render"): "a Jinja template and the view model it renders",
    ("html_report.py", "tracer"): "the interpreter's trace hook (frame, event argument)",
    ("pdf_report.py", "__init__"): "WeasyPrint's URL fetcher options (the library is untyped)",
    ("pdf_report.py", "fetch"): "WeasyPrint's URL fetcher",
}

# ``.to_data()`` makes the plain data: only to serialise the document.
TO_DATA_CALLS = {("__init__.py", "_json"): "the JSON output", ("sweep/__init__.py", "_json"): "the sweep's JSON"}


@dataclass(frozen=True)
class Site:
    file: str
    function: str
    line: int
    name: str


def _innermost(node: ast.expr, tree: ast.Module) -> str:
    """The name of the innermost function holding ``node`` ('' at module level)."""
    best, span = "", None
    for fn in functions(tree):
        end = fn.end_lineno or fn.lineno
        if fn.lineno <= node.lineno <= end and (span is None or end - fn.lineno < span):
            best, span = fn.name, end - fn.lineno
    return best


def _is_view(name: str) -> bool:
    return name in VIEW_NAMES or name.endswith(tuple("_" + v for v in VIEW_NAMES))


def _parsed(file: str) -> ast.Module:
    return ast.parse((REPORT / file).read_text(encoding="utf-8"), file)


def string_key_reads(file: str) -> list[Site]:
    """Every ``x["literal"]`` and ``x.get("literal")`` in ``file``."""
    tree = _parsed(file)
    return [Site(file, _innermost(node, tree), node.lineno, name) for node, name in literal_key_reads(tree)]


def test_no_view_reads_the_document_by_string_keys():
    unexplained = [s for file in TYPED_FILES for s in string_key_reads(file)
                   if not _is_view(s.name) and (s.file, s.function, s.name) not in STRING_KEY_READS
                   and s.name not in ("msg", "m")]       # the message catalog, not the document
    assert unexplained == [], "\n".join(f"{s.file}:{s.line} {s.function}: {s.name}[...]" for s in unexplained)


def test_the_checkers_see_a_string_key_read_and_an_any_parameter(tmp_path, monkeypatch):
    """The checks above can fail: a document read by key or taken as ``Any`` is found, a view-model
    read is not."""
    (tmp_path / "bad.py").write_text("from typing import Any\n\n"
                                     "def f(doc: Any, bid: dict[str, Any], view: dict[str, Any]):\n"
                                     "    return doc['bids'], bid.get('fx'), view['t']['x'], late.numbers.get('s')\n")
    monkeypatch.setattr(sys.modules[__name__], "REPORT", tmp_path)
    sites = string_key_reads("bad.py")
    assert sorted((s.function, s.name, _is_view(s.name)) for s in sites) == [
        ("f", "bid", False), ("f", "doc", False), ("f", "numbers", False), ("f", "view", True), ("f", "view", True)]
    assert sorted(s.name for s in any_parameters("bad.py")) == ["bid", "doc"]


def _mentions_any(annotation: ast.expr | None) -> bool:
    return annotation is not None and any(isinstance(n, ast.Name) and n.id in ("Any", "Mapping")
                                          for n in ast.walk(annotation))


def any_parameters(file: str) -> list[Site]:
    """Parameters annotated ``Any``, ``dict[str, Any]``, ``Mapping[...]`` or anything holding ``Any``."""
    found = []
    for fn in functions(_parsed(file)):
        for arg in parameters(fn):
            if _mentions_any(arg.annotation) and not _is_view(arg.arg):
                found.append(Site(file, fn.name, arg.lineno, arg.arg))
    return found


def test_no_signature_takes_the_document_as_any_or_a_plain_dict():
    unexplained = [s for file in TYPED_FILES for s in any_parameters(file)
                   if (s.file, s.function) not in ANY_PARAMETERS]
    assert unexplained == [], "\n".join(f"{s.file}:{s.line} {s.function}({s.name})" for s in unexplained)


def test_the_plain_data_is_made_only_to_serialise_the_document():
    calls = []
    for path in sorted(REPORT.rglob("*.py")):
        file = str(path.relative_to(REPORT))
        tree = _parsed(file)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to_data":
                calls.append((file, _innermost(node, tree)))
    assert set(calls) <= set(TO_DATA_CALLS), calls
    assert ("__init__.py", "_json") in calls


# --- render(load(save(doc))) == render(doc) ------------------------------------------------------

@pytest.fixture(scope="module")
def documents():
    doc = api.quote_document(EXAMPLE)
    return doc, load_quote(to_json_bytes(doc.to_data()), "saved.json")


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_a_saved_and_loaded_document_renders_the_same_html_and_json(documents, lang):
    doc, again = documents
    first = render_bytes(doc, ["html", "json"], lang=lang)
    assert render_bytes(again, ["html", "json"], lang=lang) == first


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="pdftotext (poppler-utils) is not installed")
def test_a_saved_and_loaded_document_renders_the_same_pdf_text(documents, tmp_path):
    pytest.importorskip("weasyprint")
    texts = []
    for i, doc in enumerate(documents):
        pdf = tmp_path / f"{i}.pdf"
        pdf.write_bytes(render_bytes(doc, ["pdf"])["pdf"])
        texts.append(subprocess.run(["pdftotext", "-layout", "-enc", "UTF-8", str(pdf), "-"], capture_output=True,
                                    check=True, timeout=120).stdout)
    assert texts[0] == texts[1] and len(texts[0]) > 1000


def test_every_exception_is_still_needed():
    """An allow-list entry the code no longer needs is removed, so the lists stay short and true."""
    reads = {(s.file, s.function, s.name) for file in TYPED_FILES for s in string_key_reads(file)}
    params = {(s.file, s.function) for file in TYPED_FILES for s in any_parameters(file)}
    stale = [key for key, why in STRING_KEY_READS.items() if key not in reads]
    stale += [key for key, why in ANY_PARAMETERS.items() if key not in params]
    assert stale == []
