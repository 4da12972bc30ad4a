"""Issue 16's rough edges, one test each: sources marked unverified, network names, the diff's
inputs beside its results, generated text in zh-TW, the missing-font warning, the histogram."""

from __future__ import annotations

import copy
import os
import re
import stat
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from procure.catalog.load import load_catalog
from procure.cli import main
from procure.compare_rounds import diff_documents
from procure.document import load_quote, validate_quote
from procure.report import charts
from procure.report.document import build_view
from procure.report.fonts import missing_font
from procure.report.formatting import Formatter

TESTS = Path(__file__).resolve().parents[1]
EXAMPLE_DOC = TESTS / "cases" / "example" / "expected" / "result.json"
SAMPLE = TESTS / "fixtures" / "quote_sample.json"
ENGLISH_WORDS = re.compile(r"\b(?:the|is|above|below|exceeds|committed|measured|implies|large|runs|deadline)\b")


@pytest.fixture(scope="module")
def example() -> dict:
    return load_quote(EXAMPLE_DOC.read_bytes(), "example").to_data()


def test_an_entry_citing_an_unverified_source_is_not_shown_as_verified():
    cat = load_catalog()
    for entries in (cat.accelerators, cat.networks):
        for entry in entries.values():
            if any("verified: false" in s for s in entry.sourced.source):
                assert entry.sourced.verified is False, entry.id
    assert cat.networks["efa-p5"].sourced.verified is False


def test_a_shared_network_is_not_named_after_another_accelerators_instance(example):
    cat = load_catalog()
    for bid in example["bids"]:
        name = cat.networks[bid["network"]["id"]].name
        accelerator = cat.accelerators[bid["accelerator"]["id"]]
        for family in ("H100", "H200", "B200", "MI300X", "A100"):
            if family in name:
                assert family in accelerator.name, f"{bid['id']}: {accelerator.name} on '{name}'"


def test_diff_puts_the_input_changes_beside_the_results_they_moved(example):
    new = copy.deepcopy(example)
    aws = next(b for b in new["bids"] if b["id"] == "aws-p5")
    aws["pricing"]["price_per_gpu_hour"] = Decimal("3.95")
    aws["total_cost"] = Decimal("14735000.00")
    oci = next(b for b in new["bids"] if b["id"] == "oci-mi300x")
    oci["committed"]["step_time_s"] = 3.6
    new["workload"]["train_tokens"] = 1.2e13
    result = diff_documents(example, new, "round1.json", "round2.json")
    assert result["schema"] == "procure.diff/v2"
    assert result["old"]["file"] == "round1.json" and result["new"]["file"] == "round2.json"
    by_id = {c["id"]: c for c in result["changed"]}
    (price,) = by_id["aws-p5"]["inputs"]
    assert price["field"] == "pricing.price_per_gpu_hour" and price["kind"] == "book_money"
    assert Decimal(str(price["old"])) == Decimal("6.88") and price["new"] == Decimal("3.95")
    assert price["currency"] == {"old": "USD", "new": "USD"} and float(price["relative"]) == pytest.approx(-0.4259, abs=1e-4)
    assert [r["field"] for r in by_id["aws-p5"]["results"]] == ["total_cost"]
    (committed,) = by_id["oci-mi300x"]["inputs"]
    assert committed["label"] == "committed step time" and committed["new"] == 3.6
    assert [c["field"] for c in result["inputs"]] == ["workload.train_tokens"]


def test_diff_text_prints_money_in_the_reports_format_and_names_both_files(tmp_path, example):
    from procure.jsontext import to_json_bytes

    new = copy.deepcopy(example)
    aws = next(b for b in new["bids"] if b["id"] == "aws-p5")
    aws["pricing"]["price_per_gpu_hour"] = Decimal("3.95")
    aws["total_cost"] = Decimal("14735000.00")
    (tmp_path / "round1.json").write_bytes(to_json_bytes(example))
    (tmp_path / "round2.json").write_bytes(to_json_bytes(new))
    result = CliRunner().invoke(main, ["diff", str(tmp_path / "round1.json"), str(tmp_path / "round2.json")],
                                env={"COLUMNS": "120"})
    assert result.exit_code == 0
    out = result.stdout
    assert "round1.json" in out and "round2.json" in out and "<document>" not in out
    assert "$6.88" in out and "$3.95" in out and "$14,735,000.00" in out
    assert not re.search(r"\d\.\d+e[+-]\d", out)           # no scientific notation


def test_zh_tw_flag_reasons_are_written_from_the_numbers(example):
    view = build_view(validate_quote(example, "example"), "zh-TW")
    reasons = [i["reason"] for g in view["flags"] for i in g["instances"]]
    reasons += [fl["reason"] for b in view["bids"] for fl in b["flags"]]
    assert reasons and all(not ENGLISH_WORDS.search(r) for r in reasons), reasons
    group = next(g for g in view["flags"] if g["code"] == "implausible")
    bid = next(b for b in example["bids"] if b["id"] == group["instances"][0]["bid"])
    numbers = next(fl for fl in bid["flags"] if fl["code"] == "implausible")["numbers"]
    f = Formatter("zh-TW", example["currency"])
    reason = group["instances"][0]["reason"]
    for figure in (f.percent(numbers["implied_mfu"], 0), f.percent(numbers["mfu_ceiling"], 0),
                   f.seconds(numbers["committed_s"])):
        assert figure in reason, (figure, reason)


def test_zh_tw_generated_text_has_no_english_sentences(example):
    view = build_view(validate_quote(example, "example"), "zh-TW")
    generated = [view["recommendation"]["text"], view["cover"]["verdict"]]
    generated += [v for k, v in view["workload"]] + [v for b in view["bids"] for k, v in b["economics"]]
    generated += [r["label"] + r["formula"] + r["rate"] for b in view["bids"] for r in b["costs"]["rows"]]
    generated += [r["label"] + r["unit"] + r["origin"] for r in view["assumptions"]["rows"]]
    generated += [v for b in view["bids"] for k, v in b["plan"]]
    english = [t for t in generated if re.search(r"[a-z]{3,} [a-z]{3,} [a-z]{3,}", t)]
    assert not english, english


def test_a_missing_cjk_font_is_warned_about(tmp_path, monkeypatch):
    fake = tmp_path / "fc-list"
    fake.write_text("#!/bin/sh\nexit 0\n")                 # fontconfig knows no font for the language
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    assert "fonts-noto-cjk" in missing_font("zh-TW", str(fake))
    assert missing_font("en", str(fake)) is None
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    result = CliRunner().invoke(main, ["render", str(SAMPLE), "-o", str(tmp_path / "out"), "--format", "json",
                                       "--lang", "zh-TW"])
    assert result.exit_code == 0 and "warning" not in result.stderr      # no PDF, no warning
    result = CliRunner().invoke(main, ["render", str(SAMPLE), "-o", str(tmp_path / "out2"), "--format", "pdf",
                                       "--lang", "zh-TW"])
    assert result.exit_code == 0 and "no font for zh-TW" in result.stderr


def test_an_installed_cjk_font_gives_no_warning(tmp_path):
    fake = tmp_path / "fc-list"
    fake.write_text("#!/bin/sh\necho 'Noto Sans CJK TC'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    assert missing_font("zh-TW", str(fake)) is None


def test_a_histogram_with_one_far_outlier_keeps_its_bulk_wide_and_labels_its_start():
    edges = [3.25 + 0.1063 * i for i in range(31)]
    counts = [98, 183, 11] + [0] * 26 + [2]
    svg = charts.histogram(edges, counts, lambda v: f"{v:.2f}", title="t")
    bars = [(float(m.group(1)), float(m.group(2))) for m in re.finditer(r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', svg)]
    bulk_right = max(x + w for x, w in bars[:3])
    assert bulk_right - 46 > 0.5 * (640 - 92)               # the bulk spans more than half the axis
    labels = re.findall(r'font-size="9" text-anchor="middle" fill="#666666" font-weight="normal">([^<]+)<', svg)
    assert "3.25" in labels and f"{edges[-1]:.2f}" in labels
    assert charts.tail_split([3, 10, 2]) is None


def test_ingest_text_shows_an_estimated_step_count_as_such(tmp_path):
    from rich.console import Console

    from procure import cli_views

    console = Console(record=True, width=100, color_system=None)
    cli_views.render_ingest({"sources": [{"path": "b.txt", "format": "mlperf", "steps": 3514.47526,
                                          "step_time_s": {"mean": 0.0861}}]}, console)
    assert "≈3,514" in console.export_text()
