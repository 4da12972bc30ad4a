"""One set of bounds for every source of a value (issue 30): the inline terms of cluster.yaml, a
price book's lines, adders and facility, catalog accelerators and FX tables accept and refuse the
same figures; duplicate price lines are errors at both positions; a bid that costs about nothing
is compared without dividing by its cost."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from procure.catalog.entries import (AcceleratorEntry, AddersEntry, FacilityEntry, FxTableEntry,
                                     PriceLineEntry)
from procure.catalog.load import default_catalog, load_user_price_books
from procure.compare import compare
from procure.document import load_quote
from procure.economics import Assumptions
from procure.economics import examples as ex
from procure.economics.flags import measured_elsewhere
from procure.errors import InputError
from procure.inputs.bundle import load_inputs
from procure.inputs.schema import CommittedSpec, PricingSpec
from procure.measure.bid import measure_bid
from procure.measure.errors import LogError
from procure.pipeline import build_document
from procure.sources.bounds import days_after

SOURCED = {"source": "a test", "as_of": "2026-01"}


def _accepts(model: Any, data: dict[str, Any]) -> bool:
    try:
        model.model_validate(data)
    except ValidationError:
        return False
    return True


def _inline_purchase(**terms: Any) -> dict[str, Any]:
    return {"kind": "purchase", "capex_per_gpu": "30000", "life_years": "5", **terms}


def _book_line(**terms: Any) -> dict[str, Any]:
    return {"accelerator": "h100-sxm5-80gb", "term": "purchase", **SOURCED, **terms}


def _facility(**terms: Any) -> dict[str, Any]:
    return {"power_per_kwh": "0.1", "pue": "1.3", "colo_per_kw_month": "150", **terms}


# Each value is fed to the inline field and to the same figure in every other source.
SOURCES: dict[str, list[tuple[Any, Any]]] = {
    "residual_fraction": [(PricingSpec, lambda v: _inline_purchase(residual_fraction=v)),
                          (PriceLineEntry, lambda v: _book_line(residual_fraction=v))],
    "support_fraction": [(PricingSpec, lambda v: {"usd_per_gpu_hour": "2", "support_fraction": v}),
                         (AddersEntry, lambda v: {"support_fraction": v})],
    "pue": [(PricingSpec, lambda v: _inline_purchase(pue=v)),
            (FacilityEntry, lambda v: _facility(pue=v))],
    "life_years": [(PricingSpec, lambda v: _inline_purchase(life_years=v)),
                   (PriceLineEntry, lambda v: _book_line(life_years=v))],
    "price": [(PricingSpec, lambda v: {"usd_per_gpu_hour": v}),
              (PriceLineEntry, lambda v: _book_line(term="on-demand", price_per_gpu_hour=v)),
              (FacilityEntry, lambda v: _facility(power_per_kwh=v)),
              (FxTableEntry, lambda v: {"as_of": "2026-01-01", "rates": {"EUR": v}, "source": "a test"})],
}

VALUES = st.one_of(
    st.sampled_from(["0", "-1", "0.5", "1", "1.0000000001", "3", "5", "30", "31", "1000000", "1e-10",
                     "0.9999999999"]),
    st.decimals(min_value=-10, max_value=100, places=4, allow_nan=False, allow_infinity=False).map(str))


@settings(max_examples=60, deadline=None)
@given(figure=st.sampled_from(sorted(SOURCES)), value=VALUES)
def test_every_source_accepts_and_refuses_a_figure_alike(figure: str, value: str) -> None:
    verdicts = {model.__name__: _accepts(model, build(value)) for model, build in SOURCES[figure]}
    assert len(set(verdicts.values())) == 1, (figure, value, verdicts)


@pytest.mark.parametrize("model, data", [
    (PriceLineEntry, _book_line(residual_fraction="5")),
    (AddersEntry, {"support_fraction": "1000000"}),
    (FacilityEntry, _facility(pue="0")),
    (PriceLineEntry, _book_line(term="on-demand", price_per_gpu_hour="0")),
    (FxTableEntry, {"as_of": "2026-01-01", "rates": {"EUR": "0"}, "source": "a test"}),
])
def test_a_price_book_refuses_what_the_inline_terms_refuse(model: Any, data: dict[str, Any]) -> None:
    assert not _accepts(model, data)


def _accelerator(peak: float, scale_up_bw: float) -> dict[str, Any]:
    return {**SOURCED, "id": "x-sxm-80gb", "vendor": "V", "name": "X", "release_year": 2025,
            "peak_tflops": {"bf16": peak}, "hbm_gb": 80, "hbm_bw_tbs": 3.35,
            "scale_up": {"tech": "link", "bw_gbs_per_direction": scale_up_bw, "domain_size": 8}}


@pytest.mark.parametrize("peak, bw, ok", [(989.0, 450.0, True), (0.0, 450.0, False), (989.0, 0.0, False),
                                          (-1.0, 450.0, False)])
def test_a_catalog_accelerator_needs_a_peak_and_a_scale_up_bandwidth(peak: float, bw: float, ok: bool) -> None:
    assert _accepts(AcceleratorEntry, _accelerator(peak, bw)) is ok


BOOK = """id: mine-2026
provider: Me
kind: rental
currency: USD
effective: 2026-01-01
source: a test
as_of: "2026-01"
adders: {{support_fraction: "{support}"}}
lines:
  - {{accelerator: h100-sxm5-80gb, term: on-demand, price_per_gpu_hour: "2.00", source: a, as_of: "2026"}}
  - {{accelerator: h100-sxm5-80gb, term: {second_term}, price_per_gpu_hour: "0.50", source: a, as_of: "2026"}}
"""


def test_a_user_book_with_duplicate_lines_is_refused_at_both_positions(tmp_path: Path) -> None:
    (tmp_path / "mine-2026.yaml").write_text(BOOK.format(support="0", second_term="on-demand"))
    books, _, problems = load_user_price_books(tmp_path, default_catalog())
    assert not books
    [problem] = problems
    assert problem.code == "duplicate-price-line" and problem.line == 11
    assert f"{tmp_path / 'mine-2026.yaml'}:10:" in problem.message


def test_a_user_book_with_distinct_lines_loads(tmp_path: Path) -> None:
    (tmp_path / "mine-2026.yaml").write_text(BOOK.format(support="0", second_term="reserved-1y"))
    books, _, problems = load_user_price_books(tmp_path, default_catalog())
    assert not problems and len(books["mine-2026"].lines) == 2


def test_a_user_book_support_fraction_of_a_million_is_refused(tmp_path: Path) -> None:
    (tmp_path / "mine-2026.yaml").write_text(BOOK.format(support="1000000", second_term="reserved-1y"))
    books, _, problems = load_user_price_books(tmp_path, default_catalog())
    assert not books and problems and "support_fraction" in str(problems[0])


@pytest.mark.parametrize("price", ["0.0000000001", "0.00000001"])
def test_a_recommended_bid_that_costs_about_nothing_compares_without_dividing(price: str) -> None:
    result = compare([ex.case("free", pricing=ex.rental(price)),
                      ex.case("paid", pricing=ex.rental("2.00"))], Assumptions())
    free, paid = result.bids
    text = result.recommendation["text"]
    assert result.recommendation["bid"] == "free"
    delta = paid.cost_per_million_tokens - free.cost_per_million_tokens
    assert f"({delta:.4f} USD per million tokens more)" in text and "% more" not in text


SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "quote_sample.json"


@pytest.mark.parametrize("field, value", [("cost_per_million_tokens", "1e308"), ("total_cost", "-1e19"),
                                          ("step_time_s", "1e99"), ("time_to_train_days", "1e308")])
def test_a_saved_document_with_a_huge_figure_is_refused_at_its_position(field: str, value: str) -> None:
    text = SAMPLE.read_text()
    match = re.search(rf'"{field}": (-?[0-9.e+-]+)', text)
    assert match is not None
    line = text[:match.start()].count("\n") + 1
    hostile = text[:match.start(1)] + value + text[match.end(1):]
    with pytest.raises(InputError) as info:
        load_quote(hostile.encode(), "result.json")
    [problem] = info.value.diagnostics
    assert problem.code == "bad-document" and problem.line == line and "at most" in problem.message


EXAMPLE = Path(__file__).resolve().parents[2] / "examples"


def _cluster(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    text = (EXAMPLE / "cluster.yaml").read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    shutil.copytree(EXAMPLE / "logs", tmp_path / "logs")
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return path


def test_days_after_stops_at_the_last_date() -> None:
    assert days_after(date(2026, 12, 1), 29.2) == date(2026, 12, 31)
    assert days_after(date(9999, 12, 1), 30) == date(9999, 12, 31)
    assert days_after(date(9999, 12, 1), 31) is None
    assert days_after(date(2026, 1, 1), 1e300) is None
    assert days_after(date(2026, 1, 1), float("inf")) is None


def test_a_lead_time_or_deadline_past_the_calendar_is_an_input_error(tmp_path: Path) -> None:
    path = _cluster(tmp_path, ("as_of: 2026-12-01", "as_of: 9999-12-20"),
                    ("lead_time_days: 90 ", "lead_time_days: 900 "))
    with pytest.raises(InputError) as info:
        load_inputs(path)
    found = {(d.code, d.message.split(":")[0]) for d in info.value.diagnostics}
    assert any("plus 120 days is past 9999-12-31" in d.message for d in info.value.diagnostics), found
    assert any("lead time of 900 days is past 9999-12-31" in d.message for d in info.value.diagnostics), found


def test_a_book_lead_time_past_the_calendar_is_an_input_error_not_an_overflow(tmp_path: Path) -> None:
    book = (EXAMPLE.parent / "price_books" / "purchase-2026.yaml").read_text()
    book = book.replace("id: purchase-2026", "id: mine-2026").replace(
        "  - accelerator: h100-sxm5-80gb\n", "  - accelerator: h100-sxm5-80gb\n    lead_time_days: 900\n", 1)
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "mine-2026.yaml").write_text(book)
    path = _cluster(tmp_path, ("as_of: 2026-12-01", "as_of: 9999-12-20\nprice_books: [books]"),
                    ("  deadline_days: 120", "  deadline_days: 5"), ("lead_time_days: 90 ", "# "),
                    ("price_book: purchase-2026", "price_book: mine-2026"))
    inputs = load_inputs(path)
    with pytest.raises(InputError) as info:
        build_document(inputs)
    [problem] = info.value.diagnostics
    assert problem.code == "beyond-calendar" and "own-h100" in problem.message


def test_a_time_to_train_past_the_calendar_has_no_finish_date_and_says_why(tmp_path: Path) -> None:
    path = _cluster(tmp_path, ("model: llama3-70b ", "model: llama3-8b "), ("train_tokens: 15e12", "train_tokens: 1e18"),
                    ("  deadline_days: 120\n", ""), ("gpus: 4096", "gpus: 8"), ("gpus: 2048", "gpus: 8"),
                    ("plan: {tp: 8, pp: 4, dp: 128", "# plan: {tp: 8, pp: 4, dp: 128"))
    doc = build_document(load_inputs(path))
    late = [b for b in doc.bids if b.delivery.days_to_finish is not None and b.delivery.finish_date is None]
    assert late
    assert all(any("past 9999-12-31" in note for note in b.notes) for b in late)


def test_measured_logs_from_another_world_size_are_flagged_with_both_values(tmp_path: Path) -> None:
    log = (EXAMPLE / "logs" / "coreweave-burnin.log").read_text().replace("using world size: 4096",
                                                                           "using world size: 8")
    path = _cluster(tmp_path)
    (tmp_path / "logs" / "coreweave-burnin.log").write_text(log)
    doc = build_document(load_inputs(path))
    [bid] = [b for b in doc.bids if b.id == "coreweave-h100-1y"]
    [flag] = [f for f in bid.flags if f.code == "not-comparable"]
    assert "world size of 8 GPUs" in flag.reason and "the bid has 4,096" in flag.reason
    assert flag.numbers == {"measured_gpus": 8.0, "bid_gpus": 4096.0}


def test_measured_logs_at_the_bid_world_size_are_not_flagged() -> None:
    perf = ex.case("a", pricing=ex.rental("2.00")).performance
    assert measured_elsewhere(replace(perf, measured_gpus=perf.gpus)) is None
    assert measured_elsewhere(replace(perf, measured_gpus=None)) is None
    assert measured_elsewhere(replace(perf, measured_gpus=perf.gpus * 64)) is not None


@pytest.mark.parametrize("ms", ["1e-297", "0.000000001"])
def test_a_measured_step_outside_the_committed_range_is_a_log_error(tmp_path: Path, ms: str) -> None:
    log = re.sub(r"elapsed time per iteration \(ms\): [0-9.]+", f"elapsed time per iteration (ms): {ms}",
                 (EXAMPLE / "logs" / "coreweave-burnin.log").read_text())
    path = tmp_path / "burnin.log"
    path.write_text(log)
    with pytest.raises(LogError, match="not a training step|implausible"):
        measure_bid([path], 8, 50.0, "ib")


def test_a_committed_step_time_takes_the_same_range_as_a_measured_one() -> None:
    assert not _accepts(CommittedSpec, {"step_time_s": 1e-300})
    assert not _accepts(CommittedSpec, {"step_time_s": 2e6})
    assert _accepts(CommittedSpec, {"step_time_s": 2.5, "p99_step_time_s": 3.0})


def test_measured_logs_at_another_global_batch_or_sequence_length_are_flagged_with_both_values(tmp_path: Path) -> None:
    """Issue 30: a log stating world size 8 and batch 2,048 became the step time of a 512-GPU bid at
    batch 512 with no flag; every difference the log states is now named with both values."""
    text = (EXAMPLE / "logs" / "coreweave-burnin.log").read_text()
    log = re.sub(r"global batch size: *\d+", "global batch size:   512", text)
    log = log.replace("using world size: 4096", "using world size: 8")
    path = _cluster(tmp_path)
    (tmp_path / "logs" / "coreweave-burnin.log").write_text(log + "  seq_length ............................ 4096\n")
    doc = build_document(load_inputs(path))
    [bid] = [b for b in doc.bids if b.id == "coreweave-h100-1y"]
    [flag] = [f for f in bid.flags if f.code == "not-comparable"]
    assert "a world size of 8 GPUs where the bid has 4,096" in flag.reason
    assert "a global batch of 512 sequences where the bid has 2,048" in flag.reason
    assert "a sequence length of 4,096 tokens where the bid has 8,192" in flag.reason
    assert flag.numbers == {"measured_gpus": 8.0, "bid_gpus": 4096.0, "measured_global_batch": 512.0,
                            "bid_global_batch": 2048.0, "measured_seq_len": 4096.0, "bid_seq_len": 8192.0}


@pytest.mark.parametrize("edit", [
    ("pricing: {kind: purchase, price_book: purchase-2026, term: purchase}",
     "pricing: {kind: purchase, capex_per_gpu: 0, life_years: 4}"),                      # capex 0
    ("pricing: {kind: rental, price_book: lambda-2026q3, term: on-demand}",
     "pricing: {kind: rental, usd_per_gpu_hour: 0.0000000001}"),                           # a price of 1e-10
    ("pricing: {kind: rental, price_book: lambda-2026q3, term: on-demand}",
     "pricing: {kind: rental, price_book: lambda-2026q3, term: on-demand, discount_fraction: 0.9999999999}"),
], ids=["capex-0", "price-1e-10", "discount-0.9999999999"])
def test_a_bid_that_costs_about_nothing_is_quoted_through_every_format(tmp_path: Path, edit: tuple[str, str]) -> None:
    """Issue 30: each of these ended in exit 3 (DivisionByZero in the comparison)."""
    from click.testing import CliRunner

    from procure.cli import main

    path = _cluster(tmp_path, edit)
    result = CliRunner().invoke(main, ["quote", str(path), "-o", str(tmp_path / "out"), "--format", "json,xlsx,html",
                                       "-q"])
    assert result.exit_code == 0, result.output[-2000:]
    assert (tmp_path / "out").is_dir() and len(list((tmp_path / "out").glob("*.json"))) == 1
