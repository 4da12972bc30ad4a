"""Hostile user templates (`--templates`): generated Jinja from a grammar of tags, expressions,
filters, sandbox escapes, huge operands and broken syntax, plus the attacks one by one (a link to
/etc/passwd, a pipe, endless loops and recursion, memory bombs). Each render must return HTML or
end in an InputError at the template's file:line; never another exception, never a hang, and no
file outside the template folder may be read.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from fuzz_budget import fuzz_settings
from procure.errors import InputError
from procure.report import html_report, render
from procure.report.document import build_view
from procure.report.html_report import render_html
from procure.document import load_quote

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "quote_sample.json"
DOC = load_quote(SAMPLE.read_bytes(), "sample")
VIEW = build_view(DOC, "en")
BATCH = 4

NAMES = ["meta", "bids", "ranking", "t", "cover", "workload", "page_css", "lang", "bid", "x", "loop", "self",
         "range", "lipsum", "cycler", "joiner", "namespace", "dict", "undefined_name"]
ATTRS = ["title", "vendor", "id", "rows", "__class__", "__mro__", "__subclasses__", "__globals__", "__init__",
         "mro", "items", "keys", "format", "__dict__", "gi_frame", "func_globals", "0", "length", "get"]
FILTERS = ["upper", "length", "join", "first", "last", "default('x')", "int", "float", "round", "e", "safe",
           "center(80)", "indent(3)", "wordwrap(5)", "truncate(3)", "replace('a', 'b')",
           "attr('__class__')", "map(attribute='id')", "selectattr('id')", "sum", "list", "sort", "reverse",
           "format(1)", "tojson", "striptags", "urlize", "pprint", "batch(2)", "slice(3)", "xmlattr", "nofilter"]
LITERALS = ["0", "1", "-1", "10**400", "10**100000", "2**64", "1e308", "1/0", "0//0", "'%09d' % 1", "'x' * 10**9",
            "[1] * 10**8", "'a' + 'b'", "'{:>9}'.format(1)", "none", "true", "[]", "{}", "'\\x1b[31m'", "'<script>'",
            "range(100)", "range(10**9)", "'{{ 1 }}'", "meta.title * 3"]
# allocate hundreds of MB before the memory cap stops them: tried one by one below, rare here
MEMORY_BOMBS = ["'%099999999d' % 1", "'{:>999999999}'.format(1)", "'x'|center(2000000000)"]


def expr(rng: random.Random, depth: int = 0) -> str:
    kind = rng.random()
    if depth > 2 or kind < 0.3:
        return rng.choice(MEMORY_BOMBS) if rng.random() < 0.002 else rng.choice(LITERALS)
    if kind < 0.6:
        out = rng.choice(NAMES)
        for _ in range(rng.randint(0, 3)):
            out += rng.choice([f".{rng.choice(ATTRS)}", f"[{rng.randint(-2, 3)}]", f"['{rng.choice(ATTRS)}']", "()"])
        return out
    if kind < 0.8:
        return f"{expr(rng, depth + 1)}|{rng.choice(FILTERS)}"
    return f"({expr(rng, depth + 1)} {rng.choice(['+', '*', '**', '/', '//', '%', '~', 'and', 'in', '=='])} " \
           f"{expr(rng, depth + 1)})"


def block(rng: random.Random, depth: int = 0) -> str:
    kind = rng.random()
    if depth > 2 or kind < 0.25:
        return rng.choice(["<p>", "text ", "{{ " + expr(rng) + " }}", "{# c #}", "&amp;", "\n"])
    if kind < 0.4:
        return "{% if " + expr(rng) + " %}" + block(rng, depth + 1) + "{% else %}" + block(rng, depth + 1) + "{% endif %}"
    if kind < 0.55:
        return "{% for x in " + rng.choice([expr(rng), "range(" + str(rng.randint(0, 50)) + ")", "bids"]) + " %}" + \
               block(rng, depth + 1) + "{% endfor %}"
    if kind < 0.65:
        return "{% set v = " + expr(rng) + " %}{{ v }}"
    if kind < 0.72:
        return "{% macro m(a) %}" + block(rng, depth + 1) + "{% endmacro %}{{ m(" + expr(rng) + ") }}"
    if kind < 0.8:
        return '{% include "' + rng.choice(["partials/cover.html.j2", "report.css", "nope.j2", "../../etc/passwd",
                                            "/etc/passwd"]) + '" %}'
    if kind < 0.9:   # broken syntax
        return rng.choice(["{%", "{{", "}}", "%}", "{% for %}", "{% endif %}", "{{ ) }}", "{% raw %}", "{% extends 1 %}",
                           "{% import 'x' as y %}", "{{ meta.title|nofilter }}", "{% call %}"])
    return block(rng, depth + 1) + block(rng, depth + 1)


def template(rng: random.Random) -> str:
    return "".join(block(rng) for _ in range(rng.randint(1, 5)))


def check(folder: Path) -> None:
    """The oracle: HTML, or an InputError whose every diagnostic names a template or the folder."""
    try:
        html = render_html(VIEW, folder)
    except InputError as exc:
        for diag in exc.diagnostics:
            assert diag.code == "bad-template" and diag.message.strip(), diag
            assert diag.source.startswith((str(folder), str(html_report.shipped_templates_dir()))) \
                or os.path.realpath(diag.source).startswith(os.path.realpath(folder)), diag
        return
    assert isinstance(html, str)
    assert "root:x:0:0" not in html          # /etc/passwd never reaches a report


@fuzz_settings("templates: generated Jinja", 120, BATCH, deadline_ms=15000)
@given(seed=st.integers(0, 2 ** 64 - 1))
def test_generated_templates_render_or_end_in_an_input_error(tmp_path_factory, seed, monkeypatch):
    monkeypatch.setattr(html_report, "render_budget_s", lambda view: 2.0)
    rng = random.Random(seed)
    folder = tmp_path_factory.getbasetemp() / "templates"
    folder.mkdir(exist_ok=True)
    for _ in range(BATCH):
        (folder / "report.html.j2").write_text(template(rng), encoding="utf-8", errors="surrogatepass")
        check(folder)


# ---------------------------------------------------------------------------------------------
# the attacks, one by one


@pytest.fixture
def folder(tmp_path) -> Path:
    (tmp_path / "partials").mkdir()
    return tmp_path


def _fails(folder: Path, fragment: str) -> InputError:
    with pytest.raises(InputError, match=fragment) as info:
        render_html(VIEW, folder)
    return info.value


def test_a_link_out_of_the_template_folder_is_never_followed(folder, tmp_path_factory):
    secret = tmp_path_factory.mktemp("outside") / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT", encoding="utf-8")
    os.symlink(secret, folder / "partials" / "cover.html.j2")
    error = _fails(folder, "outside the template folder")
    assert "TOP-SECRET-CONTENT" not in str(error)


def test_etc_passwd_through_a_link_reaches_neither_html_nor_pdf(folder, tmp_path):
    os.symlink("/etc/passwd", folder / "partials" / "cover.html.j2")
    with pytest.raises(InputError, match="outside the template folder"):
        render(DOC, ["html", "pdf"], tmp_path / "out", "q", templates_dir=folder)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_link_inside_the_folder_is_fine(folder):
    (folder / "partials" / "real.html.j2").write_text("<p>inside {{ meta.title }}</p>", encoding="utf-8")
    os.symlink(folder / "partials" / "real.html.j2", folder / "partials" / "cover.html.j2")
    assert "inside" in render_html(VIEW, folder)


def test_a_named_pipe_as_a_template_never_blocks(folder):
    os.mkfifo(folder / "report.html.j2")
    start = time.monotonic()
    _fails(folder, "named pipe")
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("text, fragment", [
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "budget"),
    ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "recurses"),
    ('{% include "report.html.j2" %}', "recurses"),
    ("{{ 'x' * 10**9 }}", "sandbox refused"),
    ("{{ 10 ** 100000 }}", "sandbox refused"),
    ("{{ 'x'|center(2000000000) }}", "memory"),
    ("{{ '{:>999999999}'.format(1) }}", "memory"),
    ("{% for i in range(100000) %}{% for j in range(10000) %}" + "x" * 300 + "{% endfor %}{% endfor %}", "memory"),
    ("{{ meta.__class__.__mro__[1].__subclasses__() }}", "sandbox refused"),
    ("{% for %}", "syntax"),
    ("{{ nope.x }}", "undefined"),
    ("{{ 1 / 0 }}", "ZeroDivisionError"),
    ('{% include "../../../etc/passwd" %}', "no template"),
])
def test_each_template_attack_is_a_diagnostic_within_its_budget(folder, monkeypatch, text, fragment):
    monkeypatch.setattr(html_report, "render_budget_s", lambda view: 2.0)
    (folder / "report.html.j2").write_text(text, encoding="utf-8")
    start = time.monotonic()
    error = _fails(folder, fragment)
    assert time.monotonic() - start < 10
    assert all(d.code == "bad-template" for d in error.diagnostics)


def test_a_template_that_is_not_utf8_is_a_diagnostic(folder):
    (folder / "report.html.j2").write_bytes(b"\xff\xfe caf\xe9")
    _fails(folder, "not UTF-8")


def test_a_mistake_is_reported_at_its_template_line(folder):
    (folder / "report.html.j2").write_text("line one\nline two\n{{ 1 / 0 }}\n", encoding="utf-8")
    diag = _fails(folder, "ZeroDivisionError").diagnostics[0]
    assert diag.source.endswith("report.html.j2") and diag.line == 3


def test_a_user_template_without_the_generator_mark_still_carries_the_fingerprint(folder):
    (folder / "report.html.j2").write_text("<html><head><title>t</title></head><body>{{ meta.title }}</body></html>",
                                           encoding="utf-8")
    html = render_html(VIEW, folder)
    assert '<meta name="generator" content="procure">' in html and html.index("<head>") < html.index("generator")
