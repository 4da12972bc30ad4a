"""Alpha-beta collective times on a two-tier (scale-up domain / scale-out NIC) topology.

Every function takes scalars or numpy arrays (broadcast) and returns seconds.

Topology: a group of ``n`` ranks has ``g`` ranks inside each scale-up domain ("node") and
spans ``k = n / g`` nodes. Inside a node the per-direction link bandwidth is ``bw_up`` (B/s,
already times the achieved factor). Across nodes every GPU owns a NIC share ``bw_nic`` (B/s per
GPU, achieved). A group that spans nodes uses ALL ``g`` NICs its node-mates own: NCCL runs one
ring per channel and spreads the channels' node crossings over the node's NICs (rail-optimised
fabrics), so the bottleneck is the node's whole NIC bandwidth ``g * bw_nic``, not one GPU's
share: all-reduce ``2(n-1)/n * S / (g * bw_nic)``, pipelined with the NVLink hops
``2(n-1)/n * S / bw_up`` (the slower sets the pace). A flat ring at one NIC share
(``2(n-1)/n * S / bw_nic``) over-predicts by up to ``g`` times: Calculon's main error. (A
two-level reduce -> all-reduce across nodes -> broadcast would move ``2(k-1)/k`` instead of
``2(n-1)/n``; NCCL's large-message ring does not, which matters for groups spanning 2-4 nodes.)

Latency: NCCL's ring model (src/graph/tuning.cc, ncclTopoTuneModel): a base latency per
collective plus one hop latency per ring step. A ring all-gather or reduce-scatter over ``n``
ranks on ``k`` nodes takes n - 1 steps, k - 1 of them across nodes (``lat_net``) and the other
n - k inside them: the ring latency grows with the RANKS, not the nodes, which is what makes
per-layer ZeRO-3/FSDP gathers of small layers slow on 1,000+ ranks. A ring all-reduce is a
reduce-scatter then an all-gather: twice the steps.

A group whose ranks do not tile the scale-up domain (tp 3 or 6 on 8-GPU nodes) has members on
two nodes in some of its copies, and the slowest copy paces the step: that copy crosses the NIC
with only gcd(group span, node) of its ranks on one side.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Vec = npt.NDArray[np.float64]

# Seconds of compute lost per second of hidden communication: overlapped collectives and all-to-all
# hold SMs and memory bandwidth (DeepSeek reserved 20 of 132 H800 SMs for communication, V3 report
# sec. 3.2.2). One prior for TP, DP, CP and EP overlap alike.
OVERLAP_CONTENTION = 0.15
BASE_LATENCY_S = 8.4e-6      # NCCL baseLat (ring/tree Simple), facts networks.yaml latency_constants
INTRA_HOP_S = 2.0e-6         # NCCL NVLink hwLat, ring LL128 1.9 us


def group_layout(n: Any, gpn: Any, stride: Any) -> tuple[Vec, Vec]:
    """(ranks per node g, nodes k) of a group of ``n`` ranks whose members sit ``stride`` global
    ranks apart (Megatron order tp, cp, dp/ep, pp), on nodes of ``gpn`` GPUs."""
    n = np.asarray(n, dtype=float)
    stride = np.maximum(np.asarray(stride, dtype=float), 1.0)
    gpn = np.asarray(gpn, dtype=float)
    per_node = np.maximum(1.0, np.floor(gpn / stride))
    g = np.minimum(n, per_node)
    k = np.ceil(n / g)
    # A group that fits in a node but does not tile it (span n x stride not dividing the node):
    # some copy straddles two nodes with gcd(span, node) / stride of its ranks on one side. Jobs
    # place power-of-two blocks in a larger domain (MLPerf's GB200 runs use 64 of each NVL72
    # rack's 72 GPUs: 2,496 = 39 x 64), so the domain tiled is the largest power of two in it.
    span = (n * stride).astype(np.int64)
    node = (2.0 ** np.floor(np.log2(np.maximum(gpn, 1.0)))).astype(np.int64)
    straddles = (n > 1) & (span < node) & (node % np.maximum(span, 1) != 0)
    split = np.maximum(1.0, np.floor(np.gcd(span, node) / stride))
    g = np.where(straddles, np.minimum(split, g), g)
    k = np.where(straddles, np.maximum(k, 2.0), k)
    return np.asarray(g, dtype=float), np.asarray(k, dtype=float)


def _latency(steps_intra: Any, steps_inter: Any, lat_net: Any, n: Any) -> Vec:
    lat = BASE_LATENCY_S + steps_intra * INTRA_HOP_S + steps_inter * lat_net
    return np.asarray(np.where(n > 1, lat, 0.0), dtype=float)


def all_reduce_s(size_b: Any, n: Any, g: Any, k: Any, bw_up: Any, bw_nic: Any, lat_net: Any) -> Vec:
    """Ring/hierarchical all-reduce of ``size_b`` bytes per rank."""
    vol = 2.0 * (n - 1.0) / np.maximum(n, 1.0) * size_b
    intra = vol / bw_up
    inter = np.where(k > 1, vol / (g * bw_nic), 0.0)
    bw_term = np.where(n > 1, np.maximum(intra, inter), 0.0)
    return np.asarray(bw_term + _latency(2.0 * (n - k), 2.0 * (k - 1.0), lat_net, n), dtype=float)


def reduce_scatter_s(size_b: Any, n: Any, g: Any, k: Any, bw_up: Any, bw_nic: Any, lat_net: Any) -> Vec:
    """Reduce-scatter (or all-gather) where ``size_b`` is the full (unsharded) buffer per rank."""
    vol = (n - 1.0) / np.maximum(n, 1.0) * size_b
    intra = vol / bw_up
    inter = np.where(k > 1, vol / (g * bw_nic), 0.0)
    bw_term = np.where(n > 1, np.maximum(intra, inter), 0.0)
    return np.asarray(bw_term + _latency(n - k, k - 1.0, lat_net, n), dtype=float)


all_gather_s = reduce_scatter_s


def all_to_all_s(size_b: Any, n: Any, g: Any, k: Any, bw_up: Any, bw_nic: Any, lat_net: Any) -> Vec:
    """All-to-all where one rank sends ``size_b`` bytes in total (1/n to each peer, itself
    included). The off-node share (n-g)/n leaves through the rank's own NIC share; the
    on-node share (g-1)/n goes over the scale-up links; both run at once."""
    intra = (g - 1.0) / n * size_b / bw_up
    inter = (n - g) / n * size_b / bw_nic
    bw_term = np.where(n > 1, np.maximum(intra, inter), 0.0)
    return np.asarray(bw_term + _latency(g - 1.0, k - 1.0, lat_net, n), dtype=float)


def send_recv_s(size_b: Any, cross_node: Any, bw_up: Any, bw_nic: Any, lat_net: Any) -> Vec:
    """One point-to-point message (pipeline stage boundary, CP ring step)."""
    bw = np.where(cross_node, bw_nic, bw_up)
    lat = np.where(cross_node, lat_net, INTRA_HOP_S)
    return np.asarray(BASE_LATENCY_S + lat + size_b / bw, dtype=float)


def hide(total: Any, window: Any, eff: Any) -> npt.NDArray[np.float64]:
    """Exposed seconds of ``total`` comm run under a ``window`` of compute at overlap efficiency
    ``eff``; what is hidden still costs OVERLAP_CONTENTION of itself."""
    hidden = eff * np.minimum(total, window)
    return np.asarray(total - (1.0 - OVERLAP_CONTENTION) * hidden, dtype=float)
