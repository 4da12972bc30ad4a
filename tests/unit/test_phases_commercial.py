"""A workload with phases (issue 11) on the commercial economics (issue 12), the workbook (issue 13),
the input bounds (issue 15) and the sweep (issue 17): time adds the phases, both cost bases bill
every phase's hours, cost per million tokens divides by every phase's tokens, the band draws over
all phases, the workbook's formulas agree with the document, and a sweep point equals its quote."""

from __future__ import annotations

import math
from dataclasses import replace
from decimal import ROUND_CEILING, Decimal
from pathlib import Path

import pytest
from sweep_support import write_sweep
from test_report_xlsx_libreoffice import SOFFICE, _close, libreoffice, summary, with_inputs

from procure import api
from procure.document import validate_quote
from procure.economics import examples as ex
from procure.economics.bid import evaluate_core
from procure.economics.inputs import Assumptions, BidCase, Commitment, Phase, StepTimeError
from procure.economics.negotiation import at_step_time, step_time_to_win
from procure.economics.sensitivity import Trial, apply
from procure.economics.uncertainty import band
from procure.errors import InputError
from procure.inputs.bundle import load_inputs
from procure.report.xlsx_report import build_book, render_xlsx
from procure.sweep import load_sweep, plan_sweep, run_sweep
from procure.sweep.emit import cluster_yaml

PHASE_TOKENS = 1000 * 128 * 32768            # steps x global batch x sequence
CLUSTER = """\
schema: procure/v1
title: Dense model with a long-context phase, rented and bought
as_of: 2026-12-01
workload:
  model: llama3-8b
  name: pretrain
  seq_len: 4096
  global_batch: 1024
  train_tokens: 1e10
  precision: bf16
  phases:
    - name: long-context
      seq_len: 32768
      global_batch: 128
      steps: 1000
assumptions: {value_of_time_per_day: 1000}
bids:
  - id: rent
    vendor: R
    accelerator: h100-sxm5-80gb
    gpus: 64
    network: ib-ndr400
    pricing: {kind: rental, price_book: neocloud-reserved-2026q3, term: reserved-1y}
  - id: own
    vendor: O
    accelerator: h100-sxm5-80gb
    gpus: 64
    network: ib-ndr400
    pricing: {kind: purchase, price_book: purchase-2026, term: purchase}
"""


@pytest.fixture(scope="module")
def doc(tmp_path_factory):
    path = Path(tmp_path_factory.mktemp("phases")) / "cluster.yaml"
    path.write_text(CLUSTER, encoding="utf-8")
    return api.quote_document(path).to_data()


def _hours(days: float) -> Decimal:
    return (Decimal(repr(days)) * 24).quantize(Decimal("0.01"), rounding=ROUND_CEILING)


# --- the quote ------------------------------------------------------------------------------------

def test_the_workload_counts_the_tokens_of_every_phase_exactly(doc):
    w = doc["workload"]
    assert [p["name"] for p in w["phases"]] == ["pretrain", "long-context"]
    assert w["phases"][1]["train_tokens"] == PHASE_TOKENS            # exact: not rounded to 6 digits
    assert w["train_tokens"] == 1e10 + PHASE_TOKENS


@pytest.mark.parametrize("bid_id", ["rent", "own"])
def test_both_cost_bases_bill_every_phase_and_divide_by_every_token(doc, bid_id):
    bid = next(b for b in doc["bids"] if b["id"] == bid_id)
    (phase,) = bid["phases"]
    main_days = 1e10 / bid["tokens_per_s"] / bid["goodput"]["fraction"] / 86400
    assert bid["time_to_train_days"] == pytest.approx(main_days + phase["time_to_train_days"], rel=1e-5)
    assert phase["time_to_train_days"] > 0.05 * bid["time_to_train_days"]  # the phase weighs in
    assert abs(bid["used_hours"] - _hours(bid["time_to_train_days"])) <= Decimal("0.01")
    tokens = Decimal(repr(doc["workload"]["train_tokens"]))
    for basis in ("run", "commitment"):
        on = bid["cost_bases"][basis]
        per_mtok = (on["total_cost"] / tokens * 10**6).quantize(Decimal("0.0001"))
        assert on["cost_per_million_tokens"] == per_mtok
        ranked = ((on["total_cost"] + on["time_value"]) / tokens * 10**6).quantize(Decimal("0.0001"))
        assert on["ranking_cost_per_million_tokens"] == ranked
    # days to finish and the value of time run to the end of the last phase
    assert bid["delivery"]["days_to_finish"] == pytest.approx(     # the document keeps 6 significant digits
        bid["delivery"]["lead_time_days"] + float(bid["used_hours"]) / 24, rel=5e-6)


def test_the_band_draws_over_every_phase(doc):
    for bid in doc["bids"]:
        band_days = bid["uncertainty"]["time_to_train_days"]
        assert band_days["p10"] < bid["time_to_train_days"] * 1.05 and band_days["p90"] > bid["time_to_train_days"]
        cost = bid["uncertainty"]["cost_per_million_tokens"]
        assert cost["p10"] < bid["cost_per_million_tokens"] < cost["p90"]


# --- the workbook ---------------------------------------------------------------------------------

def test_the_workbook_reproduces_the_document_of_a_workload_with_phases(doc):
    book, result = build_book(validate_quote(doc, "phases"))
    assert result.mismatches == () and result.given_lines == ()
    assert result.checked > 40
    for bid in doc["bids"]:           # time to train and cost per million tokens, as the document
        assert book.value(*book.names[f"base_{bid['id']}_time_to_train_days"]) == pytest.approx(
            Decimal(repr(bid["time_to_train_days"])), rel=Decimal("5e-6"))
    readme = next(s for s in book.sheets if s.name == "README")
    assert any("Phases: the workload trains further after its main phase (long-context)" in str(c.content)
               for c in readme.cells.values())
    assert "in_phase1_train_tokens" in book.names and "bid_rent_phase1_step_time_s" in book.names
    assert book.value(*book.names["in_phase1_train_tokens"]) == PHASE_TOKENS


def test_the_workbook_follows_a_phase_input_and_the_step_time_what_if(doc):
    book, _ = build_book(validate_quote(doc, "phases"))
    days = book.names["base_rent_time_to_train_days"]
    before = book.value(*days)
    sheet, row, col = book.names["bid_rent_phase1_step_time_s"]
    target = next(s for s in book.sheets if s.name == sheet)
    target.cells[(row, col)].content = target.cells[(row, col)].content * 2     # the phase runs half as fast
    book._values.clear()
    bid = next(b for b in doc["bids"] if b["id"] == "rent")
    assert book.value(*days) - before == pytest.approx(
        Decimal(repr(bid["phases"][0]["time_to_train_days"])), rel=Decimal("1e-5"))
    # the scenario's step time moves every phase by the same factor
    sheet, row, col = book.names["whatif_rent_step_time_s"]
    target = next(s for s in book.sheets if s.name == sheet)
    target.cells[(row, col)].content = Decimal(repr(bid["step_time_s"])) * 3
    book._values.clear()
    assert book.value(*book.names["scn_rent_time_to_train_days"]) == pytest.approx(3 * book.value(*days),
                                                                                  rel=Decimal("1e-9"))


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_recalculates_the_phases_and_follows_a_phase_s_tokens_to_a_fresh_quote(doc, tmp_path):
    longer = tmp_path / "longer.yaml"
    longer.write_text(CLUSTER.replace("steps: 1000", "steps: 2000"), encoding="utf-8")
    fresh = api.quote_document(longer).to_data()
    data = render_xlsx(validate_quote(doc, "phases"))
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "original.xlsx").write_bytes(data)
    (src / "edited.xlsx").write_bytes(with_inputs(data, {"in_phase1_train_tokens": 2 * PHASE_TOKENS}))
    libreoffice(sorted(src.iterdir()), out, tmp_path)
    per_mtok = f"{doc['currency']} per million tokens"
    for name, want in (("original", doc), ("edited", fresh)):
        rows = summary(out / f"{name}.xlsx")
        for bid in want["bids"]:
            for column, key in (("Total cost", "total_cost"), (per_mtok, "cost_per_million_tokens"),
                                ("Time to train (days)", "time_to_train_days"), ("Rank", "rank")):
                assert _close(rows[bid["id"]][column], bid[key]), (name, bid["id"], column)
    before = {b["id"]: b for b in doc["bids"]}
    for bid in fresh["bids"]:         # the reservation bills its year either way; the purchase moves
        assert bid["time_to_train_days"] > before[bid["id"]]["time_to_train_days"]
    assert next(b for b in fresh["bids"] if b["id"] == "own")["total_cost"] > before["own"]["total_cost"]


# --- the economics --------------------------------------------------------------------------------

def _case(step_times: list[float], tokens: list[float], **kw) -> BidCase:
    perfs = [replace(ex.performance(2048, ex.H100_BF16_FLOPS), step_time_s=s) for s in step_times]
    phases = tuple(Phase(f"p{i}", p, t) for i, (p, t) in enumerate(zip(perfs[1:], tokens[1:]), start=1))
    return BidCase(id="b", vendor="v", performance=perfs[0], pricing=kw.pop("pricing", ex.rental("2.00", 12)),
                   commitment=Commitment(), train_tokens=tokens[0], params=ex.PARAMS_70B, phases=phases, **kw)


@pytest.mark.parametrize("pricing", [ex.rental("2.00", 12), ex.purchase()], ids=["reserved", "purchase"])
def test_every_basis_divides_by_every_phase_s_tokens(pricing):
    a = Assumptions(monte_carlo_samples=0)
    econ = evaluate_core(_case([10.0, 40.0], [1e12, 2e11], pricing=pricing), a)
    tokens = Decimal(repr(1e12 + 2e11))
    for basis in ("run", "commitment"):
        on = econ.on(basis)
        assert on is not None
        assert on.cost_per_million_tokens == (on.total_cost / tokens * 10**6).quantize(Decimal("0.0001"))
    single = evaluate_core(_case([10.0], [1e12], pricing=pricing), a)
    assert econ.used_hours > single.used_hours
    assert econ.on("run").total_cost > single.on("run").total_cost


def test_an_infeasible_phase_names_itself_and_has_no_band():
    case = _case([10.0, 20.0], [1e12, 1e11])
    bad = replace(case.phases[0].performance, feasible=False, infeasible_reason="no plan fits 80 GB")
    case = replace(case, phases=(replace(case.phases[0], performance=bad),))
    econ = evaluate_core(case, Assumptions(monte_carlo_samples=0))
    flag = next(f for f in econ.flags if f.code == "infeasible")
    assert "p1" in flag.reason and econ.on("run") is None
    assert band(case, Assumptions()) is None


def test_the_band_adds_the_phases_each_with_its_own_model_error():
    a = Assumptions(monte_carlo_samples=4000)
    whole = _case([10.0, 30.0], [1e12, 1e11])
    single = _case([10.0], [1e12])
    days = evaluate_core(whole, a).time_to_train_days
    got, alone = band(whole, a), band(single, a)
    assert got.time_to_train_days[1] == pytest.approx(days, rel=0.05)
    assert got.time_to_train_days[1] > alone.time_to_train_days[1]
    # a phase the model is sure of (a measured-like error of zero) narrows the band
    sure = replace(whole.phases[0].performance, error=StepTimeError(calibrated=True, sigma_log=0.0))
    narrower = band(replace(whole, phases=(replace(whole.phases[0], performance=sure),)), a)
    spread = got.time_to_train_days[2] - got.time_to_train_days[0]
    assert narrower.time_to_train_days[2] - narrower.time_to_train_days[0] < spread


def test_efficiency_sensitivity_and_the_step_time_to_win_move_every_phase():
    case = _case([10.0, 30.0], [1e12, 1e11], pricing=ex.rental("2.00"))
    [moved], _ = apply(Trial("efficiency", 0.25, bid=0), [case], Assumptions())
    assert moved.performance.step_time_s < 10.0 and moved.phases[0].performance.step_time_s < 30.0
    slower = at_step_time(case, 20.0)
    assert slower.phases[0].performance.step_time_s == pytest.approx(60.0)
    a = Assumptions(monte_carlo_samples=0)
    target = evaluate_core(_case([8.0, 24.0], [1e12, 1e11], pricing=ex.rental("2.00")), a).on("commitment")
    win = step_time_to_win(case, a, "commitment", target.total_cost)
    assert win == pytest.approx(8.0, rel=0.01)        # same ratio of phase to main step time: ties at 8 s


# --- the input bounds -----------------------------------------------------------------------------

@pytest.mark.parametrize("phase, message", [
    ("{name: x, seq_len: 1000000, global_batch: 2000000, steps: 1}", "tokens per step"),
    ("{name: x, seq_len: 1000000, global_batch: 1000000, steps: 2000000}", "training tokens"),
])
def test_a_phase_s_batch_and_tokens_are_bounded_like_the_workload_s(tmp_path, phase, message):
    text = CLUSTER.split("  phases:")[0] + f"  phases:\n    - {phase}\n" + "bids:" + CLUSTER.split("bids:")[1]
    path = tmp_path / "cluster.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_inputs(path)
    text = str(err.value)
    assert message in text and "cluster.yaml:" in text


# --- the sweep ------------------------------------------------------------------------------------

SWEEP = """\
schema: procure.sweep/v1
title: Phases in a sweep
as_of: 2026-12-01
workloads:
  - id: w
    model: llama3-8b
    seq_len: 4096
    global_batch: 1024
    train_tokens: 1e10
    phases: [{name: long-context, seq_len: 32768, global_batch: 128, steps: 1000}]
accelerators: [h100-sxm5-80gb]
gpus: [64]
terms: [neocloud-reserved-2026q3/reserved-1y]
"""


def test_a_sweep_point_with_phases_equals_the_quote_of_its_cluster_yaml(tmp_path):
    plan = plan_sweep(load_sweep(write_sweep(tmp_path, SWEEP)))
    run = run_sweep(plan, tmp_path / "parts", workers=1)
    (point,) = run.document.points
    (workload,) = run.document.workloads
    assert workload.train_tokens == 1e10 + PHASE_TOKENS and workload.phases[0].name == "long-context"
    path = tmp_path / "point.yaml"
    path.write_text(cluster_yaml(plan, point.id), encoding="utf-8")
    bid = api.quote_document(path).to_data()["bids"][0]
    assert bid["phases"] and point.feasible
    assert bid["time_to_train_days"] == point.time_to_train_days
    assert bid["total_cost"] == point.total_cost and bid["cost_per_million_tokens"] == point.cost_per_million_tokens
    assert [bid["uncertainty"]["cost_per_million_tokens"][k] for k in ("p10", "p50", "p90")] == \
        point.band.cost_per_million_tokens
    assert not math.isclose(point.time_to_train_days, 1e10 / point.tokens_per_s / point.goodput / 86400)
