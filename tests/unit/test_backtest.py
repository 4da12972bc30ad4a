"""procure.backtest: published runs, vTrain CSV, reasons, rank correlation."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from procure.backtest import (SCHEMA, backtest, read_vtrain_csv, run_case, spearman,
                              spearman_by_group)
from procure.backtest.published_run import PublishedRun

try:
    from test_model_fixtures import ACCELERATORS
except ImportError:  # pragma: no cover
    from .test_model_fixtures import ACCELERATORS

RUN = {
    "id": "narayanan2021_table1_18B", "source": "Narayanan et al.: Table 1", "tier": "A",
    "model": {"layers": 40, "hidden": 6144, "heads": 48, "kv_heads": 48, "ffn_hidden": 24576,
              "vocab": 51200, "seq_len": 2048, "gated_mlp": False},
    "hardware": {"accelerator": "a100-sxm4-80gb", "gpus": 256, "gpus_per_node": 8,
                 "scale_out_gbps_per_gpu": 200},
    "parallelism": {"tp": 8, "pp": 1, "dp": 32, "cp": 1, "ep": 1, "vpp": 1, "micro_batch": 8,
                    "global_batch": 1024, "zero_stage": 0, "recompute": "full",
                    "sequence_parallel": False},
    "precision": "fp16", "measured": {"step_time_s": 9.399, "step_time_derived": True}, "assumed": [],
}


def published(data: dict) -> PublishedRun:
    """A run written as in a published-runs file, validated as the reader does."""
    return PublishedRun.model_validate(data)

CSV_MULTI = """\ufeffParameters (billion),# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)
3.6,64,512,8,3072,32,30,2048,1,64,1,3566.5
3.6,64,512,8,3072,32,30,2048,2,32,1,3975.2
"""
CSV_SINGLE = """# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)
8,32,4,1024,16,24,1024,2,2,2,219.732754
"""


def test_backtest_predicts_a_published_run_with_terms():
    result = backtest([published(RUN)], ACCELERATORS)
    assert result["schema"] == SCHEMA
    row = result["runs"][0]
    assert row["id"] == RUN["id"] and row["measured_step_time_s"] == 9.399
    assert row["predicted_step_time_s"] > 0
    assert row["error"] == pytest.approx((row["predicted_step_time_s"] - 9.399) / 9.399)
    assert result["mape"] == pytest.approx(abs(row["error"]))
    assert {"compute_s", "tp_comm_s", "dp_comm_exposed_s"} <= set(row["terms"])


def test_unpredictable_runs_are_listed_with_a_reason_not_dropped():
    unknown = copy.deepcopy(RUN) | {"id": "x"}
    unknown["hardware"] = dict(RUN["hardware"], accelerator="tpu-v9")
    too_big = copy.deepcopy(RUN) | {"id": "y"}
    too_big["parallelism"] = dict(RUN["parallelism"], tp=1, dp=256, micro_batch=4,
                                  recompute="none")
    result = backtest([published(RUN), published(unknown), published(too_big)], ACCELERATORS)
    rows = {r["id"]: r for r in result["runs"]}
    assert len(result["runs"]) == 3
    assert rows["x"]["predicted_step_time_s"] is None and "unknown accelerator" in rows["x"]["reason"]
    assert rows["y"]["predicted_step_time_s"] is None and "GiB" in rows["y"]["reason"]
    assert result["mape"] == pytest.approx(abs(rows[RUN["id"]]["error"]))


def test_old_runs_get_the_software_of_their_year():
    case, _ = run_case(published(RUN), ACCELERATORS)
    assert case.workload.attention == "unfused" and case.plan.overlap_grad_reduce is False
    modern = published(RUN).model_copy(update={"id": "megatron_2024_x", "source": "2024"})
    case, _ = run_case(modern, ACCELERATORS)
    assert case.workload.attention == "flash" and case.plan.overlap_grad_reduce is True
    stated = published(copy.deepcopy(RUN) | {"attention": "flash", "overlap_dp": True})
    case, _ = run_case(stated, ACCELERATORS)
    assert case.workload.attention == "flash" and case.plan.overlap_grad_reduce is True


def test_source_corrections_are_applied_and_shown():
    run = copy.deepcopy(RUN) | {"id": "megatron_readme2024_h100_70B"}
    run["hardware"] = dict(RUN["hardware"], accelerator="h100-sxm5-80gb")
    plan = run_case(published(run), ACCELERATORS)[0].plan
    assert plan.zero_stage == 1 and plan.sequence_parallel and plan.tp_comm_overlap
    row = backtest([published(run)], ACCELERATORS)["runs"][0]
    assert row["corrected"]["fields"]["zero_stage"] == 1 and "README" in row["corrected"]["why"]


def test_read_vtrain_multi_csv():
    runs = read_vtrain_csv(CSV_MULTI, multi=True)
    assert len(runs) == 2
    r = runs[1]
    assert r.measured.step_time_s == pytest.approx(3.9752)
    assert r.model.vocab == 50432 and r.model.ffn_hidden == 4 * 3072
    assert r.parallelism.tp == 2 and r.parallelism.recompute == "full"
    assert r.hardware.scale_out_gbps_per_gpu == 100.0 and r.hardware.gpus_per_node == 8
    assert r.overlap_dp is False and r.attention == "unfused" and r.precision == "fp16"
    assert r.group == runs[0].group == "3.6B/64gpu/512seq"


def test_read_vtrain_single_csv_computes_the_group_from_the_model():
    (run,) = read_vtrain_csv(CSV_SINGLE, multi=False)
    assert run.parallelism.pp == 2 and run.model.vocab == 50432
    assert run.group is not None and run.group.endswith("/8gpu/32seq")
    result = backtest([run], ACCELERATORS)
    assert result["runs"][0]["predicted_step_time_s"] is not None


def test_spearman_with_ties_matches_the_definition():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    x, y = [1, 2, 2, 3], [1, 3, 2, 4]
    rx, ry = np.array([1, 2.5, 2.5, 4]), np.array([1, 3, 2, 4])
    assert spearman(x, y) == pytest.approx(np.corrcoef(rx, ry)[0, 1])


def test_spearman_against_scipy_when_available():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    x, y = rng.integers(0, 6, 30), rng.integers(0, 6, 30)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic)


def test_spearman_by_group_ignores_small_groups_and_unpredicted_runs():
    rows = [{"group": "a", "predicted_step_time_s": p, "measured_step_time_s": m}
            for p, m in ((1, 1), (2, 2), (3, 3))]
    rows += [{"group": "b", "predicted_step_time_s": p, "measured_step_time_s": m}
             for p, m in ((1, 3), (2, 2), (3, 1))]
    rows += [{"group": "c", "predicted_step_time_s": 1, "measured_step_time_s": 1},
             {"group": "c", "predicted_step_time_s": None, "measured_step_time_s": 2}]
    assert spearman_by_group({"runs": rows}) == pytest.approx(0.0)
    assert spearman_by_group({"runs": rows[:3]}) == pytest.approx(1.0)
