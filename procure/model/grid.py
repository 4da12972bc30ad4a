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
from procure.model.problem import Problem
from procure.model.types import PlanSpec, RECOMPUTE

IntVec = npt.NDArray[np.int64]
Grid = dict[str, IntVec]
Rule = tuple[tuple[str, ...], str, Callable[[dict[str, Any]], Any]]

KEYS = ("t", "p", "d", "c", "e", "v", "b", "z", "rc", "sp", "tpo", "odp", "aoff", "sg", "rl")
STAGES = (("t", "p", "c", "e"), ("v", "b"), ("z",), ("sp", "tpo"), ("rc", "odp", "aoff", "sg", "rl"))
SPEC_FIELDS = {"t": "tp", "p": "pp", "d": "dp", "c": "cp", "e": "ep", "v": "vpp", "b": "micro_batch",
               "z": "zero_stage", "rc": "recompute", "sp": "sequence_parallel",
               "tpo": "tp_comm_overlap", "odp": "overlap_grad_reduce", "aoff": "activation_offload",
               "sg": "fsdp_shard_group", "rl": "recompute_layers"}
CP_CHOICES = (1, 2, 4, 8, 16, 32, 64)
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


def _spec_value(spec: PlanSpec, key: str) -> int | None:
    value = getattr(spec, SPEC_FIELDS[key])
    if value is None:
        return None if key not in ("sg", "rl") else 0
    if key == "rc":
        return RECOMPUTE.index(value)
    if key in ("sp", "tpo", "odp", "aoff"):
        return int(bool(value))
    return int(value)


def _feature(software: SoftwareStack | None, name: str) -> bool:
    return software is None or software.has(name)


def _choices(pb: Problem, gpus: int, gpn: int, experts: int,
             software: SoftwareStack | None) -> dict[str, list[int]]:
    heads, kv, layers = int(pb.heads), int(pb.kv_heads), int(pb.layers)
    seq, batch = int(pb.seq), int(pb.batch)
    zero = [0] + [1] * _feature(software, "distributed_optimizer") + [2] * _feature(software, "zero2") \
        + [3] * _feature(software, "zero3")
    return {
        "t": [x for x in divisors(math.gcd(heads, kv)) if x <= gpn and gpus % x == 0
              and (x == 1 or _feature(software, "tp"))],
        "p": [x for x in divisors(gpus) if x <= min(layers, MAX_PP) and (x == 1 or _feature(software, "pp"))],
        "c": [x for x in CP_CHOICES if x == 1 or (seq % (2 * x) == 0 and _feature(software, "cp"))],
        "e": [x for x in divisors(experts) if x <= gpus and (x == 1 or _feature(software, "ep"))],
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
    }


def _layers_rule(layers: Any, uneven: bool) -> Callable[[dict[str, Any]], Any]:
    """pp x vpp divides the layers; or, where the stack places the first and last stages' layers
    freely (Megatron --decoder-first/last-pipeline-num-layers, pipeline layouts), the middle stages
    hold n layers (a multiple of vpp, n = ceil(L/pp) rounded up) and the first and last stages
    share what is left (DeepSeek-V3's 61 layers on pp16)."""
    def rule(g: dict[str, Any]) -> Any:
        even = layers % (g["p"] * g["v"]) == 0
        if not uneven:
            return even
        per_stage = -(-layers // g["p"])
        middle = -(-per_stage // g["v"]) * g["v"]
        return even | ((g["p"] > 2) & (middle * (g["p"] - 2) <= layers))
    return rule


def fixed_rules(pb: Problem, gpus: Any) -> list[Rule]:
    """The rules every plan obeys, a fixed one included (per-row arrays work: the backtest)."""
    heads, kv, layers, batch = pb.heads, pb.kv_heads, pb.layers, pb.batch
    experts = np.maximum(pb.experts, 1)
    return [
        (("t",), "tp must divide the attention heads and the kv heads",
         lambda g: (heads % g["t"] == 0) & (kv % g["t"] == 0)),
        (("p",), "pp must not exceed the layers", lambda g: g["p"] <= layers),
        (("t", "p", "c", "d"), "tp x pp x dp x cp must equal the GPUs",
         lambda g: g["t"] * g["p"] * g["d"] * g["c"] == gpus),
        # Megatron-Core's MoE parallel folding: the expert grid (ep x expert-dp) refolds
        # tp x dp x cp, so ep may exceed dp x cp (expert TP 1).
        (("t", "d", "c", "e"), "ep must divide tp x dp x cp and the number of experts",
         lambda g: ((g["t"] * g["d"] * g["c"]) % g["e"] == 0) & (experts % g["e"] == 0)),
        (("d", "b"), "micro_batch x dp must divide the global batch",
         lambda g: (g["d"] > 0) & (batch % np.maximum(g["b"] * g["d"], 1) == 0)),
        (("p", "v"), "vpp > 1 needs pp > 1 and the layers of a stage divisible by vpp",
         lambda g: (g["v"] == 1) | ((g["p"] > 1) & (-(-layers // g["p"]) % g["v"] == 0))),
        (("d", "c", "sg"), "the FSDP shard group must divide dp x cp",
         lambda g: (g["sg"] == 0) | ((g["d"] * g["c"]) % np.maximum(g["sg"], 1) == 0)),
    ]


def search_rules(pb: Problem, software: SoftwareStack | None) -> list[Rule]:
    """What tuned production runs obey on top of the fixed rules."""
    layers, batch, seq = pb.layers, pb.batch, pb.seq
    z3_pp = software is None or software.has("zero3_with_pp")
    return [
        (("p", "v"), "pp x vpp must divide the layers", _layers_rule(layers, _feature(software, "uneven_pp"))),
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


def build_grid(pb: Problem, gpus: int, spec: PlanSpec, gpn: int,
               software: SoftwareStack | None = None) -> tuple[Grid, str | None]:
    """Arrays of valid candidate plans, or (empty, reason)."""
    experts = int(pb.experts) if float(pb.experts) > 0 else 1
    choices = _choices(pb, gpus, gpn, experts, software)
    for key in KEYS:
        value = _spec_value(spec, key)
        if value is not None and key != "d":
            choices[key] = [value]
    if spec.is_complete() and spec.activation_offload is None:
        choices["aoff"] = [0]
    dp_fixed = _spec_value(spec, "d")
    pending = fixed_rules(pb, gpus) + ([] if spec.is_complete() else search_rules(pb, software))
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
                         else np.where(gpus % denom == 0, gpus // denom, 0))
        ready = [r for r in pending if set(r[0]) <= set(grid)]
        pending = [r for r in pending if r not in ready]
        grid, reason = _apply(grid, ready)
        if reason:
            return _empty(), _message(reason, pb, gpus)
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


def unsupported(spec: PlanSpec, precision: str, software: SoftwareStack | None,
                fp8_ok: bool) -> str | None:
    """Why the stack cannot run what a (partial) plan states, or None."""
    if precision == "fp8" and not fp8_ok:
        name = software.label if software is not None else "this accelerator"
        return f"{name} has no fp8 training recipe for this accelerator"
    if software is None:
        return None
    needs = [
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
    ]
    missing = [words for used, feature, words in needs if used and not software.has(feature)]
    if missing:
        return f"{software.label} cannot run {', '.join(missing)}"
    return None


def plan_dict(grid: Grid, i: int) -> dict[str, Any]:
    """Plan ``i`` of a grid in the public key names."""
    return {
        "tp": int(grid["t"][i]), "pp": int(grid["p"][i]), "dp": int(grid["d"][i]),
        "cp": int(grid["c"][i]), "ep": int(grid["e"][i]), "vpp": int(grid["v"][i]),
        "micro_batch": int(grid["b"][i]), "zero_stage": int(grid["z"][i]),
        "recompute": RECOMPUTE[int(grid["rc"][i])],
        "sequence_parallel": bool(grid["sp"][i]), "tp_comm_overlap": bool(grid["tpo"][i]),
        "overlap_grad_reduce": bool(grid["odp"][i]),
    } | ({"activation_offload": True} if grid["aoff"][i] else {}) \
      | ({"fsdp_shard_group": int(grid["sg"][i])} if grid["sg"][i] else {}) \
      | ({"recompute_layers": int(grid["rl"][i])} if grid["rl"][i] else {})


def stack_specs(specs: list[PlanSpec]) -> Grid:
    """Complete PlanSpecs as plan arrays (one row each), for batch evaluation."""
    defaults = {"c": 1, "e": 1, "v": 1, "z": 0, "rc": 0, "sp": 0, "tpo": 0, "odp": 1, "aoff": 0,
                "sg": 0, "rl": 0}
    out: dict[str, list[int]] = {k: [] for k in KEYS}
    for spec in specs:
        for k in KEYS:
            value = _spec_value(spec, k)
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
