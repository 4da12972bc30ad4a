"""The model's seams are typed records: the problem and the knobs are frozen with every field
typed, and the plan arrays carry exactly the plan's public field names (issue 29)."""

from __future__ import annotations

import dataclasses
import typing

import numpy as np
import pytest

from procure.catalog.knobs import AccelKnobs
from procure.catalog.load import default_catalog
from procure.model import PlanSpec, Workload
from procure.model.grid import build_grid, stack_specs
from procure.model.plans import PLAN_FIELDS, PlanArrays, Plans
from procure.model.problem import CoreKnobs, Problem, build_problem, core_knobs, stack


def _problem(gpus: int = 64) -> Problem:
    cat = default_catalog()
    return build_problem(cat.models["llama3-8b"], cat.accelerators["h100-sxm5-80gb"], cat.networks["ib-ndr400"],
                         gpus, Workload(seq_len=4096, global_batch=256))


@pytest.mark.parametrize("record", [Problem, CoreKnobs, Plans])
def test_records_are_frozen_and_no_field_is_untyped(record: type) -> None:
    hints = typing.get_type_hints(record)
    assert hints and all(hint is not typing.Any for hint in hints.values())
    assert record.__dataclass_params__.frozen


def test_a_problem_holds_float_arrays_and_cannot_be_changed() -> None:
    pb = _problem()
    assert all(getattr(pb, f.name).dtype == np.float64 and getattr(pb, f.name).shape == ()
               for f in dataclasses.fields(pb))
    with pytest.raises(dataclasses.FrozenInstanceError):
        pb.layers = np.asarray(1.0)
    rows = stack([pb, _problem(128)])
    assert rows.n_gpus.tolist() == [64.0, 128.0] and rows.layers.shape == (2,)
    kn = core_knobs(AccelKnobs(), 0.7)
    with pytest.raises(dataclasses.FrozenInstanceError):
        kn.gemm_top = 0.5


def test_plan_arrays_are_named_as_the_plan_fields() -> None:
    assert PLAN_FIELDS == tuple(typing.get_type_hints(PlanArrays))
    assert PLAN_FIELDS == tuple(f.name for f in dataclasses.fields(Plans))
    spec_fields = {f.name for f in dataclasses.fields(PlanSpec)}
    assert set(PLAN_FIELDS) <= spec_fields          # the names a plan is written in


def test_every_grid_carries_every_plan_field() -> None:
    pb = _problem()
    searched, reason = build_grid(pb, 64, PlanSpec(), 8)
    assert reason is None and list(searched) and set(searched) == set(PLAN_FIELDS)
    refused, reason = build_grid(pb, 64, PlanSpec(tp=3), 8)
    assert reason is not None and set(refused) == set(PLAN_FIELDS) and len(refused["tp"]) == 0
    fixed = stack_specs([PlanSpec(tp=8, pp=1, dp=8, micro_batch=1)])
    assert set(fixed) == set(PLAN_FIELDS)
    assert fixed["tp"].tolist() == [8] and fixed["overlap_grad_reduce"].tolist() == [1]
    plans = Plans.of(fixed, np.asarray(0.0))
    assert plans.tp.dtype == np.float64 and plans.tp_comm_overlap.tolist() == [0.0]
