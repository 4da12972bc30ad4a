"""Candidate plans as arrays, one entry per plan, under the plan's public field names.

``PlanArrays`` is what the grid builds and the batch stacks (integers: sizes, 0/1 switches and
the index of a named choice); ``Plans`` is the same set as the float arrays the cost model
computes with. Both name every field, so a misspelt one is a type error, not a KeyError.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import numpy as np
import numpy.typing as npt

IntVec = npt.NDArray[np.int64]
Vec = npt.NDArray[np.float64]


class PlanArrays(TypedDict):
    tp: IntVec
    pp: IntVec
    dp: IntVec
    cp: IntVec
    ep: IntVec
    etp: IntVec                     # expert tensor parallelism
    vpp: IntVec                     # virtual pipeline stages per rank (interleaving)
    micro_batch: IntVec             # sequences per micro-batch
    zero_stage: IntVec
    recompute: IntVec               # index in types.RECOMPUTE: 0 none, 1 selective, 2 full
    sequence_parallel: IntVec       # 0/1
    tp_comm_overlap: IntVec         # 0/1
    overlap_grad_reduce: IntVec     # 0/1
    activation_offload: IntVec      # 0/1
    fsdp_shard_group: IntVec        # ranks of a ZeRO-3 shard group; 0: all of dp x cp
    recompute_layers: IntVec        # layers of a stage under full recompute; 0: all
    a2a_overlap: IntVec             # 0/1: EP all-to-all hidden under another micro-batch
    moe_dispatcher: IntVec          # index in types.DISPATCHERS
    cp_comm: IntVec                 # index in types.CP_COMM
    recompute_modules: IntVec       # bitmask over types.RECOMPUTE_MODULES
    uneven_stages: IntVec           # 0/1: the stack lays out the end stages' layers freely
    pipeline_schedule: IntVec       # index in types.PIPELINE_SCHEDULES


PLAN_FIELDS: tuple[str, ...] = tuple(PlanArrays.__annotations__)


@dataclass(frozen=True, slots=True)
class Plans:
    """The fields of ``PlanArrays`` (see there) as float arrays."""

    tp: Vec
    pp: Vec
    dp: Vec
    cp: Vec
    ep: Vec
    etp: Vec
    vpp: Vec
    micro_batch: Vec
    zero_stage: Vec
    recompute: Vec
    sequence_parallel: Vec
    tp_comm_overlap: Vec
    overlap_grad_reduce: Vec
    activation_offload: Vec
    fsdp_shard_group: Vec
    recompute_layers: Vec
    a2a_overlap: Vec
    moe_dispatcher: Vec
    cp_comm: Vec
    recompute_modules: Vec
    uneven_stages: Vec
    pipeline_schedule: Vec

    @classmethod
    def of(cls, arrays: PlanArrays, tp_overlap_ok: Vec) -> Plans:
        """The plans as floats; TP comm overlap asked for where it cannot run is switched off."""
        as_float = {name: np.asarray(values, dtype=float) for name, values in arrays.items()}
        as_float["tp_comm_overlap"] = as_float["tp_comm_overlap"] * tp_overlap_ok
        return cls(**as_float)
