"""Backtest speed: every run of a file in one vectorised evaluation, against its floor.

    python benchmarks/backtest.py [--shared ../shared] [--repeat 3]

For each file: reading and validating it, the whole ``backtest()`` (cases, one batch evaluation,
rows and summaries), and the floor: ``core.evaluate`` alone on the file's stacked arrays, timed in
the same run. Prints one line per file; never asserts."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from procure.backtest import backtest, run_case  # noqa: E402
from procure.catalog.calibration import load_knobs  # noqa: E402
from procure.catalog.load import default_catalog  # noqa: E402
from procure.model.batch import case_knobs, evaluate_prepared, prepare  # noqa: E402
from procure.backtest.files import load_runs_file  # noqa: E402


def _best(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=Path(os.environ.get("PROCURE_SHARED") or ROOT.parent / "shared"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    cat, knobs = default_catalog(), load_knobs()
    files = [args.shared / "data/published_runs/vtrain/ground_truth_single.csv",
             args.shared / "data/published_runs/vtrain/ground_truth_multi.csv",
             args.shared / "data/published_runs/calibration.yaml",
             ROOT / "hardware_catalog/published_runs/dense.yaml", ROOT / "hardware_catalog/published_runs/moe_longctx.yaml"]
    for path in files:
        if not path.is_file():
            print(f"{path}: absent")
            continue
        t_read, runs = _best(lambda path=path: load_runs_file(path), args.repeat)
        t_run, result = _best(lambda runs=runs: backtest(runs, cat.accelerators, knobs=knobs), args.repeat)
        cases = []
        for run in runs:
            try:
                cases.append(run_case(run, cat.accelerators)[0])
            except Exception:          # noqa: BLE001 - unpredictable runs are not in the floor
                continue
        prep = prepare(cases)
        kn = case_knobs(cases, knobs)
        t_floor, _ = _best(lambda prep=prep, kn=kn: evaluate_prepared(prep, kn), args.repeat)
        print(f"{path.name:28s} runs {len(runs):5d}  read {t_read * 1e3:7.1f} ms  backtest "
              f"{t_run * 1e3:7.1f} ms  ({len(runs) / t_run:8,.0f} runs/s)  evaluate floor "
              f"{t_floor * 1e3:6.1f} ms  ratio {t_run / t_floor:5.1f}  MAPE {result['mape']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
