"""The whole-run corpus (procure.whole-runs/v1): its schema, its statistics, the shipped runs, and
the user path (each run's cluster.yaml through `procure estimate`'s pipeline)."""

from __future__ import annotations

import json
import math
from collections import defaultdict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from procure.backtest.whole_runs import (WholeRun, band, compare_run, grouped, read_whole_runs,
                                         source_family_spread, summary)
from procure.errors import InputError
from procure.inputs.bundle import load_inputs
from procure.resources import catalog_dir

INDEX = catalog_dir() / "whole_runs" / "runs.yaml"

RUN = """  - id: {id}
    name: A run
    cluster: {cluster}
    source_family: lab
    split: fit
    family: dense-a100
    published: {published}
    sources: [{{url: "https://example.org/paper", where: "Table 1", checked: "2026-12-04"}}]
"""


def _index(tmp_path, *runs: str):
    path = tmp_path / "runs.yaml"
    path.write_text("schema: procure.whole-runs/v1\nruns:\n" + "".join(runs))
    return path


def test_every_problem_of_an_index_is_reported_at_its_place(tmp_path):
    (tmp_path / "a.yaml").write_text("schema: procure/v1\n")
    path = _index(tmp_path,
                  RUN.format(id="a", cluster="a.yaml", published="{gpu_hours: 10, gpus: 8, days: 2, where: x, includes: [pretraining]}"),
                  RUN.format(id="b", cluster="missing.yaml", published="{gpu_hours: 10, where: x, includes: [lunch]}"),
                  RUN.format(id="a", cluster="../a.yaml", published="{gpu_hours: 10, where: x, includes: [pretraining]}"))
    with pytest.raises(InputError) as info:
        read_whole_runs(path)
    text = "\n".join(d.format() for d in info.value.diagnostics)
    lines = {d.line for d in info.value.diagnostics}
    assert "either `gpu_hours` or both `gpus` and `days`" in text
    assert "lunch" in text
    assert len(lines) >= 2


def test_a_missing_cluster_file_and_a_duplicate_id_are_reported(tmp_path):
    (tmp_path / "a.yaml").write_text("schema: procure/v1\n")
    path = _index(tmp_path,
                  RUN.format(id="a", cluster="a.yaml", published="{gpus: 8, days: 2, where: x, includes: [pretraining]}"),
                  RUN.format(id="a", cluster="nope.yaml", published="{gpu_hours: 10, where: x, includes: [pretraining]}"))
    with pytest.raises(InputError) as info:
        read_whole_runs(path)
    codes = sorted(d.code for d in info.value.diagnostics)
    assert codes == ["duplicate-id", "not-found"]


def test_gpus_times_days_is_read_as_gpu_hours(tmp_path):
    (tmp_path / "a.yaml").write_text("schema: procure/v1\n")
    path = _index(tmp_path, RUN.format(id="a", cluster="a.yaml",
                                       published="{gpus: 8, days: 2.5, where: x, includes: [pretraining]}"))
    [(run, cluster)] = read_whole_runs(path)
    assert run.published.hours == 8 * 2.5 * 24 and cluster.name == "a.yaml"


@given(st.floats(1e-3, 1e9), st.floats(0.0, 3.0))
def test_a_band_never_excludes_its_own_median(median, sigma):
    low, high = band(median, sigma)
    assert low <= median * (1 + 1e-12) and median <= high * (1 + 1e-12)


def test_summary_statistics_are_worked_by_hand():
    rows = [{"split": "fit", "family": "f", "source_family": "s", "predicted_gpu_hours": 90.0, "ratio": 0.9,
             "error": -0.1, "inside_band": True},
            {"split": "fit", "family": "f", "source_family": "t", "predicted_gpu_hours": 120.0, "ratio": 1.2,
             "error": 0.2, "inside_band": False},
            {"split": "holdout", "family": "g", "source_family": "u", "predicted_gpu_hours": None}]
    s = summary(rows)
    assert s["n"] == 2 and s["mape"] == pytest.approx(0.15) and s["bias"] == pytest.approx(0.05)
    assert s["median_ratio"] == pytest.approx(1.05) and s["coverage"] == 0.5
    g = grouped(rows)
    assert g["by_split"]["holdout"]["n"] == 0 and g["by_split"]["holdout"]["mape"] is None


def test_the_shipped_corpus_is_consistent():
    runs = read_whole_runs(INDEX)
    assert runs, "the shipped corpus is empty"
    splits = defaultdict(set)
    for run, cluster in runs:
        splits[run.source_family].add(run.split)
        inputs = load_inputs(cluster)           # every cluster file is a valid cluster.yaml
        assert len(inputs.bids) == 1, run.id
        assert all(s.checked for s in run.sources)
    # a source family is never split between fit and hold-out
    assert all(len(s) == 1 for s in splits.values()), dict(splits)


def test_whole_run_backtest_prints_each_runs_p10_p90_gpu_hours(tmp_path):
    from procure import api

    result = api.backtest(INDEX)
    assert result["schema"] == "procure.whole-backtest/v1"
    predicted = [r for r in result["runs"] if r["predicted_gpu_hours"] is not None]
    assert predicted
    for row in predicted:
        assert row["p10_gpu_hours"] < row["predicted_gpu_hours"] < row["p90_gpu_hours"]
        assert math.isclose(row["ratio"], row["predicted_gpu_hours"] / row["published_gpu_hours"])
    json.dumps(result)          # the JSON form is plain data


def test_deepseek_v3_through_cluster_yaml_is_within_ten_percent_and_fits():
    """Issue 27: DeepSeek-V3 stated as a user would (its preset, its published plan with DualPipe,
    its stack) predicts the published 2.664M H800 GPU-hours of pre-training within 10%, and the
    plan that ran fits in 80 GB."""
    from procure import api

    result = api.estimate(catalog_dir() / "whole_runs" / "clusters" / "deepseek-v3.yaml")
    bid = result["bids"][0]
    assert bid["feasible"], bid["reason"]
    assert bid["run"]["gpu_hours"] == pytest.approx(2_664_000, rel=0.10)
    assert bid["memory_gib"]["total"] <= bid["memory_gib"]["capacity"]


def test_step_backtest_prints_each_runs_p10_p90_and_band_coverage():
    """Issue 27 item 6: `procure backtest --format json` prints each run's P10/P90 step time,
    from the error its family carries, and the share of measured times inside the band."""
    from procure import api

    result = api.backtest(catalog_dir() / "published_runs" / "moe_longctx.yaml")
    banded = [r for r in result["runs"] if r.get("predicted_step_time_s") is not None]
    assert banded and all(r["p10_step_time_s"] < r["p90_step_time_s"] for r in banded)
    inside = [r["p10_step_time_s"] <= r["measured_step_time_s"] <= r["p90_step_time_s"] for r in banded]
    assert [r["inside_band"] for r in banded] == inside
    for split, stats in result["by_split"].items():
        rows = [r for r in banded if (r.get("split") or "unsplit") == split]
        assert stats["coverage"] == pytest.approx(sum(r["inside_band"] for r in rows) / len(rows))


def test_a_published_figure_is_read_as_the_whole_run_mfu_it_implies():
    """A run whose model FLOPs take 100 GPU-hours at peak: predicted at 250 and published at 400
    GPU-hours, the prediction implies a 40% whole-run MFU and the figure 25%."""
    run = WholeRun.model_validate({
        "id": "r", "name": "r", "cluster": "r.yaml", "source_family": "lab", "split": "fit",
        "family": "dense-a100", "sources": [{"url": "u", "where": "w", "checked": "2026-12-04"}],
        "published": {"gpu_hours": 400, "where": "table 1", "includes": ["pretraining"]}})
    row = compare_run(run, {"gpu_hours": 250.0, "peak_gpu_hours": 100.0, "sigma_log": 0.1}, None)
    assert row["run_mfu"] == pytest.approx(0.40) and row["published_mfu"] == pytest.approx(0.25)
    assert compare_run(run, {"gpu_hours": 250.0, "sigma_log": 0.1}, None)["published_mfu"] is None


def test_a_source_familys_spread_is_worked_by_hand():
    """ln(published / predicted) of e and e^3 is 1 and 3: standard deviation sqrt(2); a family of
    one run has no spread and is left out."""
    def row(family, published, predicted, implied):
        return {"source_family": family, "split": "fit", "published_gpu_hours": published,
                "predicted_gpu_hours": predicted, "published_mfu": implied}

    rows = [row("a", math.e, 1.0, 0.3), row("a", math.e ** 3, 1.0, 0.1), row("b", 2.0, 1.0, 0.2),
            {"source_family": "a", "split": "fit", "published_gpu_hours": 5.0, "predicted_gpu_hours": None}]
    (spread,) = source_family_spread(rows)
    assert spread["source_family"] == "a" and spread["n"] == 2
    assert spread["log_spread"] == pytest.approx(math.sqrt(2.0))
    assert (spread["published_mfu_min"], spread["published_mfu_max"]) == (0.1, 0.3)
