"""Peak memory of ingesting the largest input of each log format at its documented limits (issue 30).

Each shape is generated in a temporary folder and ingested in a child process that reports its own
peak RSS (``resource.getrusage``), so one shape's memory does not hide another's. Shapes:

- ``megatron-flood``: a valid Megatron header, then 200 MiB of 8-byte lines (refused: too many lines);
- ``megatron-at-limit``: the header, then ``max_lines`` lines filling the 200 MiB text limit (read);
- ``kineto-at-limit``: a Chrome trace of short events filling the 200 MiB text limit (read);
- ``csv-flood``: a 400 MB per-rank CSV of tiny rows (refused while streaming: too many rows);
- ``csv-at-limit``: a per-rank CSV of ``max_rows`` rows (read);
- ``parquet-flood``: a Parquet file of 80 M rows (refused from its metadata);
- ``parquet-at-limit``: a Parquet file of ``max_rows`` rows (read).

Usage: ``python benchmarks/ingest_limits.py [--only NAME ...] [--scale 0.1]`` (``--scale`` shrinks
every shape and limit together for a quick look). Prints one row per shape: format, bytes, rows or
lines, seconds, peak RSS in MB, and the outcome (read, or the first words of the refusal).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "logs" / "megatron_lm_interval10.log"

CHILD = r"""
import json, resource, sys, time
from procure.measure import LogError, ingest
from procure.measure.readers import Limits, DEFAULT_LIMITS
scale = float(sys.argv[2])
limits = Limits(max_lines=int(DEFAULT_LIMITS.max_lines * scale), max_rows=int(DEFAULT_LIMITS.max_rows * scale),
                text_bytes=int(DEFAULT_LIMITS.text_bytes * scale))
start = time.perf_counter()
try:
    result = ingest([sys.argv[1]], limits=limits)
    outcome = f"read: {result.sources[0].steps} steps"
except LogError as exc:
    outcome = "refused: " + str(exc).split(": ", 1)[1][:60]
print(json.dumps({"seconds": time.perf_counter() - start, "outcome": outcome,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _megatron(path: Path, lines: int, width: int) -> int:
    line = (b"x" * (width - 1)) + b"\n"
    with open(path, "wb") as out:
        out.write(FIXTURE.read_bytes())
        block = line * 100_000
        for _ in range(lines // 100_000):
            out.write(block)
        out.write(line * (lines % 100_000))
    return lines


def _kineto(path: Path, size: int) -> int:
    """A Chrome trace of short events (one profiler step per 1,000 events) filling ``size`` bytes."""
    events, written, i = [], 0, 0
    with open(path, "w") as out:
        out.write('{"traceEvents":[')
        while written < size - 200:
            if i % 1000 == 0:
                event = f'{{"ph":"X","name":"ProfilerStep#{i // 1000}","pid":1,"tid":1,"ts":{i * 10},"dur":10000}},'
            else:
                event = f'{{"ph":"X","cat":"kernel","name":"k","pid":1,"tid":7,"ts":{i * 10},"dur":5}},'
            events.append(event)
            written += len(event)
            i += 1
            if len(events) == 100_000:
                out.write("".join(events))
                events = []
        out.write("".join(events).rstrip(",") + "]}")
    return i


def _rank_table(path: Path, rows: int, kind: str) -> int:
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    chunk = 5_000_000
    writer = None
    for first in range(0, rows, chunk):
        n = min(chunk, rows - first)
        index = np.arange(first, first + n)
        table = pa.table({"step": index // 8, "rank": index % 8, "step_time_s": np.full(n, 1.5)})
        if kind == "parquet":
            writer = writer or pq.ParquetWriter(path, table.schema, compression="zstd")
            writer.write_table(table, row_group_size=1_000_000)
        else:
            with open(path, "ab") as out:
                pcsv.write_csv(table, out, pcsv.WriteOptions(include_header=first == 0))
    if writer is not None:
        writer.close()
    return rows


def _csv_flood(path: Path, size: int) -> int:
    row = b"1,0,1.5\n"
    with open(path, "wb") as out:
        out.write(b"step,rank,step_time_s\n")
        rows = size // len(row)
        block = row * 100_000
        for _ in range(rows // 100_000):
            out.write(block)
        out.write(row * (rows % 100_000))
    return rows


def shapes(scale: float) -> dict[str, tuple[str, str, object]]:
    from procure.measure.readers import DEFAULT_LIMITS as L

    text = int(L.text_bytes * scale)
    lines = int(L.max_lines * scale)
    rows = int(L.max_rows * scale)
    return {
        "megatron-flood": ("megatron", "flood.log",
                           lambda p: _megatron(p, (text - FIXTURE.stat().st_size) // 8, 8)),
        "megatron-at-limit": ("megatron", "limit.log",
                              lambda p: _megatron(p, lines - 100, max(8, (text - 20_000) // lines))),
        "kineto-at-limit": ("kineto", "trace.json", lambda p: _kineto(p, text)),
        "csv-flood": ("rank-table csv", "flood.csv", lambda p: _csv_flood(p, int(400e6 * scale))),
        "csv-at-limit": ("rank-table csv", "limit.csv", lambda p: _rank_table(p, rows, "csv")),
        "parquet-flood": ("rank-table parquet", "flood.parquet",
                          lambda p: _rank_table(p, int(80e6 * scale), "parquet")),
        "parquet-at-limit": ("rank-table parquet", "limit.parquet", lambda p: _rank_table(p, rows, "parquet")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="shape names to run (default: all)")
    parser.add_argument("--scale", type=float, default=1.0, help="shrink shapes and limits together")
    args = parser.parse_args()
    print(f"{'shape':18} {'format':19} {'bytes':>13} {'rows/lines':>12} {'seconds':>8} {'peak MB':>8}  outcome")
    for name, (fmt, filename, make) in shapes(args.scale).items():
        if args.only and name not in args.only:
            continue
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / filename
            count = make(path)
            size = path.stat().st_size
            started = time.perf_counter()
            child = subprocess.run([sys.executable, "-c", CHILD, str(path), str(args.scale)],
                                   capture_output=True, text=True, cwd=REPO)
            if child.returncode:
                report = {"seconds": time.perf_counter() - started, "peak_rss_mb": float("nan"),
                          "outcome": f"exit {child.returncode}: {child.stderr.strip().splitlines()[-1:]}"}
            else:
                report = json.loads(child.stdout.strip().splitlines()[-1])
            print(f"{name:18} {fmt:19} {size:>13,} {count:>12,} {report['seconds']:>8.1f} "
                  f"{report['peak_rss_mb']:>8.0f}  {report['outcome']}", flush=True)


if __name__ == "__main__":
    main()
