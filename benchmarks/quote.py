"""End-to-end latency: `procure --help`, validate, the quote document, and every report format.

Prints timings (median of N runs); never asserts. Run: python benchmarks/quote.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cluster.yaml"


def timed(fn, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cluster", type=Path, default=EXAMPLE)
    args = parser.parse_args()
    procure = [sys.executable, "-m", "procure.cli"]

    help_s = timed(lambda: subprocess.run(procure + ["--help"], check=True, capture_output=True), args.runs)
    validate_s = timed(lambda: subprocess.run(procure + ["validate", str(args.cluster)], check=True,
                                              capture_output=True), args.runs)
    from procure import api

    api.quote_document(args.cluster)          # warm imports and caches once
    document_s = timed(lambda: api.quote_document(args.cluster), args.runs)
    results = {}
    for fmt in ("json", "html", "xlsx", "pdf"):
        with tempfile.TemporaryDirectory() as out:
            results[fmt] = timed(lambda fmt=fmt, out=out: api.quote(args.cluster, Path(out), [fmt], force=True), max(1, args.runs // 2))
    with tempfile.TemporaryDirectory() as out:
        cold = time.perf_counter()
        subprocess.run(procure + ["quote", str(args.cluster), "-o", out, "-q"], check=True, capture_output=True)
        cold_s = time.perf_counter() - cold

    print(f"procure --help            {help_s * 1000:8.0f} ms")
    print(f"procure validate          {validate_s * 1000:8.0f} ms")
    print(f"quote document (warm)     {document_s * 1000:8.0f} ms  ({args.cluster.name})")
    for fmt, seconds in results.items():
        print(f"quote + {fmt:<5} (warm)      {seconds * 1000:8.0f} ms")
    print(f"procure quote, all formats, cold process {cold_s:6.2f} s")


if __name__ == "__main__":
    main()
