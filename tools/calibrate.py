"""Re-fit the per-accelerator knobs of the step-time model and write
``hardware_catalog/calibration.yaml``.

    python tools/calibrate.py [--shared ../shared] [--check]

Fitted ONLY on ``published_runs/calibration.yaml`` and ``vtrain/ground_truth_single.csv``; the
multi-node vTrain file is the test set and is never read here. Needs scipy (dev-time only; the
runtime reads the YAML). The fit minimises the soft-L1 of log(predicted / measured), each data
set weighted to the same total, so 1,440 single-node runs do not drown 18 published ones.

A100 (both memory sizes: the same silicon; HBM bandwidth and capacity stay physical): the five
GEMM-efficiency curve points, the memory-bound byte factor, the host launch overhead and the
achieved scale-up / scale-out bandwidth factors. The bandwidth factors are bounded to
[0.7, 0.9], the range nccl-tests bus bandwidth reaches at large messages (facts networks.yaml),
because the data pin them down poorly. H100: only what its 9 tier-B runs can carry: overlap
efficiency, achieved scale-out bandwidth and one shift of the A100 curve along the ideal-time
axis (the curve's shape, the memory-bound factor and the launch overhead carry over); the top
is the measured matmul ceiling / peak. Accelerators without data get the H100 knobs with their
own ceiling (the newest generation with data).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from procure.backtest import backtest, read_vtrain_csv, run_inputs  # noqa: E402
from procure.catalog.load import default_catalog  # noqa: E402
from procure.model.core import evaluate  # noqa: E402
from procure.model.grid import stack_specs  # noqa: E402
from procure.model.problem import build_problem, core_knobs, gemm_top_for, stack  # noqa: E402
from procure.model.types import AccelKnobs, Knobs  # noqa: E402

FITTED_AT = "2026-11-30"                 # fixed for determinism (not the clock)
FITTED_ON = ("published_runs/calibration.yaml", "published_runs/vtrain/ground_truth_single.csv")
CURVE_T = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
# The largest GEMMs reach the measured matmul ceiling (that is what MAMF measures): the curve
# ends at 1.0 for a GEMM that takes 30 ms at peak.
CURVE_ANCHOR = (3e-2, 1.0)
A100_IDS = ("a100-sxm4-80gb", "a100-sxm4-40gb")
H100_IDS = ("h100-sxm5-80gb",)
OUT = ROOT / "hardware_catalog" / "calibration.yaml"

# name: (start, lower, upper, unit scale); curve points are fractions of gemm_top
A100_PARAMS = {
    **{f"curve_{i}": (min(1.0, 0.3 + 0.15 * i), 0.1, 1.0, 1.0) for i in range(len(CURVE_T))},
    "membound_factor": (1.5, 0.3, 6.0, 1.0),
    "launch_overhead_s": (0.8, 0.0, 3.0, 1e-3),
    "scale_up_bw_eff": (0.8, 0.7, 0.9, 1.0),
    "scale_out_bw_eff": (0.8, 0.7, 0.9, 1.0),
}
# overlap efficiency, scale-out factor, log10 of the curve shift
H100_PARAMS = {"start": [0.9, 0.8, 0.0], "lower": [0.0, 0.7, -1.0], "upper": [1.0, 0.9, 1.0]}


def load_data(shared: Path) -> dict[str, list[dict]]:
    runs = yaml.safe_load((shared / "data/published_runs/calibration.yaml").read_text())["runs"]
    single = read_vtrain_csv(
        (shared / "data/published_runs/vtrain/ground_truth_single.csv").read_text(encoding="utf-8"),
        multi=False)
    return {"published": runs, "vtrain_single": single}


class Batch:
    """Runs of one accelerator family as arrays, for fast repeated evaluation."""

    def __init__(self, runs: list[dict], accelerators, weights: np.ndarray):
        rows = [run_inputs(r, accelerators) for r in runs]
        self.accels = [row[1] for row in rows]
        self.precisions = [row[4].precision for row in rows]
        self.pb = stack([build_problem(a, acc, net, n, w) for a, acc, net, n, w, _ in rows])
        self.plan = stack_specs([row[5] for row in rows])
        self.measured = np.array([r["measured"]["step_time_s"] for r in runs])
        self.weights = weights

    def predict(self, knobs: AccelKnobs) -> np.ndarray:
        kn = core_knobs(knobs, 0.0)
        kn.gemm_top = np.array([gemm_top_for(a, p, knobs) for a, p in zip(self.accels, self.precisions)])
        return evaluate(self.pb, kn, self.plan)["step_time_s"]


def _a100_knobs(x: np.ndarray, base: AccelKnobs) -> AccelKnobs:
    vals = {n: float(v) * A100_PARAMS[n][3] for n, v in zip(A100_PARAMS, x)}
    raw = np.array([vals[f"curve_{i}"] for i in range(len(CURVE_T))] + [CURVE_ANCHOR[1]])
    fracs = np.minimum.accumulate(raw[::-1])[::-1]       # a monotone curve
    points = (*CURVE_T, CURVE_ANCHOR[0])
    return replace(base, gemm_curve=tuple((t, float(f)) for t, f in zip(points, fracs)),
                   membound_factor=vals["membound_factor"],
                   launch_overhead_s=vals["launch_overhead_s"],
                   scale_up_bw_eff=vals["scale_up_bw_eff"], scale_out_bw_eff=vals["scale_out_bw_eff"])


def _h100_knobs(x: np.ndarray, base: AccelKnobs) -> AccelKnobs:
    shift = 10.0 ** float(x[2])      # the same curve, reached at shift x the ideal GEMM time
    return replace(base, overlap_efficiency=float(x[0]), scale_out_bw_eff=float(x[1]),
                   gemm_curve=tuple((t * shift, f) for t, f in base.gemm_curve))


def _fit(batch: Batch, to_knobs, x0, lower, upper) -> AccelKnobs:
    from scipy.optimize import least_squares

    def resid(x):
        return np.sqrt(batch.weights) * np.log(batch.predict(to_knobs(np.asarray(x))) / batch.measured)

    res = least_squares(resid, x0, bounds=(lower, upper), loss="soft_l1", f_scale=0.05,
                        x_scale="jac", max_nfev=400)
    return to_knobs(res.x)


def _weights(*sizes: int) -> np.ndarray:
    return np.concatenate([np.full(n, 1.0 / n) for n in sizes]) * sum(sizes)


def fit(shared: Path):
    """(Knobs, data, catalog)."""
    cat = default_catalog()
    data = load_data(shared)
    a100_pub = [r for r in data["published"] if r["hardware"]["accelerator"] in A100_IDS]
    h100_pub = [r for r in data["published"] if r["hardware"]["accelerator"] in H100_IDS]
    a100 = Batch(a100_pub + data["vtrain_single"], cat.accelerators,
                 _weights(len(a100_pub), len(data["vtrain_single"])))
    x0, lo, hi = ([spec[i] for spec in A100_PARAMS.values()] for i in range(3))
    a100_knobs = _fit(a100, lambda x: _a100_knobs(x, AccelKnobs()), x0, lo, hi)
    h100 = Batch(h100_pub, cat.accelerators, _weights(len(h100_pub)))
    h100_knobs = _fit(h100, lambda x: _h100_knobs(x, replace(a100_knobs, gemm_top=None)),
                      H100_PARAMS["start"], H100_PARAMS["lower"], H100_PARAMS["upper"])
    # No A100 run overlaps its DP reduce: carry the H100 overlap efficiency over.
    a100_knobs = replace(a100_knobs, overlap_efficiency=h100_knobs.overlap_efficiency)
    by_id = {i: a100_knobs for i in A100_IDS} | {i: h100_knobs for i in H100_IDS}
    return Knobs(default=h100_knobs, by_accelerator=by_id, fitted_on=FITTED_ON,
                 fitted_at=FITTED_AT), data, cat


def _knob_block(k: AccelKnobs) -> dict:
    return {
        "gemm_top": None if k.gemm_top is None else round(k.gemm_top, 4),
        "gemm_curve": [[float(f"{t:.4g}"), round(f, 4)] for t, f in k.gemm_curve],
        "membound_factor": round(k.membound_factor, 4),
        "launch_overhead_s": float(f"{k.launch_overhead_s:.4g}"),
        "scale_up_bw_eff": round(k.scale_up_bw_eff, 4),
        "scale_out_bw_eff": round(k.scale_out_bw_eff, 4),
        "overlap_efficiency": round(k.overlap_efficiency, 4),
        "step_time_cv": k.step_time_cv,
    }


def document(knobs: Knobs, data, cat) -> dict:
    """The YAML document, with the MAPE of the rounded knobs on the data they were fitted on."""
    from procure.catalog.calibration import knobs_from_document

    doc = {
        "schema": "procure.calibration/v1",
        "fitted_on": list(knobs.fitted_on),
        "fitted_at": knobs.fitted_at,
        "fit_mape": {},
        "notes": "Written by tools/calibrate.py. gemm_curve: [ideal GEMM seconds at peak, fraction "
                 "of gemm_top]; gemm_top null = measured matmul ceiling / peak. The multi-node "
                 "vTrain runs are never fitted on (test set).",
        "default": _knob_block(knobs.default),
        "accelerators": {i: _knob_block(k) for i, k in knobs.by_accelerator.items()},
    }
    rounded = knobs_from_document(doc)
    for name, runs in (("published_runs", data["published"]), ("vtrain_single", data["vtrain_single"])):
        doc["fit_mape"][name] = round(float(backtest(runs, cat.accelerators, knobs=rounded)["mape"]), 4)
    return doc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    ap.add_argument("--check", action="store_true", help="fit and print, do not write")
    args = ap.parse_args(argv)
    doc = document(*fit(args.shared))
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100)
    if args.check:
        print(text)
    else:
        OUT.write_text("# Fitted step-time knobs; regenerate with: python tools/calibrate.py\n" + text)
        print(f"wrote {OUT}: fit MAPE {doc['fit_mape']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
