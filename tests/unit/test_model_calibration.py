"""The fitted knobs: the shipped YAML, its loader, and what it was fitted on."""

from __future__ import annotations

from pathlib import Path

import pytest

from procure.catalog.calibration import knobs_from_document, load_knobs
from procure.model import AccelKnobs, Knobs

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_knobs_cover_the_calibrated_parts_and_a_default():
    knobs = load_knobs()
    assert isinstance(knobs, Knobs)
    assert {"a100-sxm4-80gb", "a100-sxm4-40gb", "h100-sxm5-80gb"} <= set(knobs.by_accelerator)
    assert knobs.for_accelerator("tpu-v5p-95gb") is knobs.default
    assert not knobs.default.fitted and knobs.for_accelerator("mi300x-oam-192gb").fitted
    assert knobs.fitted_at and all("multi" not in f for f in knobs.fitted_on)
    assert knobs.fit_mape["published_runs/calibration.yaml"] <= 0.08


def test_builtin_defaults_track_the_shipped_default_block():
    shipped, builtin = load_knobs().default, AccelKnobs()
    for name in ("membound_factor", "launch_overhead_s", "scale_up_bw_eff", "scale_out_bw_eff",
                 "overlap_efficiency", "step_time_cv", "attention_ratio", "fp8_gemm_scale"):
        assert getattr(builtin, name) == pytest.approx(getattr(shipped, name), rel=0.02), name
    assert [f for _, f in builtin.gemm_curve] == pytest.approx([f for _, f in shipped.gemm_curve], abs=0.02)


def test_describe_is_json_ready():
    import json

    doc = json.loads(json.dumps(load_knobs().describe()))
    assert "h100-sxm5-80gb" in doc["accelerators"] and doc["fitted_at"]
    assert doc["default"]["gemm_curve"][0][1] > 0


def test_knob_values_are_physical():
    for k in [load_knobs().default, *load_knobs().by_accelerator.values()]:
        fracs = [f for _, f in k.gemm_curve]
        assert fracs == sorted(fracs) and 0 < fracs[0] and fracs[-1] <= 1.0
        assert 0.7 <= k.scale_up_bw_eff <= 0.9 and 0.7 <= k.scale_out_bw_eff <= 0.9
        assert 0.0 <= k.overlap_efficiency <= 1.0
        assert 0.3 <= k.membound_factor <= 6.0 and 0.0 <= k.launch_overhead_s <= 3e-3
        assert 0.3 <= k.attention_ratio <= 1.0 and 0.5 <= k.fp8_gemm_scale <= 1.5 and 0.2 <= k.ceiling_scale <= 1.0
        assert k.gemm_top is None or 0 < k.gemm_top <= 1


def test_document_round_trip_and_defaults():
    doc = {"schema": "procure.calibration/v1",
           "default": {"membound_factor": 2.0, "gemm_curve": [[1e-5, 0.5], [1e-3, 1.0]]},
           "accelerators": {"x": {"scale_out_bw_eff": 0.75, "gemm_top": 0.7}},
           "fitted_on": ["a"], "fitted_at": "2026-01-01", "fit_mape": {"a": 0.05}}
    knobs = knobs_from_document(doc)
    assert knobs.default.membound_factor == 2.0
    assert knobs.default.gemm_curve == ((1e-5, 0.5), (1e-3, 1.0))
    x = knobs.for_accelerator("x")
    assert (x.scale_out_bw_eff, x.gemm_top, x.membound_factor) == (0.75, 0.7, 2.0)
    assert knobs.default.launch_overhead_s == AccelKnobs().launch_overhead_s


def test_the_calibration_tool_never_reads_the_multi_node_test_set():
    source = (ROOT / "benchmarks" / "refit.py").read_text()
    assert "ground_truth_single.csv" in source
    assert "ground_truth_multi" not in source


def test_load_knobs_reads_a_given_file(tmp_path):
    path = tmp_path / "cal.yaml"
    path.write_text("schema: procure.calibration/v1\ndefault: {overlap_efficiency: 0.5}\naccelerators: {}\n")
    assert load_knobs(path).default.overlap_efficiency == pytest.approx(0.5)
