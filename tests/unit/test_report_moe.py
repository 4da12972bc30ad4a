"""A quote for an MoE model with a long-context phase: the document carries the expert-parallel
layout, the all-to-all term and the phases, the bid page shows them, and cost adds up (issue 11)."""

from __future__ import annotations

from pathlib import Path

import pytest

from procure import api
from procure.report import render_bytes

CLUSTER = """\
schema: procure/v1
title: MoE with a long-context phase
as_of: 2026-12-01
workload:
  model: qwen3-30b-a3b
  name: pretrain
  seq_len: 4096
  global_batch: 1024
  train_tokens: 1e11
  precision: bf16
  software: {stack: megatron-core, version: "0.16"}
  phases:
    - name: long-context
      seq_len: 32768
      global_batch: 128
      steps: 100
bids:
  - id: h100
    vendor: V
    accelerator: h100-sxm5-80gb
    gpus: 64
    network: ib-ndr400
    pricing: {usd_per_gpu_hour: 2.50}
    plan: {tp: 1, pp: 1, ep: 8, etp: 1, moe_dispatcher: deepep}
"""


@pytest.fixture(scope="module")
def doc(tmp_path_factory):
    path = Path(tmp_path_factory.mktemp("moe")) / "cluster.yaml"
    path.write_text(CLUSTER, encoding="utf-8")
    return api.quote_document(path)


def test_the_document_carries_the_expert_layout_and_the_phases(doc):
    bid = doc.to_data()["bids"][0]
    ep = bid["expert_parallel"]
    assert ep["ep"] == 8 and ep["etp"] == 1 and ep["dispatcher"] == "deepep"
    assert ep["a2a_total_s"] >= ep["a2a_exposed_s"] > 0
    assert ep["a2a_exposed_s"] == pytest.approx(bid["step_time_terms"]["ep_comm_s"])
    (phase,) = bid["phases"]
    assert phase["name"] == "long-context" and phase["seq_len"] == 32768
    assert phase["train_tokens"] == pytest.approx(100 * 128 * 32768, rel=1e-5)
    assert phase["plan"]["ep"] == 8 and phase["step_time_s"] > bid["step_time_s"]
    # the workload's time covers the main phase and the long-context one
    main_days = 1e11 / bid["tokens_per_s"] / bid["goodput"]["fraction"] / 86400
    assert bid["time_to_train_days"] == pytest.approx(main_days + phase["time_to_train_days"], rel=1e-4)


def test_the_bid_page_shows_the_expert_layout_the_all_to_all_and_the_phase(doc):
    html = render_bytes(doc, ["html"])["html"].decode("utf-8")
    for text in ("Expert parallelism", "EP 8 x expert TP 1", "All-to-all per step", "on the critical path",
                 "Training phases", "long-context", "32,768"):
        assert text in html, text
    zh = render_bytes(doc, ["html"], lang="zh-TW")["html"].decode("utf-8")
    assert "專家平行" in zh and "訓練階段" in zh


def test_a_dense_single_phase_bid_page_has_neither(tmp_path):
    text = CLUSTER.replace("qwen3-30b-a3b", "llama3-8b").replace("ep: 8, etp: 1, moe_dispatcher: deepep", "ep: 1")
    text = text.split("  phases:")[0] + "bids:" + text.split("bids:")[1]
    path = tmp_path / "cluster.yaml"
    path.write_text(text, encoding="utf-8")
    doc = api.quote_document(path)
    html = render_bytes(doc, ["html"])["html"].decode("utf-8")
    assert "Expert parallelism" not in html and "Training phases" not in html
    assert doc.to_data()["bids"][0]["expert_parallel"] is None


def test_the_bid_states_the_router_load_its_step_time_assumes(doc, tmp_path):
    from procure.model.problem import DEFAULT_MOE_IMBALANCE

    ep = doc.to_data()["bids"][0]["expert_parallel"]
    assert (ep["load_imbalance"], ep["load_imbalance_origin"]) == (DEFAULT_MOE_IMBALANCE, "fitted-default")
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER.replace("  precision: bf16\n", "  precision: bf16\n  moe_imbalance: 1.2\n"),
                    encoding="utf-8")
    stated = api.quote_document(path).to_data()["bids"][0]
    assert (stated["expert_parallel"]["load_imbalance"], stated["expert_parallel"]["load_imbalance_origin"]) == (
        1.2, "stated")
    # a more even router: a faster step than the fitted default's
    assert stated["step_time_s"] < doc.to_data()["bids"][0]["step_time_s"]
