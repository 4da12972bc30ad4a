"""Multi-query and few-group attention under tensor parallelism: Megatron replicates each KV head
on tp / kv_heads ranks, so a TP degree above the KV heads is a valid plan (issue 27: a 1-KV-head
model was refused TP4), and the replicas cost memory and time on every rank that holds them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from procure.model import PlanSpec, Workload, estimate
from procure.model.problem import kv_divides_or_replicates

try:
    from test_model_fixtures import H100, NDR, gpt
except ImportError:  # pragma: no cover
    from .test_model_fixtures import H100, NDR, gpt

MQA = gpt(40, 6144, 48, vocab=49152, kv_heads=1, ffn=24576)        # StarCoder-15B-like: one KV head
WORK = Workload(seq_len=8192, global_batch=256)
PLAN = PlanSpec(tp=4, pp=1, dp=16, cp=1, micro_batch=1, recompute="selective", zero_stage=1,
                sequence_parallel=True)


def test_tp_above_the_kv_heads_is_a_valid_plan():
    est = estimate(MQA, H100, NDR, 64, WORK, PLAN)
    assert est.feasible, est.reason
    assert est.plan["tp"] == 4


def test_the_rule_admits_divisors_and_multiples_of_the_kv_heads_only():
    kv, t = np.array([1, 8, 8, 8, 6]), np.array([4, 4, 16, 3, 4])
    assert kv_divides_or_replicates(kv, t).tolist() == [True, True, True, False, False]


def test_replicated_kv_heads_cost_memory_and_time_on_each_rank():
    # The same shape with 4 KV heads splits them over tp 4; with 1 KV head each rank holds a replica.
    gqa4 = replace(MQA, kv_heads=4)
    one = estimate(MQA, H100, NDR, 64, WORK, PLAN)
    four = estimate(gqa4, H100, NDR, 64, WORK, PLAN)
    # 4 heads over 4 ranks = one head per rank, the same per-rank KV work as a replicated single head
    assert abs(one.step_time_s - four.step_time_s) / four.step_time_s < 1e-9
    # ... while 8 KV heads over 4 ranks hold two per rank: more work than the single replicated head
    eight = estimate(replace(MQA, kv_heads=8), H100, NDR, 64, WORK, PLAN)
    assert eight.step_time_s > one.step_time_s
    assert eight.memory_gib["total"] > one.memory_gib["total"]


def test_the_search_fills_in_a_plan_around_a_replicated_tp():
    # tp fixed above the KV heads, everything else searched: the search's grid offers it.
    est = estimate(MQA, H100, NDR, 64, WORK, PlanSpec(tp=8))
    assert est.feasible, est.reason
    assert est.plan["tp"] == 8


def test_a_megatron_bridge_fp8_llama3_8b_run_on_8_h100_fits(tmp_path):
    """Issue 27 item 5: the Megatron-Bridge Llama-3-8B fp8 run on 8 H100 (micro-batch 1, 8k sequence,
    no recompute) ran; stated with its stack (bf16 gradient reduction, fp8 weights) it fits."""
    from procure import api

    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("""schema: procure/v1
title: mb llama3 8b fp8
as_of: 2025-10-01
workload: {model: llama3-8b, seq_len: 8192, global_batch: 128, train_tokens: 1e12, precision: fp8,
           software: {stack: megatron-bridge, date: 2025-10}}
bids:
  - id: run
    vendor: x
    accelerator: h100-sxm5-80gb
    gpus: 8
    pricing: {kind: rental, usd_per_gpu_hour: 1}
    plan: {tp: 1, pp: 1, dp: 8, cp: 1, micro_batch: 1, recompute: none, zero_stage: 1}
""")
    bid = api.estimate(cluster)["bids"][0]
    assert bid["feasible"], bid["reason"]
    assert bid["memory_gib"]["total"] < 0.95 * bid["memory_gib"]["capacity"]
