"""The view model: required fields checked, optional ones printed as n/a, order and flags."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from procure.report.document import build_view
from procure.report.formatting import Formatter
from procure.report.order import ranked_bids
from procure.document import QuoteDocument, load_quote, validate_quote

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "quote_sample.json"


@pytest.fixture(scope="module")
def typed() -> QuoteDocument:
    return load_quote(SAMPLE.read_bytes(), "sample")


@pytest.fixture(scope="module")
def doc(typed) -> dict:
    """The plain data, for the tests that build an edge case by editing it (then validated again)."""
    return typed.to_data()


def test_optional_fields_null_or_empty_print_as_not_available(doc):
    lean = copy.deepcopy(doc)
    lean.update(inputs=[], assumptions=[], fx=None, sources=[], recommendation={"bid": None, "text": ""})
    bid = lean["bids"][0]
    for key in ("plan", "modeled", "measured", "scaling", "goodput", "uncertainty", "hfu", "energy_mwh", "mfu",
                "delivery", "power", "negotiation", "batch", "ratios", "time_to_target", "expert_parallel"):
        bid[key] = None
    bid["sensitivity"] = []
    view = build_view(validate_quote(lean, "lean"), "en")
    row = next(r for r in view["ranking"] if r["id"] == bid["id"])
    assert row["mfu"] == "n/a"
    section = next(s for s in view["bids"] if s["id"] == bid["id"])
    assert ("Energy", "n/a") in section["economics"] and ("Goodput", "n/a") in section["economics"]
    assert all(value == "n/a" for _, value in section["plan"])
    assert view["recommendation"]["text"] == "n/a" and view["cover"]["verdict"] == ""


def test_bids_follow_the_ranking_then_input_order(typed):
    assert [b.id for b in ranked_bids(typed)] == typed.ranking
    partial = typed.model_copy(update={"ranking": typed.ranking[:2]})
    order = [b.id for b in ranked_bids(partial)]
    assert order[:2] == typed.ranking[:2] and sorted(order) == sorted(b.id for b in typed.bids)


def test_price_missing_bid_prints_not_available_costs(typed):
    view = build_view(typed, "en")
    helios = next(r for r in view["ranking"] if r["id"] == "helios")
    assert helios["total_cost"] == "n/a" and helios["usd_mtok"] == "n/a"
    section = next(s for s in view["bids"] if s["id"] == "helios")
    assert section["costs"]["rows"] == [] and section["costs"]["empty"]


def test_flags_are_grouped_by_code_with_every_bid_that_carries_them(typed):
    view = build_view(typed, "en")
    codes = [g["code"] for g in view["flags"]]
    expected = {f.code for b in typed.bids for f in b.flags}
    assert set(codes) == expected and len(codes) == len(expected)
    tw = next(g for g in view["flags"] if g["code"] == "impossible")
    assert tw["instances"][0]["bid"] == "tw-cloud" and "GEMM ceiling" in tw["meaning"]


def test_same_figures_in_both_languages(typed, doc):
    en, zh = build_view(typed, "en"), build_view(typed, "zh-TW")
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
    changed = validate_quote(changed, "changed")
    view = build_view(changed, "en")
    assert "Price +20% on own-h200" in view["compare"]["verdict"]
    assert "own-h200 的價格 +20%" in build_view(changed, "zh-TW")["compare"]["verdict"]
    assert "No change" in build_view(validate_quote(doc, "doc"), "en")["compare"]["verdict"]


def test_cost_lines_show_factors_and_the_total(typed):
    view = build_view(typed, "en")
    own = next(s for s in view["bids"] if s["id"] == "own-h200")
    power = next(r for r in own["costs"]["rows"] if r["label"] == "Power")
    assert power["rate"] == "$0.08 × PUE 1.3" and power["amount"] == "$402,331.28"
    capex = own["costs"]["rows"][0]       # factors named in words, not as internal field names
    assert capex["rate"] == "$41,500.00 × depreciable share 0.65 × hours used 1,799 ÷ 35,040"
    assert own["costs"]["total"] == "$7,267,010.16"
    assert "$44,620,800.00" in own["costs"]["residual"]


@pytest.mark.parametrize("lang, idle", [("en", "(128 idle)"), ("zh-TW", "(閒置 128)")])
def test_idle_gpus_show_on_the_ranking_beside_the_gpu_count(typed, lang, idle):
    """GPUs the plan leaves idle are billed: the comparison says so, not only the bid's page."""
    bid = typed.bids[0].model_copy(update={"idle_gpus": 128})
    data = typed.model_copy(update={"bids": [bid, *typed.bids[1:]]})
    rows = {r["id"]: r for r in build_view(data, lang)["ranking"]}
    assert rows[bid.id]["accel_gpus"].endswith(idle)
    assert all("idle" not in r["accel_gpus"] and "閒置" not in r["accel_gpus"]
               for i, r in rows.items() if i != bid.id)


def test_methodology_names_each_fitted_parameter_with_its_meaning(typed):
    method = build_view(typed, "en")["methodology"]
    knobs = {name for row in typed.methodology.knobs for name in row.values}
    assert len(method["quantities"]) == len(knobs) > 0
    names = [q["name"] for q in method["quantities"]]
    assert not knobs & set(names) and all(q["meaning"] for q in method["quantities"])
    assert all(len(q["values"]) == len(method["accelerators"]) for q in method["quantities"])
