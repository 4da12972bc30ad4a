"""The public entry points: ``estimate`` (fixed plan or search) and ``scaling_curve``.

Pure: no clock. ``search["seconds"]`` is the ``elapsed_s`` argument (None when not given); the
api layer times the call with ``time.perf_counter`` and fills it in.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from procure.catalog.types import Accelerator, ModelArch, Network
from procure.model.core import evaluate
from procure.model.flops import hardware_flops_per_token, model_flops_per_token
from procure.model.grid import build_grid, plan_dict
from procure.model.problem import HBM_UNIT_BYTES, build_problem, core_knobs, gemm_top_for, matmul_peak_flops
from procure.model.stragglers import step_percentiles
from procure.model.types import (INFO_TERMS, SUM_TERMS, Estimate, Knobs, PlanSpec, Workload)

GIB = 2.0 ** 30
RUNNERS_UP = 5
MEMORY_KEYS = ("weights", "gradients", "optimizer", "activations", "reserve", "total")


def _check(workload: Workload, gpus: int) -> str | None:
    if gpus < 1:
        return "the bid has no GPUs"
    if workload.seq_len < 1 or workload.global_batch < 1:
        return "sequence length and global batch must be positive"
    if workload.attention not in ("flash", "unfused"):
        raise ValueError(f"unknown attention kernel {workload.attention!r}")
    return None


def _memory_gib(res, i: int, accel: Accelerator) -> dict[str, float]:
    out = {k: float(res["memory"][k][i]) / GIB for k in MEMORY_KEYS}
    out["capacity"] = accel.hbm_gb * HBM_UNIT_BYTES / GIB
    return out


def _empty(reason: str, gpus: int, evaluated: int, elapsed_s, plan=None, memory=None) -> Estimate:
    return Estimate(
        feasible=False, reason=reason, plan=plan or {}, step_time_s=math.nan, terms={},
        percentiles_s={}, memory_gib=memory or {}, model_flops_per_step=0.0,
        hardware_flops_per_step=0.0, mfu=0.0, hfu=0.0,
        search={"plans_evaluated": evaluated, "feasible": 0, "seconds": elapsed_s},
        runners_up=[], gpus=gpus)


def _memory_reason(res, grid, accel: Accelerator, fixed: bool) -> tuple[str, int]:
    i = int(np.argmin(res["memory"]["total"]))
    need = float(res["memory"]["total"][i]) / GIB
    p = plan_dict(grid, i)
    shape = f"tp {p['tp']}, pp {p['pp']}, dp {p['dp']}, mb {p['micro_batch']}, " \
            f"ZeRO {p['zero_stage']}, recompute {p['recompute']}"
    if fixed:
        return (f"the plan needs {need:.1f} GiB per GPU; {accel.name} has {accel.hbm_gb:g} GB "
                f"(5% kept in reserve) ({shape})", i)
    return f"no plan fits {accel.hbm_gb:g} GB: best needs {need:.1f} GiB ({shape})", i


def estimate(arch: ModelArch, accel: Accelerator, network: Network, gpus: int,
             workload: Workload, plan: PlanSpec | None = None, knobs: Knobs | None = None,
             measured_busbw_gbs: float | None = None, step_time_cv: float | None = None,
             elapsed_s: float | None = None) -> Estimate:
    """Predict the step time of ``plan`` (complete PlanSpec) or of the best plan found by a
    vectorised search over the dimensions the PlanSpec leaves as None."""
    spec = plan or PlanSpec()
    problem_reason = _check(workload, gpus)
    if problem_reason:
        return _empty(problem_reason, gpus, 0, elapsed_s)
    accel_knobs = (knobs or Knobs()).for_accelerator(accel.id)
    if step_time_cv is not None:
        accel_knobs = replace(accel_knobs, step_time_cv=step_time_cv)
    kn = core_knobs(accel_knobs, gemm_top_for(accel, workload.precision, accel_knobs))
    pb = build_problem(arch, accel, network, gpus, workload, measured_busbw_gbs).as_arrays()
    if spec.tp_comm_overlap is None and not float(pb.tp_overlap_ok):
        spec = replace(spec, tp_comm_overlap=False)     # not a choice on this part: don't search it
    grid, reason = build_grid(arch, gpus, workload, spec, max(1, accel.scale_up_domain))
    if reason:
        return _empty(f"no valid plan: {reason}", gpus, 0, elapsed_s)
    res = evaluate(pb, kn, grid)
    n = len(grid["t"])
    feasible = res["feasible"]
    if not feasible.any():
        msg, i = _memory_reason(res, grid, accel, spec.is_complete())
        return _empty(msg, gpus, n, elapsed_s, plan_dict(grid, i), _memory_gib(res, i, accel))
    ranked = np.argsort(np.where(feasible, res["step_time_s"], np.inf), kind="stable")
    best = int(ranked[0])
    est = _assemble(arch, accel, gpus, workload, res, grid, best, accel_knobs.step_time_cv)
    est.search = {"plans_evaluated": n, "feasible": int(feasible.sum()), "seconds": elapsed_s}
    n_ok = int(feasible.sum())
    est.runners_up = [{"plan": plan_dict(grid, int(i)), "step_time_s": float(res["step_time_s"][i])}
                      for i in ranked[1:min(n_ok, RUNNERS_UP + 1)]]
    return est


def _assemble(arch, accel, gpus, workload, res, grid, i, cv) -> Estimate:
    terms = {k: float(res["terms"][k][i]) for k in SUM_TERMS}
    step = math.fsum(terms.values())
    for k in INFO_TERMS:
        terms[k] = float(res["terms"][k][i])
    plan = plan_dict(grid, i)
    tokens = workload.global_batch * workload.seq_len
    peak = matmul_peak_flops(accel, workload.precision)
    model_flops = model_flops_per_token(arch, workload.seq_len) * tokens
    hw_flops = hardware_flops_per_token(arch, workload.seq_len, plan["recompute"]) * tokens
    pct = step_percentiles(float(res["mu_s"][i]), cv, gpus)
    return Estimate(
        feasible=True, reason=None, plan=plan, step_time_s=step, terms=terms,
        percentiles_s={k: pct[k] for k in ("p50", "p95", "p99")},
        memory_gib=_memory_gib(res, i, accel),
        model_flops_per_step=model_flops, hardware_flops_per_step=hw_flops,
        mfu=model_flops / (step * gpus * peak), hfu=hw_flops / (step * gpus * peak),
        search={}, runners_up=[], tokens_per_step=tokens, tokens_per_s=tokens / step, gpus=gpus)


def scaling_curve(arch: ModelArch, accel: Accelerator, network: Network, gpus: int,
                  workload: Workload, plan: dict, knobs: Knobs | None = None,
                  measured_busbw_gbs: float | None = None,
                  step_time_cv: float | None = None) -> dict:
    """Per-GPU throughput at 1/8, 1/4, 1/2 and all of ``gpus`` with the same tp/pp/cp/ep/mb
    shape: only dp varies and the GLOBAL BATCH STAYS FIXED (fewer GPUs run more micro-batches).
    Points where dp is not an integer or does not divide the batch are skipped. Efficiency is
    per-GPU throughput relative to the smallest feasible size (``reference_gpus``)."""
    spec = PlanSpec.from_dict(plan)
    points = []
    for frac in (8, 4, 2, 1):
        if spec.dp % frac:
            continue
        dp = spec.dp // frac
        n = gpus // frac
        est = estimate(arch, accel, network, n, workload, replace(spec, dp=dp), knobs,
                       measured_busbw_gbs, step_time_cv)
        if est.feasible:
            points.append({"gpus": n, "step_time_s": est.step_time_s,
                           "tokens_per_s_per_gpu": est.tokens_per_s / n})
    if not points:
        return {"reference_gpus": None, "efficiency": None, "curve": [],
                "note": "global batch fixed; dp varies"}
    ref = points[0]["tokens_per_s_per_gpu"]
    for pt in points:
        pt["efficiency"] = pt["tokens_per_s_per_gpu"] / ref
    full = points[-1]["efficiency"] if points[-1]["gpus"] == gpus else None
    return {"reference_gpus": points[0]["gpus"], "efficiency": full, "curve": points,
            "note": "global batch fixed; dp varies"}
