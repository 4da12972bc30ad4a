"""The PDF report: text of every bid, flag and source; pages; fonts; attachments; no fetching."""

from __future__ import annotations

import copy
import ctypes.util
import shutil
import subprocess
from pathlib import Path

import pytest

from procure.report import render_bytes
from procure.document import QuoteDocument, load_quote
from procure.report.pdf_report import FetchRefused, render_pdf, safe_fetcher_class

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "quote_sample.json"
needs_poppler = pytest.mark.skipif(shutil.which("pdftotext") is None,
                                   reason="pdftotext (poppler-utils) is not installed")


def pdf_text(pdf: bytes, tmp_path: Path, layout: bool = False) -> str:
    path = tmp_path / "r.pdf"
    path.write_bytes(pdf)
    args = ["pdftotext", "-enc", "UTF-8"] + (["-layout"] if layout else []) + [str(path), "-"]
    return subprocess.run(args, capture_output=True, check=True).stdout.decode("utf-8")


def poppler(tool: str, pdf: bytes, tmp_path: Path) -> str:
    path = tmp_path / "p.pdf"
    path.write_bytes(pdf)
    return subprocess.run([tool, str(path)], capture_output=True, check=True).stdout.decode("utf-8")


@pytest.fixture(scope="module")
def doc() -> QuoteDocument:
    return load_quote(SAMPLE.read_bytes(), "sample")


@pytest.fixture(scope="module")
def data(doc) -> dict:
    return doc.to_data()


@pytest.fixture(scope="module")
def small(data) -> QuoteDocument:
    """Two bids, so the variant tests render a short PDF."""
    out = copy.deepcopy(data)
    out["bids"] = [b for b in data["bids"] if b["id"] in ("tw-cloud", "acme")]
    out["ranking"] = ["tw-cloud", "acme"]
    return QuoteDocument.model_validate(out)


@pytest.fixture(scope="module")
def pdf_en(doc) -> bytes:
    return render_bytes(doc, ["pdf"], lang="en", attachments=[("cluster.yaml", b"schema: procure/v1\n"),
                                                               ("logs/acme/burnin.log", b"iteration 1\n")])["pdf"]


def test_pdf_starts_like_a_pdf_and_has_dates_from_as_of(pdf_en):
    assert pdf_en.startswith(b"%PDF-")
    assert b"D:20261201000000" in pdf_en
    assert b"/CreationDate" in pdf_en


@needs_poppler
def test_pdf_text_has_every_bid_flag_and_source(data, pdf_en, tmp_path):
    text = pdf_text(pdf_en, tmp_path)
    flat = " ".join(text.split())
    for bid in data["bids"]:
        assert bid["id"] in flat
    assert "台灣雲端股份有限公司" in flat
    assert '<img src="file:///etc/hostname">' in flat      # printed as text
    assert '=HYPERLINK("http://x","y")' in flat
    for code in {f["code"] for b in data["bids"] for f in b["flags"]}:
        assert code in flat
    squeeze = lambda t: t.replace(" ", "").replace("-", "")  # noqa: E731  (lines wrap at hyphens)
    squeezed = squeeze(flat)
    for source in data["sources"]:        # by what it is, not by its catalog key
        assert squeeze(source["label"]) in squeezed
    for item in data["inputs"]:
        assert item["sha256"][:16] in squeezed
    for heading in ("Executive summary", "Comparison", "Methodology", "Assumptions", "Sources"):
        assert heading in flat


@needs_poppler
def test_pdf_page_count_and_numbering(pdf_en, tmp_path):
    text = pdf_text(pdf_en, tmp_path)
    pages = text.count("\f")
    assert 12 <= pages <= 24, pages
    assert f"Page {pages} of {pages}" in text
    assert "Page 1 of" not in text.split("\f")[0]     # no footer on the cover


@needs_poppler
def test_pdf_text_is_identical_for_the_same_document(small, tmp_path):
    """The product promises identical PDF text; identical bytes only where font subsetting is
    deterministic (WeasyPrint's HarfBuzz subsetter), which the next test checks where present."""
    first = render_bytes(small, ["pdf"])["pdf"]
    second = render_bytes(small, ["pdf"])["pdf"]
    assert pdf_text(first, tmp_path) == pdf_text(second, tmp_path)


@pytest.mark.skipif(ctypes.util.find_library("harfbuzz-subset") is None,
                    reason="libharfbuzz-subset is absent: WeasyPrint's fallback font subsetting is not byte-stable")
def test_pdf_bytes_are_identical_where_subsetting_is_deterministic(small):
    assert render_bytes(small, ["pdf"])["pdf"] == render_bytes(small, ["pdf"])["pdf"]


@pytest.mark.skipif(shutil.which("pdfdetach") is None, reason="pdfdetach (poppler-utils) is not installed")
def test_input_files_are_attached(pdf_en, tmp_path):
    path = tmp_path / "a.pdf"
    path.write_bytes(pdf_en)
    out = subprocess.run(["pdfdetach", "-list", str(path)], capture_output=True, check=True).stdout.decode()
    assert "2 embedded files" in out and "cluster.yaml" in out and "burnin.log" in out


@pytest.mark.skipif(shutil.which("pdfinfo") is None, reason="pdfinfo (poppler-utils) is not installed")
def test_letter_and_a4_page_sizes(small, tmp_path):
    letter = poppler("pdfinfo", render_bytes(small, ["pdf"], page_size="Letter")["pdf"], tmp_path)
    assert "612 x 792 pts (letter)" in letter


@pytest.mark.skipif(shutil.which("pdffonts") is None or shutil.which("fc-list") is None,
                    reason="pdffonts or fc-list is not installed")
def test_traditional_chinese_renders_with_a_cjk_font(small, tmp_path):
    cjk = subprocess.run(["fc-list", ":lang=zh-tw", "family"], capture_output=True, text=True).stdout
    if "Noto Sans CJK TC" not in cjk:
        pytest.skip("fonts-noto-cjk is not installed")
    pdf = render_bytes(small, ["pdf"], lang="zh-TW")["pdf"]
    assert "Noto-Sans-CJK-TC" in poppler("pdffonts", pdf, tmp_path)
    text = " ".join(pdf_text(pdf, tmp_path).split())
    for words in ("摘要", "依每百萬 token 成本排名", "台灣雲端股份有限公司", "方法", "資料來源", "US$"):
        assert words in text


def test_the_fetcher_serves_only_the_template_folder_and_data_urls(tmp_path):
    root = tmp_path / "templates"
    root.mkdir()
    (root / "logo.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>')
    fetcher = safe_fetcher_class()(root)
    ok = fetcher.fetch((root / "logo.svg").as_uri())
    assert b"<svg" in ok.read()
    assert fetcher.fetch("data:text/plain,hi").read() == b"hi"
    for url in ("file:///etc/hostname", "http://127.0.0.1:9/x.png", "https://example.com/a.css",
                (root / ".." / "secret").resolve().as_uri(), "file://otherhost/etc/hostname", "ftp://x/y"):
        with pytest.raises(FetchRefused):
            fetcher.fetch(url)


def test_no_url_is_opened_for_hostile_text_or_hostile_templates(small, tmp_path, monkeypatch):
    import weasyprint

    # a user template's layout runs in a forked child (report.pdf_guard): the spy logs to a file
    log = tmp_path / "opened.log"
    log.write_text("")
    original = weasyprint.URLFetcher.fetch

    def spy(self, url, headers=None):
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(url + "\n")
        return original(self, url, headers)

    def opened() -> list[str]:
        return log.read_text(encoding="utf-8").splitlines()

    monkeypatch.setattr(weasyprint.URLFetcher, "fetch", spy)
    render_bytes(small, ["pdf"])
    assert opened() == []
    folder = tmp_path / "tpl"
    folder.mkdir()
    (folder / "report.html.j2").write_text(
        '<html><body><p>{{ meta.title }}</p><img src="file:///etc/hostname"><img src="http://127.0.0.1:9/x.png">'
        '<link rel="stylesheet" href="https://example.com/x.css"><img src="logo.svg"></body></html>')
    (folder / "logo.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>')
    pdf = render_bytes(small, ["pdf"], templates_dir=folder)["pdf"]
    assert pdf.startswith(b"%PDF-")
    assert opened() == [(folder / "logo.svg").resolve().as_uri()]


def test_render_pdf_uses_the_given_fetcher(tmp_path):
    fetcher = safe_fetcher_class()(tmp_path)
    pdf = render_pdf('<p>x</p><img src="file:///etc/hostname">', base_dir=tmp_path, as_of="2026-12-01",
                     fetcher=fetcher)
    assert pdf.startswith(b"%PDF-") and fetcher.requested == ["file:///etc/hostname"]
