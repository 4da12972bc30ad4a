"""The model against published measurements (needs ../shared; skipped when absent).

Targets: published runs (fitted on) MAPE <= 8%; vTrain multi-node (NEVER fitted on) MAPE <= 12%
and mean within-group Spearman >= 0.8 (Calculon: 15.3% / 0.73)."""

from __future__ import annotations


import pytest

from procure.backtest import backtest, read_vtrain_csv, spearman_by_group
from procure.backtest.published_run import PublishedRun
from procure.backtest.runs import read_runs
from procure.catalog.calibration import load_knobs
from shared_root import SHARED

try:
    from test_model_fixtures import ACCELERATORS
except ImportError:  # pragma: no cover
    from .test_model_fixtures import ACCELERATORS

RUNS = SHARED / "data" / "published_runs"
pytestmark = [pytest.mark.shared,
              pytest.mark.skipif(not RUNS.is_dir(), reason="../shared/data/published_runs is absent")]


def _vtrain(name: str, multi: bool) -> list[PublishedRun]:
    return read_vtrain_csv((RUNS / "vtrain" / name).read_text(encoding="utf-8"), multi=multi)


def test_published_runs_mape_within_8_percent():
    result = backtest(read_runs(RUNS / "calibration.yaml"), ACCELERATORS, knobs=load_knobs())
    assert all(r["predicted_step_time_s"] is not None for r in result["runs"])
    assert result["mape"] <= 0.08


def test_vtrain_multi_node_mape_and_rank_correlation():
    result = backtest(_vtrain("ground_truth_multi.csv", True), ACCELERATORS, knobs=load_knobs())
    assert len(result["runs"]) == 109
    assert all(r["predicted_step_time_s"] is not None for r in result["runs"])
    assert result["mape"] <= 0.12
    assert spearman_by_group(result) >= 0.8


@pytest.mark.slow
def test_vtrain_single_node_fit():
    result = backtest(_vtrain("ground_truth_single.csv", False), ACCELERATORS, knobs=load_knobs())
    assert len(result["runs"]) == 1440
    assert result["mape"] <= 0.10
