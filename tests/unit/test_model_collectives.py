"""Alpha-beta collectives on the two-tier topology."""

from __future__ import annotations

import numpy as np
import pytest

from procure.model import collectives as col

GB = 1e9
NVLINK, NIC, LAT = 240 * GB, 45 * GB, 5e-6


def test_ring_all_reduce_inside_a_node_is_the_textbook_formula():
    size, n = 1 * GB, 8
    got = col.all_reduce_s(size, n, 8, 1, NVLINK, NIC, LAT)
    want = 2 * (n - 1) / n * size / NVLINK + col.BASE_LATENCY_S + 2 * (n - 1) * col.INTRA_HOP_S
    assert float(got) == pytest.approx(want)


def test_reduce_scatter_plus_all_gather_equals_all_reduce_bandwidth():
    size = 4 * GB
    rs = col.reduce_scatter_s(size, 64, 8, 8, NVLINK, NIC, LAT)
    ag = col.all_gather_s(size, 64, 8, 8, NVLINK, NIC, LAT)
    ar = col.all_reduce_s(size, 64, 8, 8, NVLINK, NIC, LAT)
    assert float(rs + ag) == pytest.approx(float(ar), rel=1e-3)


def test_cross_node_group_uses_the_whole_node_nic_bandwidth():
    size, n, g, nic = 2 * GB, 128, 8, 25 * GB      # 8 x 200G HDR: the NICs are the bottleneck
    hier = float(col.all_reduce_s(size, n, g, n // g, NVLINK, nic, LAT))
    flat = 2 * (n - 1) * LAT + 2 * (n - 1) / n * size / nic     # the textbook flat ring at one NIC
    bw_only = 2 * (n - 1) / n * size / (g * nic)
    assert hier == pytest.approx(bw_only, rel=0.05)
    assert flat / hier > 6.0          # a flat ring at one NIC share: Calculon's error


def test_one_rank_per_node_runs_at_one_nic_share():
    size, n = 1 * GB, 32
    got = float(col.all_reduce_s(size, n, 1, n, NVLINK, NIC, LAT))
    assert got == pytest.approx(2 * (n - 1) / n * size / NIC + col.BASE_LATENCY_S
                                + 2 * (n - 1) * LAT)


def test_single_rank_collectives_cost_nothing():
    for fn in (col.all_reduce_s, col.reduce_scatter_s, col.all_to_all_s):
        assert float(fn(1 * GB, 1, 1, 1, NVLINK, NIC, LAT)) == 0.0


def test_all_to_all_sends_the_off_node_share_through_the_nic():
    size, n, g = 1 * GB, 64, 8
    got = float(col.all_to_all_s(size, n, g, n // g, NVLINK, NIC, LAT))
    assert got == pytest.approx((n - g) / n * size / NIC, rel=0.01)


def test_send_recv_picks_the_tier():
    size = 100e6
    intra = float(col.send_recv_s(size, False, NVLINK, NIC, LAT))
    inter = float(col.send_recv_s(size, True, NVLINK, NIC, LAT))
    assert intra == pytest.approx(size / NVLINK + col.BASE_LATENCY_S + col.INTRA_HOP_S)
    assert inter == pytest.approx(size / NIC + col.BASE_LATENCY_S + LAT)


@pytest.mark.parametrize("n,gpn,stride,g,k", [
    (8, 8, 1, 8, 1),       # TP 8 in a node
    (16, 8, 1, 8, 2),      # TP 16 across two nodes
    (64, 8, 8, 1, 64),     # DP behind TP 8: one rank per node
    (32, 8, 2, 4, 8),      # DP behind TP 2: four ranks per node
    (4, 72, 8, 4, 1),      # NVL72: DP of 4 behind TP 8 stays in the rack
])
def test_group_layout(n, gpn, stride, g, k):
    got_g, got_k = col.group_layout(np.array(n), gpn, stride)
    assert (float(got_g), float(got_k)) == (g, k)


def test_a_ring_gather_pays_one_hop_per_rank_not_per_node():
    # NCCL's ring model (src/graph/tuning.cc): n - 1 steps, k - 1 of them across nodes. 1,024 ranks
    # on 128 nodes of 8, an empty message: 8.4 us + (1024 - 128) x 2 us + 127 x 5 us = 2,435.4 us.
    got = col.all_gather_s(0.0, 1024, 8, 128, NVLINK, NIC, LAT)
    assert float(got) == pytest.approx(8.4e-6 + 896 * 2e-6 + 127 * 5e-6)
    assert float(got) == pytest.approx(2435.4e-6)
    # the ring all-reduce is its reduce-scatter and all-gather: twice the hops
    ar = col.all_reduce_s(0.0, 1024, 8, 128, NVLINK, NIC, LAT)
    assert float(ar) == pytest.approx(8.4e-6 + 2 * 896 * 2e-6 + 2 * 127 * 5e-6)


@pytest.mark.parametrize("n, gpn, stride, want", [
    (3, 8, 1, (1.0, 2.0)),    # tp3 on 8-GPU nodes: ranks 6, 7 | 8 -> one rank on one side
    (6, 8, 1, (2.0, 2.0)),    # tp6: ranks 6, 7 | 8-11 -> gcd(6, 8) = 2
    (4, 8, 1, (4.0, 1.0)),    # tiles the node
    (8, 8, 1, (8.0, 1.0)),
    (64, 72, 1, (64.0, 1.0)),  # NVL72: jobs place 64 of 72 GPUs per rack
    (16, 8, 1, (8.0, 2.0)),   # spans whole nodes
])
def test_a_group_that_does_not_tile_its_node_straddles_two(n, gpn, stride, want):
    g, k = col.group_layout(n, gpn, stride)
    assert (float(g), float(k)) == want


def test_tp3_pays_the_nic_where_tp4_stays_on_nvlink():
    size = 64e6
    g3, k3 = col.group_layout(3, 8, 1)
    g4, k4 = col.group_layout(4, 8, 1)
    tp3 = col.all_reduce_s(size, 3, g3, k3, NVLINK, NIC, LAT)
    tp4 = col.all_reduce_s(size, 4, g4, k4, NVLINK, NIC, LAT)
    assert float(tp3) > 3 * float(tp4)
