"""Candidate plans as numpy arrays (one entry per plan), built from a partial PlanSpec.

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
from typing import Any, Callable

import numpy as np
import numpy.typing as npt

from procure.catalog.software import SoftwareStack
from procure.model.problem import Problem, kv_divides_or_replicates
from procure.model.types import (CP_COMM, DISPATCHERS, PIPELINE_SCHEDULES, PlanSpec, RECOMPUTE,
                                  RECOMPUTE_MODULES)

IntVec = npt.NDArray[np.int64]
Grid = dict[str, IntVec]
Rule = tuple[tuple[str, ...], str, Callable[[dict[str, Any]], Any]]

KEYS = ("t", "p", "d", "c", "e", "v", "b", "z", "rc", "sp", "tpo", "odp", "aoff", "sg", "rl",
        "et", "ao", "dd", "cc", "rm", "ul", "ps")
STAGES = (("t", "p", "c", "e", "et", "cc", "ul", "ps"), ("v", "b"), ("z",), ("sp", "tpo"),
          ("rc", "odp", "aoff", "sg", "rl", "ao", "dd", "rm"))
SPEC_FIELDS = {"t": "tp", "p": "pp", "d": "dp", "c": "cp", "e": "ep", "v": "vpp", "b": "micro_batch",
               "z": "zero_stage", "rc": "recompute", "sp": "sequence_parallel",
               "tpo": "tp_comm_overlap", "odp": "overlap_grad_reduce", "aoff": "activation_offload",
               "sg": "fsdp_shard_group", "rl": "recompute_layers", "et": "etp", "ao": "a2a_overlap",
               "dd": "moe_dispatcher", "cc": "cp_comm", "rm": "recompute_modules",
               "ul": "uneven_stages", "ps": "pipeline_schedule"}
# What a complete plan that leaves an expert/context-parallel choice unset gets (the dispatcher:
# the stack's best, see _dispatchers).
LAYOUT_DEFAULTS = {"et": 1, "ao": 0, "cc": 0, "rm": 0, "ul": 0, "ps": 0}
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
    value = getattr(spec, SPEC_FIELDS[key])
    if value is None:
        return None if key not in ("sg", "rl") else 0
    if key == "rc":
        return RECOMPUTE.index(value)
    if key in ("sp", "tpo", "odp", "aoff", "ao", "ul"):
        return int(bool(value))
    if key == "dd":
        return DISPATCHERS.index(value)
    if key == "cc":
        return CP_COMM.index(value)
    if key == "ps":
        return PIPELINE_SCHEDULES.index(value)
    if key == "rm":
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
        "t": [x for x in divisors(heads) if kv_divides_or_replicates(kv, x) and x <= min(gpn, gpus)
              and (x == 1 or _feature(software, "tp"))],
        "p": _pp_choices(gpus, layers, software),
        "c": [x for x in CP_CHOICES if x == 1 or (seq % (2 * x) == 0 and seq // x >= MIN_CP_CHUNK_TOKENS
                                                  and _feature(software, "cp"))],
        "e": [x for x in divisors(experts) if x <= gpus and (x == 1 or _feature(software, "ep"))],
        "et": [x for x in ETP_CHOICES if x == 1 or (moe and x <= gpn and _feature(software, "ep"))],
        "cc": [0] + [1] * _feature(software, "cp_a2a"),
        "v": [x for x in VPP_CHOICES if x == 1 or _feature(software, "interleaved_pp")],
        "b": [x for x in MB_CHOICES if x <= batch],
        "z": zero,
        "rc": [0] + [1] * _feature(software, "selective_recompute") + [2] * _feature(software, "full_recompute"),
        "sp": [0] + [1] * _feature(software, "sequence_parallel"),
        "tpo": [0] + [1] * _feature(software, "tp_comm_overlap"),
        "odp": [1] if _feature(software, "dp_overlap") else [0],
        # Activation offload is timed when a plan states it; the search does not propose it yet
        # (the result document's plan has no field for it).
        "aoff": [0],
        "sg": [0],
        "rl": [0],
        # EP all-to-all overlap is never slower (model: hidden comm costs only its contention), so
        # the search does not branch on it: build_grid switches it on where the stack allows.
        "ao": [0],
        "dd": stack_dispatchers(software, moe),
        "rm": [0],
        # The search balances the last stage (output layer, MTP) where the stack can lay out.
        "ul": [1] if _feature(software, "uneven_pp") else [0],
        # DualPipe is DeepSeek's in-house schedule (no stack in the catalog runs it): a stated
        # plan's only (the backtest's DeepSeek-V3 runs).
        "ps": [0],
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
        even = layers % (g["p"] * g["v"]) == 0
        if not uneven:
            return even | ((g["v"] == 1) & any_split)
        per_stage = -(-layers // g["p"])
        middle = -(-per_stage // g["v"]) * g["v"]
        return even | ((g["p"] > 2) & (middle * (g["p"] - 2) <= layers))
    return rule


def fixed_rules(pb: Problem, gpus: Any) -> list[Rule]:
    """The rules every plan obeys, a fixed one included (per-row arrays work: the backtest)."""
    heads, kv, layers, batch = pb.heads, pb.kv_heads, pb.layers, pb.batch
    experts = np.maximum(pb.experts, 1)
    expert_ffn = np.maximum(pb.expert_ffn, 1)
    return [
        (("t",), "tp must divide the attention heads, and divide the kv heads or be a multiple of them (replicated)",
         lambda g: (heads % g["t"] == 0) & kv_divides_or_replicates(kv, g["t"])),
        (("p",), "pp must not exceed the layers", lambda g: g["p"] <= layers),
        (("t", "p", "c", "d"), "tp x pp x dp x cp must not exceed the GPUs",
         lambda g: (g["d"] > 0) & (g["t"] * g["p"] * g["d"] * g["c"] <= gpus)),
        # Megatron-Core's MoE parallel folding: the expert grid (etp x ep x expert-dp) refolds
        # tp x dp x cp, so ep may exceed dp x cp, with expert TP separate from attention TP.
        (("t", "d", "c", "e", "et"), "ep x etp must divide tp x dp x cp, ep the experts and etp the expert width",
         lambda g: ((g["t"] * g["d"] * g["c"]) % (g["e"] * g["et"]) == 0) & (experts % g["e"] == 0)
         & (expert_ffn % g["et"] == 0)),
        (("d", "b"), "micro_batch x dp must divide the global batch",
         lambda g: (g["d"] > 0) & (batch % np.maximum(g["b"] * g["d"], 1) == 0)),
        # Uneven virtual stages are fine (Megatron --pipeline-model-parallel-layout: DeepSeek-V3's
        # 61 layers on pp 2 x vpp 8); every virtual stage needs a layer, the embedding and the
        # loss counting as one each (--account-for-embedding/loss-in-pipeline-split: Llama 3.1
        # 405B's 126 layers on pp 16 x vpp 8).
        (("p", "v"), "vpp > 1 needs pp > 1 and at least pp x vpp layers",
         lambda g: (g["v"] == 1) | ((g["p"] > 1) & (g["p"] * g["v"] <= layers + 2))),
        (("d", "c", "sg"), "the FSDP shard group must divide dp x cp",
         lambda g: (g["sg"] == 0) | ((g["d"] * g["c"]) % np.maximum(g["sg"], 1) == 0)),
        (("t", "c", "cc"), "all-to-all context parallelism needs tp x cp to divide the heads and kv heads",
         lambda g: (g["cc"] != 1) | ((heads % (g["t"] * g["c"]) == 0) & (kv % (g["t"] * g["c"]) == 0))),
    ]


def search_rules(pb: Problem, software: SoftwareStack | None, stated: PlanSpec | None = None) -> list[Rule]:
    """What tuned production runs obey on top of the fixed rules (a choice the plan states is not
    second-guessed: DeepSeek's DualPipe overlaps the all-to-all without interleaving)."""
    layers, batch, seq = pb.layers, pb.batch, pb.seq
    z3_pp = software is None or software.has("zero3_with_pp")
    return [
        (("p", "v"), "pp x vpp must divide the layers", _layers_rule(layers, _feature(software, "uneven_pp"),
                                                                      _feature(software, "pp_any_split"))),
        (("p", "v"), "vpp > 1 needs the layers of a stage divisible by vpp",
         lambda g: (g["v"] == 1) | (-(-layers // g["p"]) % g["v"] == 0)),
        (("p", "v", "b", "d"), "interleaving needs micro-batches divisible by pp",
         lambda g: (g["v"] == 1) | ((batch // np.maximum(g["b"] * g["d"], 1)) % g["p"] == 0)),
        (("b",), f"a micro-batch holds at most {MAX_MICRO_BATCH_TOKENS} tokens",
         lambda g: (g["b"] == 1) | (g["b"] * seq <= MAX_MICRO_BATCH_TOKENS)),
        (("t", "sp"), "sequence parallelism needs tp > 1", lambda g: (g["sp"] == 0) | (g["t"] > 1)),
        (("sp", "tpo"), "tp comm overlap needs sequence parallelism",
         lambda g: (g["tpo"] == 0) | (g["sp"] == 1)),
        (("z", "p"), "ZeRO-2/3 without pipeline parallelism",
         lambda g: (g["z"] <= 1) | (g["p"] == 1) | ((g["z"] == 3) & z3_pp)),
        (("z", "d", "c"), "ZeRO stage is moot with one data-parallel rank",
         lambda g: (g["z"] == 0) | (g["d"] * g["c"] > 1)),
        (("aoff", "rc"), "activation offload only without full recomputation",
         lambda g: (g["aoff"] == 0) | (g["rc"] < 2)),
        # Expert TP is 1 or the attention TP (what tuned MoE recipes use).
        (("t", "e", "et"), "etp is 1 or tp, and only with experts",
         lambda g: (g["et"] == 1) | ((g["et"] == g["t"]) & (g["e"] >= 1))),
        (("c", "cc"), "a CP variant needs cp > 1", lambda g: (g["cc"] == 0) | (g["c"] > 1)),
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
               software: SoftwareStack | None = None) -> tuple[Grid, str | None]:
    """Arrays of valid candidate plans, or (empty, reason). A search sets dp per shape to the
    largest that divides the batch within the GPUs, so any GPU count can be quoted (the rest of
    the GPUs idle: ``core.evaluate`` reports ``used_gpus``)."""
    experts = int(pb.experts) if float(pb.experts) > 0 else 1
    choices = _choices(pb, gpus, gpn, experts, software)
    complete = spec.is_complete()
    for key in KEYS:
        value = _spec_value(spec, key)
        if value is not None and key != "d":
            choices[key] = [value]
        elif complete and key in LAYOUT_DEFAULTS:
            choices[key] = [LAYOUT_DEFAULTS[key]]
    if complete and spec.activation_offload is None:
        choices["aoff"] = [0]
    dp_fixed = _spec_value(spec, "d")
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
            denom = grid["t"] * grid["p"] * grid["c"]
            grid["d"] = (np.full_like(denom, dp_fixed) if dp_fixed is not None
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
        micro = int(pb.batch) // np.maximum(grid["b"] * grid["d"], 1)
        grid["ao"] = ((grid["e"] > 1) & ((grid["p"] == 1) | (grid["v"] > 1)) & (micro >= 2)
                      & (grid["rc"] != RECOMPUTE.index("full"))).astype(np.int64)
    return grid, None


def _empty() -> Grid:
    return {k: np.zeros(0, dtype=np.int64) for k in KEYS}


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


def plan_dict(grid: Grid, i: int) -> dict[str, Any]:
    """Plan ``i`` of a grid in the public key names (expert and context layout only where they
    apply: etp, dispatcher and all-to-all overlap with ep > 1, the CP variant with cp > 1)."""
    plan: dict[str, Any] = {
        "tp": int(grid["t"][i]), "pp": int(grid["p"][i]), "dp": int(grid["d"][i]),
        "cp": int(grid["c"][i]), "ep": int(grid["e"][i]), "vpp": int(grid["v"][i]),
        "micro_batch": int(grid["b"][i]), "zero_stage": int(grid["z"][i]),
        "recompute": RECOMPUTE[int(grid["rc"][i])],
        "sequence_parallel": bool(grid["sp"][i]), "tp_comm_overlap": bool(grid["tpo"][i]),
        "overlap_grad_reduce": bool(grid["odp"][i]),
    }
    if grid["aoff"][i]:
        plan["activation_offload"] = True
    if grid["sg"][i]:
        plan["fsdp_shard_group"] = int(grid["sg"][i])
    if grid["rl"][i]:
        plan["recompute_layers"] = int(grid["rl"][i])
    if grid["e"][i] > 1 or grid["et"][i] > 1:
        plan.update(etp=int(grid["et"][i]), a2a_overlap=bool(grid["ao"][i]),
                    moe_dispatcher=DISPATCHERS[int(grid["dd"][i])])
    if grid["c"][i] > 1:
        plan["cp_comm"] = CP_COMM[int(grid["cc"][i])]
    if grid["ul"][i] and grid["p"][i] > 1:
        plan["uneven_stages"] = True
    if grid["rm"][i]:
        plan["recompute_modules"] = [m for j, m in enumerate(RECOMPUTE_MODULES) if int(grid["rm"][i]) >> j & 1]
    return plan


def stack_specs(specs: list[PlanSpec], dispatchers: list[int] | None = None) -> Grid:
    """Complete PlanSpecs as plan arrays (one row each), for batch evaluation. ``dispatchers``: the
    dispatcher of a row that states none (its stack's best; default the all-to-all)."""
    defaults = {"c": 1, "e": 1, "v": 1, "z": 0, "rc": 0, "sp": 0, "tpo": 0, "odp": 1, "aoff": 0,
                "sg": 0, "rl": 0, "dd": 0, **LAYOUT_DEFAULTS}
    out: dict[str, list[int]] = {k: [] for k in KEYS}
    for row, spec in enumerate(specs):
        for k in KEYS:
            value = _spec_value(spec, k)
            if value is None and k == "dd" and dispatchers is not None:
                value = dispatchers[row]
            out[k].append(defaults[k] if value is None else value)
    return {k: np.asarray(v, dtype=np.int64) for k, v in out.items()}


def row_reasons(pb: Problem, grid: Grid, gpus: Any) -> list[str | None]:
    """Per row of a batch of fixed plans: the first rule it breaks, or None."""
    g: dict[str, Any] = dict(grid)
    n = len(grid["t"])
    reasons: list[str | None] = [None] * n
    for _keys, message, rule in fixed_rules(pb, gpus):
        bad = ~np.broadcast_to(np.asarray(rule(g), dtype=bool), (n,))
        for i in np.nonzero(bad)[0]:
            if reasons[int(i)] is None:
                reasons[int(i)] = message
    return reasons
