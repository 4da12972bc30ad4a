"""Backtest the step-time model on published runs (``procure.published-runs/v1``) and on vTrain's
measured iteration times.

Pure: runs come in as plain dicts (already parsed), the catalog as dataclasses.

Software era. The published-runs schema has no field for the attention kernel or for DP
gradient overlap, yet both changed around 2023: Megatron-LM of 2020-2022 ran an unfused
scale-mask-softmax attention (s x s scores in HBM) and reduced gradients after the backward
(local DDP); FlashAttention (mid-2022) and --overlap-grad-reduce (2023) came later. A run may
state ``attention: flash|unfused`` and ``overlap_dp: true|false``; when it does not, a run whose
id or source names a year before 2023 gets the old defaults. This describes the software the
run used; it is not a fitted factor.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import replace

import numpy as np

from procure.catalog.types import Accelerator, ModelArch, MoE, Network, Sourced
from procure.model import estimate, param_count
from procure.model.types import Knobs, PlanSpec, Workload

SCHEMA = "procure.backtest/v1"
IB_LATENCY_US = 5.0            # NCCL net hop latency (tree LL), facts networks.yaml
MODERN_SOFTWARE_YEAR = 2023
VTRAIN_ACCELERATOR = "a100-sxm4-80gb"
VTRAIN_VOCAB = 50257
VTRAIN_GBPS_PER_GPU = 100.0    # 800 Gb/s per 8-GPU node


# Facts a published-runs file lacks or contradicts, taken from the run's own cited source. Keyed
# by run-id prefix; applied to the parallelism block and listed in the row as "corrected".
SOURCE_CORRECTIONS = {
    "megatron_readme2020_": (
        {"micro_batch": 16},
        "Megatron-LM images/tables.tex (2020): 'DGX-A100 batch size 16' with dp 1, and 'batch "
        "size 2048' over 128-way DP = 16 per GPU; Megatron of 2020 had no gradient accumulation "
        "(--batch-size was the per-GPU batch; --micro-batch-size arrived in v2, 2021), so the "
        "micro-batch is 16, not the assumed 1"),
    "megatron_readme2024_": (
        {"zero_stage": 1, "sequence_parallel": True, "tp_comm_overlap": True},
        "Megatron-LM README, Training Speed and Scalability: 'We perform fine-grained overlapping "
        "of data-parallel (--overlap-grad-reduce --overlap-param-gather), tensor-parallel "
        "(--tp-comm-overlap) ... communication'; --overlap-param-gather needs the distributed "
        "optimizer (ZeRO-1) and --tp-comm-overlap needs sequence parallelism"),
}


def corrections(run: dict) -> tuple[dict, str | None]:
    for prefix, (fields, why) in SOURCE_CORRECTIONS.items():
        if str(run.get("id", "")).startswith(prefix):
            return fields, why
    return {}, None


class Unpredictable(Exception):
    """A run the model cannot predict; the message is the reason."""


def _year(run: dict) -> int | None:
    found = re.findall(r"(20[12]\d)", f"{run.get('id', '')} {run.get('source', '')}")
    return min(int(y) for y in found) if found else None


def _software(run: dict) -> tuple[str, bool]:
    year = _year(run)
    old = year is not None and year < MODERN_SOFTWARE_YEAR
    attention = run.get("attention") or ("unfused" if old else "flash")
    overlap = run.get("overlap_dp")
    return attention, (not old) if overlap is None else bool(overlap)


def run_arch(run: dict) -> ModelArch:
    mdl = run["model"]
    moe = mdl.get("moe")
    return ModelArch(
        id=str(run.get("id", "run")), name=str(run.get("id", "run")), layers=int(mdl["layers"]),
        hidden=int(mdl["hidden"]), heads=int(mdl["heads"]),
        kv_heads=int(mdl.get("kv_heads") or mdl["heads"]), ffn_hidden=int(mdl["ffn_hidden"]),
        vocab=int(mdl["vocab"]), gated_mlp=bool(mdl.get("gated_mlp", False)),
        tied_embeddings=bool(mdl.get("tied_embeddings", False)),
        moe=MoE(**moe) if moe else None)


def run_network(gbps: float, networks_by_gbps: dict | None) -> Network:
    if networks_by_gbps and gbps in networks_by_gbps:
        return networks_by_gbps[gbps]
    return Network(id=f"ib-{gbps:g}g", name=f"InfiniBand {gbps:g} Gb/s per GPU", kind="infiniband",
                   scale_out_gbps_per_gpu=float(gbps), latency_us=IB_LATENCY_US,
                   rail_optimised=True, sourced=Sourced(("published run hardware block",), ""))


def run_inputs(run: dict, accelerators: dict[str, Accelerator], networks_by_gbps=None):
    """(arch, accel, network, gpus, workload, plan) of a published run, or Unpredictable."""
    hw = run["hardware"]
    par = {**run["parallelism"], **corrections(run)[0]}
    accel = accelerators.get(hw["accelerator"])
    if accel is None:
        raise Unpredictable(f"unknown accelerator {hw['accelerator']!r}")
    gpn = int(hw.get("gpus_per_node") or accel.scale_up_domain)
    if gpn != accel.scale_up_domain:
        accel = replace(accel, scale_up_domain=gpn)
    attention, overlap = _software(run)
    workload = Workload(seq_len=int(run["model"]["seq_len"]), global_batch=int(par["global_batch"]),
                        precision=str(run.get("precision", "bf16")), attention=attention)
    plan = PlanSpec(
        tp=int(par["tp"]), pp=int(par["pp"]), dp=int(par["dp"]), cp=int(par.get("cp", 1)),
        ep=int(par.get("ep", 1)), vpp=int(par.get("vpp", 1)), micro_batch=int(par["micro_batch"]),
        zero_stage=int(par.get("zero_stage", 0)), recompute=str(par.get("recompute", "none")),
        sequence_parallel=bool(par.get("sequence_parallel", False)),
        tp_comm_overlap=bool(par.get("tp_comm_overlap", False)), overlap_grad_reduce=overlap)
    network = run_network(float(hw["scale_out_gbps_per_gpu"]), networks_by_gbps)
    return run_arch(run), accel, network, int(hw["gpus"]), workload, plan


def _row(run: dict) -> dict:
    row = {"id": run["id"], "predicted_step_time_s": None,
           "measured_step_time_s": float(run["measured"]["step_time_s"]), "error": None, "terms": {}}
    for key in ("group", "tier"):
        if key in run:
            row[key] = run[key]
    fixed, why = corrections(run)
    if fixed:
        row["corrected"] = {"fields": fixed, "why": why}
    return row


UNBOUNDED_HBM_GB = 1e6


def _estimate(arch, accel, network, gpus, workload, plan, knobs, check_memory: bool):
    """The run's estimate; with ``check_memory`` False a plan the memory model rejects is still
    timed (a published run DID fit: its framework saved memory in ways the model does not count,
    e.g. fp8 activation caching) and the memory verdict is returned as a note."""
    est = estimate(arch, accel, network, gpus, workload, plan, knobs)
    if est.feasible or check_memory or not est.memory_gib:
        return est, None
    return (estimate(arch, replace(accel, hbm_gb=UNBOUNDED_HBM_GB), network, gpus, workload, plan,
                     knobs), est.reason)


def backtest(runs: list[dict], accelerators: dict[str, Accelerator], networks_by_gbps=None,
             knobs: Knobs | None = None, check_memory: bool = True) -> dict:
    """Predict every run; unpredictable runs are listed with a reason, never dropped.
    ``check_memory`` False times runs the memory model says do not fit (listed in the row's
    ``memory_note``)."""
    rows = []
    for run in runs:
        row = _row(run)
        try:
            arch, accel, network, gpus, workload, plan = run_inputs(run, accelerators, networks_by_gbps)
        except Unpredictable as exc:
            row["reason"] = str(exc)
            rows.append(row)
            continue
        est, memory_note = _estimate(arch, accel, network, gpus, workload, plan, knobs, check_memory)
        if memory_note:
            row["memory_note"] = memory_note
        if not est.feasible:
            row["reason"] = est.reason
        else:
            row["predicted_step_time_s"] = est.step_time_s
            row["error"] = (est.step_time_s - row["measured_step_time_s"]) / row["measured_step_time_s"]
            row["terms"] = est.terms
            row["mfu"] = est.mfu
        rows.append(row)
    errors = [abs(r["error"]) for r in rows if r["error"] is not None]
    return {"schema": SCHEMA, "runs": rows, "mape": float(np.mean(errors)) if errors else None}


# ---------------------------------------------------------------------------- vTrain CSV


def _padded_vocab(tp: int) -> int:
    unit = 128 * tp
    return int(math.ceil(VTRAIN_VOCAB / unit) * unit)


def read_vtrain_csv(text: str, multi: bool) -> list[dict]:
    """vTrain ``ground_truth_{single,multi}.csv`` rows as published-run dicts.

    Megatron-DeepSpeed on A100 80GB, fp16, full recomputation, 1F1B, no gradient bucketing (the
    DP all-reduce runs after the backward: ``overlap_dp: false``), unfused attention, 8 GPUs per
    node, 800 Gb/s per node; GPT-2 vocabulary padded to a multiple of 128 x tp, d_ff = 4h."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    next(reader)
    runs = []
    for i, cells in enumerate(r for r in reader if r):
        vals = [float(x) for x in cells]
        params_b = vals.pop(0) if multi else None
        gpus, batch, mb, hidden, heads, layers, seq, tp, dp, pp, ms = vals
        tp = int(tp)
        model = {"layers": int(layers), "hidden": int(hidden), "heads": int(heads),
                 "kv_heads": int(heads), "ffn_hidden": 4 * int(hidden), "vocab": _padded_vocab(tp),
                 "seq_len": int(seq), "gated_mlp": False}
        run = {
            "id": f"vtrain_{'multi' if multi else 'single'}_{i:04d}",
            "source": "vTrain (MICRO 2024) ground truth, MIT licence",
            "tier": "A", "model": model,
            "hardware": {"accelerator": VTRAIN_ACCELERATOR, "gpus": int(gpus), "gpus_per_node": 8,
                         "scale_out_gbps_per_gpu": VTRAIN_GBPS_PER_GPU},
            "parallelism": {"tp": tp, "pp": int(pp), "dp": int(dp), "cp": 1, "ep": 1, "vpp": 1,
                            "micro_batch": int(mb), "global_batch": int(batch), "zero_stage": 0,
                            "recompute": "full", "sequence_parallel": False},
            "precision": "fp16", "attention": "unfused", "overlap_dp": False,
            "measured": {"step_time_s": ms / 1000.0, "step_time_derived": False},
        }
        if params_b is None:
            params_b = round(param_count(run_arch(run)) / 1e9, 2)
        run["group"] = f"{params_b:g}B/{int(gpus)}gpu/{int(batch)}seq"
        runs.append(run)
    return runs


# ---------------------------------------------------------------------------- rank correlation


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), dtype=float)
    ranks[order] = np.arange(1, len(values) + 1)
    for v in np.unique(values):
        tie = values == v
        if tie.sum() > 1:
            ranks[tie] = ranks[tie].mean()
    return ranks


def spearman(x, y) -> float:
    rx, ry = _ranks(np.asarray(x, dtype=float)), _ranks(np.asarray(y, dtype=float))
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denom = math.sqrt(float((rx ** 2).sum() * (ry ** 2).sum()))
    return float((rx * ry).sum() / denom) if denom else 0.0


def spearman_by_group(result: dict) -> float | None:
    """Mean Spearman correlation of predicted vs measured within groups of >= 3 predicted runs."""
    groups: dict[str, list[tuple[float, float]]] = {}
    for row in result["runs"]:
        if row.get("group") is not None and row["predicted_step_time_s"] is not None:
            groups.setdefault(str(row["group"]), []).append(
                (row["predicted_step_time_s"], row["measured_step_time_s"]))
    rhos = [spearman([p for p, _ in g], [m for _, m in g]) for g in groups.values() if len(g) >= 3]
    return float(np.mean(rhos)) if rhos else None
