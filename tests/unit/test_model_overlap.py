"""Hidden communication and the flash-attention backward are not free (collectives.OVERLAP_CONTENTION,
core.FLASH_BWD_PASSES)."""

from __future__ import annotations

from procure.catalog.calibration import load_knobs
from procure.catalog.load import default_catalog
from procure.model import PlanSpec, Workload, estimate
from procure.model import collectives, core

PLAN = PlanSpec(tp=8, pp=1, dp=64, cp=1, ep=1, vpp=1, micro_batch=1, zero_stage=3,
                recompute="selective", sequence_parallel=True, tp_comm_overlap=True,
                overlap_grad_reduce=True)


def _step():
    cat = default_catalog()
    est = estimate(cat.models["llama3-70b"], cat.accelerators["h100-sxm5-80gb"],
                   cat.networks["ib-ndr400"], 512, Workload(seq_len=8192, global_batch=512), PLAN,
                   load_knobs())
    assert est.feasible
    return est


def test_hidden_comm_slows_compute(monkeypatch):
    with_contention = _step()
    monkeypatch.setattr(collectives, "OVERLAP_CONTENTION", 0.0)
    free = _step()
    assert with_contention.step_time_s > free.step_time_s
    extra = with_contention.step_time_s - free.step_time_s
    # The cost is a fraction of the overlappable comm, never more than all of it.
    assert extra <= with_contention.terms["comm_overlappable_s"]
    assert with_contention.terms["comm_exposed_s"] > free.terms["comm_exposed_s"]


def test_flash_backward_recomputes_scores(monkeypatch):
    real = _step()
    monkeypatch.setattr(core, "FLASH_BWD_PASSES", 2.0)
    plain = _step()
    assert real.terms["compute_s"] > plain.terms["compute_s"]


def test_tp_comm_overlap_is_not_available_before_hopper():
    """Megatron/TE userbuffers TP overlap is a Hopper+ feature: on A100 a plan asking for it
    times like one without it, and the search never picks it."""
    from procure.catalog.load import default_catalog
    from procure.model import PlanSpec, Workload, estimate
    cat = default_catalog()
    args = (cat.models["gpt3-175b"], cat.accelerators["a100-sxm4-80gb"], cat.networks["ib-hdr200"],
            1024, Workload(seq_len=2048, global_batch=1536))
    base = dict(tp=8, pp=8, dp=16, cp=1, ep=1, vpp=1, micro_batch=1, zero_stage=1,
                recompute="selective", sequence_parallel=True, overlap_grad_reduce=True)
    on = estimate(*args, PlanSpec(**base, tp_comm_overlap=True))
    off = estimate(*args, PlanSpec(**base, tp_comm_overlap=False))
    assert on.step_time_s == off.step_time_s
    assert estimate(*args).plan["tp_comm_overlap"] is False
