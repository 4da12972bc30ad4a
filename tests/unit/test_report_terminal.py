"""The terminal table: ranked rows, flags explained, rich markup in data printed literally."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from rich.console import Console

from procure.report import render_terminal
from procure.document import load_quote, validate_quote

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "quote_sample.json"


@pytest.fixture(scope="module")
def doc() -> dict:
    return load_quote(SAMPLE.read_bytes(), "sample").to_data()


def printed(doc: dict, lang: str = "en") -> str:
    """The terminal report of ``doc`` (plain data a test may have edited, validated again)."""
    console = Console(record=True, width=200, color_system=None)
    render_terminal(validate_quote(doc, "edited"), console, lang=lang)
    return console.export_text()


def test_rows_in_rank_order_with_figures_and_flags(doc):
    text = printed(doc)
    positions = [text.index(f" {bid_id} ") for bid_id in doc["ranking"]]
    assert positions == sorted(positions)
    for needle in ("$7,267,010.16", "$0.4845", "74.9 days", "39.0%", "H200 SXM 141GB × 3,072", "n/a",
                   "台灣雲端股份有限公司", '<img src="file:///etc/hostname">', "price-missing"):
        assert needle in text
    assert "Flags explained" in text
    assert "physical floor" in text


def test_rich_markup_in_data_is_printed_literally(doc):
    odd = copy.deepcopy(doc)
    odd["bids"][0]["vendor"] = "[bold red]Boom[/bold red]"
    odd["bids"][0]["flags"][0]["reason"] = "[link=http://x]click[/link]"
    text = printed(odd)
    assert "[bold red]Boom[/bold red]" in text
    assert "[link=http://x]click[/link]" in text


def test_traditional_chinese_table(doc):
    text = printed(doc, "zh-TW")
    assert "每百萬 token 成本" in text and "US$7,267,010.16" in text and "標記說明" in text


def test_a_quote_without_flags_says_so(doc):
    clean = copy.deepcopy(doc)
    for bid in clean["bids"]:
        bid["flags"] = []
    assert "No bid carries a flag." in printed(clean)


def test_figures_never_wrap_in_a_wide_or_a_narrow_terminal():
    import io
    from pathlib import Path

    from rich.console import Console

    from procure.report import render_terminal

    sample = Path(__file__).resolve().parents[1] / "fixtures" / "quote_sample.json"
    from procure.document import load_quote

    doc = load_quote(sample.read_bytes(), "sample")
    for width in (80, 150):
        out = io.StringIO()
        render_terminal(doc, Console(file=out, width=width, no_color=True))
        text = out.getvalue()
        for bid in doc.bids:
            if bid.cost_per_million_tokens is not None:
                # the formatted cost per Mtok of every priced bid appears whole on one line
                rate = f"{bid.cost_per_million_tokens:.4f}"
                assert any(rate in line for line in text.splitlines()), (width, rate)
