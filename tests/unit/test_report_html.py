"""The HTML report: golden file, escaping, self-contained, sandboxed user templates."""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

import pytest
from markupsafe import escape

from procure.errors import InputError
from procure.report import render_bytes
from procure.report.document import build_view
from procure.report.html_report import page_css, render_html
from procure.document import load_quote

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SAMPLE = FIXTURES / "quote_sample.json"
UPDATE = os.environ.get("PROCURE_UPDATE_GOLDENS") == "1"


@pytest.fixture(scope="module")
def doc():
    return load_quote(SAMPLE.read_bytes(), "sample")


@pytest.fixture(scope="module")
def html_en(doc) -> str:
    return render_bytes(doc, ["html"], lang="en")["html"].decode("utf-8")


def check_golden(name: str, actual: str) -> None:
    """Compare with tests/fixtures/report/<name>; PROCURE_UPDATE_GOLDENS=1 (--update-goldens) rewrites it."""
    path = FIXTURES / "report" / name
    if UPDATE or not path.exists():
        path.write_text(actual, encoding="utf-8")
        if not UPDATE:
            pytest.fail(f"golden {path} was missing and has been written; review and commit it")
        return
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(list(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                                 str(path), "actual"))[:80])
        pytest.fail(f"{name} differs from the golden file (rerun with --update-goldens if intended):\n{diff}")


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_html_matches_golden(doc, lang):
    html = render_bytes(doc, ["html"], lang=lang)["html"].decode("utf-8")
    check_golden(f"quote_sample.{lang}.html", html)


def test_html_is_deterministic(doc, html_en):
    assert render_bytes(doc, ["html"], lang="en")["html"].decode("utf-8") == html_en


def test_hostile_vendor_names_are_text_not_markup(html_en):
    assert '<img src="file:///etc/hostname">' not in html_en
    assert "&lt;img src=&#34;file:///etc/hostname&#34;&gt;" in html_en
    assert re.search(r"<img\b", html_en) is None
    assert "台灣雲端股份有限公司" in html_en


def test_html_is_self_contained(html_en):
    assert "<style>" in html_en and "@page" in html_en
    assert re.search(r"""(src|href)\s*=\s*["'](https?:|file:|//)""", html_en) is None
    assert re.search(r"<link\b", html_en) is None
    assert html_en.count("<svg ") >= 3 + 4 * 2  # comparison charts + per bid charts


def test_every_bid_flag_and_source_is_in_the_html(doc, html_en):
    for bid in doc.bids:
        assert f">{bid.id}<" in html_en
        for flag in bid.flags:
            assert flag.code in html_en
    for source in doc.sources:       # by what it is and where it was read, not by its catalog key
        assert str(escape(source.label)) in html_en
        assert str(escape("; ".join(source.source))) in html_en
    for item in doc.inputs:
        assert item.sha256 in html_en


def test_page_css_has_size_and_localised_page_numbers(doc):
    css = page_css(build_view(doc, "zh-TW", "Letter"))
    assert "size: letter" in css
    assert '"第 " counter(page) " 頁，共 " counter(pages) " 頁"' in css


def test_a_user_template_folder_overrides_one_file_and_keeps_the_rest(doc, tmp_path):
    (tmp_path / "partials").mkdir()
    (tmp_path / "partials" / "cover.html.j2").write_text(
        "<section class='cover'><h1>Custom cover {{ meta.title }}</h1><p>{{ ranking[2].vendor }}</p></section>",
        encoding="utf-8")
    html = render_html(build_view(doc, "en"), tmp_path)
    assert "Custom cover Pretraining cluster" in html
    assert "&lt;img src=" in html and '<img src="file' not in html   # autoescape applies to user templates
    assert "Executive summary" in html


def test_user_templates_run_in_a_sandbox(doc, tmp_path):
    (tmp_path / "report.html.j2").write_text("{{ meta.__class__.__mro__[1].__subclasses__() }}", encoding="utf-8")
    with pytest.raises(InputError, match="sandbox refused"):    # the sandbox's SecurityError, as a diagnostic
        render_html(build_view(doc, "en"), tmp_path)


def test_the_cover_names_the_attached_files_only_when_there_are_some(doc, html_en):
    with_files = render_bytes(doc, ["html"], attachments=[("cluster.yaml", b"x")])["html"].decode("utf-8")
    assert "carries these files as attachments: cluster.yaml" in with_files
    assert "attachments" not in html_en
