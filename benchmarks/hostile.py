"""Hostile-input timings (issue 15): work that used to take minutes or never end, each in a fresh
child process (`procure` on the command line), with its exit code and wall time.

    python benchmarks/hostile.py              # 10,000 measured entries, long paths, base-60, pipes
    python benchmarks/hostile.py --entries 2000

The cases: a bid with 10,000 `measured:` entries naming one log (read once now), a bid whose
`measured:` folder holds 500 logs of 300 lines (parsing time, proportional to the lines), a 1 MB `measured:` path, a 1 MB YAML 1.1 base-60
number, a named pipe as cluster.yaml. Each should end well within seconds with exit 0 or 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MEASURED = "measured: [logs/coreweave-burnin.log]"


def run(args: list[str], cwd: Path, timeout: float) -> tuple[str, float]:
    """(exit code or 'timeout', wall seconds) of ``procure args`` in a child."""
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "procure.cli", *args], cwd=cwd, capture_output=True,
                              timeout=timeout, env=dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", str(REPO))))
        code = str(done.returncode)
    except subprocess.TimeoutExpired:
        code = "timeout"
    return code, time.perf_counter() - start


def case(folder: Path, name: str, measured: str | None = None, prepare=None) -> Path:
    target = folder / name
    shutil.copytree(REPO / "examples", target)
    if measured is not None:
        text = (target / "cluster.yaml").read_text(encoding="utf-8")
        (target / "cluster.yaml").write_text(text.replace(MEASURED, f"measured: {measured}"), encoding="utf-8")
    if prepare:
        prepare(target)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    log = (REPO / "examples" / "logs" / "coreweave-burnin.log").read_text(encoding="utf-8")

    def many_logs(target: Path) -> None:
        (target / "many").mkdir()
        for i in range(500):
            (target / "many" / f"rank{i}.log").write_text(log, encoding="utf-8")

    with tempfile.TemporaryDirectory(prefix="procure-hostile-") as tmp:
        folder = Path(tmp)
        cases = [
            (f"{args.entries:,} measured entries, one log", "quote",
             case(folder, "entries", "[" + ", ".join(["logs/coreweave-burnin.log"] * args.entries) + "]")),
            ("a measured folder of 500 logs", "quote", case(folder, "folder", "[many]", many_logs)),
            ("a 1 MB measured path", "validate", case(folder, "path", "[" + "a/" * 500_000 + "x.log]")),
            ("a 1 MB base-60 number", "validate", case(folder, "base60", prepare=lambda t: (t / "cluster.yaml").write_text(
                (t / "cluster.yaml").read_text(encoding="utf-8").replace("gpus: 2048", "gpus: 1" + ":59" * 330_000),
                encoding="utf-8"))),
            ("a named pipe as cluster.yaml", "validate", case(folder, "pipe", prepare=lambda t: (
                (t / "cluster.yaml").unlink(), os.mkfifo(t / "cluster.yaml")))),
        ]
        for label, command, target in cases:
            extra = ["-o", "out", "--format", "json"] if command == "quote" else []
            code, seconds = run([command, "cluster.yaml", *extra], target, args.timeout)
            print(f"{label:34s} exit {code:>7s}  {seconds:7.2f} s")


if __name__ == "__main__":
    main()
