"""Many fixed plans in ONE vectorised evaluation (the backtest, the refit): one row per case.

Every case is a complete plan on its own model, accelerator, network, workload and software; the
rows are stacked into one Problem (per-row arrays), one plan grid and one CoreKnobs (per-row
knobs, curves padded to one length), evaluated by the same ``core.evaluate`` the search runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from procure.catalog.software import SoftwareStack
from procure.catalog.types import Accelerator, ModelArch, Network
from procure.model.core import evaluate
from procure.model.error_model import calibration_info, evaluation_family
from procure.model.estimate import GIB, assemble, memory_gib, memory_reason
from procure.model.flops import model_flops_per_token
from procure.model.grid import plan_dict, row_reasons, stack_dispatchers, stack_specs, unsupported
from procure.model.plans import PlanArrays
from procure.model.problem import (CoreKnobs, Problem, build_problem, fp8_recipe, gemm_tops,
                                   stack, stack_knobs)
from procure.model.types import INFO_TERMS, SUM_TERMS, Estimate, Knobs, PlanSpec, Workload


Vec = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Case:
    arch: ModelArch
    accel: Accelerator
    network: Network
    gpus: int
    workload: Workload
    plan: PlanSpec
    software: SoftwareStack | None = None
    measured_busbw_gbs: float | None = None


@dataclass(frozen=True)
class Prepared:
    cases: list[Case]
    pb: Problem
    grid: PlanArrays
    reasons: list[str | None]       # a case the model cannot time at all (rules, stack)


def prepare(cases: list[Case]) -> Prepared:
    """Stack the cases' problems and plans (done once; knobs may then vary, as in the refit)."""
    problems = [build_problem(c.arch, c.accel, c.network, c.gpus, c.workload, c.measured_busbw_gbs,
                              c.software) for c in cases]
    pb = stack(problems)
    grid = stack_specs([c.plan for c in cases],
                       [stack_dispatchers(c.software, c.arch.moe is not None)[0] for c in cases])
    reasons = row_reasons(pb, grid, np.array([c.gpus for c in cases], dtype=float)) if cases else []
    for i, c in enumerate(cases):
        if reasons[i] is not None:
            reasons[i] = f"no valid plan: {reasons[i]}"
            continue
        fp8_ok = c.workload.precision != "fp8" or fp8_recipe(c.accel, c.software) is not None
        reasons[i] = unsupported(c.plan, c.workload.precision, c.software, fp8_ok)
    return Prepared(cases, pb, grid, reasons)


def case_knobs(cases: list[Case], knobs: Knobs) -> CoreKnobs:
    """Per-row knobs of the cases' accelerators."""
    tops: dict[tuple[str, str], tuple[float, float]] = {}
    rows = []
    for c in cases:
        k = knobs.for_accelerator(c.accel.id)
        key = (c.accel.id, c.workload.precision)
        if key not in tops:
            tops[key] = gemm_tops(c.accel, c.workload.precision, k)
        rows.append((k, tops[key]))
    return stack_knobs(rows)


def model_flops_per_token_rows(cases: list[Case]) -> Vec:
    """flops.model_flops_per_token of every case (causal MFU convention)."""
    return np.array([model_flops_per_token(c.arch, c.workload.seq_len) for c in cases], dtype=float)


def batch_rows(cases: list[Case], knobs: Knobs | None = None) -> list[dict[str, Any]]:
    """The backtest's view of each case from one evaluation, assembled from arrays: reason (a
    rule or the stack), step time and terms, MFU, memory (GiB) and whether it fits."""
    if not cases:
        return []
    prep = prepare(cases)
    res = evaluate_prepared(prep, case_knobs(cases, knobs or Knobs()))
    pb = prep.pb
    terms = {k: res["terms"][k].tolist() for k in (*SUM_TERMS, *INFO_TERMS)}
    flops = (model_flops_per_token_rows(cases) * pb.batch * pb.seq).tolist()
    denom = (pb.n_gpus * pb.lin_peak).tolist()
    total = (res["memory"]["total"] / GIB).tolist()
    reserve = (res["memory"]["reserve"] / GIB).tolist()
    fits = res["feasible"].tolist()
    out = []
    for i, reason in enumerate(prep.reasons):
        row: dict[str, Any] = {"reason": reason}
        if reason is None:
            t = {k: v[i] for k, v in terms.items()}
            step = math.fsum(t[k] for k in SUM_TERMS)
            row.update(step_time_s=step, terms=t, mfu=flops[i] / (step * denom[i]), fits=fits[i],
                       memory_total_gib=total[i], memory_reserve_gib=reserve[i],
                       memory_reason=None if fits[i] else memory_reason(
                           total[i], plan_dict(prep.grid, i), cases[i].accel, True))
        out.append(row)
    return out


def evaluate_prepared(prep: Prepared, kn: CoreKnobs) -> dict[str, Any]:
    return evaluate(prep.pb, kn, prep.grid)


def estimate_batch(cases: list[Case], knobs: Knobs | None = None,
                   check_memory: bool = True) -> list[Estimate]:
    """One Estimate per case from one evaluation. With ``check_memory`` False a plan the memory
    model rejects is still timed (its memory verdict stays in ``reason``-free ``memory_gib``)."""
    if not cases:
        return []
    all_knobs = knobs or Knobs()
    prep = prepare(cases)
    res = evaluate_prepared(prep, case_knobs(cases, all_knobs))
    out = []
    for i, c in enumerate(cases):
        accel_knobs = all_knobs.for_accelerator(c.accel.id)
        est = _row_estimate(prep, res, i, c, accel_knobs.step_time_cv, check_memory)
        family = evaluation_family(c.arch, c.accel, c.workload, c.plan)
        out.append(replace(est, calibration=calibration_info(all_knobs, accel_knobs, c.accel, family, c.software),
                           software=c.software))
    return out


def _row_estimate(prep: Prepared, res: dict[str, Any], i: int, c: Case, cv: float,
                  check_memory: bool) -> Estimate:
    if prep.reasons[i] is not None:
        return Estimate(False, prep.reasons[i], {}, math.nan, {}, {}, {}, 0.0, 0.0, 0.0, 0.0,
                        {"plans_evaluated": 0, "feasible": 0, "seconds": None}, [], gpus=c.gpus)
    plan = plan_dict(prep.grid, i)
    fits = bool(res["feasible"][i])
    if not fits and check_memory:
        need = float(res["memory"]["total"][i]) / GIB
        return Estimate(False, memory_reason(need, plan, c.accel, True), plan, math.nan, {}, {},
                        memory_gib(res, i, c.accel), 0.0, 0.0, 0.0, 0.0,
                        {"plans_evaluated": 1, "feasible": 0, "seconds": None}, [], gpus=c.gpus)
    est = assemble(c.arch, c.accel, c.gpus, c.workload, res, i, plan, cv)
    search: dict[str, Any] = {"plans_evaluated": 1, "feasible": int(fits), "seconds": None}
    if not fits:       # timed as it would run, with a note that it does not fit
        need = float(res["memory"]["total"][i]) / GIB
        search["memory_note"] = memory_reason(need, plan, c.accel, True)
    return replace(est, search=search, reason=None if not fits else est.reason)
