"""The recommendation in another language is written from the same facts as the English one."""

from __future__ import annotations

import copy
import io
import re
from pathlib import Path

import pytest

from procure.document import QuoteDocument, load_quote, validate_quote
from procure.document.bid import Flag
from procure.report.formatting import Formatter
from procure.report.generated import (constraints_line, derived_facts, flag_reason, recommendation,
                                      recommendation_facts)

CASES = Path(__file__).resolve().parents[1] / "cases"
CASE_DOCS = sorted(CASES.glob("*/expected/result.json"))


def _doc(path: Path) -> dict:
    """The case's document as plain data, for a test to edit (``_typed`` validates it again)."""
    return load_quote(path.read_bytes(), str(path)).to_data()


def _typed(doc: dict) -> QuoteDocument:
    return validate_quote(doc, "edited")


def _english_runner_up(text: str) -> str | None:
    match = re.search(r"The runner-up, (\S+?), costs", text)
    return match.group(1) if match else None


@pytest.mark.parametrize("path", CASE_DOCS, ids=lambda p: p.parent.parent.name)
def test_the_document_records_the_facts_its_fields_give(path):
    """Every case folder's document carries the facts the comparison decided; a document saved
    without them (the fallback) derives the very same record from its fields."""
    doc = load_quote(path.read_bytes(), str(path))
    facts = doc.recommendation.facts
    assert facts is not None and recommendation_facts(doc) is facts
    assert derived_facts(doc) == facts
    assert (facts.winner.id if facts.winner else None) == doc.recommendation.bid


def _without_facts(doc: QuoteDocument) -> QuoteDocument:
    return doc.model_copy(update={"recommendation": doc.recommendation.model_copy(update={"facts": None})})


@pytest.mark.parametrize("path", CASE_DOCS, ids=lambda p: p.parent.parent.name)
def test_zh_tw_and_english_state_the_same_facts(path):
    """For every case folder, the English text and the zh-TW paragraph state the record's winner,
    runner-up and gap, flags, band and the bids ranked after; zh-TW is the same with the facts
    derived (a document saved without them)."""
    doc = load_quote(path.read_bytes(), str(path))
    facts, en = doc.recommendation.facts, doc.recommendation.text
    zh_format = Formatter("zh-TW", doc.currency)
    zh = recommendation(doc, zh_format)
    assert zh == recommendation(_without_facts(doc), zh_format)
    winner = facts.winner
    if winner is None:
        assert zh is None and en.startswith("No bid")
        return
    assert en.startswith(f"Recommend {winner.id} ({winner.vendor}) at {winner.cost_per_million_tokens:.4f} ")
    assert zh.startswith(f"建議採用 {winner.id}（")
    runner = facts.runner_up
    assert (runner.id if runner else None) == _english_runner_up(en)
    if runner is not None and facts.gap.percent is not None:
        shown = f"{abs(facts.gap.percent):.1f}%"
        assert f"({shown} {'more' if facts.gap.percent >= 0 else 'less'})" in en
        assert f"次佳的 {runner.id} " in zh and zh_format.percent(abs(facts.gap.percent) / 100) in zh
    codes = [flag.code for flag in facts.flags]
    if codes:
        assert f"Flags on {winner.id}: {'; '.join(f'{fl.code} ({fl.reason})' for fl in facts.flags)}." in en
        assert f"{winner.id} 帶有標記：{'、'.join(codes)}" in zh
    else:
        assert f"{winner.id} carries no flags" in en and winner.id in zh
    if facts.band is not None:
        assert f"{facts.band.cost_p10}–{facts.band.cost_p90} {winner.currency}" in en
        assert zh_format.rate(facts.band.cost_p10, winner.currency) in zh
    for held in facts.constrained:
        assert f"{held.id} ({'; '.join(held.reasons)})" in en and held.id in constraints_line(doc, zh_format)


_EN_VERDICT = re.compile(r"(It finishes|No costed bid finishes) within the ([\d.]+)-day deadline")
_ZH_VERDICT = re.compile(r"(可在|無法在) ([\d.,]+) 天 的期限內完成")
_EN_DEADLINE = re.compile(r"the ([\d.]+)-day deadline")
_ZH_DEADLINE = re.compile(r"([\d.,]+) 天 的期限")
_PERCENT = re.compile(r"(\d[\d,]*(?:\.\d+)?) ?%")


def _numbers(pattern: re.Pattern[str], text: str, group: int = 1) -> set[float]:
    return {float(m.group(group).replace(",", "")) for m in pattern.finditer(text)}


@pytest.mark.parametrize("path", CASE_DOCS, ids=lambda p: p.parent.parent.name)
def test_zh_tw_states_the_deadline_verdict_english_states(path):
    """For every case folder: the recommendation's deadline verdict, met or missed and which
    deadline (a deadline given as a date included), is the same in zh-TW as in English."""
    doc = load_quote(path.read_bytes(), str(path))
    en, zh = doc.recommendation.text, recommendation(doc, Formatter("zh-TW", doc.currency)) or ""
    en_verdict = [(m.group(1) == "It finishes", float(m.group(2))) for m in _EN_VERDICT.finditer(en)]
    zh_verdict = [(m.group(1) == "可在", float(m.group(2).replace(",", ""))) for m in _ZH_VERDICT.finditer(zh)]
    assert zh_verdict == en_verdict


@pytest.mark.parametrize("path", CASE_DOCS, ids=lambda p: p.parent.parent.name)
def test_zh_tw_states_the_flag_limits_english_states(path):
    """For every case folder and every flag: its limits (the percentages: tolerance, MFU and GEMM
    ceilings, headroom; its deadline) in English are in the zh-TW reason too."""
    doc = load_quote(path.read_bytes(), str(path))
    zh_format = Formatter("zh-TW", doc.currency)
    for bid in doc.bids:
        for flag in bid.flags:
            zh = flag_reason(flag, bid, doc, zh_format)
            assert _numbers(_PERCENT, flag.reason) <= _numbers(_PERCENT, zh), (bid.id, flag.code)
            deadlines = _numbers(_EN_DEADLINE, flag.reason)
            assert deadlines in (_numbers(_ZH_DEADLINE, zh), _numbers(_EN_DEADLINE, zh)), (bid.id, flag.code)


def _two_bid_doc() -> dict:
    """The example's document to edit: its recorded facts are dropped, as the edits would make them
    stale, so what is asserted is the fallback that derives them from the edited fields."""
    doc = copy.deepcopy(_doc(CASES / "example" / "expected" / "result.json"))
    doc["recommendation"].pop("facts")
    costed = [b for b in doc["bids"] if b.get("cost_per_million_tokens") is not None]
    assert len(costed) >= 2
    return doc


def test_the_runner_up_is_never_the_winner_itself():
    doc = _two_bid_doc()
    ranking = doc["ranking"]
    winner = next(i for i in ranking[1:] if next(b for b in doc["bids"] if b["id"] == i)
                  .get("cost_per_million_tokens") is not None)
    doc["recommendation"]["bid"] = winner            # recommended bid ranked second, as when the first is late
    facts = recommendation_facts(_typed(doc))
    assert facts.runner_up.id == ranking[0] != winner
    zh = recommendation(_typed(doc), Formatter("zh-TW", doc["currency"]))
    assert f"次佳的 {winner} " not in zh and f"次佳的 {ranking[0]} " in zh


def _late_flag(doc: dict, bid: dict, lead: float) -> dict:
    deadline = float(bid["time_to_train_days"]) + 1.0      # training alone fits; the lead time makes it late
    doc.setdefault("workload", {})["deadline_days"] = deadline
    finish = lead + float(bid["time_to_train_days"])
    return {"code": "misses-deadline", "severity": "warning",
            "reason": f"available after {lead:g} days, it finishes training on day {finish:.1f}, after the "
                      f"{deadline:g}-day deadline",
            "numbers": {"time_to_train_days": bid["time_to_train_days"], "deadline_days": deadline,
                        "lead_time_days": lead, "days_to_finish": finish}}


def test_the_deadline_verdict_counts_the_lead_time_and_the_late_flag_is_not_called_no_flags():
    doc = _two_bid_doc()
    winner = next(b for b in doc["bids"] if b["id"] == doc["recommendation"]["bid"])
    flag = _late_flag(doc, winner, 30.0)
    winner["flags"] = [flag]
    typed = _typed(doc)
    zh = recommendation(typed, Formatter("zh-TW", doc["currency"]))
    assert "無法在" in zh and "可在" not in zh
    assert "沒有任何標記" not in zh and "除了未能趕上期限之外" in zh
    late = next(b for b in typed.bids if b.id == winner["id"])
    reason = flag_reason(late.flags[0], late, typed, Formatter("zh-TW", doc["currency"]))
    assert "交付前置時間" in reason


def test_zh_tw_states_the_recorded_deadline_verdict_not_one_of_its_own():
    """With the facts recorded, zh-TW states their verdict (here edited to missed), whatever the flags say."""
    doc = _doc(CASES / "example" / "expected" / "result.json")
    winner = doc["recommendation"]["facts"]["winner"]
    winner["misses_deadline"], winner["days_to_finish"] = True, 123.4
    zh = recommendation(_typed(doc), Formatter("zh-TW", doc["currency"]))
    assert "無法在 120.0 天 的期限內完成" in zh and "第 123.4 天" in zh and "可在" not in zh
    assert "除了未能趕上期限之外" not in zh          # the example's winner has another flag: it is listed


def test_impossible_states_the_measured_gemm_ceiling_as_english_does():
    doc = _typed(_two_bid_doc())
    bid = doc.bids[0]
    flag = {"code": "impossible", "severity": "error",
            "reason": "committed 0.1 s is below the floor of 0.2 s (model FLOPs at the accelerator's measured GEMM "
                      "ceiling (80% of peak) on 8 GPUs)",
            "numbers": {"committed_s": 0.1, "floor_s": 0.2, "peak_floor_s": 0.16, "gemm_ceiling_mfu": 0.8,
                        "implied_mfu": 1.2}}
    zh = flag_reason(Flag.model_validate(flag), bid, doc, Formatter("zh-TW", doc.currency))
    assert "GEMM" in zh and "80" in zh and "100%" not in zh
    flag["numbers"] = {"committed_scaling_efficiency": 1.2}
    zh = flag_reason(Flag.model_validate(flag), bid, doc, Formatter("zh-TW", doc.currency))
    assert "1.20" in zh


def _terminal(doc: dict, lang: str = "en") -> str:
    from rich.console import Console

    from procure.report.text_report import print_terminal

    buffer = io.StringIO()
    print_terminal(_typed(doc), Console(file=buffer, width=200, color_system=None), lang)
    return buffer.getvalue()


@pytest.mark.parametrize("path", CASE_DOCS, ids=lambda p: p.parent.parent.name)
def test_terminal_html_and_json_name_the_same_recommended_bid(path):
    doc = _doc(path)
    bid = doc["recommendation"]["bid"]
    html = (path.parent / "report.html").read_text(encoding="utf-8")
    lines = [line for line in _terminal(doc).splitlines() if line.startswith("Recommended: ")]
    if bid is None:
        assert lines == []
        return
    assert lines and lines[0].startswith(f"Recommended: {bid} — ")
    assert f"<strong>Recommended: {bid} — " in html
    workbook = (path.parent / "workbook.txt").read_text(encoding="utf-8")
    marked = re.findall(r"^Summary!([A-Z]+)(\d+)\t'recommended", workbook, re.M)
    assert len(marked) == 1                          # one marked row on the Summary sheet, the recommended bid's
    assert re.search(rf"^Summary!B{marked[0][1]}\t'{re.escape(bid)}'", workbook, re.M)
    zh = [line for line in _terminal(doc, "zh-TW").splitlines() if line.startswith("建議採用：")]
    assert zh and zh[0].startswith(f"建議採用：{bid} — ")


def test_a_late_cheaper_bid_is_named_as_the_reason_the_recommendation_is_not_first():
    doc = _doc(CASES / "example" / "expected" / "result.json")
    assert doc["recommendation"]["facts"]["cheapest"] is None      # on present value the winner is the cheapest
    doc["recommendation"].pop("facts")                               # the basis is edited: the facts are derived
    # own-h100 misses the deadline; the cheapest on the run basis, it is the reason given there
    late = next(b["id"] for b in doc["bids"] if any(f["code"] == "misses-deadline" for f in b["flags"]))
    assert doc["recommendation"]["bid"] != late and doc["ranking"][-1] == late       # constraints first
    doc["cost_basis"] = "run"
    line = next(x for x in _terminal(doc).splitlines() if x.startswith("Recommended: "))
    assert f"{late} costs less but misses it" in line


def test_stale_or_unverified_exchange_rates_are_a_warning_on_the_summary():
    doc = _doc(CASES / "eur-and-missing" / "expected" / "result.json")
    assert doc["fx"]["verified"] is False
    out = _terminal(doc)
    assert "Exchange rates: the FX table is dated" in out and "unverified" in out
    fresh = copy.deepcopy(doc)
    fresh["fx"]["verified"], fresh["fx"]["as_of"] = True, doc["as_of"]
    assert "Exchange rates:" not in _terminal(fresh)
    unconverted = copy.deepcopy(doc)
    for bid in unconverted["bids"]:                  # nothing converted: the rates do not matter
        bid["pricing"]["book_currency"] = doc["currency"]
        for q in bid["pricing"]["quoted"]:
            q["currency"] = doc["currency"]
    assert "Exchange rates:" not in _terminal(unconverted)


@pytest.mark.parametrize("path", CASE_DOCS, ids=lambda p: p.parent.parent.name)
def test_the_json_fx_warning_and_the_summary_warning_agree(path):
    from procure.report.generated import fx_warning

    doc = _doc(path)
    fx = doc.get("fx") or {}
    typed = _typed(doc)
    assert bool(fx.get("warning")) == bool(fx_warning(typed, Formatter("en", doc["currency"])))
    assert bool(fx.get("warning")) == bool(fx_warning(typed, Formatter("zh-TW", doc["currency"])))


def test_zh_tw_says_which_bids_could_not_be_costed_when_none_can():
    """No recommended bid: zh-TW names the same uncosted bids and codes as the English, in its own words."""
    from procure.document.quote import HeldBid

    doc = load_quote((CASES / "moe-and-infeasible" / "expected" / "result.json").read_bytes(), "x")
    facts = doc.recommendation.facts
    assert facts is not None
    held = [HeldBid(id="tiny-l40s", codes=["infeasible"], reasons=[]),
            HeldBid(id="h800-2048", codes=["price-missing"], reasons=[])]
    none = facts.model_copy(update={"winner": None, "runner_up": None, "gap": None, "cheapest": None,
                                    "band": None, "uncosted": held})
    doc = doc.model_copy(update={"recommendation": doc.recommendation.model_copy(
        update={"bid": None, "text": "No bid can be costed. Not costed: tiny-l40s (infeasible), "
                                     "h800-2048 (price-missing).", "facts": none})})
    zh = recommendation(doc, Formatter("zh-TW", doc.currency))
    assert zh == "沒有任何投標能計算成本。未計成本：tiny-l40s（infeasible）、h800-2048（price-missing）。"
    assert recommendation(doc, Formatter("en", doc.currency)) is None       # English prints the document's text
    empty = doc.model_copy(update={"recommendation": doc.recommendation.model_copy(
        update={"facts": none.model_copy(update={"compared": 0, "uncosted": []})})})
    assert recommendation(empty, Formatter("zh-TW", doc.currency)) == "沒有可比較的投標。"
