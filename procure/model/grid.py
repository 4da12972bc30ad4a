"""Candidate plans as numpy arrays (one entry per plan), built from a partial PlanSpec.

Rules (spec "Plan search"): t divides heads and kv_heads and stays inside one scale-up domain
(a fixed plan may cross it: the collectives model the inter-node tier); t*p*d*c = N; b*d
divides the global batch; p <= L (uneven stages allowed: the slowest stage holds ceil(L/p)
layers); interleaving needs p > 1, ceil(L/p) divisible by v (uneven first/last stages, as Llama 3
405B ran) and m divisible by p; sequence parallelism
needs t > 1; TP comm overlap needs sequence parallelism; CP splits the sequence into 2c chunks
(load-balanced causal CP); EP divides dp*cp and the expert count; ZeRO-2/3 only without PP (as
DeepSpeed and FSDP require). Plans that differ only in knobs that cannot matter (ZeRO stage
with one data-parallel rank) are dropped.
"""

from __future__ import annotations

import math

import numpy as np

from procure.catalog.types import ModelArch
from procure.model.types import PlanSpec, RECOMPUTE, Workload

KEYS = ("t", "p", "d", "c", "e", "v", "b", "z", "rc", "sp", "tpo", "odp")
SPEC_FIELDS = {"t": "tp", "p": "pp", "d": "dp", "c": "cp", "e": "ep", "v": "vpp", "b": "micro_batch",
               "z": "zero_stage", "rc": "recompute", "sp": "sequence_parallel",
               "tpo": "tp_comm_overlap", "odp": "overlap_grad_reduce"}
CP_CHOICES = (1, 2, 4, 8, 16, 32, 64)
MB_CHOICES = (1, 2, 4, 8, 16, 32)
VPP_CHOICES = (1, 2, 3, 4, 5, 6, 7, 8)
MAX_PP = 128


def _divisors(n: int) -> list[int]:
    return [x for x in range(1, n + 1) if n % x == 0]


def _spec_value(spec: PlanSpec, key: str):
    value = getattr(spec, SPEC_FIELDS[key])
    if value is None:
        return None
    if key == "rc":
        return RECOMPUTE.index(value)
    if key in ("sp", "tpo", "odp"):
        return int(bool(value))
    return int(value)


def _choices(arch: ModelArch, gpus: int, workload: Workload, gpn: int) -> dict[str, list[int]]:
    heads_gcd = math.gcd(arch.heads, arch.kv_heads)
    experts = arch.moe.experts if arch.moe else 1
    return {
        "t": [x for x in _divisors(heads_gcd) if x <= gpn and gpus % x == 0],
        "p": [x for x in _divisors(gpus) if x <= min(arch.layers, MAX_PP)],
        "c": [x for x in CP_CHOICES if x == 1 or workload.seq_len % (2 * x) == 0],
        "e": [x for x in _divisors(experts) if x <= gpus],
        "v": list(VPP_CHOICES),
        "b": [x for x in MB_CHOICES if x <= workload.global_batch],
        "z": [0, 1, 2, 3],
        "rc": [0, 1, 2],
        "sp": [0, 1],
        "tpo": [0, 1],
        "odp": [1],
    }


def _cross(grid: dict[str, np.ndarray], key: str, values: list[int]) -> dict[str, np.ndarray]:
    """Every row of ``grid`` times every value of ``key``."""
    vals = np.asarray(values, dtype=np.int64)
    n = len(next(iter(grid.values()))) if grid else 1
    out = {k: np.repeat(a, len(vals)) for k, a in grid.items()}
    out[key] = np.tile(vals, n)
    return out


def _rules(arch: ModelArch, gpus: int, batch: int, fixed: bool):
    """(keys needed, message, mask function); ``fixed`` relaxes the search-only preferences."""
    experts = arch.moe.experts if arch.moe else 1
    rules = [
        (("t",), "tp must divide the attention heads and the kv heads",
         lambda g: (arch.heads % g["t"] == 0) & (arch.kv_heads % g["t"] == 0)),
        (("p",), f"pp must not exceed the {arch.layers} layers", lambda g: g["p"] <= arch.layers),
        (("t", "p", "c", "d"), f"tp x pp x dp x cp must equal the {gpus} GPUs",
         lambda g: g["t"] * g["p"] * g["d"] * g["c"] == gpus),
        (("d", "c", "e"), "ep must divide dp x cp and the number of experts",
         lambda g: ((g["d"] * g["c"]) % g["e"] == 0) & (experts % g["e"] == 0)),
        (("d", "b"), f"micro_batch x dp must divide the global batch of {batch} sequences",
         lambda g: (g["d"] > 0) & (batch % np.maximum(g["b"] * g["d"], 1) == 0)),
        (("p", "v"), "vpp > 1 needs pp > 1 and the layers of a stage divisible by vpp",
         lambda g: (g["v"] == 1) | ((g["p"] > 1) & (-(-arch.layers // g["p"]) % g["v"] == 0))),
    ]
    if not fixed:
        rules += [
            (("p", "v", "b", "d"), "interleaving needs micro-batches divisible by pp",
             lambda g: (g["v"] == 1) | ((batch // np.maximum(g["b"] * g["d"], 1)) % g["p"] == 0)),
            (("t", "sp"), "sequence parallelism needs tp > 1", lambda g: (g["sp"] == 0) | (g["t"] > 1)),
            (("sp", "tpo"), "tp comm overlap needs sequence parallelism",
             lambda g: (g["tpo"] == 0) | (g["sp"] == 1)),
            (("z", "p"), "ZeRO-2/3 without pipeline parallelism", lambda g: (g["z"] <= 1) | (g["p"] == 1)),
            (("z", "d", "c"), "ZeRO stage is moot with one data-parallel rank",
             lambda g: (g["z"] == 0) | (g["d"] * g["c"] > 1)),
        ]
    return rules


STAGES = ("t", "p", "c", "e", "b", "v", "z", "rc", "sp", "tpo", "odp")


def build_grid(arch: ModelArch, gpus: int, workload: Workload, spec: PlanSpec,
               gpn: int) -> tuple[dict[str, np.ndarray], str | None]:
    """Arrays of valid candidate plans, or (empty, reason).

    The grid grows one dimension at a time and each rule prunes as soon as the dimensions it
    reads exist, so the arrays never hold the full cartesian product."""
    choices = _choices(arch, gpus, workload, gpn)
    for key in KEYS:
        value = _spec_value(spec, key)
        if value is not None and key != "d":
            choices[key] = [value]
    dp_fixed = _spec_value(spec, "d")
    pending = _rules(arch, gpus, workload.global_batch, spec.is_complete())
    grid: dict[str, np.ndarray] = {}
    for key in STAGES:
        grid = _cross(grid, key, choices[key])
        if key == "c":
            denom = grid["t"] * grid["p"] * grid["c"]
            grid["d"] = (np.full_like(denom, dp_fixed) if dp_fixed is not None
                         else np.where(gpus % denom == 0, gpus // denom, 0))
        ready = [r for r in pending if set(r[0]) <= set(grid)]
        pending = [r for r in pending if r not in ready]
        for _keys, message, rule in ready:
            mask = rule(grid)
            if not mask.any():
                return {k: a[:0] for k, a in grid.items()}, message
            grid = {k: a[mask] for k, a in grid.items()}
    return grid, None


def plan_dict(grid: dict[str, np.ndarray], i: int) -> dict:
    """Plan ``i`` of a grid in the public key names."""
    return {
        "tp": int(grid["t"][i]), "pp": int(grid["p"][i]), "dp": int(grid["d"][i]),
        "cp": int(grid["c"][i]), "ep": int(grid["e"][i]), "vpp": int(grid["v"][i]),
        "micro_batch": int(grid["b"][i]), "zero_stage": int(grid["z"][i]),
        "recompute": RECOMPUTE[int(grid["rc"][i])],
        "sequence_parallel": bool(grid["sp"][i]), "tp_comm_overlap": bool(grid["tpo"][i]),
        "overlap_grad_reduce": bool(grid["odp"][i]),
    }


def stack_specs(specs: list[PlanSpec]) -> dict[str, np.ndarray]:
    """Complete PlanSpecs as plan arrays (one row each), for batch evaluation."""
    defaults = {"c": 1, "e": 1, "v": 1, "z": 0, "rc": 0, "sp": 0, "tpo": 0, "odp": 1}
    out = {k: [] for k in KEYS}
    for spec in specs:
        for k in KEYS:
            value = _spec_value(spec, k)
            out[k].append(defaults[k] if value is None else value)
    return {k: np.asarray(v, dtype=np.int64) for k, v in out.items()}
