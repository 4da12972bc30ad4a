"""Ingest rate of per-rank step tables: 16,384 ranks x 610 steps (~10M rows) by default.

Writes the same table as Parquet and as CSV in a temporary folder, then ingests each in a fresh
child process and prints rows per second and the child's peak RSS (resource.getrusage), so the
numbers cover reading and summarising only, not generating the data.

It also prints Parquet ingest against its floor, measured side by side in the same run: a child
that imports pyarrow and reads the same columns (``ParquetFile.read``) versus a child that runs
``ingest`` on the file; both whole processes, warm file cache, alternating for ``--repeat`` rounds. The target
is a ratio of at most 1.5 (issue 16).

    python benchmarks/ingest.py                 # ~10M rows
    python benchmarks/ingest.py --rows 1000000  # smaller
    python benchmarks/ingest.py --scheduler local   # the dask path (procure[scale])
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RANKS = 16_384
STEPS = 610


def generate(folder: Path, rows: int) -> list[Path]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    ranks = min(RANKS, rows)
    steps = max(1, rows // ranks)
    rng = np.random.default_rng(7)
    step = np.repeat(np.arange(1, steps + 1, dtype=np.int64), ranks)
    rank = np.tile(np.arange(ranks, dtype=np.int64), steps)
    seconds = 5.0 * rng.lognormal(0.0, 0.01, step.size)
    seconds[rank == ranks // 3] *= 1.08  # one slow rank to find
    table = pa.table({"step": step, "rank": rank, "step_time_s": seconds})
    parquet, csv = folder / "steps.parquet", folder / "steps.csv"
    pq.write_table(table, parquet, row_group_size=1 << 20)
    pcsv.write_csv(table, csv)
    return [parquet, csv]


def measure(path: str, scheduler: str | None) -> None:
    """Child process: ingest one table and print a JSON line with time and peak RSS."""
    from procure.measure import ingest

    start = time.perf_counter()
    result = ingest([path], scheduler=scheduler)
    seconds = time.perf_counter() - start
    source = result.sources[0]
    rows = int(source.notes[0].split(" rows")[0].replace(",", ""))
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    slowest = source.stragglers["slowest_ranks"][0]["rank"] if source.stragglers else None
    print(json.dumps({"path": path, "rows": rows, "seconds": seconds, "peak_rss_mib": peak_mib,
                      "steps": source.steps, "slowest_rank": slowest}))


FLOOR = """
import sys, pyarrow.parquet as pq
pq.ParquetFile(sys.argv[1]).read(columns=["step", "rank", "step_time_s"], use_threads=True)
"""
INGEST = """
import sys
from procure.measure import ingest
ingest([sys.argv[1]])
"""


def whole_process_s(code: str, path: Path) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of a fresh interpreter running ``code`` on ``path``,
    start-up included. CPU time is the steadier figure on a shared machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def parquet_ratio(path: Path, repeat: int) -> None:
    """Floor and ingest run alternately, round after round, so a shared machine's slow spells
    slow both alike; the ratio of the medians and the ratio of the minima are printed."""
    floor, ours = [], []
    for _ in range(repeat):
        floor.append(whole_process_s(FLOOR, path))
        ours.append(whole_process_s(INGEST, path))
    cells = []
    for label, pick in (("median", statistics.median), ("best", min)):
        for kind, i in (("wall", 0), ("CPU", 1)):
            mine, base = pick(s[i] for s in ours), pick(s[i] for s in floor)
            cells.append(f"{kind} {label} {mine:.2f} s / {base:.2f} s = {mine / base:.2f}x")
    print(f"parquet ingest vs a pyarrow read of the same columns (whole processes, {repeat} alternating "
          f"rounds): " + ", ".join(cells) + " (target <= 1.5x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=RANKS * STEPS)
    parser.add_argument("--scheduler", default=None, help="dask scheduler: local or an address")
    parser.add_argument("--repeat", type=int, default=7, help="alternating rounds of the floor ratio")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.measure, args.scheduler)
        return
    with tempfile.TemporaryDirectory(prefix="procure-ingest-bench-") as tmp:
        start = time.perf_counter()
        paths = generate(Path(tmp), args.rows)
        print(f"generated {args.rows:,} rows as Parquet and CSV in "
              f"{time.perf_counter() - start:.1f} s")
        for path in paths:
            command = [sys.executable, __file__, "--measure", str(path)]
            if args.scheduler:
                command += ["--scheduler", args.scheduler]
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            stats = json.loads(out.strip().splitlines()[-1])
            rate = stats["rows"] / stats["seconds"]
            print(f"{path.suffix[1:]:8s} {stats['rows']:>12,} rows  {stats['seconds']:6.2f} s  "
                  f"{rate / 1e6:6.2f} M rows/s  peak RSS {stats['peak_rss_mib']:,.0f} MiB  "
                  f"steps {stats['steps']}  slowest rank {stats['slowest_rank']}")
        if not args.scheduler:
            parquet_ratio(paths[0], args.repeat)


if __name__ == "__main__":
    main()
