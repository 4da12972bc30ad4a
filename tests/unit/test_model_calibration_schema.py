"""calibration.yaml is read through the sources layer: a broken file is positioned diagnostics."""

from __future__ import annotations

import pytest

from procure.catalog.calibration import load_knobs, read_calibration
from procure.errors import InputError

GOOD = """\
schema: procure.calibration/v1
fitted_on: [published_runs/calibration.yaml]
fitted_at: '2026-11-30'
fit_mape: {published_runs: 0.05}
default:
  gemm_top: null
  gemm_curve:
  - [1.0e-06, 0.1]
  - [1.0e-03, 0.9]
  - [3.0e-02, 1.0]
  membound_factor: 1.5
  launch_overhead_s: 0.0008
  scale_up_bw_eff: 0.76
  scale_out_bw_eff: 0.9
  overlap_efficiency: 1.0
  step_time_cv: 0.01
  attention_ratio: 0.7
accelerators:
  h100-sxm5-80gb:
    membound_factor: 1.4
    fitted: true
    fitted_on: [mlperf-v4.1]
step_time_errors:
  dense-bf16-hopper: {bias: 0.01, sigma_log: 0.06, n: 12}
"""


def _write(tmp_path, text):
    path = tmp_path / "calibration.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_good_file_loads_with_errors_and_fitted_flags(tmp_path):
    knobs = load_knobs(_write(tmp_path, GOOD))
    h100 = knobs.for_accelerator("h100-sxm5-80gb")
    assert h100.fitted and h100.fitted_on == ("mlperf-v4.1",) and h100.membound_factor == 1.4
    assert h100.attention_ratio == 0.7          # inherited from the default block
    assert knobs.step_time_errors["dense-bf16-hopper"].sigma_log == 0.06
    assert knobs.error_for("dense-bf16-hopper", fitted=False).family == "uncalibrated"


def test_a_stack_and_year_no_fit_run_used_widens_the_spread_by_the_between_source_spread(tmp_path):
    text = GOOD + "unseen_stack: {sigma_log: 0.08, fitted_stacks: [nemo 2025, megatron-core 2026]}\n"
    knobs = load_knobs(_write(tmp_path, text))
    seen = knobs.error_for("dense-bf16-hopper", fitted=True, stack="nemo 2025")
    assert seen.sigma_log == 0.06 and seen.unseen_stack == ""
    unseen = knobs.error_for("dense-bf16-hopper", fitted=True, stack="primus 2026")
    assert unseen.sigma_log == pytest.approx(0.1) and unseen.unseen_stack == "primus 2026"   # hypot(0.06, 0.08)
    assert unseen.bias == seen.bias                                   # the median does not move
    assert knobs.error_for("dense-bf16-hopper", fitted=True).sigma_log == 0.06     # no stack stated
    assert knobs.error_for("dense-bf16-hopper", fitted=False, stack="primus 2026").family == "uncalibrated"
    older = tmp_path / "older"                # a file without the block: no stack widens anything
    older.mkdir()
    assert load_knobs(_write(older, GOOD)).error_for("dense-bf16-hopper", True, "primus 2026").sigma_log == 0.06


BROKEN = [
    ("no schema", lambda t: t.replace("schema: procure.calibration/v1\n", ""), "missing-field"),
    ("wrong schema", lambda t: t.replace("calibration/v1", "calibration/v2"), "bad-value"),
    ("string factor", lambda t: t.replace("membound_factor: 1.5", "membound_factor: big"), "bad-type"),
    ("negative factor", lambda t: t.replace("membound_factor: 1.5", "membound_factor: -1"), "out-of-range"),
    ("efficiency above one", lambda t: t.replace("scale_up_bw_eff: 0.76", "scale_up_bw_eff: 1.3"), "out-of-range"),
    ("top above one", lambda t: t.replace("gemm_top: null", "gemm_top: 1.2"), "out-of-range"),
    ("curve point with one number", lambda t: t.replace("- [1.0e-03, 0.9]", "- [1.0e-03]"), "invalid"),
    ("curve out of order", lambda t: t.replace("- [1.0e-03, 0.9]", "- [1.0e-07, 0.9]"), "invalid"),
    ("curve falling", lambda t: t.replace("- [1.0e-03, 0.9]", "- [1.0e-03, 0.05]"), "invalid"),
    ("curve fraction above one", lambda t: t.replace("- [3.0e-02, 1.0]", "- [3.0e-02, 1.5]"), "invalid"),
    ("unknown knob", lambda t: t.replace("  step_time_cv: 0.01\n", "  step_time_cv: 0.01\n  speed: 2\n"), "unknown-key"),
    ("negative sigma", lambda t: t.replace("sigma_log: 0.06", "sigma_log: -0.06"), "out-of-range"),
    ("string count", lambda t: t.replace("n: 12", "n: twelve"), "bad-type"),
    ("fitted not a bool", lambda t: t.replace("fitted: true", "fitted: maybe"), "bool-parsing"),
    ("accelerators a list", lambda t: t.replace("accelerators:\n  h100-sxm5-80gb:", "accelerators:\n- h100-sxm5-80gb:"), "dict-type"),
]


@pytest.mark.parametrize("name,edit,code", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_calibration_files_are_positioned_diagnostics(tmp_path, name, edit, code):
    path = _write(tmp_path, edit(GOOD))
    with pytest.raises(InputError) as info:
        read_calibration(path)
    diags = info.value.diagnostics
    assert diags and all(d.line > 0 and d.col > 0 for d in diags), name
    assert any(d.code == code for d in diags), [d.format() for d in diags]
    assert diags[0].format().startswith(str(path))


def test_the_shipped_calibration_validates():
    from procure.resources import catalog_dir

    doc = read_calibration(catalog_dir() / "calibration.yaml")
    assert doc.default.gemm_curve and doc.accelerators
