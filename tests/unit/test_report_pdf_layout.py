"""A visual check of the PDF: every page rendered to an image and its text boxes read back, then
asserted on layout signals a reader would notice.

- no word outside the page, nor outside the frame between the left and right margins (a table
  wider than the frame pushes its last column there);
- no page less than a fifth full, except the last page of a section (a bid, the comparison);
- ids and assumption keys whole: a bid id in the ranking and a key in the assumptions never
  broken across lines;
- page 1 answers the question: the recommended bid and its cost per million tokens.

Needs WeasyPrint, pdftotext and pdftoppm (poppler-utils); skips with a reason without them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from procure.document import load_quote
from procure.report.formatting import Formatter
from procure.report.messages import Messages

TESTS = Path(__file__).resolve().parents[1]
DOCUMENTS = {"example": TESTS / "cases" / "example" / "expected" / "result.json",   # examples/cluster.yaml
             "sample": TESTS / "fixtures" / "quote_sample.json"}                   # hostile text, EUR, MoE
MM = 72 / 25.4
SIDE_MARGIN_PT = 14 * MM          # templates/report.css: @page margin 20mm 14mm 16mm 14mm
TOP_MARGIN_PT, BOTTOM_MARGIN_PT = 20 * MM, 16 * MM
SLACK_PT = 1.0
MIN_FILL = 0.2
XHTML = "{http://www.w3.org/1999/xhtml}"


def _tools() -> None:
    for tool in ("pdftotext", "pdftoppm"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} (poppler-utils) is not installed")
    pytest.importorskip("weasyprint")


@pytest.fixture(scope="module", params=[("example", "en"), ("example", "zh-TW"), ("sample", "en")],
                ids=lambda p: "-".join(p))
def rendered(request, tmp_path_factory):
    _tools()
    from procure.report import render_bytes

    name, lang = request.param
    doc = load_quote(DOCUMENTS[name].read_bytes(), name)
    folder = tmp_path_factory.mktemp(f"pdf-{name}-{lang}")
    pdf = folder / "report.pdf"
    pdf.write_bytes(render_bytes(doc, ["pdf"], lang=lang)["pdf"])
    return lang, doc.to_data(), pdf, _pages(pdf), _fills(pdf, folder)


def _pages(pdf: Path) -> list[dict]:
    """Per page: its size and every word with its box (pdftotext -bbox-layout)."""
    xml = subprocess.run(["pdftotext", "-bbox-layout", str(pdf), "-"], capture_output=True, check=True).stdout
    root = ET.fromstring(xml)
    pages = []
    for page in root.iter(XHTML + "page"):
        words = [(float(w.get("xMin")), float(w.get("yMin")), float(w.get("xMax")), float(w.get("yMax")), w.text or "")
                 for w in page.iter(XHTML + "word")]
        lines = [" ".join(w.text or "" for w in line.iter(XHTML + "word")) for line in page.iter(XHTML + "line")]
        pages.append({"width": float(page.get("width")), "height": float(page.get("height")), "words": words,
                      "lines": lines})
    return pages


def _fills(pdf: Path, folder: Path) -> list[float]:
    """How full each page is: the lowest inked row of its body (between the running head and the
    footer) as a share of the body's height, read from a greyscale rendering of the page."""
    subprocess.run(["pdftoppm", "-gray", "-r", "24", str(pdf), str(folder / "page")], check=True)
    fills = []
    for image in sorted(folder.glob("page-*.pgm")):
        width, height, pixels = _read_pgm(image.read_bytes())
        top = int(height * TOP_MARGIN_PT / 841.89)
        bottom = height - int(height * BOTTOM_MARGIN_PT / 841.89)
        inked = [y for y in range(top, bottom) if min(pixels[y * width:(y + 1) * width]) < 200]
        fills.append(((max(inked) - top) / (bottom - top)) if inked else 0.0)
    return fills


def _read_pgm(data: bytes) -> tuple[int, int, bytes]:
    match = re.match(rb"P5\s+(\d+)\s+(\d+)\s+(\d+)\s", data)
    assert match, "pdftoppm -gray writes binary PGM"
    width, height = int(match.group(1)), int(match.group(2))
    return width, height, data[match.end():match.end() + width * height]


def _section(page: dict) -> str:
    """The running head on the right (the section), read from the words in the top margin."""
    head = [w for w in page["words"] if w[3] < TOP_MARGIN_PT and w[0] > page["width"] / 2]
    return " ".join(w[4] for w in head) or "cover"


def test_no_word_outside_the_page_or_the_frame(rendered):
    _, _, _, pages, _ = rendered
    for number, page in enumerate(pages, 1):
        left, right = SIDE_MARGIN_PT - SLACK_PT, page["width"] - SIDE_MARGIN_PT + SLACK_PT
        outside = [w for w in page["words"] if w[0] < left or w[2] > right or w[1] < 0 or w[3] > page["height"]]
        assert not outside, f"page {number}: text beyond the frame (a table wider than it?): {outside[:5]}"


def test_no_page_is_less_than_a_fifth_full_except_the_last_of_a_section(rendered):
    _, _, _, pages, fills = rendered
    assert len(fills) == len(pages)
    sections = [_section(p) for p in pages]
    for i, fill in enumerate(fills):
        last_of_section = i == len(pages) - 1 or sections[i + 1] != sections[i]
        assert fill >= MIN_FILL or last_of_section, f"page {i + 1} ({sections[i]}) is only {fill:.0%} full"


def test_bid_ids_are_never_broken_in_the_ranking(rendered):
    lang, doc, _, pages, _ = rendered
    heading = Messages(lang)("summary.ranking")
    summary = next(p for p in pages if any(heading in line for line in p["lines"]))
    for bid in doc["bids"]:
        assert any(re.search(rf"(^|\s){re.escape(bid['id'])}(\s|$)", line) for line in summary["lines"]), bid["id"]


def test_assumptions_are_named_in_words_never_by_key(rendered):
    lang, doc, _, pages, _ = rendered
    words = {w[4] for page in pages for w in page["words"]}
    text = " ".join(" ".join(page["lines"]) for page in pages)
    for row in doc["assumptions"]:        # a one-word key ("seed", "pue") is a word like any other
        assert "_" not in row["key"] or row["key"] not in words, f"assumption key {row['key']} is printed"
    if lang == "en":
        for row in doc["assumptions"]:
            assert row["label"].split()[0] in text


def test_small_assumption_values_are_readable(rendered):
    lang, doc, _, pages, _ = rendered
    text = "\n".join(line for page in pages for line in page["lines"])
    assert "0.0000197" not in text
    tiny = next(a for a in doc["assumptions"] if a["key"] == "failures_per_gpu_hour")
    assert Formatter(lang, doc["currency"]).measure(tiny["value"]).split(" ×")[0] in text


def test_page_one_gives_the_verdict(rendered):
    lang, doc, _, pages, _ = rendered
    winner = next(b for b in doc["bids"] if b["id"] == doc["recommendation"]["bid"])
    first = " ".join(pages[0]["lines"])
    assert winner["id"] in first
    assert Formatter(lang, doc["currency"]).rate(winner["cost_per_million_tokens"]) in first


def test_cost_rates_name_their_factors_in_words(rendered):
    _, _, _, pages, _ = rendered
    text = " ".join(line for page in pages for line in page["lines"])
    for internal in ("depreciable_fraction", "used_hours", "kw_per_gpu"):
        assert internal not in text
