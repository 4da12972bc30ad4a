"""Sweep speed: points per second in process and on Dask workers (issue 17: 5,760 points, each
with its own plan search and economics, within 60 s on a 2-core machine).

    python benchmarks/sweep.py [--workers 1,2] [--dask-workers 2] [--no-dask]

The sweep: 3 workloads (Llama 3 70B at 8K and 4K, Llama 3 8B) x 8 accelerators x 40 GPU counts
(256 to 10,240) x 6 price terms = 5,760 points, 960 plan searches. Each run starts from nothing
(no partial results) and ends with the assembled document (frontier, best points, ask); writing
reports is not timed. Prints one line per scheduler and whether all gave the same bytes; never
asserts (speed is measured here, not in tests)."""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SWEEP = """\
schema: procure.sweep/v1
title: Benchmark sweep of 5760 points
as_of: 2026-12-01
currency: USD
workloads:
  - {id: 70b-8k, model: llama3-70b, seq_len: 8192, global_batch_tokens: 16777216, train_tokens: 15e12, deadline_days: 120}
  - {id: 70b-4k, model: llama3-70b, seq_len: 4096, global_batch_tokens: 16777216, train_tokens: 15e12, deadline_days: 120}
  - {id: 8b-8k, model: llama3-8b, seq_len: 8192, global_batch_tokens: 8388608, train_tokens: 15e12, deadline_days: 60}
accelerators: [h100-sxm5-80gb, h200-sxm-141gb, b200-sxm-180gb, gb200-nvl72-186gb, mi300x-oam-192gb,
               mi355x-oam-288gb, b300-sxm-288gb, a100-sxm4-80gb]
gpus: {from: 256, to: 10240, step: 256}
terms:
  - aws-2026q3/on-demand
  - oci-2026q3/on-demand
  - coreweave-2026q1/on-demand
  - neocloud-reserved-2026q3/reserved-1y
  - neocloud-reserved-2026q3/reserved-3y
  - purchase-2026/purchase
constraints: {budget: 40000000}
assumptions: {power_usd_per_kwh: 0.08, pue: 1.3}
"""


def cpu_s() -> float:
    """CPU seconds of this process and of its finished children (the pool's workers)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _worker_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(plan, folder: Path, client=None, **kwargs):
    """(wall s, CPU s of this process, its pool and the Dask workers, the run, its JSON+Parquet)."""
    from procure.report.sweep import render_sweep_bytes
    from procure.sweep import run_sweep

    workers_before = sum(client.run(_worker_cpu_s).values()) if client else 0.0
    start, cpu = time.perf_counter(), cpu_s()
    run = run_sweep(plan, folder, fresh=True, **kwargs)
    wall = time.perf_counter() - start
    cpu = cpu_s() - cpu + (sum(client.run(_worker_cpu_s).values()) - workers_before if client else 0.0)
    return wall, cpu, run, render_sweep_bytes(run.document, ["json", "parquet"])


def report(label: str, wall: float, cpu: float, run) -> None:
    print(f"{label:34s} {wall:6.1f} s  {run.points / wall:6.0f} points/s  (evaluate {run.timings_s['evaluate']:.1f} s, "
          f"assemble {run.timings_s['assemble']:.1f} s; CPU {cpu:.1f} s = {run.points / cpu:.0f} points per "
          f"CPU-second)", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="1,2", help="in-process worker counts to time (comma-separated)")
    ap.add_argument("--dask-workers", type=int, default=2, help="workers of the Dask LocalCluster")
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask run")
    args = ap.parse_args(argv)
    from procure.sweep import load_sweep, plan_sweep

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sweep.yaml"
        path.write_text(SWEEP, encoding="utf-8")
        start = time.perf_counter()
        plan = plan_sweep(load_sweep(path))
        searches = sum(len(c.gpus) for c in plan.chunks)
        print(f"sweep: {plan.total_points:,} points, {searches:,} plan searches, {len(plan.chunks)} chunks "
              f"(planned in {time.perf_counter() - start:.2f} s); {os.cpu_count()} CPUs, load average "
              f"{os.getloadavg()[0]:.1f}")
        results = []
        for n in (int(x) for x in args.workers.split(",") if x):
            wall, cpu, run, data = timed(plan, Path(tmp) / "parts", workers=n)
            report(f"in process, {n} worker{'s' if n > 1 else ''}", wall, cpu, run)
            results.append(data)
        if not args.no_dask:
            from procure.sweep.execute import dask_client

            start = time.perf_counter()
            # the LocalCluster `--scheduler local` starts, started here so its start-up is not timed
            with dask_client("local", args.dask_workers) as client:
                print(f"dask LocalCluster of {args.dask_workers} workers started in "
                      f"{time.perf_counter() - start:.1f} s", flush=True)
                wall, cpu, run, data = timed(plan, Path(tmp) / "parts", client=client,
                                             scheduler=client.scheduler.address)
                report(f"dask, {args.dask_workers} workers", wall, cpu, run)
                results.append(data)
        print("identical JSON and Parquet across runs:", all(r == results[0] for r in results))
        findings = run.document.findings
        for f in findings:
            print(f"{f.workload}: {len(f.frontier)} on the frontier; {f.ask.text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
