"""The view model: required fields checked, optional ones printed as n/a, order and flags."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from procure.report.document import build_view, ordered_bids
from procure.report.formatting import Formatter
from procure.document import load_quote

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "quote_sample.json"


@pytest.fixture(scope="module")
def doc() -> dict:
    return load_quote(SAMPLE.read_bytes(), "sample").to_data()


def test_optional_fields_absent_or_null_print_as_not_available(doc):
    lean = copy.deepcopy(doc)
    for key in ("inputs", "workload", "assumptions", "fx", "sources", "methodology", "sensitivity_summary",
                "recommendation"):
        lean.pop(key)
    bid = lean["bids"][0]
    for key in ("network", "pricing", "plan", "search", "step_time_terms", "modeled", "committed", "measured",
                "memory", "scaling", "goodput", "sensitivity", "uncertainty", "hfu", "energy_mwh"):
        bid.pop(key, None)
    bid["mfu"] = None
    view = build_view(lean, "en")
    row = next(r for r in view["ranking"] if r["id"] == bid["id"])
    assert row["mfu"] == "n/a"
    section = next(s for s in view["bids"] if s["id"] == bid["id"])
    assert ("Energy", "n/a") in section["economics"]
    assert view["recommendation"]["text"] == "n/a"


def test_bids_follow_the_ranking_then_input_order(doc):
    assert [b["id"] for b in ordered_bids(doc)] == doc["ranking"]
    partial = dict(doc, ranking=doc["ranking"][:2])
    order = [b["id"] for b in ordered_bids(partial)]
    assert order[:2] == doc["ranking"][:2] and sorted(order) == sorted(b["id"] for b in doc["bids"])


def test_price_missing_bid_prints_not_available_costs(doc):
    view = build_view(doc, "en")
    helios = next(r for r in view["ranking"] if r["id"] == "helios")
    assert helios["total_cost"] == "n/a" and helios["usd_mtok"] == "n/a"
    section = next(s for s in view["bids"] if s["id"] == "helios")
    assert section["costs"]["rows"] == [] and section["costs"]["empty"]


def test_flags_are_grouped_by_code_with_every_bid_that_carries_them(doc):
    view = build_view(doc, "en")
    codes = [g["code"] for g in view["flags"]]
    expected = {f["code"] for b in doc["bids"] for f in b["flags"]}
    assert set(codes) == expected and len(codes) == len(expected)
    tw = next(g for g in view["flags"] if g["code"] == "impossible")
    assert tw["instances"][0]["bid"] == "tw-cloud" and "GEMM ceiling" in tw["meaning"]


def test_same_figures_in_both_languages(doc):
    en, zh = build_view(doc, "en"), build_view(doc, "zh-TW")
    for a, b in zip(en["ranking"], zh["ranking"]):
        assert a["total_cost"].replace("$", "") == b["total_cost"].replace("US$", "").replace("無資料", "n/a")
        assert a["mfu"] == b["mfu"] or a["mfu"] == "n/a"
        assert a["days"].split()[0] == b["days"].split()[0]
    # written in Chinese from the structured fields, never the English sentence beside it
    winner = next(b for b in doc["bids"] if b["id"] == doc["recommendation"]["bid"])
    text = zh["recommendation"]["text"]
    assert text.startswith("建議採用 own-h200") and zh["recommendation"]["generated"] == ""
    assert Formatter("zh-TW", doc["currency"]).rate(winner["cost_per_million_tokens"]) in text
    assert doc["recommendation"]["text"] not in text and not re.search(r"[A-Za-z]+ [a-z]+ [a-z]+ [a-z]+", text)
    assert en["recommendation"]["text"] == doc["recommendation"]["text"]


def test_winner_changes_are_reported(doc):
    changed = copy.deepcopy(doc)
    own = next(b for b in changed["bids"] if b["id"] == "own-h200")
    row = next(r for r in own["sensitivity"] if r["factor"] == "price" and r["change"] == 0.2)
    row.update(winner_changes=True, recommended="other")
    view = build_view(changed, "en")
    assert "Price +20% on own-h200" in view["compare"]["verdict"]
    assert "own-h200 的價格 +20%" in build_view(changed, "zh-TW")["compare"]["verdict"]
    assert "No change" in build_view(doc, "en")["compare"]["verdict"]


def test_cost_lines_show_factors_and_the_total(doc):
    view = build_view(doc, "en")
    own = next(s for s in view["bids"] if s["id"] == "own-h200")
    power = next(r for r in own["costs"]["rows"] if r["label"] == "Power")
    assert power["rate"] == "$0.08 × PUE 1.3" and power["amount"] == "$402,331.28"
    capex = own["costs"]["rows"][0]       # factors named in words, not as internal field names
    assert capex["rate"] == "$41,500.00 × depreciable share 0.65 × hours used 1,799 ÷ 35,040"
    assert own["costs"]["total"] == "$7,267,010.16"
    assert "$44,620,800.00" in own["costs"]["residual"]


@pytest.mark.parametrize("lang, idle", [("en", "(128 idle)"), ("zh-TW", "(閒置 128)")])
def test_idle_gpus_show_on_the_ranking_beside_the_gpu_count(doc, lang, idle):
    """GPUs the plan leaves idle are billed: the comparison says so, not only the bid's page."""
    data = copy.deepcopy(doc)
    bid = data["bids"][0]
    bid["idle_gpus"] = 128
    rows = {r["id"]: r for r in build_view(data, lang)["ranking"]}
    assert rows[bid["id"]]["accel_gpus"].endswith(idle)
    assert all("idle" not in r["accel_gpus"] and "閒置" not in r["accel_gpus"]
               for i, r in rows.items() if i != bid["id"])


def test_methodology_names_each_fitted_parameter_with_its_meaning(doc):
    method = build_view(doc, "en")["methodology"]
    knobs = {name for row in doc["methodology"]["knobs"] for name in row["values"]}
    assert len(method["quantities"]) == len(knobs) > 0
    names = [q["name"] for q in method["quantities"]]
    assert not knobs & set(names) and all(q["meaning"] for q in method["quantities"])
    assert all(len(q["values"]) == len(method["accelerators"]) for q in method["quantities"])
