"""Published vendor-tuned recipes next to the plan search (issue 10 item 5).

``search_vs_tuned`` runs the plan search on every corpus run that publishes a vendor-tuned recipe
(``tuned_recipe: true``: MLPerf submissions, performance tables) at that run's model, hardware,
GPU count, global batch, precision and software, and compares the best plan's predicted step time
with the recipe's MEASURED one: a search that out-tunes the vendors by more than the model's own
error is finding fiction. ``nearest_tuned_recipe`` / ``compare_with_recipe`` put the nearest such
recipe next to a bid's best plan (the report wires them in).

Pure: runs come in as typed records (PublishedRun, validated by procure.backtest.runs), the
catalog as dataclasses.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from procure.backtest import Unpredictable, run_case
from procure.catalog.software import SoftwareStack
from procure.catalog.types import Accelerator, ModelArch, Network
from procure.model import estimate
from procure.model.types import Estimate, Knobs, PlanSpec, Workload

if TYPE_CHECKING:
    from procure.backtest.published_run import PublishedRun

def _shape(run: PublishedRun) -> tuple[int, ...]:
    """The run's model shape: layers, hidden, heads, FFN width and vocabulary."""
    mdl = run.model
    return mdl.layers, mdl.hidden, mdl.heads, mdl.ffn_hidden, mdl.vocab


def _same_model(arch: ModelArch, run: PublishedRun) -> bool:
    *theirs, vocab = _shape(run)
    close_vocab = abs(vocab - arch.vocab) <= max(1024, 0.02 * arch.vocab)
    return theirs == [arch.layers, arch.hidden, arch.heads, arch.ffn_hidden] and close_vocab


def nearest_tuned_recipe(arch: ModelArch, accel: Accelerator, gpus: int, workload: Workload,
                         runs: list[PublishedRun]) -> PublishedRun | None:
    """The tuned recipe of the same model shape, sequence length and precision closest to this
    bid: the same accelerator before its generation, then the nearest GPU count (log scale)."""
    candidates = [r for r in runs if r.tuned_recipe and _same_model(arch, r)
                  and r.model.seq_len == workload.seq_len and r.precision == workload.precision]
    if not candidates:
        return None

    def distance(run: PublishedRun) -> tuple[int, float]:
        same = run.hardware.accelerator == accel.id
        return (0 if same else 1, abs(math.log(run.hardware.gpus / max(gpus, 1))))

    return min(candidates, key=lambda r: (distance(r), r.id))


def compare_with_recipe(est: Estimate, run: PublishedRun, accelerators: dict[str, Accelerator],
                        knobs: Knobs | None = None) -> dict[str, Any]:
    """The bid's best plan next to a published tuned recipe: the recipe's plan, its measured step
    time, the model's time for that plan, and the search's best plan at the RECIPE's scale
    (GPUs, batch, software), so the two are compared like for like."""
    case, _ = run_case(run, accelerators)
    recipe = estimate(case.arch, case.accel, case.network, case.gpus, case.workload, case.plan, knobs,
                      software=case.software)
    searched = estimate(case.arch, case.accel, case.network, case.gpus, case.workload, None, knobs,
                        software=case.software)
    measured = float(run.measured.step_time_s)
    return {
        "recipe_id": run.id, "recipe_source": run.source, "recipe_url": run.url,
        "recipe_gpus": case.gpus, "recipe_accelerator": case.accel.id,
        "recipe_plan": _plan(case.plan),
        "recipe_measured_step_time_s": measured,
        "recipe_predicted_step_time_s": recipe.step_time_s if recipe.feasible else None,
        "search_plan_at_recipe_scale": searched.plan if searched.feasible else None,
        "search_step_time_at_recipe_scale_s": searched.step_time_s if searched.feasible else None,
        "search_to_measured": (searched.step_time_s / measured) if searched.feasible else None,
        "bid_plan": est.plan, "bid_step_time_s": est.step_time_s if est.feasible else None,
    }


def _plan(plan: PlanSpec) -> dict[str, Any]:
    return {k: v for k, v in plan.__dict__.items() if v is not None}


def search_software(run: PublishedRun, case_software: SoftwareStack | None,
                    accel: Accelerator) -> SoftwareStack | None:
    """The stack the search may use for a recipe: the one the run states, else (a run that states
    none but whose id or source names a year) the accelerator vendor's mainstream release of
    that year, so a 2022 recipe is not out-tuned with features released after it ran."""
    if case_software is not None:
        return case_software
    from procure.backtest import _year
    from procure.catalog.software import resolve_software

    year = _year(run)
    if year is None:
        return None
    try:
        return resolve_software(None, when=f"{year}-12-31", accel=accel)
    except ValueError:
        return None


def job_key(run: PublishedRun) -> tuple[Any, ...]:
    """What makes two recipes the same job: model shape, accelerator, GPUs, global batch,
    sequence and precision (a table's rows that differ only in plan or dispatcher)."""
    hw = run.hardware
    return (_shape(run), run.model.seq_len, hw.accelerator, hw.gpus, run.parallelism.global_batch,
            run.precision)


def search_vs_tuned(runs: list[PublishedRun], accelerators: dict[str, Accelerator],
                    knobs: Knobs | None = None,
                    networks_by_gbps: dict[float, Network] | None = None) -> dict[str, Any]:
    """For every tuned-recipe run the model can time: the search's best step time over the
    measured one (>= 1: the search does not beat the vendor; < 1: it claims to), and the median.
    ``median_ratio_per_job`` compares the search with the FASTEST measured recipe of each job
    (job_key): where a table times several plans of one job, the slower ones are not its tuned
    recipe, and a search that matches the fastest should not count as beating the others."""
    rows: list[dict[str, Any]] = []
    for run in runs:
        if not run.tuned_recipe:
            continue
        try:
            case, _ = run_case(run, accelerators, networks_by_gbps)
        except Unpredictable:
            continue
        best = estimate(case.arch, case.accel, case.network, case.gpus, case.workload, None, knobs,
                        software=search_software(run, case.software, case.accel))
        if not best.feasible:
            continue
        measured = float(run.measured.step_time_s)
        rows.append({"id": run.id, "family": run.family, "split": run.split,
                     "job": job_key(run),
                     "measured_step_time_s": measured, "search_step_time_s": best.step_time_s,
                     "ratio": best.step_time_s / measured, "search_plan": best.plan,
                     "recipe_plan": _plan(case.plan)})
    ratios = np.array([r["ratio"] for r in rows])
    jobs: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in rows:
        if r["job"] not in jobs or r["measured_step_time_s"] < jobs[r["job"]]["measured_step_time_s"]:
            jobs[r["job"]] = r
    per_job = np.array([r["ratio"] for r in jobs.values()])
    return {"runs": rows, "median_ratio": float(np.median(ratios)) if len(ratios) else None,
            "n": len(rows),
            "median_ratio_per_job": float(np.median(per_job)) if len(per_job) else None,
            "jobs": len(per_job)}

