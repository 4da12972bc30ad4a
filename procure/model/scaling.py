"""The scaling curve: one plan's per-GPU throughput at 1/8, 1/4, 1/2 and all of its GPUs, the four
fixed plans evaluated in ONE vectorised call (``core.evaluate`` over a stacked Problem).

The rows differ only in the GPU count and dp; each row is timed exactly as ``estimate`` times that
fixed plan on its own (the same rules, software check, knobs and memory verdict), so the batch
equals four separate estimates (a unit test holds it to 6 significant digits).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from procure.catalog.software import SoftwareStack
from procure.catalog.types import Accelerator, ModelArch, Network
from procure.model.batch import Case, prepare
from procure.model.core import evaluate
from procure.model.problem import core_knobs, gemm_tops
from procure.model.types import SUM_TERMS, Knobs, PlanSpec, Workload

FRACTIONS = (8, 4, 2, 1)             # 1/8, 1/4, 1/2 and all of the GPUs
NOTE = "global batch fixed; dp varies"


def scaling_points(arch: ModelArch, accel: Accelerator, network: Network, gpus: int, workload: Workload,
                   spec: PlanSpec, knobs: Knobs | None = None, measured_busbw_gbs: float | None = None,
                   step_time_cv: float | None = None,
                   software: SoftwareStack | None = None) -> list[dict[str, Any]]:
    """(gpus, step time, tokens/s per GPU) of every feasible point, smallest first."""
    if spec.dp is None:
        return []
    fracs = [f for f in FRACTIONS if spec.dp % f == 0 and gpus // f >= 1]
    cases = [Case(arch, accel, network, gpus // f, workload, replace(spec, dp=spec.dp // f), software,
                  measured_busbw_gbs) for f in fracs]
    if not cases:
        return []
    accel_knobs = (knobs or Knobs()).for_accelerator(accel.id, step_time_cv)
    # The rows share one accelerator: scalar knobs broadcast over them, as in ``estimate``.
    kn = core_knobs(accel_knobs, gemm_tops(accel, workload.precision, accel_knobs))
    prep = prepare(cases)
    res = evaluate(prep.pb, kn, prep.grid)
    fits = np.asarray(res["feasible"], dtype=bool).reshape(-1)
    terms = {k: np.asarray(res["terms"][k], dtype=float).reshape(-1) for k in SUM_TERMS}
    tokens = workload.global_batch * workload.seq_len
    points = []
    for i, case in enumerate(cases):
        if prep.reasons[i] is not None or not fits[i]:
            continue
        step = math.fsum(float(terms[k][i]) for k in SUM_TERMS)     # as ``estimate.assemble`` sums
        points.append({"gpus": case.gpus, "step_time_s": step, "tokens_per_s_per_gpu": tokens / step / case.gpus})
    return points


def scaling_curve(arch: ModelArch, accel: Accelerator, network: Network, gpus: int,
                  workload: Workload, plan: dict[str, Any], knobs: Knobs | None = None,
                  measured_busbw_gbs: float | None = None,
                  step_time_cv: float | None = None,
                  software: SoftwareStack | None = None) -> dict[str, Any]:
    """Per-GPU throughput at 1/8, 1/4, 1/2 and all of ``gpus`` with the same tp/pp/cp/ep/mb
    shape: only dp varies and the GLOBAL BATCH STAYS FIXED (fewer GPUs run more micro-batches).
    Points where dp is not an integer or does not divide the batch are skipped. Efficiency is
    per-GPU throughput relative to the smallest feasible size (``reference_gpus``)."""
    points = scaling_points(arch, accel, network, gpus, workload, PlanSpec.from_dict(plan), knobs,
                            measured_busbw_gbs, step_time_cv, software)
    if not points:
        return {"reference_gpus": None, "efficiency": None, "curve": [], "note": NOTE}
    ref = points[0]["tokens_per_s_per_gpu"]
    for pt in points:
        pt["efficiency"] = pt["tokens_per_s_per_gpu"] / ref
    full = points[-1]["efficiency"] if points[-1]["gpus"] == gpus else None
    return {"reference_gpus": points[0]["gpus"], "efficiency": full, "curve": points, "note": NOTE}
