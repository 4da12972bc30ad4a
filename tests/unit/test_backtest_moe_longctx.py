"""Hold-out accuracy of the MoE and long-context corpus (published_runs/moe_longctx.yaml) and the
DualPipe pipeline bubble that the DeepSeek-V3 runs depend on.

Issue 11 targets on the hold-out split: MAPE <= 12% and mean signed error within +-6% for MoE
and for sequences >= 32k. The bounds below are what the shipped calibration reaches plus a
margin for refits; where a family misses the target the bound says so. Never tuned to the
hold-out: the knobs are fitted on the fit split only (benchmarks/refit.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from procure.backtest import backtest, run_case
from procure.backtest.runs import read_runs
from procure.catalog.calibration import load_knobs
from procure.catalog.load import default_catalog
from procure.model.core import pipeline_bubble_s
from test_backtest_corpus import CORPUS

# Reached (block routing of AutoModel's benchmark gate, its pipeline flushes, and the MoE load
# imbalance fitted on the fit split's force-balanced/dropless pairs): long-context 5.9% / +4.7%,
# MoE 8.3% / -5.2%, both within issue 11's targets, which are the bounds.
HOLDOUT_MAPE_MAX = {"long-context": 0.08, "moe": 0.12}
HOLDOUT_BIAS_MAX = {"long-context": 0.06, "moe": 0.06}


@pytest.fixture(scope="module")
def cat():
    return default_catalog()


@pytest.fixture(scope="module")
def result(cat):
    runs = read_runs(CORPUS / "moe_longctx.yaml")
    return backtest(runs, cat.accelerators, knobs=load_knobs(), check_memory=False)


@pytest.mark.parametrize("family", sorted(HOLDOUT_MAPE_MAX))
def test_holdout_error_per_family_stays_within_its_bound(result, family):
    group = next(g for g in result["groups"] if g["split"] == "holdout" and g["family"] == family)
    assert group["n"] >= 8
    assert group["mape"] <= HOLDOUT_MAPE_MAX[family], group
    assert abs(group["bias"]) <= HOLDOUT_BIAS_MAX[family], group


def test_every_run_is_predicted(result):
    assert [r["id"] for r in result["runs"] if r["predicted_step_time_s"] is None] == []


def test_deepseek_runs_are_timed_with_dualpipe_and_the_others_with_1f1b(cat):
    # DeepSeek's own runs (V3 report) used DualPipe; the AutoModel DeepSeek-V3 runs are interleaved 1F1B
    timed = {run.id for run in read_runs(CORPUS / "moe_longctx.yaml")
             if run_case(run, cat.accelerators)[0].plan.pipeline_schedule == "dualpipe"}
    assert timed == {"deepseekv3_2024_pretrain_h800_2048gpu", "deepseekv3_2024_ctxext_phase1_32k_h800",
                     "deepseekv3_2024_ctxext_phase2_128k_h800"}


def test_the_dualpipe_bubble_is_the_deepseek_v3_report_table_2_value():
    # (PP/2 - 1)(F&B + B - 3W) with F = B = W = 1 (F&B = F + 2 = 3): (8 - 1) x 1 at PP 16, where
    # 1F1B idles (PP - 1)(F + B) = 15 x 3.
    chunk = np.array([3.0])
    assert pipeline_bubble_s(np.array([16.0]), np.array([1.0]), np.array([1.0]), chunk)[0] == pytest.approx(7.0)
    assert pipeline_bubble_s(np.array([16.0]), np.array([1.0]), np.array([0.0]), chunk)[0] == pytest.approx(45.0)


@given(p=st.integers(1, 128), v=st.integers(1, 8), chunk_s=st.floats(1e-4, 1e3))
def test_dualpipe_never_idles_longer_than_1f1b(p, v, chunk_s):
    args = (np.array([float(p)]), np.array([float(v)]))
    dual = pipeline_bubble_s(*args, np.array([1.0]), np.array([chunk_s]))[0]
    plain = pipeline_bubble_s(np.array([float(p)]), np.array([1.0]), np.array([0.0]), np.array([chunk_s]))[0]
    assert 0.0 <= dual <= plain + 1e-12
