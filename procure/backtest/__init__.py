"""Backtest the step-time model on published runs (``procure.published-runs/v1``) and on vTrain's
measured iteration times: every run of a file in ONE vectorised evaluation (model.batch).

Pure: runs come in as typed records (``PublishedRun``, validated by ``procure.backtest.runs``), the
catalog as dataclasses.

Software era. Older files have no ``software:``, yet what a run ran changed around 2023:
Megatron-LM of 2020-2022 ran an unfused scale-mask-softmax attention (s x s scores in HBM) and
reduced gradients after the backward (local DDP); FlashAttention (mid-2022) and
--overlap-grad-reduce (2023) came later. A run may state ``attention: flash|unfused`` and
``overlap_dp: true|false``; when it does not, a run whose id or source names a year before 2023
gets the old defaults. This describes the software the run used; it is not a fitted factor.
A run that states ``software:`` is timed with that release's features and attention kernel.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from procure.catalog.software import SoftwareStack, known_versions, resolve_software, stack_year
from procure.catalog.types import MLA, Accelerator, AttentionWindow, ModelArch, MoE, Network, Sourced
from procure.model import param_count
from procure.model.batch import Case, batch_rows
from procure.model.error_model import BAND, evaluation_family
from procure.model.grid import plan_features
from procure.model.types import Knobs, PlanSpec, Workload

if TYPE_CHECKING:       # the schema module is imported where runs are read, not by a quote's start
    from procure.backtest.published_run import PublishedRun, RunParallelism

SCHEMA = "procure.backtest/v1"
IB_LATENCY_US = 5.0            # NCCL net hop latency (tree LL), facts networks.yaml
MODERN_SOFTWARE_YEAR = 2023
VTRAIN_ACCELERATOR = "a100-sxm4-80gb"
VTRAIN_VOCAB = 50257
VTRAIN_GBPS_PER_GPU = 100.0    # 800 Gb/s per 8-GPU node
UNSPLIT = "unsplit"


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


def corrections(run: PublishedRun) -> tuple[dict[str, Any], str | None]:
    for prefix, (fields, why) in SOURCE_CORRECTIONS.items():
        if run.id.startswith(prefix):
            return fields, why
    return {}, None


class Unpredictable(Exception):
    """A run the model cannot predict; the message is the reason."""


def _year(run: PublishedRun) -> int | None:
    found = re.findall(r"(20[12]\d)", f"{run.id} {run.source}")
    return min(int(y) for y in found) if found else None


def software_era(run: PublishedRun, software: SoftwareStack | None = None) -> tuple[str, bool]:
    """(attention kernel, DP overlap) of the run's software: what the run states, else what its
    stack release runs, else (older files) what its year suggests."""
    year = _year(run)
    old = year is not None and year < MODERN_SOFTWARE_YEAR
    if software is not None:
        default_attention = "unfused" if software.attention_kernel == "unfused" else "flash"
        default_overlap = software.has("dp_overlap")
    else:
        default_attention, default_overlap = ("unfused" if old else "flash"), not old
    attention = run.attention or default_attention
    overlap = run.overlap_dp
    return attention, default_overlap if overlap is None else overlap


def run_arch(run: PublishedRun) -> ModelArch:
    mdl = run.model
    moe, a, w = mdl.moe, mdl.mla, mdl.attention_window
    moe_arch = mla = window = None
    if moe is not None:
        limit = _node_limit(run)
        moe_arch = MoE(experts=moe.experts, top_k=moe.top_k, expert_ffn_hidden=moe.expert_ffn_hidden,
                       shared_experts=moe.shared_experts, dense_layers=moe.dense_layers,
                       capacity_factor=float(moe.capacity_factor) if moe.capacity_factor else None,
                       layer_freq=moe.moe_layer_freq, groups=limit and moe.experts, group_topk=limit)
    if a is not None:
        mla = MLA(kv_lora_rank=a.kv_lora_rank, qk_nope_head_dim=a.qk_nope_head_dim,
                  qk_rope_head_dim=a.qk_rope_head_dim, v_head_dim=a.v_head_dim,
                  q_lora_rank=a.q_lora_rank or None)
    if w is not None:
        window = AttentionWindow(size=w.size, global_every=w.global_every)
    return ModelArch(
        id=run.id, name=run.id, layers=mdl.layers, hidden=mdl.hidden, heads=mdl.heads,
        kv_heads=mdl.kv_heads or mdl.heads, ffn_hidden=mdl.ffn_hidden, vocab=mdl.vocab,
        gated_mlp=mdl.gated_mlp, tied_embeddings=mdl.tied_embeddings, moe=moe_arch,
        head_dim=mdl.head_dim if mdl.head_dim and not mla else None, mla=mla,
        attention_window=window, mtp_layers=mdl.mtp_layers)


# A run's MoE dispatcher as the model names it: Megatron's all-to-all, the flex dispatcher with
# DeepEP or HybridEP, and DeepSeek's own node-deduplicating IB+NVLink all-to-all (sec. 3.2.2:
# a token crosses IB once per destination node and is forwarded over NVLink), timed as DeepEP.
DISPATCHER_WORDS = (("hybridep", "hybridep"), ("deepep", "deepep"), ("ib+nvlink", "deepep"),
                    ("alltoall", "alltoall"), ("all-to-all", "alltoall"))
FORCE_BALANCED = ("force-balance", "moe_router_force_load_balancing=true")


def _dispatcher(run: PublishedRun) -> str | None:
    text = (run.parallelism.moe_dispatcher or "").lower()
    return next((name for word, name in DISPATCHER_WORDS if word in text), None)


def _node_limit(run: PublishedRun) -> int | None:
    """Node-limited routing stated with the dispatcher ("max 4 nodes/token")."""
    found = re.search(r"max (\d+) nodes", run.parallelism.moe_dispatcher or "")
    return int(found.group(1)) if found else None


def _imbalance(run: PublishedRun) -> float | None:
    """1.0 for a run whose router was force-balanced (vendor benchmark tables say so in their
    footnote, recorded in the run's notes); None (the model's prior) otherwise."""
    notes = run.notes.lower().replace(" ", "")
    balanced = run.router or any(word.replace(" ", "") in notes for word in FORCE_BALANCED)
    return 1.0 if balanced else None


def run_network(gbps: float, networks_by_gbps: dict[float, Network] | None) -> Network:
    if networks_by_gbps and gbps in networks_by_gbps:
        return networks_by_gbps[gbps]
    return Network(id=f"ib-{gbps:g}g", name=f"InfiniBand {gbps:g} Gb/s per GPU", kind="infiniband",
                   scale_out_gbps_per_gpu=float(gbps), latency_us=IB_LATENCY_US,
                   rail_optimised=True, sourced=Sourced(("published run hardware block",), ""))


def run_software(run: PublishedRun) -> SoftwareStack | None:
    """The release a run states (its version when the catalog knows it, else its date); None
    for runs that state no software (the older files)."""
    sw = run.software
    if sw is None:
        return None
    version = sw.version
    when = sw.date or (f"{_year(run)}-12" if _year(run) else None)
    if version is not None and version not in known_versions(sw.stack):
        # A container release the catalog lacks (NeMo "24.03.01"): its own YY.MM says when it was
        # built, which the document date ("2024-10", when a table was read) does not.
        named = re.match(r"^(\d{2})\.(\d{2})\b", version)
        version = None
        if named and named.group(0) in known_versions(sw.stack):
            version = named.group(0)
        elif named:
            when = f"20{named.group(1)}-{named.group(2)}"
    stack = resolve_software(sw.stack, version, when)
    return replace(stack, logit_bytes=float(sw.logit_bytes)) if sw.logit_bytes else stack


def _what_ran(software: SoftwareStack | None, plan: PlanSpec, precision: str,
              accel: Accelerator) -> tuple[SoftwareStack | None, str | None]:
    """A published run ran: a feature it used that the catalog's release lacks is added (and
    reported), never a reason to drop the run."""
    if software is None:
        return None, None
    missing = {feature for feature, _ in plan_features(plan)} - set(software.features)
    if precision == "fp8" and software.fp8_recipe(accel) is None and "fp8" in accel.peak_tflops:
        missing.add("mxfp8" if accel.architecture.lower().startswith("blackwell") else "fp8_delayed")
    if not missing:
        return software, None
    note = f"the catalog's {software.label} lacks {', '.join(sorted(missing))}, which the run used"
    return replace(software, features=software.features | frozenset(missing)), note


def run_case(run: PublishedRun, accelerators: dict[str, Accelerator],
             networks_by_gbps: dict[float, Network] | None = None) -> tuple[Case, str | None]:
    """The model's inputs for a published run (and a note on the software), or Unpredictable."""
    hw = run.hardware
    fixed = corrections(run)[0]
    par = run.parallelism.model_copy(update=fixed) if fixed else run.parallelism
    accel = accelerators.get(hw.accelerator)
    if accel is None:
        raise Unpredictable(f"unknown accelerator {hw.accelerator!r}")
    gpn = hw.gpus_per_node or accel.scale_up_domain
    if gpn != accel.scale_up_domain:
        accel = replace(accel, scale_up_domain=gpn)
    stated = run_software(run)
    attention, overlap = software_era(run, stated)
    workload = Workload(seq_len=run.model.seq_len, global_batch=par.global_batch,
                        precision=run.precision, attention=attention,
                        frozen_base=run.finetune is not None, moe_imbalance=_imbalance(run),
                        moe_block_routing=run.router == "blocks",
                        pipeline_flushes=par.pipeline_flushes)
    zero = 3 if par.fsdp else par.zero_stage
    plan = PlanSpec(
        tp=par.tp, pp=par.pp, dp=par.dp, cp=par.cp, ep=par.ep, vpp=par.vpp, micro_batch=par.micro_batch,
        zero_stage=zero, recompute=par.recompute, sequence_parallel=par.sequence_parallel,
        tp_comm_overlap=par.tp_comm_overlap, overlap_grad_reduce=overlap,
        activation_offload=par.activation_offload, fsdp_shard_group=par.fsdp_shard_group,
        recompute_layers=par.recompute_layers, etp=par.etp, a2a_overlap=par.a2a_overlap,
        moe_dispatcher=_dispatcher(run), cp_comm=_cp_comm(par.cp_comm),
        recompute_modules=_modules(par.recompute_modules), uneven_stages=_custom_layout(par),
        pipeline_schedule=_schedule(par))
    network = run_network(float(hw.scale_out_gbps_per_gpu), networks_by_gbps)
    software, note = _what_ran(stated, plan, run.precision, accel)
    return Case(run_arch(run), accel, network, hw.gpus, workload, plan, software), note


def _custom_layout(par: RunParallelism) -> bool | None:
    """A stated pipeline layout, or a schedule that lays the stages out itself (DeepSeek's
    DualPipe puts a chunk from each end of the model on every rank)."""
    schedule = (par.pp_schedule or "").lower()
    return True if par.pp_layout or "dualpipe" in schedule else None


def _schedule(par: RunParallelism) -> str | None:
    """DeepSeek's DualPipe (its own pipeline bubble); any other stated schedule is (interleaved)
    1F1B as far as the model goes."""
    return "dualpipe" if "dualpipe" in (par.pp_schedule or "").lower() else None


def _cp_comm(value: str | None) -> str | None:
    """The corpus's cp_comm (ring = Megatron/TE p2p) as the model names it; unknown: the default."""
    text = str(value or "").lower()
    return {"ring": "p2p", "p2p": "p2p", "a2a": "a2a", "allgather": "allgather",
            "all-gather": "allgather"}.get(text)


def _modules(value: list[str] | None) -> tuple[str, ...] | None:
    """Megatron --recompute-modules of a run (rmsnorm is Megatron's layernorm module)."""
    if not value:
        return None
    names = tuple("layernorm" if m == "rmsnorm" else m for m in value)
    return names


def _row(run: PublishedRun) -> dict[str, Any]:
    row: dict[str, Any] = {"id": run.id, "predicted_step_time_s": None,
                           "measured_step_time_s": float(run.measured.step_time_s),
                           "error": None, "terms": {}}
    stated = {"group": run.group, "tier": run.tier, "family": run.family, "split": run.split,
              "source_family": run.source_family}
    row.update({key: value for key, value in stated.items() if value is not None})
    fixed, why = corrections(run)
    if fixed:
        row["corrected"] = {"fields": fixed, "why": why}
    return row


def _fill(row: dict[str, Any], run: PublishedRun, case: Case, res: dict[str, Any],
          check_memory: bool) -> None:
    row.setdefault("family", evaluation_family(case.arch, case.accel, case.workload, case.plan))
    if res["reason"] is not None:
        row["reason"] = res["reason"]
        return
    row["predicted_peak_memory_gib"] = res["memory_total_gib"] - res["memory_reserve_gib"]
    peak = run.measured.peak_memory_gib
    if peak:
        row["measured_peak_memory_gib"] = float(peak)
        row["memory_error"] = row["predicted_peak_memory_gib"] / float(peak) - 1.0
    if not res["fits"]:
        if check_memory:
            row["reason"] = res["memory_reason"]
            return
        row["memory_note"] = res["memory_reason"]
    row["predicted_step_time_s"] = res["step_time_s"]
    row["error"] = (res["step_time_s"] - row["measured_step_time_s"]) / row["measured_step_time_s"]
    row["terms"] = res["terms"]
    row["mfu"] = res["mfu"]


def backtest(runs: list[PublishedRun], accelerators: dict[str, Accelerator],
             networks_by_gbps: dict[float, Network] | None = None, knobs: Knobs | None = None,
             check_memory: bool = True) -> dict[str, Any]:
    """Predict every run in one vectorised evaluation; unpredictable runs are listed with a
    reason, never dropped. ``check_memory`` False times runs the memory model says do not fit
    (listed in the row's ``memory_note``)."""
    rows, cases, where = [], [], []
    for run in runs:
        row = _row(run)
        rows.append(row)
        try:
            case, note = run_case(run, accelerators, networks_by_gbps)
        except Unpredictable as exc:
            row["reason"] = str(exc)
            continue
        if note:
            row["software_note"] = note
        cases.append(case)
        where.append(len(rows) - 1)
    for i, case, res in zip(where, cases, batch_rows(cases, knobs)):
        _fill(rows[i], runs[i], case, res, check_memory)
        _band(rows[i], case, knobs)
    return summarise(rows)


def _band(row: dict[str, Any], case: Case, knobs: Knobs | None) -> None:
    """The P10-P90 step time a quote would print for this run (its family's error; the wide prior
    where the accelerator has no fit of its own), and whether the measured time falls inside."""
    predicted = row.get("predicted_step_time_s")
    if predicted is None:
        return
    found = knobs or Knobs()
    error = found.error_for(str(row["family"]), found.fitted_for(case.accel.id), stack_year(case.software))
    low, high = error.quantile(predicted, BAND[0]), error.quantile(predicted, BAND[1])
    row["p10_step_time_s"], row["p90_step_time_s"] = low, high
    row["inside_band"] = low <= row["measured_step_time_s"] <= high


def _stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    errors = np.array([r["error"] for r in rows if r["error"] is not None], dtype=float)
    if not len(errors):
        return {"n": 0, "mape": None, "bias": None, "coverage": None}
    banded = [bool(r["inside_band"]) for r in rows if r.get("inside_band") is not None]
    return {"n": int(len(errors)), "mape": float(np.mean(np.abs(errors))), "bias": float(np.mean(errors)),
            "coverage": float(np.mean(banded)) if banded else None}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The backtest document: rows, MAPE and mean signed error overall, by family, by split and
    by (split, family)."""
    by_family: dict[str, list[dict[str, Any]]] = {}
    by_split: dict[str, list[dict[str, Any]]] = {}
    by_both: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        fam, split = str(r.get("family") or "other"), str(r.get("split") or UNSPLIT)
        by_family.setdefault(fam, []).append(r)
        by_split.setdefault(split, []).append(r)
        by_both.setdefault((split, fam), []).append(r)
    overall = _stats(rows)
    return {
        "schema": SCHEMA, "runs": rows, "mape": overall["mape"], "bias": overall["bias"],
        "by_family": {k: _stats(v) for k, v in sorted(by_family.items())},
        "by_split": {k: _stats(v) for k, v in sorted(by_split.items())},
        "groups": [{"split": s, "family": f, **_stats(v)} for (s, f), v in sorted(by_both.items())],
    }


# ---------------------------------------------------------------------------- vTrain CSV


def _padded_vocab(tp: int) -> int:
    unit = 128 * tp
    return int(math.ceil(VTRAIN_VOCAB / unit) * unit)


def read_vtrain_csv(text: str, multi: bool, source: str = "vtrain.csv") -> list[PublishedRun]:
    """vTrain ``ground_truth_{single,multi}.csv`` rows as published runs (bad rows are an
    InputError with their line and column).

    Megatron-DeepSpeed on A100 80GB, fp16, full recomputation, 1F1B, no gradient bucketing (the
    DP all-reduce runs after the backward: ``overlap_dp: false``), unfused attention, 8 GPUs per
    node, 800 Gb/s per node; GPT-2 vocabulary padded to a multiple of 128 x tp, d_ff = 4h."""
    from procure.backtest.runs import parse_vtrain_rows   # the reader: a quote needs none of it
    from procure.errors import InputError

    runs, problems = [], []
    for i, (line, vals) in enumerate(parse_vtrain_rows(text, multi, source)):
        try:
            runs.append(_vtrain_run(i, line, list(vals), multi, source))
        except InputError as exc:
            problems.extend(exc.diagnostics)
    if problems:
        raise InputError(problems)
    return runs


def _vtrain_run(i: int, line: int, vals: list[float], multi: bool, source: str) -> PublishedRun:
    """One vTrain row as a published run, with its group (parameters, GPUs, batch)."""
    from procure.backtest.runs import vtrain_run

    params_b = vals.pop(0) if multi else None
    gpus, batch, mb, hidden, heads, layers, seq, tp, dp, pp, ms = vals
    tp_i = int(tp)
    model = {"layers": int(layers), "hidden": int(hidden), "heads": int(heads),
             "kv_heads": int(heads), "ffn_hidden": 4 * int(hidden), "vocab": _padded_vocab(tp_i),
             "seq_len": int(seq), "gated_mlp": False}
    run = vtrain_run({
        "id": f"vtrain_{'multi' if multi else 'single'}_{i:04d}",
        "source": "vTrain (MICRO 2024) ground truth, MIT licence",
        "tier": "A", "model": model,
        "hardware": {"accelerator": VTRAIN_ACCELERATOR, "gpus": int(gpus), "gpus_per_node": 8,
                     "scale_out_gbps_per_gpu": VTRAIN_GBPS_PER_GPU},
        "parallelism": {"tp": tp_i, "pp": int(pp), "dp": int(dp), "cp": 1, "ep": 1, "vpp": 1,
                        "micro_batch": int(mb), "global_batch": int(batch), "zero_stage": 0,
                        "recompute": "full", "sequence_parallel": False},
        "precision": "fp16", "attention": "unfused", "overlap_dp": False,
        "measured": {"step_time_s": ms / 1000.0, "step_time_derived": False},
    }, line, source)
    if params_b is None:
        params_b = round(param_count(run_arch(run)) / 1e9, 2)
    return run.model_copy(update={"group": f"{params_b:g}B/{int(gpus)}gpu/{int(batch)}seq"})


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


def spearman(x: Any, y: Any) -> float:
    rx, ry = _ranks(np.asarray(x, dtype=float)), _ranks(np.asarray(y, dtype=float))
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denom = math.sqrt(float((rx ** 2).sum() * (ry ** 2).sum()))
    return float((rx * ry).sum() / denom) if denom else 0.0


def spearman_by_group(result: dict[str, Any]) -> float | None:
    """Mean Spearman correlation of predicted vs measured within groups of >= 3 predicted runs."""
    groups: dict[str, list[tuple[float, float]]] = {}
    for row in result["runs"]:
        if row.get("group") is not None and row["predicted_step_time_s"] is not None:
            groups.setdefault(str(row["group"]), []).append(
                (row["predicted_step_time_s"], row["measured_step_time_s"]))
    rhos = [spearman([p for p, _ in g], [m for _, m in g]) for g in groups.values() if len(g) >= 3]
    return float(np.mean(rhos)) if rhos else None

