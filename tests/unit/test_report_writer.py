"""render(): targets checked before rendering, every output atomic, nothing partial left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import procure.report as report
from procure.errors import InputError
from procure.report import FORMATS, render
from procure.jsontext import to_json_bytes
from procure.document import QuoteDocument, load_quote
from procure.report.writer import write_all

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "quote_sample.json"


@pytest.fixture(scope="module")
def doc() -> QuoteDocument:
    return load_quote(SAMPLE.read_bytes(), "sample")


def test_formats_are_the_public_contract():
    assert FORMATS == ("pdf", "xlsx", "json", "html")


def test_json_and_html_are_written_with_the_slug(doc, tmp_path):
    paths = render(doc, ["json", "html"], tmp_path / "out", "quote")
    assert paths == [tmp_path / "out" / "quote.json", tmp_path / "out" / "quote.html"]
    assert (tmp_path / "out" / "quote.json").read_bytes() == to_json_bytes(doc.to_data())
    assert (tmp_path / "out" / "quote.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(os.listdir(tmp_path / "out")) == [".procure-manifest", "quote.html", "quote.json"]


def test_existing_report_is_refused_before_anything_is_rendered(doc, tmp_path, monkeypatch):
    (tmp_path / "quote.json").write_bytes(b"old")
    calls = []
    monkeypatch.setattr(report, "render_bytes", lambda *a, **k: calls.append(a) or {})
    with pytest.raises(InputError) as info:
        render(doc, ["html", "json"], tmp_path, "quote")
    diag = info.value.diagnostics[0]
    assert diag.code == "exists" and "quote.json" in diag.message and "--force" in diag.message
    assert calls == [] and (tmp_path / "quote.json").read_bytes() == b"old"
    assert not (tmp_path / "quote.html").exists()


def test_force_overwrites(doc, tmp_path):
    (tmp_path / "quote.json").write_bytes(b"old")
    render(doc, ["json"], tmp_path, "quote", force=True)
    assert (tmp_path / "quote.json").read_bytes() == to_json_bytes(doc.to_data())


def test_a_renderer_that_raises_leaves_previous_reports_intact_and_no_temp_files(doc, tmp_path, monkeypatch):
    import procure.report.xlsx_report as xlsx_report

    (tmp_path / "quote.json").write_bytes(b"previous json")
    (tmp_path / "quote.xlsx").write_bytes(b"previous xlsx")

    def broken(_doc):
        raise RuntimeError("renderer failed")

    monkeypatch.setattr(xlsx_report, "render_xlsx", broken)
    with pytest.raises(RuntimeError):
        render(doc, ["json", "xlsx"], tmp_path, "quote", force=True)
    assert (tmp_path / "quote.json").read_bytes() == b"previous json"
    assert (tmp_path / "quote.xlsx").read_bytes() == b"previous xlsx"
    assert sorted(os.listdir(tmp_path)) == ["quote.json", "quote.xlsx"]


def test_a_failing_write_removes_every_temp_file(tmp_path, monkeypatch):
    (tmp_path / "a.json").write_bytes(b"old a")
    real_fsync = os.fsync
    calls = []

    def failing_fsync(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise OSError("disk full")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(InputError, match="unwritable"):    # an environment error is exit 1, not a bug
        write_all([(tmp_path / "a.json", b"new a"), (tmp_path / "b.json", b"new b")])
    assert sorted(os.listdir(tmp_path)) == ["a.json"]
    assert (tmp_path / "a.json").read_bytes() == b"old a"


def test_write_all_replaces_content_with_an_ordinary_file_mode(tmp_path):
    target = tmp_path / "deep" / "x.bin"
    write_all([(target, b"1")], force=True)
    write_all([(target, b"22")], force=True)
    assert target.read_bytes() == b"22" and os.listdir(target.parent) == ["x.bin"]
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask


@pytest.mark.parametrize("kwargs, fragment", [
    ({"formats": ["docx"]}, "unknown format"),
    ({"formats": []}, "no output format"),
    ({"slug": "../escape"}, "report name"),
    ({"lang": "fr"}, "unsupported language"),
    ({"page_size": "A3"}, "unsupported page size"),
    ({"templates_dir": Path("/nonexistent/templates")}, "does not exist"),
])
def test_bad_options_are_input_errors(doc, tmp_path, kwargs, fragment):
    args = {"formats": ["json"], "slug": "quote"} | kwargs
    with pytest.raises(InputError) as info:
        render(doc, args.pop("formats"), tmp_path, args.pop("slug"), **args)
    assert fragment in str(info.value)
    assert os.listdir(tmp_path) == []


def test_a_saved_document_missing_required_fields_writes_nothing(doc, tmp_path):
    from procure.api import render_saved

    broken = doc.to_data()
    del broken["bids"][0]["cost_per_million_tokens"]
    saved = tmp_path / "broken.json"
    saved.write_bytes(to_json_bytes(broken))
    with pytest.raises(InputError) as info:
        render_saved(saved, tmp_path / "out", ["json", "html"])
    assert "bids[0].cost_per_million_tokens" in str(info.value)
    assert not (tmp_path / "out").exists()


def test_importing_the_report_package_is_cheap():
    code = ("import sys, procure.report, procure.jsontext, procure.report.writer\n"
            "print(','.join(m for m in ('jinja2','weasyprint','openpyxl','rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _minimal(doc: QuoteDocument, bids: bool) -> QuoteDocument:
    """One bid that could not be costed (no step time, no cost), or no bids at all."""
    data = doc.to_data()
    bare = dict(data["bids"][0], step_time_s=None, time_to_train_days=None, total_cost=None,
                cost_per_million_tokens=None, mfu=None, hfu=None, tokens_per_s=None, tokens_per_s_per_gpu=None,
                goodput=None, billed_hours=None, energy_mwh=None, flags=[], cost_lines=[], uncertainty=None,
                sensitivity=[], measured=None, scaling=None, plan=None, modeled=None, step_time_terms={},
                rank=1, id="x", vendor="Only Vendor")
    data.update(title="Minimal", currency="EUR", bids=[bare] if bids else [], ranking=["x"] if bids else [],
                recommendation={"bid": None, "text": "No bid can be costed."})
    return QuoteDocument.model_validate(data)


@pytest.mark.parametrize("bids", [True, False], ids=["one-bare-bid", "no-bids"])
def test_a_minimal_document_renders_in_every_format(doc, bids, tmp_path):
    document = _minimal(doc, bids)
    paths = render(document, list(FORMATS), tmp_path, "minimal")
    assert [p.suffix for p in paths] == [".pdf", ".xlsx", ".json", ".html"]
    html = (tmp_path / "minimal.html").read_text(encoding="utf-8")
    assert "Minimal" in html and ("n/a" in html or not document.bids)
    assert (tmp_path / "minimal.pdf").read_bytes().startswith(b"%PDF-")
