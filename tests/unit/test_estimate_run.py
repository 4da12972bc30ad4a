"""`procure estimate` shows the run the quote costs (issue 27 item 7): time to train, goodput and
GPU-hours per bid and per phase, equal to the quote's own figures for the model's step time."""

from __future__ import annotations

import pytest

from procure import api
from shared_root import REPO

EXAMPLE = REPO / "examples" / "cluster.yaml"


@pytest.fixture(scope="module")
def both():
    doc = api.quote_document(EXAMPLE)
    return api.estimate(EXAMPLE), {bid.id: bid for bid in doc.bids}


def test_estimate_states_time_goodput_and_gpu_hours_for_every_feasible_bid(both):
    estimated, _ = both
    for bid in estimated["bids"]:
        run = bid["run"]
        assert (run is not None) == bool(bid["feasible"]), bid["id"]
        if run:
            assert run["time_to_train_days"] > 0 and 0 < run["goodput"]["fraction"] <= 1
            assert run["gpu_hours"] == pytest.approx(run["time_to_train_days"] * 24 * bid["gpus"])
            assert sum(p["gpu_hours"] for p in run["phases"]) == pytest.approx(run["gpu_hours"])


def test_estimate_matches_the_quote_where_the_quote_uses_the_model(both):
    estimated, quoted = both
    compared = 0
    for bid in estimated["bids"]:
        doc_bid = quoted[bid["id"]]
        if bid["run"] is None or doc_bid.step_time_basis != "modeled":
            continue        # a measured bid's quote runs at its logs' step time
        compared += 1
        assert bid["run"]["time_to_train_days"] == pytest.approx(doc_bid.time_to_train_days, rel=1e-5)
        assert bid["run"]["goodput"]["fraction"] == pytest.approx(doc_bid.goodput.fraction, rel=1e-5)  # the document keeps 6 digits
    assert compared >= 3


def test_estimate_shows_the_tuned_recipe_and_the_searched_plan_side_by_side(tmp_path):
    """Issue 27 item 2: where a published tuned recipe of the model exists, `procure estimate`
    prints its plan and measured step next to the search's best plan at the recipe's scale."""
    from rich.console import Console

    from procure.cli_views import render_estimate

    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "schema: procure/v1\ntitle: recipe check\nas_of: 2025-06-01\n"
        "workload: {model: llama3-70b, seq_len: 8192, global_batch: 128, train_tokens: 1e12, precision: fp8}\n"
        "bids:\n  - {id: h100, vendor: x, accelerator: h100-sxm5-80gb, gpus: 96, network: ib-ndr400,\n"
        "     pricing: {kind: rental, usd_per_gpu_hour: 2}}\n", encoding="utf-8")
    result = api.estimate(cluster)
    recipe = result["bids"][0]["tuned_recipe"]
    assert recipe["recipe_plan"]["tp"] >= 1 and recipe["search_plan_at_recipe_scale"]["tp"] >= 1
    assert recipe["search_to_measured"] == pytest.approx(
        recipe["search_step_time_at_recipe_scale_s"] / recipe["recipe_measured_step_time_s"])
    console = Console(record=True, width=160, color_system=None)
    render_estimate(result, console)
    shown = console.export_text()
    assert f"tuned recipe {recipe['recipe_id']}" in shown and "recipe plan" in shown
    assert "search plan" in shown and "of measured" in shown


def test_estimate_shows_the_run_as_published_whole_runs_go(both):
    """Next to the model's run, the run at the pace published whole runs kept: the model's
    compute hours with the run-level goodput and the real-run gap fitted on the whole-run corpus,
    inside its own band."""
    import math

    from procure.pipeline import shipped_run_losses

    fitted = shipped_run_losses()
    assert fitted is not None
    estimated, _ = both
    for bid in estimated["bids"]:
        run, real = bid["run"], bid["real_run"]
        assert (real is not None) == (run is not None), bid["id"]
        if real is None:
            continue
        compute_hours = run["gpu_hours"] * run["goodput"]["fraction"]
        assert real["real_run_factor"] == pytest.approx(math.exp(fitted.real_run_gap_log))
        assert real["gpu_hours"] == pytest.approx(compute_hours * real["real_run_factor"] / real["goodput"])
        assert real["p10_gpu_hours"] < real["gpu_hours"] * math.exp(fitted.bias_pooled) < real["p90_gpu_hours"]
        assert real["fit_runs"] == len(fitted.fit_runs)
