"""Bids that pose the same problem (accelerator, network, GPUs, plan, software) are estimated
once per quote, and the document is the same as when every bid is estimated on its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from procure import api
from procure.catalog.load import default_catalog
from procure.jsontext import to_json_bytes
from procure.model import PlanSpec, Workload
from procure.model.memo import Memo, memoised, one_quote, problem_key

BIDS = [  # (id, accelerator, gpus, book, term, plan): three problems, each asked twice or more
    ("a1", "h100-sxm5-80gb", 1024, "aws-2026q3", "on-demand", None),
    ("a2", "h100-sxm5-80gb", 1024, "oci-2026q3", "on-demand", None),
    ("b1", "h200-sxm-141gb", 512, "oci-2026q3", "on-demand", None),
    ("a3", "h100-sxm5-80gb", 1024, "lambda-2026q3", "on-demand", None),
    ("b2", "h200-sxm-141gb", 512, "runpod-2026q3", "on-demand", None),
    ("c1", "h100-sxm5-80gb", 1024, "aws-2026q3", "on-demand", "{tp: 8, pp: 4, dp: 32, micro_batch: 1}"),
    ("c2", "h100-sxm5-80gb", 1024, "runpod-2026q3", "on-demand", "{tp: 8, pp: 4, dp: 32, micro_batch: 1}"),
]


def cluster_yaml() -> str:
    head = ("schema: procure/v1\ntitle: Repeated problems\nas_of: 2026-12-01\ncurrency: USD\n"
            "workload: {model: llama3-70b, seq_len: 8192, global_batch_tokens: 16777216, train_tokens: 15e12,"
            " precision: bf16, deadline_days: 120}\nbids:\n")
    bids = "".join(f"  - {{id: {i}, vendor: V {i}, accelerator: {acc}, gpus: {gpus}, "
                   f"pricing: {{kind: rental, price_book: {book}, term: {term}}}"
                   + (f", plan: {plan}" if plan else "") + "}\n"
                   for i, acc, gpus, book, term, plan in BIDS)
    return head + bids


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("memo") / "cluster.yaml"
    path.write_text(cluster_yaml(), encoding="utf-8")
    return path


def test_each_problem_is_estimated_once_and_the_document_is_as_without_the_memo(cluster, monkeypatch):
    import procure.backtest.recipes  # noqa: F401 - it holds its own estimate (the tuned recipes)
    import procure.model as model
    from procure.model import scaling as scaling_module

    calls = {"estimate": 0, "scaling": 0}
    real_estimate, real_scaling = model.estimate, scaling_module.scaling_curve

    def counted_estimate(*args, **kwargs):
        calls["estimate"] += 1
        return real_estimate(*args, **kwargs)

    def counted_scaling(*args, **kwargs):
        calls["scaling"] += 1
        return real_scaling(*args, **kwargs)

    monkeypatch.setattr(model, "estimate", counted_estimate)
    monkeypatch.setattr(model, "scaling_curve", counted_scaling)
    memoised = to_json_bytes(api.quote_document(cluster).to_data())
    assert calls == {"estimate": 3, "scaling": 3}          # a*, b*, c*: one each
    monkeypatch.setattr(Memo, "get", lambda self, kind, key, compute: compute())
    calls.update(estimate=0, scaling=0)
    every_bid = to_json_bytes(api.quote_document(cluster).to_data())
    assert calls == {"estimate": len(BIDS), "scaling": len(BIDS)}
    assert memoised == every_bid


def test_a_lookup_is_a_copy_of_its_own():
    memo = Memo()
    first = memo.get("estimate", ("k",), lambda: {"plan": {"tp": 8}, "search": {"seconds": None}})
    first["plan"]["tp"] = 1
    first["search"]["seconds"] = 0.5
    again = memo.get("estimate", ("k",), lambda: pytest.fail("computed twice"))
    assert again == {"plan": {"tp": 8}, "search": {"seconds": None}} and memo.hits == 1
    assert memo.get("scaling", ("k",), lambda: "other kind") == "other kind"


def test_the_key_tells_problems_apart():
    cat = default_catalog()
    h100, h200 = cat.accelerators["h100-sxm5-80gb"], cat.accelerators["h200-sxm-141gb"]
    ndr, efa = cat.networks["ib-ndr400"], cat.networks["efa-p5"]
    wl, longer = Workload(seq_len=8192, global_batch=2048), Workload(seq_len=32768, global_batch=512)
    base = problem_key(h100, ndr, 1024, wl, None, None, None, None)
    assert base == problem_key(h100, ndr, 1024, Workload(seq_len=8192, global_batch=2048), None, None, None, None)
    plan = {"tp": 8, "pp": 4, "dp": 32, "micro_batch": 1}
    assert problem_key(h100, ndr, 1024, wl, plan, None, None, None) == \
        problem_key(h100, ndr, 1024, wl, PlanSpec(tp=8, pp=4, dp=32, micro_batch=1), None, None, None)
    others = [problem_key(h200, ndr, 1024, wl, None, None, None, None),
              problem_key(h100, efa, 1024, wl, None, None, None, None),
              problem_key(h100, ndr, 2048, wl, None, None, None, None),
              problem_key(h100, ndr, 1024, longer, None, None, None, None),
              problem_key(h100, ndr, 1024, wl, plan, None, None, None),
              problem_key(h100, ndr, 1024, wl, None, 150.0, None, None),
              problem_key(h100, ndr, 1024, wl, None, None, 0.05, None)]
    assert len({base, *others}) == 1 + len(others)


def test_a_memo_lives_as_long_as_its_quote():
    calls = []

    def compute():
        calls.append(1)
        return {"n": len(calls)}

    assert memoised("k", ("x",), compute) == {"n": 1}          # no quote: computed every time
    assert memoised("k", ("x",), compute) == {"n": 2}
    with one_quote() as memo:
        assert memoised("k", ("x",), compute) == {"n": 3} == memoised("k", ("x",), compute)
        assert memo.hits == 1
    with one_quote():
        assert memoised("k", ("x",), compute) == {"n": 4}      # a new quote starts empty
    assert len(calls) == 4
