"""Context parallelism: the communication of one layer for one micro-batch, for arrays of plans.

Every CP variant splits the sequence into 2 x cp chunks and gives each rank a pair from both
ends (causal load balancing: every rank does the same attention work; compute.py times the
attention at the efficiency of a ring step). The ranks of a CP group sit ``tp`` apart.

- ``p2p`` (Megatron/Transformer Engine ring, the default): cp - 1 steps per pass; in each step a
  rank computes attention against the K/V chunk it holds while it sends that chunk on and
  receives the next. A step's exchange hides under the step's attention (at the overlap
  efficiency, with the contention cost of hidden comm); at long sequences the attention is
  quadratic and the exchange linear, so the ring hides, at short ones it does not. The backward
  ring moves K/V and their gradients (twice the bytes) under 2.5x the forward's attention work.
- ``a2a`` (DeepSpeed-Ulysses, TE's a2a): an all-to-all over heads of Q, K, V before the
  attention and of its output after it, in every forward pass and again in the backward: on the
  critical path (not overlapped).
- ``allgather`` (Llama 3): K and V all-gathered before the attention (reduce-scattered gradients
  in the backward), on the critical path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from procure.model import collectives as col
from procure.model.problem import ACT_BYTES, CoreKnobs, Problem, kv_width_at

Vec = npt.NDArray[np.float64]

def kv_chunk_bytes(pb: Problem, t: Any, c: Any, b: Any) -> Vec:
    """K and V of this rank's sequence chunk (its TP share of the heads, at least one head)."""
    per_token = kv_width_at(pb, t) / t
    return np.asarray(b * (pb.seq / c) * per_token * ACT_BYTES, dtype=float)


def _ring(pb: Problem, kn: CoreKnobs, t: Any, c: Any, b: Any, core_f: Any, fwd_passes: Any,
          bw_up: Any, bw_nic: Any) -> tuple[Vec, Vec]:
    step = col.send_recv_s(kv_chunk_bytes(pb, t, c, b), t * c > pb.gpn, bw_up, bw_nic, pb.lat_net)
    per_step = core_f / np.maximum(c, 1.0)
    eff = kn.overlap_efficiency

    def exposed(comm: Any, work: Any) -> Vec:
        return col.hide(comm, work, eff)

    total = (c - 1.0) * (fwd_passes * step + 2.0 * step)
    shown = (c - 1.0) * (fwd_passes * exposed(step, per_step) + exposed(2.0 * step, 2.5 * per_step))
    return np.asarray(total, dtype=float), np.asarray(shown, dtype=float)


def _a2a(pb: Problem, t: Any, c: Any, b: Any, fwd_passes: Any, bw_up: Any, bw_nic: Any) -> Vec:
    tok = b * pb.seq / c
    g, k = col.group_layout(c, pb.gpn, t)
    qkv = col.all_to_all_s(tok * (pb.qk_width + kv_width_at(pb, t)) / t * ACT_BYTES, c, g, k, bw_up, bw_nic,
                           pb.lat_net)
    out = col.all_to_all_s(tok * pb.v_width / t * ACT_BYTES, c, g, k, bw_up, bw_nic, pb.lat_net)
    return np.asarray((fwd_passes + 1.0) * (qkv + out), dtype=float)


def _allgather(pb: Problem, t: Any, c: Any, b: Any, fwd_passes: Any, bw_up: Any, bw_nic: Any) -> Vec:
    g, k = col.group_layout(c, pb.gpn, t)
    full = c * kv_chunk_bytes(pb, t, c, b)
    return np.asarray((fwd_passes + 1.0) * col.all_gather_s(full, c, g, k, bw_up, bw_nic, pb.lat_net),
                      dtype=float)


def cp_layer_comm(pb: Problem, kn: CoreKnobs, t: Any, c: Any, b: Any, cc: Any, core_f: Any,
                  fwd_passes: Any, bw_up: Any, bw_nic: Any) -> tuple[Vec, Vec, Vec]:
    """(all, exposed, serial share) CP seconds per layer per micro-batch. ``cc``: 0 p2p ring,
    1 a2a, 2 allgather; ``core_f``: one forward of the layer's attention core. The serial share
    (1 for a2a and all-gather) says the exposed time is a barrier, not comm that fills idle time."""
    ring_all, ring_exposed = _ring(pb, kn, t, c, b, core_f, fwd_passes, bw_up, bw_nic)
    a2a = _a2a(pb, t, c, b, fwd_passes, bw_up, bw_nic)
    gather = _allgather(pb, t, c, b, fwd_passes, bw_up, bw_nic)
    total = np.select([cc == 1, cc == 2], [a2a, gather], ring_all)
    exposed = np.select([cc == 1, cc == 2], [a2a, gather], ring_exposed)
    on = np.asarray(c, dtype=float) > 1
    return (np.asarray(np.where(on, total, 0.0), dtype=float),
            np.asarray(np.where(on, exposed, 0.0), dtype=float),
            np.asarray(np.where(cc > 0, 1.0, 0.0), dtype=float))
