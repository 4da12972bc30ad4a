"""Running the chunks: in this process, on a pool of processes (every core), or on Dask.

Whatever runs them, a chunk's rows come from the same ``evaluate_chunk`` on the same inputs, and
the sweep is assembled from the partial files in chunk order, so results are identical whatever
the scheduler and the number of workers. ``on_done`` is called in this process as each chunk
finishes (in any order): it writes the partial file and moves the progress bar.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from procure.sweep.evaluate import Row, evaluate_chunk
from procure.sweep.expand import Chunk, SweepContext

OnDone = Callable[[Chunk, list[Row]], None]
TASK_RETRIES = 2          # a task lost with its worker is rerun elsewhere (Dask)
# The cluster of `--scheduler local`. Dask starts workers with MALLOC_TRIM_THRESHOLD_=65536, which
# makes glibc hand every freed block over 64 kB back to the kernel: the plan search allocates
# and frees arrays of ~10^4-10^5 plans hundreds of times per search, so each one page-faults in
# afresh (measured: 2.1x the CPU of the same chunk in process, two thirds of it system time).
# The statistical profiler samples every worker thread every 10 ms: another 25%. The scheduler
# runs in this process: its 20 ms tick, work stealing and 0.5 s system monitor cost 7% of a core
# while it waits (half that without them). None of it helps a few hundred CPU-bound tasks. A
# cluster of your own: start its workers with the malloc setting at least (README).
LOCAL_CLUSTER_CONFIG = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
                        "distributed.worker.profile.enabled": False,
                        "distributed.scheduler.work-stealing": False,
                        "distributed.admin.system-monitor.interval": "2s",
                        "distributed.admin.tick.interval": "100ms"}


def run_chunks(context: SweepContext, chunks: list[Chunk], on_done: OnDone, *,
               scheduler: str | None = None, workers: int | None = None) -> None:
    if not chunks:
        return
    if scheduler:
        _run_dask(context, chunks, on_done, scheduler, workers)
    elif (workers or default_workers()) <= 1 or len(chunks) == 1:
        for chunk in chunks:
            on_done(chunk, evaluate_chunk(context, chunk))
    else:
        _run_pool(context, chunks, on_done, min(workers or default_workers(), len(chunks)))


def default_workers() -> int:
    """Every core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not on Linux
        return os.cpu_count() or 1


# ---------------------------------------------------------------- a pool of processes

_CONTEXT: SweepContext | None = None


def _init_worker(context: SweepContext) -> None:
    global _CONTEXT
    _CONTEXT = context


def _pool_task(chunk: Chunk) -> tuple[Chunk, list[Row]]:
    assert _CONTEXT is not None, "worker started without its context"
    return chunk, evaluate_chunk(_CONTEXT, chunk)


def _run_pool(context: SweepContext, chunks: list[Chunk], on_done: OnDone, processes: int) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # spawn: a clean interpreter per worker (no inherited threads or locks), on every platform
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(processes, mp_context=ctx, initializer=_init_worker,
                             initargs=(context,)) as pool:
        futures = [pool.submit(_pool_task, chunk) for chunk in chunks]
        try:
            for future in as_completed(futures):
                on_done(*future.result())
        except BaseException:
            for future in futures:
                future.cancel()
            raise


# ---------------------------------------------------------------- Dask

@contextmanager
def dask_client(scheduler: str, workers: int | None = None) -> Iterator[Any]:
    """``local``: a LocalCluster of worker processes (2 unless ``workers``); else an address
    such as tcp://HOST:8786 of a running scheduler (its workers need procure installed)."""
    from procure.measure.scale import ScaleUnavailable, connect

    try:
        import distributed
    except ImportError as exc:
        raise ScaleUnavailable("a dask scheduler needs the optional dependencies: "
                               "pip install procure[scale]") from exc
    import dask

    dist: Any = distributed
    if scheduler == "local":
        with dask.config.set(LOCAL_CLUSTER_CONFIG), \
                dist.LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, dist.Client(cluster) as client:
            yield client
    else:
        with connect(scheduler) as client:
            yield client


def _run_dask(context: SweepContext, chunks: list[Chunk], on_done: OnDone, scheduler: str,
              workers: int | None) -> None:
    import distributed

    as_completed: Any = distributed.as_completed
    with dask_client(scheduler, workers) as client:
        shared = client.scatter(context, broadcast=True, hash=False)
        futures = [client.submit(evaluate_chunk, shared, chunk, pure=False, retries=TASK_RETRIES)
                   for chunk in chunks]
        by_key = {future.key: chunk for future, chunk in zip(futures, chunks)}
        try:
            for future in as_completed(futures):
                on_done(by_key[future.key], future.result())
        except BaseException:
            client.cancel(futures)
            raise
