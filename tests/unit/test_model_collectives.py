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
    flat = float(col.flat_ring_all_reduce_s(size, n, nic, LAT))
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
