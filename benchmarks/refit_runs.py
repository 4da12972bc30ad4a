"""Refit the run-level losses and the whole-run band, and write
``hardware_catalog/whole_runs/fitted_run_losses.yaml`` (one command, deterministic output).

    python benchmarks/refit_runs.py [--index hardware_catalog/whole_runs/runs.yaml] [--check]

Fitted ONLY on the runs of the whole-run index marked ``split: fit`` (the hold-out runs are filtered
out before any cluster file is read) and on the published effective-training-time figures of
procure.backtest.run_losses.ETTR_FIGURES. Each fit run is predicted as ``procure estimate`` does (the
step model, its plan search, the quote's goodput), the quote's goodput is taken out again to get the
compute-only GPU-hours, and procure.backtest.run_losses.fit_run_losses sets the restart cost, the
instability share and the band (leave-one-source-family-out errors per run family and the unseen
stack-and-era term). Rerun it after any change to the step model: the fit moves with it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from procure.backtest.run_losses import (  # noqa: E402
    ETTR_FIGURES, FITTED_FILE, FitRow, checkpoints_asynchronously, fit_run_losses, stack_era)
from procure.backtest.whole_runs import WholeRun, read_whole_runs  # noqa: E402

INDEX = ROOT / "hardware_catalog" / "whole_runs" / "runs.yaml"
COMMAND = "python benchmarks/refit_runs.py"
DIGITS = 6

Predict = Callable[[Path], tuple[dict[str, Any] | None, str | None]]


def fit_entries(index: Path) -> list[tuple[WholeRun, Path]]:
    """The fit split of the index; hold-out entries never leave this function."""
    return [(run, cluster) for run, cluster in read_whole_runs(index) if run.split == "fit"]


def default_predict() -> Predict:
    from procure.catalog.calibration import load_knobs
    from procure.pipeline import predict_whole_run

    knobs = load_knobs()
    return lambda cluster: predict_whole_run(cluster, knobs)


def fit_row(run: WholeRun, predicted: dict[str, Any]) -> FitRow:
    return FitRow(id=run.id, source_family=run.source_family, family=run.family,
                  published_gpu_hours=run.published.hours,
                  compute_gpu_hours=float(predicted["gpu_hours"]) * float(predicted["goodput"]),
                  gpus=int(predicted["gpus"]), gpus_per_node=int(predicted["gpus_per_node"]),
                  params=int(predicted["params"]), stack_era=stack_era(predicted.get("stack"), int(predicted["year"])),
                  asynchronous=checkpoints_asynchronously(predicted))


def load_fit_rows(index: Path, predict: Predict) -> tuple[list[FitRow], list[str]]:
    """The fit rows, and the fit runs no plan fits (left out, named in the provenance)."""
    rows, skipped = [], []
    for run, cluster in fit_entries(index):
        predicted, reason = predict(cluster)
        if predicted is None:
            skipped.append(f"{run.id}: {reason}")
            continue
        rows.append(fit_row(run, predicted))
    return rows, skipped


def rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.{DIGITS}g}")
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def fitted_text(index: Path, predict: Predict) -> str:
    rows, skipped = load_fit_rows(index, predict)
    provenance = {"command": COMMAND, "index": index.name, "split": "fit",
                  "ettr_figures": [f"{f.name}: at least {f.at_least:.0%} at {f.gpus:,} GPUs ({f.source})"
                                   for f in ETTR_FIGURES],
                  "skipped": skipped,
                  "defaults": "procure.assumptions.RUN_LOSS_ASSUMPTIONS (sourced values and priors)"}
    doc = fit_run_losses(rows, provenance).model_dump(by_alias=True)
    head = ("# Written by benchmarks/refit_runs.py from the FIT split of runs.yaml and published ETTR figures;\n"
            "# do not edit by hand. Rerun after a change to the step model.\n")
    return head + yaml.safe_dump(rounded(doc), sort_keys=False, allow_unicode=True, width=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=Path, default=INDEX)
    ap.add_argument("--check", action="store_true", help="exit 1 when the shipped file differs from a refit")
    args = ap.parse_args(argv)
    out = args.index.parent / FITTED_FILE
    text = fitted_text(args.index, default_predict())
    if args.check:
        same = out.is_file() and out.read_text(encoding="utf-8") == text
        print(f"{out}: {'current' if same else 'differs from a refit'}")
        return 0 if same else 1
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
