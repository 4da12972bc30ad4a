"""Hidden communication and the flash-attention backward are not free (core.OVERLAP_CONTENTION,
core.FLASH_BWD_PASSES)."""

from __future__ import annotations

from procure.catalog.calibration import load_knobs
from procure.catalog.load import default_catalog
from procure.model import PlanSpec, Workload, estimate
from procure.model import core

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
    monkeypatch.setattr(core, "OVERLAP_CONTENTION", 0.0)
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
