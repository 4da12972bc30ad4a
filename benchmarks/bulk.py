"""Large quotes (issue 15): N bids across the shipped catalog's accelerators and price books, quoted
by `procure quote` in a child process once per format; prints seconds, bids/s and peak RSS.

    python benchmarks/bulk.py                 # 1,000 bids, json, xlsx and pdf
    python benchmarks/bulk.py 100 --formats json,pdf
    python benchmarks/bulk.py 1000 --write-cluster /tmp/bulk.yaml   # only write the cluster.yaml

The cluster is deterministic for a given N and --seed: every bid is a (price book, line) of the shipped
books whose accelerator is in the catalog and has a default network, with a GPU count of whole
scale-up domains, a vendor's committed step time and, for one bid in ten, a fixed plan. Peak RSS is
the `procure` process's maximum resident set size, read by a small wrapper process per format
(resource.getrusage(RUSAGE_CHILDREN) of its one child), so each format's reading is its own.
CPU seconds (user + system) are printed too: on a loaded machine they vary less than wall time.
Never asserts: the targets (60 s for JSON and XLSX, 120 s for PDF, 2 GB) are read off the output.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GPU_DOMAINS = (16, 32, 64, 128, 256, 512)      # GPU counts as whole scale-up domains (x8 GPUs typically)
MAX_GPUS = 8192                                 # large pods (NVL72, TPU) get fewer domains
FIXED_PLAN_EVERY = 10                           # one bid in ten names its plan instead of `auto`


def price_lines() -> list[tuple[str, str, str, str, int]]:
    """(book id, kind, term, accelerator, scale-up domain) of every shipped line that can be quoted."""
    from procure.catalog.load import default_catalog

    cat = default_catalog()
    lines = []
    for book in sorted(cat.price_books.values(), key=lambda b: b.id):
        for line in book.lines:
            accel = cat.accelerators.get(line.accelerator)
            if accel is None or accel.default_network is None:
                continue
            lines.append((book.id, book.kind, line.term, line.accelerator, accel.scale_up_domain))
    return lines


def bid_yaml(i: int, line: tuple[str, str, str, str, int], rng: random.Random) -> str:
    book, kind, term, accel, domain = line
    domain = max(domain, 8)
    gpus = domain * rng.choice([k for k in GPU_DOMAINS if domain * k <= MAX_GPUS] or [1])
    step_s = round(rng.uniform(1.5, 9.0), 2)
    text = (f"  - id: bid-{i:04d}\n"
            f"    vendor: Vendor {i % 97:02d} ({book})\n"
            f"    accelerator: {accel}\n"
            f"    gpus: {gpus}\n"
            f"    pricing: {{kind: {kind}, price_book: {book}, term: {term}}}\n"
            f"    committed: {{step_time_s: {step_s}, p99_step_time_s: {round(step_s * 1.1, 2)}}}\n")
    if kind == "purchase":
        text += f"    lead_time_days: {rng.choice((30, 60, 90))}\n"
    if i % FIXED_PLAN_EVERY == FIXED_PLAN_EVERY - 1 and gpus % 64 == 0:
        text += f"    plan: {{tp: 8, pp: 4, dp: {gpus // 32}, micro_batch: 1, recompute: selective, zero_stage: 1}}\n"
    return text


def cluster_yaml(n: int, seed: int) -> str:
    rng = random.Random(seed)
    lines = price_lines()
    head = ("schema: procure/v1\n"
            f"title: Bulk quote of {n} bids\n"
            "as_of: 2026-12-01\n"
            "currency: USD\n"
            "workload:\n"
            "  model: llama3-70b\n"
            "  seq_len: 8192\n"
            "  global_batch_tokens: 16777216\n"
            "  train_tokens: 15e12\n"
            "  precision: bf16\n"
            "  deadline_days: 120\n"
            "  cost_basis: commitment\n"
            "bids:\n")
    return head + "".join(bid_yaml(i, lines[rng.randrange(len(lines))], rng) for i in range(n))


# Runs its arguments as one child and prints that child's CPU seconds and peak RSS (KiB on Linux)
# last on stderr.
WRAPPER = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
           "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
           "print(u.ru_utime + u.ru_stime, u.ru_maxrss, file=sys.stderr); sys.exit(code)")


def quote(cluster: Path, out: Path, fmt: str, extra: list[str]) -> tuple[int, float, float, float, str]:
    """(exit code, wall seconds, CPU seconds, peak RSS in MiB, stderr tail) of one `procure quote` child."""
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", str(REPO)))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", WRAPPER, sys.executable, "-m", "procure.cli", "quote",
                           str(cluster), "-o", str(out), "--format", fmt, "--force", "-q", *extra],
                          capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    err, _, usage = done.stderr.rstrip().rpartition("\n")
    cpu_s, rss_kib = usage.split()
    return done.returncode, seconds, float(cpu_s), int(rss_kib) / 1024, err[-2000:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bids", type=int, nargs="?", default=1000)
    parser.add_argument("--formats", default="json,xlsx,pdf", help="each quoted separately, in this order")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--write-cluster", type=Path, help="write the cluster.yaml here and stop")
    parser.add_argument("--extra", default="", help="more `procure quote` options, space separated")
    args = parser.parse_args()
    text = cluster_yaml(args.bids, args.seed)
    if args.write_cluster:
        args.write_cluster.write_text(text, encoding="utf-8")
        return
    with tempfile.TemporaryDirectory(prefix="procure-bulk-") as tmp:
        cluster = Path(tmp) / "cluster.yaml"
        cluster.write_text(text, encoding="utf-8")
        print(f"{args.bids} bids, {len(price_lines())} price lines, cpus {os.cpu_count()}")
        for fmt in args.formats.split(","):
            code, seconds, cpu_s, rss_mib, err = quote(cluster, Path(tmp) / "out", fmt, args.extra.split())
            size = sum(p.stat().st_size for p in (Path(tmp) / "out").glob(f"*.{fmt}")) / 2**20
            print(f"{fmt:5s} exit {code}  {seconds:7.1f} s  {args.bids / seconds:7.1f} bids/s  CPU {cpu_s:7.1f} s  "
                  f"peak RSS {rss_mib:7.0f} MiB  output {size:6.1f} MiB")
            if code:
                print(err, file=sys.stderr)


if __name__ == "__main__":
    main()
