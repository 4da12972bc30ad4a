"""Plan-search speed: plans evaluated per second (Calculon does about 200/s).

    python benchmarks/search.py [--repeat 5]

Prints one line per case; never asserts (speed is measured here, not in tests)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from procure.catalog.calibration import load_knobs  # noqa: E402
from procure.catalog.load import default_catalog  # noqa: E402
from procure.model import Workload, estimate  # noqa: E402

CASES = [  # model, accelerator, network, GPUs, sequence, global batch (sequences)
    ("llama3-405b", "h100-sxm5-80gb", "ib-ndr400", 16384, 8192, 2048),
    ("llama3-70b", "h100-sxm5-80gb", "ib-ndr400", 4096, 8192, 2048),
    ("gpt3-175b", "a100-sxm4-80gb", "ib-hdr200", 1024, 2048, 1536),
    ("mixtral-8x7b", "h100-sxm5-80gb", "ib-ndr400", 512, 4096, 1024),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    cat, knobs = default_catalog(), load_knobs()
    for model, acc, net, gpus, seq, batch in CASES:
        wl = Workload(seq_len=seq, global_batch=batch)
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            est = estimate(cat.models[model], cat.accelerators[acc], cat.networks[net], gpus, wl,
                           knobs=knobs)
            times.append(time.perf_counter() - t0)
        best = min(times)
        n = est.search["plans_evaluated"]
        plan = est.plan
        print(f"{model:13s} {gpus:6d} x {acc:15s} plans {n:7d}  {best * 1e3:7.1f} ms  "
              f"{n / best:10,.0f} plans/s  best: tp{plan.get('tp')} pp{plan.get('pp')} "
              f"dp{plan.get('dp')} cp{plan.get('cp')} mb{plan.get('micro_batch')} "
              f"step {est.step_time_s:.2f} s MFU {est.mfu:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
