"""The sweep on Dask (procure[scale]): byte-identical to in-process, and it completes when a worker
is killed mid-sweep (the lost chunks run again elsewhere).

Worker processes (not threads): killing one must kill a real process."""

from __future__ import annotations

import os
import signal
import time

import pytest
from sweep_support import MINI_POINTS, MINI_SWEEP, write_sweep

from procure.report.sweep import render_sweep_bytes
from procure.sweep import load_sweep, plan_sweep, run_sweep

FORMATS = ["json", "parquet"]
pytestmark = pytest.mark.slow
distributed = pytest.importorskip("distributed", reason="dask is not installed (pip install procure[scale])")


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    return plan_sweep(load_sweep(write_sweep(tmp_path_factory.mktemp("sweep"), MINI_SWEEP)))


@pytest.fixture(scope="module")
def in_process(plan, tmp_path_factory):
    run = run_sweep(plan, tmp_path_factory.mktemp("parts") / "p", workers=1)
    return render_sweep_bytes(run.document, FORMATS)


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as local:
        yield local


def test_a_local_cluster_of_two_workers_gives_the_same_bytes(plan, in_process, tmp_path):
    run = run_sweep(plan, tmp_path / "parts", scheduler="local", workers=2)
    assert run.computed_points == MINI_POINTS
    assert render_sweep_bytes(run.document, FORMATS) == in_process


def _gone(pid: int, timeout_s: float = 10.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_worker_killed_mid_sweep_does_not_stop_it(plan, in_process, cluster, tmp_path):
    """On a running scheduler, by address (as `--scheduler tcp://...`); same bytes as in process."""
    with distributed.Client(cluster) as client:
        pids = sorted(client.run(os.getpid).values())
    assert len(pids) == 2 and os.getpid() not in pids
    finished: list[int] = []

    def kill_after_first(chunk):
        finished.append(chunk.id)
        if len(finished) == 1:
            os.kill(pids[0], signal.SIGKILL)

    run = run_sweep(plan, tmp_path / "parts", scheduler=cluster.scheduler_address, on_chunk=kill_after_first)
    assert _gone(pids[0])
    assert len(finished) == len(plan.chunks) and len(set(finished)) == len(finished)
    assert render_sweep_bytes(run.document, FORMATS) == in_process
