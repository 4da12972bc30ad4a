"""Candidate plans as numpy arrays (``plans.PlanArrays``: one entry per plan, under the plan's field
names), built from a partial PlanSpec.

The candidate space is what tuned production runs use (spec "Plan search", issue 10 item 5):
- tp divides the attention heads and kv heads and stays inside one scale-up domain (a fixed plan
  may cross it: the collectives model the inter-node tier); tp x pp x dp x cp = N;
- pp x vpp divides the layers, or, where the stack supports uneven stages (Megatron-Core
  --decoder-first/last-pipeline-num-layers), the first and last stages hold one layer fewer;
- the sequence splits into 2 x cp chunks (load-balanced causal CP); EP divides dp x cp and the
  experts; micro-batch x dp divides the global batch; a micro-batch holds at most
  MAX_MICRO_BATCH_TOKENS tokens; interleaving needs the micro-batches divisible by pp;
- sequence parallelism needs tp > 1, TP comm overlap needs sequence parallelism;
- ZeRO-2/3 only without PP unless the stack runs FSDP with PP (torchtitan);
- and only what the software stack can run (SoftwareStack.features): TP comm overlap, CP,
  interleaving, uneven stages, the distributed optimizer, ZeRO-2/3, DP overlap, activation offload.

Speed: the grid grows in five stages: shapes (tp, pp, cp, ep, then dp), (vpp, micro-batch), ZeRO
stage, (SP, TP overlap), (recompute, DP overlap, offload). Each stage's own choices are pruned by
the rules that read only them before the cross product, and every rule that becomes evaluable at
a stage goes into ONE mask, so the arrays are compacted once per stage, never once per rule.
Divisors come from trial division up to sqrt(N), never a loop over N.
"""

from __future__ import annotations

import math
from typing import Any, Callable, cast

import numpy as np

from procure.catalog.software import SoftwareStack
from procure.model.plans import PLAN_FIELDS, IntVec, PlanArrays
from procure.model.problem import Problem, kv_divides_or_replicates
from procure.model.types import (CP_COMM, DISPATCHERS, PIPELINE_SCHEDULES, PlanSpec, RECOMPUTE,
                                  RECOMPUTE_MODULES)

Grid = dict[str, IntVec]        # a grid under construction: the fields of the stages so far
Rule = tuple[tuple[str, ...], str, Callable[[dict[str, Any]], Any]]

STAGES = (("tp", "pp", "cp", "ep", "etp", "cp_comm", "uneven_stages", "pipeline_schedule"),
          ("vpp", "micro_batch"), ("zero_stage",), ("sequence_parallel", "tp_comm_overlap"),
          ("recompute", "overlap_grad_reduce", "activation_offload", "fsdp_shard_group", "recompute_layers",
           "a2a_overlap", "moe_dispatcher", "recompute_modules"))
SWITCHES = ("sequence_parallel", "tp_comm_overlap", "overlap_grad_reduce", "activation_offload", "a2a_overlap",
            "uneven_stages")
# What a complete plan that leaves an expert/context-parallel choice unset gets (the dispatcher:
# the stack's best, see stack_dispatchers).
LAYOUT_DEFAULTS = {"etp": 1, "a2a_overlap": 0, "cp_comm": 0, "recompute_modules": 0, "uneven_stages": 0,
                   "pipeline_schedule": 0}
CP_CHOICES = (1, 2, 4, 8, 16, 32, 64)
ETP_CHOICES = (1, 2, 4, 8)
# The shortest sequence slice a CP rank holds in the search: tuned recipes split 8K-token sequences
# at most in two (NeMo/Megatron-Bridge Llama 3 70B: CP 2 at 8K) and use CP 8-32 only from 128K on.
MIN_CP_CHUNK_TOKENS = 1024
MB_CHOICES = (1, 2, 4, 8, 16, 32)
VPP_CHOICES = (1, 2, 3, 4, 5, 6, 7, 8)
MAX_PP = 128
# The largest micro-batch the search proposes, in tokens: published tuned recipes run 2-16K
# tokens per micro-batch (MLPerf GPT-3: 2 x 2048; NeMo/Megatron-Bridge Llama 3: 1-2 x 8192,
# 4 x 4096 for small models); larger ones only waste activation memory.
MAX_MICRO_BATCH_TOKENS = 16384


def divisors(n: int) -> list[int]:
    """Divisors of n in increasing order, by trial division up to sqrt(n)."""
    small, large = [], []
    for x in range(1, math.isqrt(n) + 1):
        if n % x == 0:
            small.append(x)
            if x != n // x:
                large.append(n // x)
    return small + large[::-1]


def modules_mask(modules: tuple[str, ...] | list[str] | None) -> int:
    """Bitmask of selective-recompute modules (bit i = RECOMPUTE_MODULES[i]); unknown names (a
    stack's own) are ignored."""
    return sum(1 << RECOMPUTE_MODULES.index(m) for m in set(modules or ()) if m in RECOMPUTE_MODULES)


def _spec_value(spec: PlanSpec, key: str) -> int | None:
    """The plan array entry of field ``key`` of ``spec`` (None: not stated)."""
    value = getattr(spec, key)
    if value is None:
        return None if key not in ("fsdp_shard_group", "recompute_layers") else 0
    if key == "recompute":
        return RECOMPUTE.index(value)
    if key in SWITCHES:
        return int(bool(value))
    if key == "moe_dispatcher":
        return DISPATCHERS.index(value)
    if key == "cp_comm":
        return CP_COMM.index(value)
    if key == "pipeline_schedule":
        return PIPELINE_SCHEDULES.index(value)
    if key == "recompute_modules":
        return modules_mask(value)
    return int(value)


def _feature(software: SoftwareStack | None, name: str) -> bool:
    return software is None or software.has(name)


def stack_dispatchers(software: SoftwareStack | None, moe: bool) -> list[int]:
    """The best MoE dispatcher the stack has (deduplicating ones never move more bytes)."""
    if not moe:
        return [0]
    for name in ("hybridep", "deepep"):
        if software is None or software.has(name):
            return [DISPATCHERS.index(name)]
    return [0]


def _pp_choices(gpus: int, layers: int, software: SoftwareStack | None) -> list[int]:
    """Pipeline depths: divisors of the GPUs (every GPU used), of the layers, and powers of two
    (the ones that leave GPUs idle when no depth uses them all, e.g. 455 NVL72 racks)."""
    pool = set(divisors(gpus)) | set(divisors(layers)) | {2 ** i for i in range(8)}
    return sorted(x for x in pool if x <= min(layers, MAX_PP, gpus) and (x == 1 or _feature(software, "pp")))


def _choices(pb: Problem, gpus: int, gpn: int, experts: int,
             software: SoftwareStack | None) -> dict[str, list[int]]:
    heads, kv, layers = int(pb.heads), int(pb.kv_heads), int(pb.layers)
    seq, batch = int(pb.seq), int(pb.batch)
    moe = float(pb.experts) > 0
    zero = [0] + [1] * _feature(software, "distributed_optimizer") + [2] * _feature(software, "zero2") \
        + [3] * _feature(software, "zero3")
    return {
        "tp": [x for x in divisors(heads) if kv_divides_or_replicates(kv, x) and x <= min(gpn, gpus)
               and (x == 1 or _feature(software, "tp"))],
        "pp": _pp_choices(gpus, layers, software),
        "cp": [x for x in CP_CHOICES if x == 1 or (seq % (2 * x) == 0 and seq // x >= MIN_CP_CHUNK_TOKENS
                                                   and _feature(software, "cp"))],
        "ep": [x for x in divisors(experts) if x <= gpus and (x == 1 or _feature(software, "ep"))],
        "etp": [x for x in ETP_CHOICES if x == 1 or (moe and x <= gpn and _feature(software, "ep"))],
        "cp_comm": [0] + [1] * _feature(software, "cp_a2a"),
        "vpp": [x for x in VPP_CHOICES if x == 1 or _feature(software, "interleaved_pp")],
        "micro_batch": [x for x in MB_CHOICES if x <= batch],
        "zero_stage": zero,
        "recompute": [0] + [1] * _feature(software, "selective_recompute") + [2] * _feature(software, "full_recompute"),
        "sequence_parallel": [0] + [1] * _feature(software, "sequence_parallel"),
        "tp_comm_overlap": [0] + [1] * _feature(software, "tp_comm_overlap"),
        "overlap_grad_reduce": [1] if _feature(software, "dp_overlap") else [0],
        # Activation offload is timed when a plan states it; the search does not propose it yet
        # (the result document's plan has no field for it).
        "activation_offload": [0],
        "fsdp_shard_group": [0],
        "recompute_layers": [0],
        # EP all-to-all overlap is never slower (model: hidden comm costs only its contention), so
        # the search does not branch on it: build_grid switches it on where the stack allows.
        "a2a_overlap": [0],
        "moe_dispatcher": stack_dispatchers(software, moe),
        "recompute_modules": [0],
        # The search balances the last stage (output layer, MTP) where the stack can lay out.
        "uneven_stages": [1] if _feature(software, "uneven_pp") else [0],
        # DualPipe is DeepSeek's in-house schedule (no stack in the catalog runs it): a stated
        # plan's only (the backtest's DeepSeek-V3 runs).
        "pipeline_schedule": [0],
    }


def _layers_rule(layers: Any, uneven: bool, any_split: bool) -> Callable[[dict[str, Any]], Any]:
    """pp x vpp divides the layers; or, where the stack places the first and last stages' layers
    freely (Megatron --decoder-first/last-pipeline-num-layers, pipeline layouts), the middle stages
    hold n layers (a multiple of vpp, n = ceil(L/pp) rounded up) and the first and last stages
    share what is left (DeepSeek-V3's 61 layers on pp16). A stack whose pipeline engine splits
    any layer count (``pp_any_split``: DeepSpeed's PipelineModule, the undescribed stack) but
    cannot lay out end stages puts ceil(L/pp) or fewer layers on each stage, without
    interleaving; the largest stage sets the pace (core._slowest_stage), so a depth that does not
    divide the layers is slower, not impossible (Llama 3.1 405B's 126 layers on pp16, not pp63
    with 256 GPUs idle). Megatron without uneven stages asserts the division."""
    def rule(g: dict[str, Any]) -> Any:
        even = layers % (g["pp"] * g["vpp"]) == 0
        if not uneven:
            return even | ((g["vpp"] == 1) & any_split)
        per_stage = -(-layers // g["pp"])
        middle = -(-per_stage // g["vpp"]) * g["vpp"]
        return even | ((g["pp"] > 2) & (middle * (g["pp"] - 2) <= layers))
    return rule


def fixed_rules(pb: Problem, gpus: Any) -> list[Rule]:
    """The rules every plan obeys, a fixed one included (per-row arrays work: the backtest)."""
    heads, kv, layers, batch = pb.heads, pb.kv_heads, pb.layers, pb.batch
    experts = np.maximum(pb.experts, 1)
    expert_ffn = np.maximum(pb.expert_ffn, 1)
    return [
        (("tp",), "tp must divide the attention heads, and divide the kv heads or be a multiple of them (replicated)",
         lambda g: (heads % g["tp"] == 0) & kv_divides_or_replicates(kv, g["tp"])),
        (("pp",), "pp must not exceed the layers", lambda g: g["pp"] <= layers),
        (("tp", "pp", "cp", "dp"), "tp x pp x dp x cp must not exceed the GPUs",
         lambda g: (g["dp"] > 0) & (g["tp"] * g["pp"] * g["dp"] * g["cp"] <= gpus)),
        # Megatron-Core's MoE parallel folding: the expert grid (etp x ep x expert-dp) refolds
        # tp x dp x cp, so ep may exceed dp x cp, with expert TP separate from attention TP.
        (("tp", "dp", "cp", "ep", "etp"), "ep x etp must divide tp x dp x cp, ep the experts and etp the expert width",
         lambda g: ((g["tp"] * g["dp"] * g["cp"]) % (g["ep"] * g["etp"]) == 0) & (experts % g["ep"] == 0)
         & (expert_ffn % g["etp"] == 0)),
        (("dp", "micro_batch"), "micro_batch x dp must divide the global batch",
         lambda g: (g["dp"] > 0) & (batch % np.maximum(g["micro_batch"] * g["dp"], 1) == 0)),
        # Uneven virtual stages are fine (Megatron --pipeline-model-parallel-layout: DeepSeek-V3's
        # 61 layers on pp 2 x vpp 8); every virtual stage needs a layer, the embedding and the
        # loss counting as one each (--account-for-embedding/loss-in-pipeline-split: Llama 3.1
        # 405B's 126 layers on pp 16 x vpp 8).
        (("pp", "vpp"), "vpp > 1 needs pp > 1 and at least pp x vpp layers",
         lambda g: (g["vpp"] == 1) | ((g["pp"] > 1) & (g["pp"] * g["vpp"] <= layers + 2))),
        (("dp", "cp", "fsdp_shard_group"), "the FSDP shard group must divide dp x cp",
         lambda g: (g["fsdp_shard_group"] == 0) | ((g["dp"] * g["cp"]) % np.maximum(g["fsdp_shard_group"], 1) == 0)),
        (("tp", "cp", "cp_comm"), "all-to-all context parallelism needs tp x cp to divide the heads and kv heads",
         lambda g: (g["cp_comm"] != 1) | ((heads % (g["tp"] * g["cp"]) == 0) & (kv % (g["tp"] * g["cp"]) == 0))),
    ]


def search_rules(pb: Problem, software: SoftwareStack | None, stated: PlanSpec | None = None) -> list[Rule]:
    """What tuned production runs obey on top of the fixed rules (a choice the plan states is not
    second-guessed: DeepSeek's DualPipe overlaps the all-to-all without interleaving)."""
    layers, batch, seq = pb.layers, pb.batch, pb.seq
    z3_pp = software is None or software.has("zero3_with_pp")
    return [
        (("pp", "vpp"), "pp x vpp must divide the layers", _layers_rule(layers, _feature(software, "uneven_pp"),
                                                                      _feature(software, "pp_any_split"))),
        (("pp", "vpp"), "vpp > 1 needs the layers of a stage divisible by vpp",
         lambda g: (g["vpp"] == 1) | (-(-layers // g["pp"]) % g["vpp"] == 0)),
        (("pp", "vpp", "micro_batch", "dp"), "interleaving needs micro-batches divisible by pp",
         lambda g: (g["vpp"] == 1) | ((batch // np.maximum(g["micro_batch"] * g["dp"], 1)) % g["pp"] == 0)),
        (("micro_batch",), f"a micro-batch holds at most {MAX_MICRO_BATCH_TOKENS} tokens",
         lambda g: (g["micro_batch"] == 1) | (g["micro_batch"] * seq <= MAX_MICRO_BATCH_TOKENS)),
        (("tp", "sequence_parallel"), "sequence parallelism needs tp > 1",
         lambda g: (g["sequence_parallel"] == 0) | (g["tp"] > 1)),
        (("sequence_parallel", "tp_comm_overlap"), "tp comm overlap needs sequence parallelism",
         lambda g: (g["tp_comm_overlap"] == 0) | (g["sequence_parallel"] == 1)),
        (("zero_stage", "pp"), "ZeRO-2/3 without pipeline parallelism",
         lambda g: (g["zero_stage"] <= 1) | (g["pp"] == 1) | ((g["zero_stage"] == 3) & z3_pp)),
        (("zero_stage", "dp", "cp"), "ZeRO stage is moot with one data-parallel rank",
         lambda g: (g["zero_stage"] == 0) | (g["dp"] * g["cp"] > 1)),
        (("activation_offload", "recompute"), "activation offload only without full recomputation",
         lambda g: (g["activation_offload"] == 0) | (g["recompute"] < 2)),
        # Expert TP is 1 or the attention TP (what tuned MoE recipes use).
        (("tp", "ep", "etp"), "etp is 1 or tp, and only with experts",
         lambda g: (g["etp"] == 1) | ((g["etp"] == g["tp"]) & (g["ep"] >= 1))),
        (("cp", "cp_comm"), "a CP variant needs cp > 1", lambda g: (g["cp_comm"] == 0) | (g["cp"] > 1)),
    ]


def _product(values: dict[str, list[int]], keys: tuple[str, ...]) -> Grid:
    mesh = np.meshgrid(*[np.asarray(values[k], dtype=np.int64) for k in keys], indexing="ij")
    return {k: m.ravel() for k, m in zip(keys, mesh)}


def _apply(grid: Grid, ready: list[Rule]) -> tuple[Grid, str | None]:
    """Grid rows that pass every rule in ``ready``: one combined mask, one compaction."""
    if not ready:
        return grid, None
    mask = np.ones(len(next(iter(grid.values()))), dtype=bool)
    for _keys, message, rule in ready:
        mask &= np.asarray(rule(grid), dtype=bool)
        if not mask.any():
            return {k: a[:0] for k, a in grid.items()}, message
    return (grid if mask.all() else {k: a[mask] for k, a in grid.items()}), None


def _largest_dp(batch: int, gpus: int, denom: IntVec) -> IntVec:
    """Per shape (tp x pp x cp = ``denom``): the largest data-parallel size that divides the batch
    and fits the GPUs (any rest idle), 0 when the shape alone needs more GPUs."""
    options = np.asarray(divisors(max(1, batch)), dtype=np.int64)
    room = gpus // np.maximum(denom, 1)
    idx = np.searchsorted(options, room, side="right") - 1
    return np.where(room >= 1, options[np.maximum(idx, 0)], 0)


def nearest_gpu_counts(batch: int, micro_batch: int, denom: int, gpus: int) -> tuple[int | None, int | None]:
    """(largest below, smallest above) GPU counts at which tp x pp x cp = ``denom`` runs an even
    data-parallel split of ``batch`` sequences in micro-batches of ``micro_batch``."""
    counts = [denom * d for d in divisors(max(1, batch // max(1, micro_batch)))
              if batch % (micro_batch * d) == 0]
    below = [n for n in counts if n <= gpus]
    above = [n for n in counts if n > gpus]
    return (max(below) if below else None), (min(above) if above else None)


def _uneven_dp_message(pb: Problem, spec: PlanSpec, gpus: int) -> str | None:
    """The refusal of a stated plan whose dp does not split the batch evenly, naming the nearest
    GPU counts that work with its tp x pp x cp."""
    if spec.dp is None or spec.tp is None or spec.pp is None:
        return None
    batch, b = int(pb.batch), spec.micro_batch or 1
    if batch % (b * spec.dp) == 0:
        return None
    denom = spec.tp * spec.pp * (spec.cp or 1)
    head = (f"micro_batch x dp must divide the global batch: micro_batch {b} x dp {spec.dp} does not "
            f"divide {batch} sequences (uneven data parallelism is not modelled)")
    lo, hi = nearest_gpu_counts(batch, b, denom, denom * spec.dp)
    if lo is None and hi is None:
        return f"{head}; no dp works with micro_batch {b}"
    near = " or ".join(f"{n:,} GPUs (dp {n // denom})" for n in (lo, hi) if n is not None)
    return f"{head}; with tp x pp x cp = {denom} the nearest counts that work are {near}"


def build_grid(pb: Problem, gpus: int, spec: PlanSpec, gpn: int,
               software: SoftwareStack | None = None) -> tuple[PlanArrays, str | None]:
    """Arrays of valid candidate plans, or (empty, reason). A search sets dp per shape to the
    largest that divides the batch within the GPUs, so any GPU count can be quoted (the rest of
    the GPUs idle: ``core.evaluate`` reports ``used_gpus``)."""
    experts = int(pb.experts) if float(pb.experts) > 0 else 1
    choices = _choices(pb, gpus, gpn, experts, software)
    complete = spec.is_complete()
    for key in PLAN_FIELDS:
        value = _spec_value(spec, key)
        if value is not None and key != "dp":
            choices[key] = [value]
        elif complete and key in LAYOUT_DEFAULTS:
            choices[key] = [LAYOUT_DEFAULTS[key]]
    if complete and spec.activation_offload is None:
        choices["activation_offload"] = [0]
    dp_fixed = _spec_value(spec, "dp")
    pending = fixed_rules(pb, gpus) + ([] if complete else search_rules(pb, software, spec))
    grid: Grid = {}
    for stage in STAGES:
        part = _product(choices, stage)
        own = [r for r in pending if set(r[0]) <= set(stage)]
        pending = [r for r in pending if r not in own]
        part, reason = _apply(part, own)
        if reason:
            return _empty(), _message(reason, pb, gpus)
        grid = _cross(grid, part)
        if stage == STAGES[0]:
            denom = grid["tp"] * grid["pp"] * grid["cp"]
            grid["dp"] = (np.full_like(denom, dp_fixed) if dp_fixed is not None
                         else _largest_dp(int(pb.batch), gpus, denom))
        ready = [r for r in pending if set(r[0]) <= set(grid)]
        pending = [r for r in pending if r not in ready]
        grid, reason = _apply(grid, ready)
        if reason:
            uneven = _uneven_dp_message(pb, spec, gpus) if "global batch" in reason else None
            return _empty(), uneven or _message(reason, pb, gpus)
    if spec.a2a_overlap is None and not complete and float(pb.experts) > 0 and _feature(software, "ep_a2a_overlap"):
        # Megatron's EP A2A overlap runs the combined 1F1B schedule: no pipeline, or interleaved.
        # It hides one micro-batch's all-to-all under another's compute: one micro-batch per
        # step has nothing to hide it under. Not with full recomputation ("Full recompute is not
        # a good companion for the overlap path": Megatron-Bridge docs, MoE Communication Overlap).
        micro = int(pb.batch) // np.maximum(grid["micro_batch"] * grid["dp"], 1)
        grid["a2a_overlap"] = ((grid["ep"] > 1) & ((grid["pp"] == 1) | (grid["vpp"] > 1)) & (micro >= 2)
                               & (grid["recompute"] != RECOMPUTE.index("full"))).astype(np.int64)
    return _filled(grid), None


def _filled(grid: Grid) -> PlanArrays:
    """A grid with every field of PlanArrays (the stages and dp cover them all; mypy cannot follow
    keys that come from STAGES, hence the cast)."""
    return cast(PlanArrays, grid)


def _empty() -> PlanArrays:
    return _filled({k: np.zeros(0, dtype=np.int64) for k in PLAN_FIELDS})


def _cross(grid: Grid, part: Grid) -> Grid:
    """Every row of ``grid`` with every row of ``part``."""
    if not grid:
        return dict(part)
    n, k = len(next(iter(grid.values()))), len(next(iter(part.values())))
    out = {key: np.repeat(a, k) for key, a in grid.items()}
    out.update({key: np.tile(a, n) for key, a in part.items()})
    return out


def _message(message: str, pb: Problem, gpus: int) -> str:
    """The rule's message with this problem's numbers."""
    return (message.replace("the GPUs", f"the {gpus} GPUs")
            .replace("the layers", f"the {int(pb.layers)} layers")
            .replace("the global batch", f"the global batch of {int(pb.batch)} sequences"))


def plan_features(spec: PlanSpec) -> list[tuple[str, str]]:
    """The stack features a (partial) plan states it uses: (feature name, words for people)."""
    uses = [
        (spec.tp is not None and spec.tp > 1, "tp", "tensor parallelism"),
        (spec.pp is not None and spec.pp > 1, "pp", "pipeline parallelism"),
        (spec.vpp is not None and spec.vpp > 1, "interleaved_pp", "interleaved pipeline stages"),
        (spec.cp is not None and spec.cp > 1, "cp", "context parallelism"),
        (spec.ep is not None and spec.ep > 1, "ep", "expert parallelism"),
        (bool(spec.sequence_parallel), "sequence_parallel", "sequence parallelism"),
        (bool(spec.tp_comm_overlap), "tp_comm_overlap", "TP comm overlap"),
        (spec.zero_stage == 1, "distributed_optimizer", "a distributed optimizer (ZeRO-1)"),
        (spec.zero_stage == 2, "zero2", "ZeRO-2"),
        (spec.zero_stage == 3, "zero3", "ZeRO-3/FSDP"),
        (spec.recompute == "selective", "selective_recompute", "selective recomputation"),
        (spec.recompute == "full", "full_recompute", "full recomputation"),
        (bool(spec.activation_offload), "activation_offload", "activation offload"),
        (bool(spec.a2a_overlap), "ep_a2a_overlap", "EP all-to-all overlap"),
        (spec.cp_comm == "a2a", "cp_a2a", "all-to-all context parallelism"),
        (spec.moe_dispatcher == "deepep", "deepep", "the DeepEP dispatcher"),
        (spec.moe_dispatcher == "hybridep", "hybridep", "the HybridEP dispatcher"),
        (spec.pipeline_schedule == "dualpipe", "dualpipe", "the DualPipe schedule"),
    ]
    return [(feature, words) for used, feature, words in uses if used]


def unsupported(spec: PlanSpec, precision: str, software: SoftwareStack | None,
                fp8_ok: bool) -> str | None:
    """Why the stack cannot run what a (partial) plan states, or None."""
    if precision == "fp8" and not fp8_ok:
        name = software.label if software is not None else "this accelerator"
        return f"{name} has no fp8 training recipe for this accelerator"
    if software is None:
        return None
    missing = [words for feature, words in plan_features(spec) if not software.has(feature)]
    if missing:
        return f"{software.label} cannot run {', '.join(missing)}"
    return None


def plan_dict(grid: PlanArrays, i: int) -> dict[str, Any]:
    """Plan ``i`` of a grid in the public key names (expert and context layout only where they
    apply: etp, dispatcher and all-to-all overlap with ep > 1, the CP variant with cp > 1)."""
    plan: dict[str, Any] = {
        "tp": int(grid["tp"][i]), "pp": int(grid["pp"][i]), "dp": int(grid["dp"][i]),
        "cp": int(grid["cp"][i]), "ep": int(grid["ep"][i]), "vpp": int(grid["vpp"][i]),
        "micro_batch": int(grid["micro_batch"][i]), "zero_stage": int(grid["zero_stage"][i]),
        "recompute": RECOMPUTE[int(grid["recompute"][i])],
        "sequence_parallel": bool(grid["sequence_parallel"][i]),
        "tp_comm_overlap": bool(grid["tp_comm_overlap"][i]),
        "overlap_grad_reduce": bool(grid["overlap_grad_reduce"][i]),
    }
    if grid["activation_offload"][i]:
        plan["activation_offload"] = True
    if grid["fsdp_shard_group"][i]:
        plan["fsdp_shard_group"] = int(grid["fsdp_shard_group"][i])
    if grid["recompute_layers"][i]:
        plan["recompute_layers"] = int(grid["recompute_layers"][i])
    if grid["ep"][i] > 1 or grid["etp"][i] > 1:
        plan.update(etp=int(grid["etp"][i]), a2a_overlap=bool(grid["a2a_overlap"][i]),
                    moe_dispatcher=DISPATCHERS[int(grid["moe_dispatcher"][i])])
    if grid["cp"][i] > 1:
        plan["cp_comm"] = CP_COMM[int(grid["cp_comm"][i])]
    if grid["uneven_stages"][i] and grid["pp"][i] > 1:
        plan["uneven_stages"] = True
    if grid["recompute_modules"][i]:
        mask = int(grid["recompute_modules"][i])
        plan["recompute_modules"] = [m for j, m in enumerate(RECOMPUTE_MODULES) if mask >> j & 1]
    return plan


def stack_specs(specs: list[PlanSpec], dispatchers: list[int] | None = None) -> PlanArrays:
    """Complete PlanSpecs as plan arrays (one row each), for batch evaluation. ``dispatchers``: the
    dispatcher of a row that states none (its stack's best; default the all-to-all)."""
    defaults = {"cp": 1, "ep": 1, "vpp": 1, "zero_stage": 0, "recompute": 0, "sequence_parallel": 0,
                "tp_comm_overlap": 0, "overlap_grad_reduce": 1, "activation_offload": 0, "fsdp_shard_group": 0,
                "recompute_layers": 0, "moe_dispatcher": 0, **LAYOUT_DEFAULTS}
    out: dict[str, list[int]] = {k: [] for k in PLAN_FIELDS}
    for row, spec in enumerate(specs):
        for k in PLAN_FIELDS:
            value = _spec_value(spec, k)
            if value is None and k == "moe_dispatcher" and dispatchers is not None:
                value = dispatchers[row]
            out[k].append(defaults[k] if value is None else value)
    return _filled({k: np.asarray(v, dtype=np.int64) for k, v in out.items()})


def row_reasons(pb: Problem, grid: PlanArrays, gpus: Any) -> list[str | None]:
    """Per row of a batch of fixed plans: the first rule it breaks, or None."""
    g: dict[str, Any] = dict(grid)
    n = len(grid["tp"])
    reasons: list[str | None] = [None] * n
    for _keys, message, rule in fixed_rules(pb, gpus):
        bad = ~np.broadcast_to(np.asarray(rule(g), dtype=bool), (n,))
        for i in np.nonzero(bad)[0]:
            if reasons[int(i)] is None:
                reasons[int(i)] = message
    return reasons
