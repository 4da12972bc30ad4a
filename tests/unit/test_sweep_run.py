"""A sweep runs the quote's plan search and economics on every point, gives the same bytes in
process and on a pool of processes, and resumes an interrupted run without recomputing."""

from __future__ import annotations

from decimal import Decimal

import pytest
from sweep_support import MINI_POINTS, MINI_SWEEP, SMALL_POINTS, write_sweep

from procure import api
from procure.errors import InputError
from procure.report.sweep import render_sweep_bytes
from procure.sweep import load_sweep, plan_sweep, run_sweep
from procure.sweep.emit import cluster_yaml

FORMATS = ["json", "parquet"]


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory):
    return write_sweep(tmp_path_factory.mktemp("sweep"))


@pytest.fixture(scope="module")
def plan(sweep_file):
    return plan_sweep(load_sweep(sweep_file))


@pytest.fixture(scope="module")
def serial(plan, tmp_path_factory):
    return run_sweep(plan, tmp_path_factory.mktemp("parts") / "p", workers=1)


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    return plan_sweep(load_sweep(write_sweep(tmp_path_factory.mktemp("mini"), MINI_SWEEP)))


@pytest.fixture(scope="module")
def mini_bytes(mini, tmp_path_factory):
    return render_sweep_bytes(run_sweep(mini, tmp_path_factory.mktemp("parts") / "p", workers=1).document, FORMATS)


def point(run, pid):
    return next(p for p in run.document.points if p.id == pid)


def test_every_point_is_there_once(serial):
    ids = [p.id for p in serial.document.points]
    assert len(ids) == SMALL_POINTS == len(set(ids)) and serial.computed_points == SMALL_POINTS
    assert [p.index for p in serial.document.points] == list(range(SMALL_POINTS))


def test_the_plan_search_runs_once_per_problem_and_serves_every_term(serial):
    by_problem = {}
    for p in serial.document.points:
        by_problem.setdefault((p.workload, p.accelerator, p.gpus), set()).add(
            (p.step_time_s, None if p.plan is None else p.plan.model_dump_json()))
    assert all(len(v) == 1 for v in by_problem.values())


@pytest.mark.parametrize("pid", ["p0001", "p0002", "p0003", "p0004", "p0012", "p0046", "p0073"])
def test_a_point_equals_the_quote_of_its_emitted_cluster_yaml(plan, serial, tmp_path, pid):
    path = tmp_path / "point.yaml"
    path.write_text(cluster_yaml(plan, pid), encoding="utf-8")
    bid = api.quote_document(path).to_data()["bids"][0]
    mine = point(serial, pid)
    assert bid["accelerator"]["id"] == mine.accelerator and bid["gpus"] == mine.gpus
    assert bid["total_cost"] == mine.total_cost and bid["cost_per_million_tokens"] == mine.cost_per_million_tokens
    assert bid["cost_basis"] == mine.cost_basis
    for basis in ("run", "commitment"):
        on = bid["cost_bases"].get(basis) or {}
        assert on.get("total_cost") == getattr(mine, f"{basis}_total_cost")
        assert on.get("cost_per_million_tokens") == getattr(mine, f"{basis}_cost_per_million_tokens")
    assert bid["time_to_train_days"] == mine.time_to_train_days and bid["step_time_s"] == mine.step_time_s
    assert sorted(f["code"] for f in bid["flags"]) == sorted(mine.flags)
    power = bid.get("power") or {}               # the power limit counts the power the quote's energy uses
    if power.get("it_kw_per_gpu") is not None:
        assert mine.it_power_mw == pytest.approx(bid["gpus"] * float(power["it_kw_per_gpu"]) / 1000)
    if mine.band is not None:
        assert [bid["uncertainty"]["cost_per_million_tokens"][k] for k in ("p10", "p50", "p90")] == \
            mine.band.cost_per_million_tokens


def test_an_inline_price_applies_only_to_the_accelerators_it_names(plan, serial):
    broker = [p for p in serial.document.points if p.term == "broker"]
    assert {p.accelerator for p in broker if p.total_cost is not None} == {"h100-sxm5-80gb"}
    b200 = next(p for p in broker if p.accelerator == "b200-sxm-180gb")
    assert "price-missing" in b200.flags and "prices only h100-sxm5-80gb" in b200.reason
    with pytest.raises(InputError, match="prices only h100-sxm5-80gb"):
        cluster_yaml(plan, b200.id)


def test_an_unknown_point_is_a_diagnostic(plan):
    with pytest.raises(InputError, match="no point 'p9999'.*p0001 to p0080"):
        cluster_yaml(plan, "p9999")


def test_a_pool_of_processes_gives_the_same_bytes(mini, mini_bytes, tmp_path):
    pooled = run_sweep(mini, tmp_path / "parts", workers=2)
    assert render_sweep_bytes(pooled.document, FORMATS) == mini_bytes


def test_an_interrupted_sweep_resumes_without_recomputing_finished_points(mini, mini_bytes, tmp_path):
    plan = mini
    parts = tmp_path / "parts"
    finished = []

    def stop_after_two(chunk):
        finished.append(chunk.id)
        if len(finished) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(plan, parts, workers=1, on_chunk=stop_after_two)
    assert sorted(p.name for p in parts.glob("chunk-*.parquet")) == ["chunk-00000.parquet", "chunk-00001.parquet"]
    recomputed = []
    resumed = run_sweep(plan, parts, workers=1, on_chunk=lambda c: recomputed.append(c.id))
    assert resumed.resumed_chunks == 2 and set(recomputed).isdisjoint(finished)
    assert resumed.computed_points == MINI_POINTS - sum(len(plan.chunks[i].gpus) * 2 for i in finished)
    assert render_sweep_bytes(resumed.document, FORMATS) == mini_bytes
    assert not parts.exists()          # a completed sweep leaves no partial files


def test_partial_results_of_another_sweep_are_never_mixed_in(mini, tmp_path):
    plan, parts = mini, tmp_path / "parts"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(plan, parts, workers=1, on_chunk=lambda c: (_ for _ in ()).throw(KeyboardInterrupt))
    other = plan_sweep(load_sweep(write_sweep(tmp_path, MINI_SWEEP.replace("budget: 3_000_000",
                                                                           "budget: 2_000_000"))))
    with pytest.raises(InputError, match="other-sweep|different sweep"):
        run_sweep(other, parts, workers=1)
    fresh = run_sweep(other, parts, workers=1, fresh=True)
    assert fresh.resumed_chunks == 0 and fresh.computed_points == MINI_POINTS


def test_a_torn_partial_file_is_recomputed(mini, mini_bytes, tmp_path):
    plan, parts = mini, tmp_path / "parts"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(plan, parts, workers=1, on_chunk=lambda c: (_ for _ in ()).throw(KeyboardInterrupt))
    (parts / "chunk-00000.parquet").write_bytes(b"PAR1 torn")
    again = run_sweep(plan, parts, workers=1)
    assert again.resumed_chunks == 0
    assert render_sweep_bytes(again.document, FORMATS) == mini_bytes


def test_money_stays_exact(serial):
    costed = [p for p in serial.document.points if p.total_cost is not None]
    assert costed and all(isinstance(p.total_cost, Decimal) and p.total_cost == p.total_cost.quantize(Decimal("0.01"))
                          for p in costed)


def test_feasible_only_drops_the_counts_where_no_plan_fits(tmp_path):
    text = """\
schema: procure.sweep/v1
title: Feasible only
as_of: 2026-12-01
workloads: [{id: w, model: llama3-70b, seq_len: 8192, global_batch_tokens: 16777216, train_tokens: 15e12}]
accelerators: [h100-sxm5-80gb]
gpus: {from: 8, to: 40, step: 8, feasible_only: true}
terms: [aws-2026q3/on-demand]
"""
    plan = plan_sweep(load_sweep(write_sweep(tmp_path, text)))
    run = run_sweep(plan, tmp_path / "parts", workers=1)
    kept = [(p.id, p.gpus) for p in run.document.points]
    assert plan.total_points == 5 and kept and all(p.feasible for p in run.document.points)
    assert 8 not in [g for _, g in kept]               # 70B does not fit on one node of H100
    assert kept[-1] == ("p0005", 40)                   # ids stay those of the full expansion


def test_progress_counts_points_up_to_the_total_starting_from_what_was_resumed(mini, tmp_path):
    parts, seen = tmp_path / "parts", []
    with pytest.raises(KeyboardInterrupt):
        run_sweep(mini, parts, workers=1, on_chunk=lambda c: (_ for _ in ()).throw(KeyboardInterrupt))
    run_sweep(mini, parts, workers=1, progress=lambda done, total: seen.append((done, total)))
    first_chunk = len(mini.chunks[0].gpus) * 2
    assert seen[0] == (first_chunk, MINI_POINTS) and seen[-1] == (MINI_POINTS, MINI_POINTS)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and len(seen) == len(mini.chunks)


def test_inline_purchase_terms_cost_on_both_bases_and_name_their_parts(tmp_path):
    text = """\
schema: procure.sweep/v1
title: Own deal
as_of: 2026-12-01
cost_basis: run
workloads: [{id: w, model: llama3-8b, seq_len: 4096, global_batch_tokens: 2097152, train_tokens: 1e11}]
accelerators: [h100-sxm5-80gb, b200-sxm-180gb]
gpus: [64]
terms:
  - {id: own-b200, kind: purchase, capex_per_gpu: 45000, life_years: 5, accelerators: [b200-sxm-180gb]}
"""
    plan = plan_sweep(load_sweep(write_sweep(tmp_path, text)))
    h100, b200 = run_sweep(plan, tmp_path / "parts", workers=1).document.points
    assert "price-missing" in h100.flags and "prices only b200-sxm-180gb" in h100.reason
    assert b200.cost_basis == "run" and b200.total_cost == b200.run_total_cost
    assert b200.upfront_capex is not None and b200.upfront_capex >= 64 * 45000
    assert b200.commitment_total_cost > b200.run_total_cost > 0


def _interrupted_after(plan, parts, n):
    done = []

    def stop(chunk):
        done.append(chunk.id)
        if len(done) == n:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(plan, parts, workers=1, on_chunk=stop)
    return done


def test_a_forged_resume_chunk_changes_no_figure(mini, mini_bytes, tmp_path):
    """Issue 30: points at $1.0 in a chunk procure did not write are discarded and recomputed."""
    from procure.sweep.columns import EVAL_COLUMNS, parquet_bytes, read_parquet

    plan, parts = mini, tmp_path / "parts"
    _interrupted_after(plan, parts, 2)
    chunk = parts / "chunk-00000.parquet"
    rows = read_parquet(chunk.read_bytes())
    money = [k for k, v in rows[0].items() if isinstance(v, Decimal)]
    assert money
    forged = [{**r, **{k: Decimal("1.00") for k in money if r[k] is not None}} for r in rows]
    chunk.write_bytes(parquet_bytes(forged, EVAL_COLUMNS))
    again = run_sweep(plan, parts, workers=1)
    assert again.resumed_chunks == 1
    assert render_sweep_bytes(again.document, FORMATS) == mini_bytes


def test_without_the_private_ledger_nothing_is_resumed(mini, mini_bytes, tmp_path, monkeypatch):
    plan, parts = mini, tmp_path / "parts"
    _interrupted_after(plan, parts, 2)
    monkeypatch.setenv("PROCURE_CACHE_DIR", "off")     # a copied folder: its chunks are not this user's
    again = run_sweep(plan, parts, workers=1)
    assert again.resumed_chunks == 0
    assert render_sweep_bytes(again.document, FORMATS) == mini_bytes


def test_fresh_on_a_symlinked_parts_folder_deletes_nothing_outside(mini, tmp_path):
    plan = mini
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "thesis.txt").write_text("keep")
    parts = tmp_path / "out" / "x.parts"
    parts.parent.mkdir()
    parts.symlink_to(outside, target_is_directory=True)
    for fresh in (True, False):
        with pytest.raises(InputError, match="unsafe-parts|link"):
            run_sweep(plan, parts, workers=1, fresh=fresh)
    assert (outside / "thesis.txt").read_text() == "keep" and parts.is_symlink()
