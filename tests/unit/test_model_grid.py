"""The candidate grid: divisors without a loop over N, the realism rules, and the staged build
agreeing with a brute-force enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from procure.model import PlanSpec, Workload
from procure.model.grid import (MAX_MICRO_BATCH_TOKENS, MIN_CP_CHUNK_TOKENS, build_grid, divisors,
                                fixed_rules, search_rules)
from procure.model.problem import build_problem

try:
    from test_model_fixtures import H100, NDR, gpt
except ImportError:  # pragma: no cover
    from .test_model_fixtures import H100, NDR, gpt


@pytest.mark.parametrize("n", [1, 2, 12, 97, 1024, 100_000, 98_304, 131_071])
def test_divisors_match_the_definition(n):
    expected = [x for x in range(1, n + 1) if n % x == 0] if n <= 131_071 else None
    assert divisors(n) == expected


def _pb(arch, gpus, wl):
    return build_problem(arch, H100, NDR, gpus, wl)


def test_search_rules_hold_on_every_candidate():
    arch = gpt(30, 4096, 32, vocab=32000)
    wl = Workload(seq_len=4096, global_batch=256)
    pb = _pb(arch, 64, wl)
    grid, reason = build_grid(pb, 64, PlanSpec(), 8)
    assert reason is None and len(grid["tp"]) > 100
    per_stage = -(-30 // grid["pp"])
    middle = -(-per_stage // grid["vpp"]) * grid["vpp"]
    even = 30 % (grid["pp"] * grid["vpp"]) == 0                       # layers divisible by pp x vpp
    uneven = (grid["pp"] > 2) & (middle * (grid["pp"] - 2) <= 30)      # the ends take the rest
    assert np.all(even | uneven) and np.any(~even)                  # uneven ends: no stack given
    assert np.all((grid["micro_batch"] == 1) | (grid["micro_batch"] * 4096 <= MAX_MICRO_BATCH_TOKENS))
    assert np.all(4096 % (2 * grid["cp"]) == 0)
    # Every plan fits the GPUs and splits the batch evenly; most use them all (the rest idle).
    used = grid["tp"] * grid["pp"] * grid["dp"] * grid["cp"]
    assert np.all(used <= 64) and np.all(256 % (grid["micro_batch"] * grid["dp"]) == 0) and np.mean(used == 64) > 0.5
    assert np.all(32 % grid["tp"] == 0) and np.all(grid["tp"] <= 8)
    assert np.all((grid["tp_comm_overlap"] == 0) | (grid["sequence_parallel"] == 1)) and np.all((grid["sequence_parallel"] == 0) | (grid["tp"] > 1))


def test_staged_build_equals_brute_force_enumeration():
    arch = gpt(16, 2048, 16, vocab=32000)
    wl = Workload(seq_len=2048, global_batch=64)
    pb = _pb(arch, 16, wl)
    grid, _ = build_grid(pb, 16, PlanSpec(), 8)
    keys = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero_stage", "recompute", "sequence_parallel",
            "tp_comm_overlap", "overlap_grad_reduce", "activation_offload", "cp_comm")
    got = set(zip(*(grid[k].tolist() for k in keys)))
    rules = fixed_rules(pb, 16) + search_rules(pb, None)
    expected = set()
    space = itertools.product([1, 2, 4, 8], [1, 2, 4, 8, 16], [1, 2, 4, 8, 16, 32, 64], [1],  # tp within a node
                              range(1, 9), [1, 2, 4, 8, 16, 32], [0, 1, 2, 3], [0, 1, 2], [0, 1], [0, 1],
                              [0, 1])
    for t, p, c, e, v, b, z, rc, sp, tpo, cc in space:
        if t * p * c > 16 or c > 1 and (2048 % (2 * c) or 2048 // c < MIN_CP_CHUNK_TOKENS):
            continue
        # dp: the largest that divides the batch within the GPUs (any rest idle)
        d = max(x for x in range(1, 16 // (t * p * c) + 1) if 64 % x == 0)
        g = {"tp": t, "pp": p, "cp": c, "ep": e, "vpp": v, "micro_batch": b, "zero_stage": z, "recompute": rc,
             "sequence_parallel": sp, "tp_comm_overlap": tpo, "overlap_grad_reduce": 1, "activation_offload": 0,
             "fsdp_shard_group": 0, "recompute_layers": 0, "dp": d, "etp": 1, "cp_comm": cc, "a2a_overlap": 0,
             "moe_dispatcher": 0, "recompute_modules": 0, "uneven_stages": 1, "pipeline_schedule": 0}
        if all(bool(rule(g)) for _, _, rule in rules):
            expected.add((t, p, d, c, e, v, b, z, rc, sp, tpo, 1, 0, cc))
    assert got == expected


def test_a_stack_without_uneven_stages_gets_only_even_splits():
    from procure.catalog.software import resolve_software

    arch = gpt(30, 4096, 32, vocab=32000)
    wl = Workload(seq_len=4096, global_batch=256)
    grid, _ = build_grid(_pb(arch, 64, wl), 64, PlanSpec(), 8, resolve_software("megatron-core", "0.4"))
    assert np.all(30 % (grid["pp"] * grid["vpp"]) == 0)


def test_a_fixed_plan_breaking_a_rule_names_it():
    arch = gpt(16, 2048, 16)
    wl = Workload(seq_len=2048, global_batch=64)
    bad = PlanSpec(tp=3, pp=1, dp=5, cp=1, ep=1, vpp=1, micro_batch=1, zero_stage=0, recompute="none",
                   sequence_parallel=False, tp_comm_overlap=False, overlap_grad_reduce=True)
    _, reason = build_grid(_pb(arch, 15, wl), 15, bad, 8)
    assert reason and "heads" in reason


def test_huge_gpu_counts_build_quickly_enough_to_be_vectorised():
    """No loop linear in N: 100k GPUs has many divisors but few candidate shapes."""
    arch = gpt(80, 8192, 64, vocab=128256, kv_heads=8, ffn=28672, gated=True)
    wl = Workload(seq_len=8192, global_batch=16000)
    grid, reason = build_grid(_pb(arch, 100_000, wl), 100_000, PlanSpec(), 8)
    assert reason is None and len(grid["tp"]) < 200_000
    used = grid["tp"] * grid["pp"] * grid["dp"] * grid["cp"]
    # 100,000 = 2^5 x 5^5 GPUs and 16,000 sequences: no tp x pp x cp x dp uses them all, so the
    # search leaves some idle (81,920 used at best) instead of refusing the bid.
    assert np.all(used <= 100_000) and np.all(16000 % grid["dp"] == 0) and used.max() >= 80_000
    assert math.gcd(100_000, 16000) > 1


def test_a_stack_that_splits_any_layer_count_may_pipeline_without_dividing_the_layers():
    from procure.catalog.software import resolve_software

    arch = gpt(30, 4096, 32, vocab=32000)
    wl = Workload(seq_len=4096, global_batch=256)
    other = resolve_software("other", when="2024-01-01")
    assert other.has("pp_any_split") and not other.has("uneven_pp")
    grid, _ = build_grid(_pb(arch, 64, wl), 64, PlanSpec(), 8, other)
    uneven = 30 % grid["pp"] != 0
    assert np.any(uneven & (grid["pp"] == 4))          # 8 + 8 + 7 + 7 layers
    assert np.all(grid["vpp"][uneven] == 1)             # without interleaving


def test_ep_all_to_all_overlap_needs_a_second_micro_batch_and_no_full_recompute():
    from test_model_fixtures import H100 as h100

    from procure.catalog.load import default_catalog

    arch = default_catalog().models["mixtral-8x7b"]
    wl = Workload(seq_len=4096, global_batch=64)
    pb = build_problem(arch, h100, NDR, 64, wl)
    grid, _ = build_grid(pb, 64, PlanSpec(), 8)
    single = 64 // (grid["micro_batch"] * grid["dp"]) == 1
    assert np.any(single & (grid["ep"] > 1)) and not np.any(grid["a2a_overlap"][single])
    assert np.any(grid["a2a_overlap"][~single])
    full = grid["recompute"] == 2
    assert np.any(full & ~single & (grid["ep"] > 1)) and not np.any(grid["a2a_overlap"][full])
