"""Plan-search speed: plans evaluated per second, and the whole search against its numpy floor.

    python benchmarks/search.py [--repeat 5]

The floor is ``core.evaluate`` alone on the search's final candidate arrays (the vectorised cost
model every candidate must go through), timed in the same run; the ratio is the whole
``estimate()`` (problem, grid, evaluation, ranking, assembly) over it. Issue 10 asks for <= 2 at
every GPU count up to 100k. Prints one line per case; never asserts (speed is measured here, not in
tests)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from procure.catalog.calibration import load_knobs  # noqa: E402
from procure.catalog.load import default_catalog  # noqa: E402
from procure.catalog.software import resolve_software  # noqa: E402
from procure.model import PlanSpec, Workload, estimate  # noqa: E402
from procure.model.core import evaluate  # noqa: E402
from procure.model.grid import build_grid  # noqa: E402
from procure.model.problem import build_problem, core_knobs, gemm_tops  # noqa: E402

CASES = [  # model, accelerator, network, GPUs, sequence, global batch (sequences)
    ("llama3-8b", "h100-sxm5-80gb", "ib-ndr400", 8, 8192, 128),
    ("llama3-70b", "h100-sxm5-80gb", "ib-ndr400", 64, 8192, 512),
    ("gpt3-175b", "a100-sxm4-80gb", "ib-hdr200", 1024, 2048, 1536),
    ("llama3-70b", "h100-sxm5-80gb", "ib-ndr400", 4096, 8192, 2048),
    ("mixtral-8x7b", "h100-sxm5-80gb", "ib-ndr400", 512, 4096, 1024),
    ("llama3-405b", "h100-sxm5-80gb", "ib-ndr400", 16384, 8192, 2048),
    ("llama3-405b", "b200-sxm-180gb", "ib-ndr400", 65536, 8192, 16384),
    ("llama3-405b", "h100-sxm5-80gb", "ib-ndr400", 98304, 8192, 12288),
    ("llama3-70b", "h100-sxm5-80gb", "ib-ndr400", 100000, 8192, 20000),
]


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    cat, knobs = default_catalog(), load_knobs()
    for model, acc, net, gpus, seq, batch in CASES:
        arch, accel, network = cat.models[model], cat.accelerators[acc], cat.networks[net]
        wl = Workload(seq_len=seq, global_batch=batch)
        software = resolve_software(None, when="2026-11-01", accel=accel)
        est = estimate(arch, accel, network, gpus, wl, knobs=knobs, software=software)
        whole = _best(lambda a=arch, c=accel, nw=network, g=gpus, w=wl, sw=software:
                      estimate(a, c, nw, g, w, knobs=knobs, software=sw), args.repeat)
        ak = knobs.for_accelerator(acc)
        kn = core_knobs(ak, gemm_tops(accel, wl.precision, ak))
        pb = build_problem(arch, accel, network, gpus, wl, None, software)
        grid, _ = build_grid(pb, gpus, PlanSpec(), accel.scale_up_domain, software)
        n = len(grid["tp"])
        floor = _best(lambda pb=pb, kn=kn, grid=grid: evaluate(pb, kn, grid), args.repeat) if n else float("nan")
        plan = est.plan
        print(f"{model:12s} {gpus:6d} x {acc:15s} plans {n:7d}  {whole * 1e3:7.1f} ms  "
              f"{n / whole:10,.0f} plans/s  floor {floor * 1e3:6.1f} ms  ratio {whole / floor:4.2f}  "
              + (f"best: tp{plan.get('tp')} pp{plan.get('pp')} dp{plan.get('dp')} cp{plan.get('cp')} "
                 f"mb{plan.get('micro_batch')} step {est.step_time_s:.2f} s MFU {est.mfu:.3f}"
                 if est.feasible else f"infeasible: {est.reason}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
