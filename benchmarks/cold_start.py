"""Cold start of the short commands, each as a ratio to the import floor of what it needs.

Every command runs in a fresh process; so does its floor: a Python process that only imports the
libraries that command cannot do without (and, for pydantic, defines and validates one model,
because `import pydantic` alone is lazy and would understate the floor). Commands and floors are
run interleaved, round after round, so a busy machine slows both alike; the ratio of the medians
and the ratio of the minima are printed. The catalog cache is warmed once first (a user's second
run); `--cold-cache` points it at an empty folder every time instead.

    python benchmarks/cold_start.py              # 15 rounds
    python benchmarks/cold_start.py --rounds 30
    python benchmarks/cold_start.py --cold-cache # no catalog cache: the first run after a change
    python benchmarks/cold_start.py --root ../other-checkout   # the same measurement of another tree

Target (issue 16): every ratio within 1.5x. Prints; never asserts.

`--budget` adds, per command that computes something, its warm time: the same command run again
in the process that has already run it once (every module imported, every schema built), the
best of three. That is the command's own work, which no import floor contains: (floor + warm) /
floor is the ratio the command would reach if all of procure's own imports and class
definitions cost nothing, a lower bound on what any import-side change can achieve.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PYDANTIC_MODEL = ("from pydantic import BaseModel\n"
                  "class Floor(BaseModel):\n    x: int\n    y: str = ''\n"
                  "Floor.model_validate({'x': 1})\n")
CLI = "import click\n"
FLOORS = {
    # what each command needs: click to parse its options, YAML and pydantic to read and validate
    # cluster.yaml, numpy for the step-time model, rich to print a table for people
    "cli": CLI,
    "validate": CLI + "import yaml\n" + PYDANTIC_MODEL,
    "model": CLI + "import yaml, numpy\n" + PYDANTIC_MODEL,
    "table": CLI + "import rich.console, rich.table\n",
    "json": CLI + "import json\n",
}


def commands(out_dir: str, root: Path) -> list[tuple[str, list[str], str]]:
    cluster = str(root / "examples" / "cluster.yaml")
    return [
        ("procure --help", ["--help"], "cli"),
        ("procure validate", ["validate", cluster], "validate"),
        ("procure estimate --format json", ["estimate", cluster, "--format", "json"], "model"),
        ("procure catalog list", ["catalog", "list"], "table"),
        ("procure catalog list --format json", ["catalog", "list", "--format", "json"], "json"),
        ("procure quote --format json", ["quote", cluster, "--format", "json", "-o", out_dir, "-q", "--force"],
         "model"),
    ]


# Runs a command in-process once, then three more times, and prints the first and the best rerun (ms).
WARM = """
import sys, time
from procure.cli import main
def once():
    start = time.perf_counter()
    try:
        main(sys.argv[1:], prog_name="procure", standalone_mode=False)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    return time.perf_counter() - start
first = once()
print(f"{first * 1000:.1f} {min(once() for _ in range(3)) * 1000:.1f}", file=sys.stderr)
"""


def warm_ms(argv: list[str], env: dict[str, str], cwd: str) -> float:
    """The best in-process rerun of a command, in ms (its work once everything is loaded)."""
    done = subprocess.run([sys.executable, "-c", WARM] + argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=True)
    return float(done.stderr.split()[-1])


def run_once(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run. CPU time (user + system, from wait4) does not count
    the time spent waiting for a busy machine's cores, so its ratios hold on a loaded machine too."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = child.stderr.read() if child.stderr else b""
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({child.returncode}): {stderr.decode()[-500:]}")
    return elapsed, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--cold-cache", action="store_true", help="an empty catalog cache on every run")
    parser.add_argument("--root", type=Path, default=ROOT, help="the procure checkout to measure")
    parser.add_argument("--budget", action="store_true",
                        help="also each computing command's warm in-process time and the ratio bound it sets")
    args = parser.parse_args()
    root = args.root.resolve()
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory() as tmp:   # children run here: `-c` puts the cwd first on sys.path
        cache = Path(tmp) / "cache"
        env["PROCURE_CACHE_DIR"] = str(cache)
        # bytecode as an installed package has it (pip compiles on install): written once by the warm-up
        # runs into a private folder, whatever PYTHONDONTWRITEBYTECODE says, and read back after
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        out_dir = str(Path(tmp) / "out")
        entry = "import sys; from procure.cli import main; sys.argv[0] = 'procure'; main()"   # as the script runs it
        jobs = [(name, [sys.executable, "-c", entry] + argv, floor) for name, argv, floor in commands(out_dir, root)]
        floors = {key: [sys.executable, "-c", code] for key, code in FLOORS.items()}
        for argv in [argv for _, argv, _ in jobs] + list(floors.values()):   # files, bytecode, catalog cache
            run_once(argv, env, tmp)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in jobs}
        floor_samples: dict[str, list[tuple[float, float]]] = {key: [] for key in floors}
        for _ in range(args.rounds):
            for key, argv in floors.items():
                floor_samples[key].append(run_once(argv, env, tmp))
            for name, argv, _ in jobs:
                if args.cold_cache:
                    for item in cache.glob("*"):
                        item.unlink()
                samples[name].append(run_once(argv, env, tmp))
        warm = {name: statistics.median(warm_ms(argv[3:], env, tmp) for _ in range(3))
                for name, argv, key in jobs if key == "model"} if args.budget else {}
    print(f"cold start of {root}, {args.rounds} interleaved rounds, "
          f"{'empty' if args.cold_cache else 'warm'} catalog cache")
    print("wall: median and minimum over the rounds; cpu: median user+system time (robust to a busy machine)")
    print(f"{'command':<36}{'wall':>8}{'floor':>8}{'ratio':>7}{'min':>8}{'floor':>8}{'ratio':>7}"
          f"{'cpu':>8}{'floor':>8}{'ratio':>7}  floor")
    for name, _, key in jobs:
        wall, fwall = [s[0] for s in samples[name]], [s[0] for s in floor_samples[key]]
        cpu, fcpu = [s[1] for s in samples[name]], [s[1] for s in floor_samples[key]]
        cells = []
        for mine, floor in ((statistics.median(wall), statistics.median(fwall)), (min(wall), min(fwall)),
                            (statistics.median(cpu), statistics.median(fcpu))):
            cells.append(f"{mine * 1000:6.0f}ms{floor * 1000:6.0f}ms{mine / floor:6.2f}x")
        print(f"{name:<36}" + "".join(cells) + f"  {key}")
    for name, _, key in jobs:
        if name in warm:
            floor_ms = statistics.median(s[0] for s in floor_samples[key]) * 1000
            print(f"{name}: warm rerun in process {warm[name]:.0f} ms; even with procure's own imports free "
                  f"the ratio is at least {(floor_ms + warm[name]) / floor_ms:.2f}x")


if __name__ == "__main__":
    main()
