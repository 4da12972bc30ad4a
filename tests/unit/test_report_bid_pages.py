"""--bid-pages: which bids get a detail page in the HTML and PDF, and a large report's summary
(every bid in the ranking, charts of the top bids, flags and orders shortened, counted)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from procure.cli import main
from procure.document import QuoteDocument, load_quote, validate_quote
from procure.report import render_bytes
from procure.report.bid_pages import (CHART_MAX_BARS, DEFAULT_TOP, FLAG_INSTANCES_SHOWN, LARGE_REPORT_BIDS,
                                      ORDER_IDS_SHOWN, BidPages, parse_bid_pages, resolve, selected)
from procure.report.document import build_view

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_RESULT = REPO / "tests" / "cases" / "example" / "expected" / "result.json"
EXAMPLE = REPO / "examples" / "cluster.yaml"
SAMPLE = REPO / "tests" / "fixtures" / "quote_sample.json"
BID_SECTION = re.compile(r'<section class="bid" id="bid-[0-9]+-([^"]+)"')   # anchor: rank-id


def example_doc() -> dict:
    return load_quote(EXAMPLE_RESULT.read_bytes(), "example").to_data()


def many_bids(n: int, recommended_rank: int) -> QuoteDocument:
    """The example's five bids cloned into ``n``, ranked in clone order, the recommended bid at
    ``recommended_rank`` (1-based)."""
    doc = example_doc()
    bids = []
    for i in range(n):
        bid = copy.deepcopy(doc["bids"][i % len(doc["bids"])])
        bid["id"], bid["rank"] = f"bid-{i:03d}", i + 1
        bids.append(bid)
    ids = [b["id"] for b in bids]
    doc.update(bids=bids, ranking=ids, rankings={"commitment": ids, "run": ids[::-1]},
               recommendation=dict(doc["recommendation"], bid=ids[recommended_rank - 1]))
    doc["sensitivity_summary"] = dict(doc["sensitivity_summary"], winner=ids[0])
    return validate_quote(doc, "many bids")


@pytest.mark.parametrize("text, expected", [("all", BidPages("all")), ("none", BidPages("none")),
                                            ("top:3", BidPages("top", 3)), (" TOP:12 ", BidPages("top", 12)),
                                            ("top:1000", BidPages("top", 1000)), (None, None), ("", None)])
def test_parse(text, expected):
    assert parse_bid_pages(text) == expected


@pytest.mark.parametrize("text", ["top:0", "top:", "top:-2", "top:1001", "top:3x", "some", "top3", "al"])
def test_parse_refuses_with_the_accepted_forms(text):
    with pytest.raises(ValueError, match="use all, none or top:N"):
        parse_bid_pages(text)


def test_default_is_every_page_up_to_the_threshold_then_the_top():
    assert resolve(None, LARGE_REPORT_BIDS) == BidPages("all")
    assert resolve(None, LARGE_REPORT_BIDS + 1) == BidPages("top", DEFAULT_TOP)
    assert resolve(BidPages("all"), 1000) == BidPages("all")
    assert resolve(BidPages("none"), 3) == BidPages("none")


def test_the_top_n_and_the_recommended_bid_when_it_ranks_below_them():
    bid = load_quote(EXAMPLE_RESULT.read_bytes(), "example").bids[0]
    ranked = [bid.model_copy(update={"id": f"b{i}"}) for i in range(20)]
    assert [b.id for b in selected(ranked, BidPages("top", 3), "b1")] == ["b0", "b1", "b2"]
    assert [b.id for b in selected(ranked, BidPages("top", 3), "b12")] == ["b0", "b1", "b2", "b12"]
    assert selected(ranked, BidPages("none"), "b12") == []
    assert len(selected(ranked, BidPages("all"), None)) == 20
    assert len(selected(ranked, BidPages("top", 50), None)) == 20


def test_a_large_report_defaults_to_the_top_bids_and_says_so():
    doc = many_bids(60, recommended_rank=25)
    view = build_view(doc)
    assert len(view["bids"]) == DEFAULT_TOP + 1
    assert "bid-024" in view["bids"][-1]["heading"] and "bid-010" not in str(view["bids"])
    assert view["bid_pages_note"] == ("Detail pages for the top 10 of 60 bids and for the recommended bid "
                                      "bid-024; --bid-pages all prints all.")
    assert len(view["ranking"]) == 60                                  # the ranking lists every bid
    first = view["ranking"][0]
    assert first["gpus"] == "4,096" and first["accel"] == doc.bids[0].accelerator.name
    assert first["flags_text"] == ", ".join(f["code"] for f in first["flags"])
    assert [r["id"] for r in view["bases"]["rows"]] == [b.id for b in doc.bids[:10]] + ["bid-024"]
    assert view["bases"]["note"] == ("Every cost basis of the 11 bids with a detail page, of 60; the workbook and "
                                     "the JSON hold every bid.")
    assert view["large"] is True
    none = build_view(doc, bid_pages=BidPages("none"))
    assert len(none["bases"]["rows"]) == DEFAULT_TOP                    # no pages: the top ten


def test_a_large_report_shortens_charts_flags_and_orders_and_counts_the_rest():
    doc = many_bids(60, recommended_rank=1)
    view = build_view(doc)
    assert view["bid_pages_note"] == "Detail pages for the top 10 of 60 bids; --bid-pages all prints all."
    svg = view["compare"]["usd_mtok_svg"]
    assert "bid-029" in svg and "bid-030" not in svg          # the first CHART_MAX_BARS bids, in rank order
    assert view["compare"]["chart_note"] == "The charts show the top 30 of 60 bids; the ranking lists every bid."
    optimistic = next(g for g in view["flags"] if g["code"] == "optimistic")   # 3 of every 5 bids: 36
    assert len(optimistic["instances"]) == FLAG_INSTANCES_SHOWN
    assert optimistic["more"].startswith("… and 26 more of the 36 bids with this flag")
    for _label, order in view["bases"]["orders"]:
        assert order.count(", ") == ORDER_IDS_SHOWN and order.endswith("… and 40 more")
    assert CHART_MAX_BARS < 60


def test_all_and_none_and_top_n():
    doc = many_bids(60, recommended_rank=2)
    assert len(build_view(doc, bid_pages=BidPages("all"))["bids"]) == 60
    assert build_view(doc, bid_pages=BidPages("all"))["bid_pages_note"] == ""
    none = build_view(doc, bid_pages=BidPages("none"))
    assert none["bids"] == [] and none["bid_pages_note"].startswith("No detail pages for the 60 bids")
    assert len(build_view(doc, bid_pages=BidPages("top", 4))["bids"]) == 4


def test_a_small_report_is_unchanged_by_default():
    doc = load_quote(EXAMPLE_RESULT.read_bytes(), "example")
    view = build_view(doc)
    assert len(view["bids"]) == 5 and view["bid_pages_note"] == "" and view["compare"]["chart_note"] == ""
    assert "large" not in view and all("more" not in g for g in view["flags"])
    assert len(view["bases"]["rows"]) == 5 and "note" not in view["bases"]


def test_the_html_prints_the_pages_asked_for_and_the_note_in_both_languages():
    doc = load_quote(EXAMPLE_RESULT.read_bytes(), "example")
    html = render_bytes(doc, ["html"], bid_pages="top:2")["html"].decode()
    assert BID_SECTION.findall(html) == ["lambda-b200", "aws-p5"]
    assert "Detail pages for the top 2 of 5 bids; --bid-pages all prints all." in html
    zh = render_bytes(doc, ["html"], bid_pages="none", lang="zh-TW")["html"].decode()
    assert BID_SECTION.findall(zh) == [] and "5 個投標均未列出詳細頁" in zh
    assert len(BID_SECTION.findall(render_bytes(doc, ["html"])["html"].decode())) == 5


def test_a_large_report_ranks_every_bid_one_line_each_on_landscape_pages():
    doc = many_bids(60, recommended_rank=3)
    html = render_bytes(doc, ["html"])["html"].decode()
    assert "@page wide { size: A4 landscape; }" in html
    table = html[html.index('<div class="wide-pages">'):html.index("</div>", html.index('<div class="wide-pages">'))]
    assert table.count("<tr><td") == 60 and '<table class="ranking compact">' in table
    assert "Detail pages for the top 10 of 60 bids" in table
    assert len(BID_SECTION.findall(html)) == 10
    letter = render_bytes(doc, ["html"], page_size="Letter")["html"].decode()
    assert "@page wide { size: letter landscape; }" in letter
    small = render_bytes(load_quote(EXAMPLE_RESULT.read_bytes(), "example"), ["html"])["html"].decode()
    assert "wide-pages" not in small and "@page wide" not in small


def test_quote_and_render_take_the_flag(tmp_path):
    runner = CliRunner()
    out = tmp_path / "out"
    done = runner.invoke(main, ["quote", str(EXAMPLE), "-o", str(out), "--format", "html,json", "-q",
                                "--bid-pages", "top:1"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    (html,) = out.glob("*.html")
    assert BID_SECTION.findall(html.read_text(encoding="utf-8")) == ["lambda-b200"]   # the top bid is the recommended one
    again = tmp_path / "again"
    done = runner.invoke(main, ["render", str(SAMPLE), "-o", str(again), "--format", "html", "--bid-pages", "none"],
                         catch_exceptions=False)
    assert done.exit_code == 0, done.output
    (html,) = again.glob("*.html")
    assert BID_SECTION.findall(html.read_text(encoding="utf-8")) == []
    written = json.loads(next(out.glob("*.json")).read_text(encoding="utf-8"))["bids"]
    assert len(written) == len(json.loads(SAMPLE.read_text(encoding="utf-8"))["bids"])   # JSON keeps every bid


@pytest.mark.parametrize("command", ["quote", "render"])
def test_a_bad_value_is_one_line_exit_1_and_nothing_written(tmp_path, command):
    source = EXAMPLE if command == "quote" else SAMPLE
    result = CliRunner().invoke(main, [command, str(source), "-o", str(tmp_path / "out"), "--format", "html",
                                       "--bid-pages", "top:zero"], catch_exceptions=False)
    assert result.exit_code == 1
    problems = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(problems) == 1 and "use all, none or top:N" in problems[0]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
