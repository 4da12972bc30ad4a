"""The public entry point ``estimate`` (fixed plan or search); ``scaling_curve`` is in ``scaling``.

Pure: no clock. ``search["seconds"]`` is the ``elapsed_s`` argument (None when not given); the
api layer times the call with ``time.perf_counter`` and fills it in.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from procure.catalog.software import SoftwareStack
from procure.catalog.types import Accelerator, ModelArch, Network
from procure.model.core import evaluate
from procure.model.error_model import calibration_info, evaluation_family
from procure.model.flops import hardware_flops_per_token, model_flops_per_token
from procure.model.grid import build_grid, plan_dict, unsupported
from procure.model.memory import RESERVE_FRACTION, SEARCH_HEADROOM_FRACTION
from procure.model.plans import PlanArrays
from procure.model.problem import (HBM_UNIT_BYTES, build_problem, core_knobs, fp8_recipe, gemm_tops,
                                   matmul_peak_flops)
from procure.model.stragglers import step_percentiles
from procure.model.types import INFO_TERMS, SUM_TERMS, Estimate, Knobs, PlanSpec, Workload

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


def memory_gib(res: dict[str, Any], i: int, accel: Accelerator) -> dict[str, float]:
    out = {k: float(np.asarray(res["memory"][k]).reshape(-1)[i]) / GIB for k in MEMORY_KEYS}
    out["capacity"] = accel.hbm_gb * HBM_UNIT_BYTES / GIB
    return out


def _empty(reason: str, gpus: int, evaluated: int, elapsed_s: float | None,
           plan: dict[str, Any] | None = None, memory: dict[str, float] | None = None,
           headroom: float = 0.0) -> Estimate:
    return Estimate(
        feasible=False, reason=reason, plan=plan or {}, step_time_s=math.nan, terms={},
        percentiles_s={}, memory_gib=memory or {}, model_flops_per_step=0.0,
        hardware_flops_per_step=0.0, mfu=0.0, hfu=0.0,
        search={"plans_evaluated": evaluated, "feasible": 0, "seconds": elapsed_s},
        runners_up=[], gpus=gpus, memory_headroom_fraction=headroom)


def memory_reason(need_gib: float, plan: dict[str, Any], accel: Accelerator, fixed: bool) -> str:
    shape = f"tp {plan['tp']}, pp {plan['pp']}, dp {plan['dp']}, mb {plan['micro_batch']}, " \
            f"ZeRO {plan['zero_stage']}, recompute {plan['recompute']}"
    if fixed:
        return (f"the plan needs {need_gib:.1f} GiB per GPU; {accel.name} has {accel.hbm_gb:g} GB "
                f"({RESERVE_FRACTION:.0%} kept for the CUDA context and workspaces) ({shape})")
    return (f"no plan fits {accel.hbm_gb:g} GB with {SEARCH_HEADROOM_FRACTION:.0%} headroom: best needs "
            f"{need_gib:.1f} GiB ({shape})")


def estimate(arch: ModelArch, accel: Accelerator, network: Network, gpus: int,
             workload: Workload, plan: PlanSpec | None = None, knobs: Knobs | None = None,
             measured_busbw_gbs: float | None = None, step_time_cv: float | None = None,
             elapsed_s: float | None = None, software: SoftwareStack | None = None) -> Estimate:
    """Predict the step time of ``plan`` (complete PlanSpec) or of the best plan found by a
    vectorised search over the dimensions the PlanSpec leaves as None. ``software``: the stack
    the bid runs (catalog.software.resolve_software); None places no feature restriction."""
    spec = plan or PlanSpec()
    problem_reason = _check(workload, gpus)
    if problem_reason:
        return _empty(problem_reason, gpus, 0, elapsed_s)
    all_knobs = knobs or Knobs()
    accel_knobs = all_knobs.for_accelerator(accel.id, step_time_cv)
    fp8_ok = workload.precision != "fp8" or fp8_recipe(accel, software) is not None
    stack_reason = unsupported(spec, workload.precision, software, fp8_ok)
    if stack_reason:
        return _with_context(_empty(stack_reason, gpus, 0, elapsed_s), all_knobs, accel_knobs, arch,
                             accel, workload, spec, software)
    kn = core_knobs(accel_knobs, gemm_tops(accel, workload.precision, accel_knobs))
    pb = build_problem(arch, accel, network, gpus, workload, measured_busbw_gbs, software)
    if spec.tp_comm_overlap is None and not float(pb.tp_overlap_ok):
        spec = replace(spec, tp_comm_overlap=False)     # not a choice on this part: don't search it
    grid, reason = build_grid(pb, gpus, spec, max(1, accel.scale_up_domain), software)
    if reason:
        return _with_context(_empty(f"no valid plan: {reason}", gpus, 0, elapsed_s), all_knobs,
                             accel_knobs, arch, accel, workload, spec, software)
    res = evaluate(pb, kn, grid)
    if not spec.is_complete():
        res["feasible"] = res["fits_with_headroom"]      # the search keeps allocator headroom
    est = _pick(arch, accel, gpus, workload, res, grid, spec, accel_knobs.step_time_cv, elapsed_s)
    return _with_context(est, all_knobs, accel_knobs, arch, accel, workload,
                         PlanSpec.from_dict(est.plan) if est.plan else spec, software)


def _pick(arch: ModelArch, accel: Accelerator, gpus: int, workload: Workload, res: dict[str, Any],
          grid: PlanArrays, spec: PlanSpec, cv: float, elapsed_s: float | None) -> Estimate:
    n = len(grid["tp"])
    feasible = res["feasible"]
    if not feasible.any():
        i = int(np.argmin(res["memory"]["total"]))
        need = float(res["memory"]["total"][i]) / GIB
        plan = plan_dict(grid, i)
        fixed = spec.is_complete()
        return _empty(memory_reason(need, plan, accel, fixed), gpus, n, elapsed_s, plan, memory_gib(res, i, accel),
                      RESERVE_FRACTION if fixed else SEARCH_HEADROOM_FRACTION)
    step = np.where(feasible, res["step_time_s"], np.inf)
    n_ok = int(feasible.sum())
    k = min(n_ok, RUNNERS_UP + 1)
    top = np.argpartition(step, k - 1)[:k] if k < n else np.arange(n)
    ranked = top[np.lexsort((top, step[top]))]
    best = int(ranked[0])
    est = assemble(arch, accel, gpus, workload, res, best, plan_dict(grid, best), cv)
    return replace(est, search={"plans_evaluated": n, "feasible": n_ok, "seconds": elapsed_s},
                   runners_up=[{"plan": plan_dict(grid, int(i)), "step_time_s": float(res["step_time_s"][i])}
                               for i in ranked[1:k]])


def _with_context(est: Estimate, knobs: Knobs, accel_knobs: Any, arch: ModelArch, accel: Accelerator,
                  workload: Workload, spec: PlanSpec, software: SoftwareStack | None) -> Estimate:
    family = evaluation_family(arch, accel, workload, spec)
    return replace(est, calibration=calibration_info(knobs, accel_knobs, accel, family, software),
                   software=software)


def assemble(arch: ModelArch, accel: Accelerator, gpus: int, workload: Workload, res: dict[str, Any],
             i: int, plan: dict[str, Any], cv: float) -> Estimate:
    """The Estimate of row ``i`` of an evaluation."""
    terms = {k: float(res["terms"][k].reshape(-1)[i]) for k in SUM_TERMS}
    step = math.fsum(terms.values())
    for k in INFO_TERMS:
        terms[k] = float(res["terms"][k].reshape(-1)[i])
    tokens = workload.global_batch * workload.seq_len
    peak = matmul_peak_flops(accel, workload.precision)
    model_flops = model_flops_per_token(arch, workload.seq_len) * tokens
    hw_flops = hardware_flops_per_token(arch, workload.seq_len, plan["recompute"]) * tokens
    pct = step_percentiles(float(np.asarray(res["mu_s"]).reshape(-1)[i]), cv, gpus)
    return Estimate(
        feasible=True, reason=None, plan=plan, step_time_s=step, terms=terms,
        percentiles_s={k: pct[k] for k in ("p50", "p95", "p99")},
        memory_gib=memory_gib(res, i, accel),
        model_flops_per_step=model_flops, hardware_flops_per_step=hw_flops,
        mfu=model_flops / (step * gpus * peak), hfu=hw_flops / (step * gpus * peak),
        search={}, runners_up=[], tokens_per_step=tokens, tokens_per_s=tokens / step, gpus=gpus,
        idle_gpus=max(0, gpus - int(np.asarray(res["used_gpus"]).reshape(-1)[i])))
