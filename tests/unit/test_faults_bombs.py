"""Decompression and parse bombs of every format are refused within 5 s and 500 MB of RSS.

Each bomb is a small file that would expand to gigabytes (of bytes, of rows, or of Python objects):
gzip logs, traces and tables (1 GiB from ~1 MB), a Parquet file of 20 million constant rows, plain
JSON of empty objects, a file of empty lines, JSON nested ten million deep, a YAML alias bomb and
a YAML list of millions of items, a saved result of empty objects. They are refused in a child
process that measures its own peak RSS (VmHWM, reset before each bomb) and the CPU time each
refusal takes (wall time is asserted loosely: a shared CI machine queues work).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LIMIT_S = 5.0
LIMIT_RSS_MB = 500.0


def _gzip_bomb(head: bytes, unit: bytes, tail: bytes = b"", gib: float = 1.0) -> bytes:
    """gzip members: ``head``, then ``unit`` repeated to ~``gib`` GiB (one member compressed once, repeated),
    then ``tail``: ~1 MB on disk."""
    chunk = unit * max(1, (4 << 20) // len(unit))
    member = gzip.compress(chunk, compresslevel=6, mtime=0)
    copies = int(gib * (1 << 30) / len(chunk))
    return gzip.compress(head, mtime=0) + member * copies + (gzip.compress(tail, mtime=0) if tail else b"")


def _parquet_bomb(path: Path) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = 5_000_000
    table = pa.table({"step": np.ones(rows, np.int64), "rank": np.zeros(rows, np.int64),
                      "step_time_s": np.ones(rows)})
    with pq.ParquetWriter(path, table.schema, compression="zstd") as writer:
        for _ in range(4):              # 20 million rows, 480 MB decoded, a few hundred KB on disk
            writer.write_table(table, row_group_size=rows)


@pytest.fixture(scope="module")
def bombs(tmp_path_factory) -> dict[str, tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("bombs")
    made: dict[str, tuple[str, Path]] = {}

    def put(name: str, kind: str, data: bytes | None = None) -> Path:
        path = folder / name
        if data is not None:
            path.write_bytes(data)
        made[name] = (kind, path)
        return path

    put("megatron.log.gz", "ingest", _gzip_bomb(b"", b" iteration 1/ 10 | elapsed time per iteration (ms): 1000.0 |\n"))
    put("trace.json.gz", "ingest", _gzip_bomb(b'{"traceEvents": [', b"{},", b"{}]}"))
    put("ranks.csv.gz", "ingest", _gzip_bomb(b"step,rank,step_time_s\n", b"1,0,1.0\n"))
    put("zeros.log.gz", "ingest", _gzip_bomb(b"", b"\0"))
    _parquet_bomb(put("ranks.parquet", "ingest"))
    put("objects.json", "ingest", b'{"traceEvents": [' + b"{}," * 7_000_000 + b"{}]}")
    put("lines.log", "ingest", b"\n" * 20_000_000)
    put("nested.json", "ingest", b'{"traceEvents": [' + b"[" * 10_000_000)
    put("aliases.yaml", "validate", _alias_bomb())
    put("list.yaml", "validate", b"schema: procure/v1\nbids:\n" + b"- 1\n" * 2_500_000)
    put("result.json", "render", b"[" + b"{}," * 7_000_000 + b"{}]")
    return made


def _alias_bomb() -> bytes:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    return ("\n".join(lines) + "\n").encode()


CHILD = textwrap.dedent("""
    import json, os, sys, time
    from pathlib import Path
    from procure.errors import ProcureError

    def peak_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def reset_peak():
        try:
            with open("/proc/self/clear_refs", "w") as handle:
                handle.write("5")
            return True
        except OSError:
            return False

    from procure import api
    from procure.measure import ingest
    import numpy, pyarrow, pyarrow.parquet, pyarrow.csv, yaml   # warm: imports are not the bomb's cost
    for kind, path in json.loads(sys.argv[1]):
        resettable = reset_peak()
        start, cpu = time.monotonic(), time.process_time()
        try:
            if kind == "ingest":
                ingest([path])
            elif kind == "validate":
                api.validate(path)
            else:
                api.render_saved(Path(path), Path(path).parent / "out", ["json"])
            outcome, message = "accepted", ""
        except ProcureError as exc:
            outcome, message = "refused", str(exc)[:300]
        except BaseException as exc:
            outcome, message = "crashed", f"{type(exc).__name__}: {exc}"[:300]
        print(json.dumps({"path": path, "outcome": outcome, "message": message, "seconds": time.monotonic() - start,
                          "cpu_seconds": time.process_time() - cpu,
                          "peak_mb": peak_mb(), "per_bomb_peak": resettable}), flush=True)
""")


@pytest.fixture(scope="module")
def refusals(bombs) -> dict[str, dict]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    args = json.dumps([[kind, str(path)] for kind, path in bombs.values()])
    run = subprocess.run([sys.executable, "-c", CHILD, args], capture_output=True, text=True, env=env, timeout=600)
    results = {Path(r["path"]).name: r for r in map(json.loads, run.stdout.splitlines())}
    assert len(results) == len(bombs), run.stderr[-2000:]
    return results


@pytest.mark.parametrize("name", ["megatron.log.gz", "trace.json.gz", "ranks.csv.gz", "zeros.log.gz", "ranks.parquet",
                                  "objects.json", "lines.log", "nested.json", "aliases.yaml", "list.yaml",
                                  "result.json"])
def test_a_bomb_is_refused_within_5_s_and_500_mb(refusals, name):
    result = refusals[name]
    assert result["outcome"] == "refused", result
    assert result["cpu_seconds"] < LIMIT_S, result       # the work; wall time also counts a busy machine's queue
    assert result["seconds"] < 4 * LIMIT_S, result
    assert result["peak_mb"] < LIMIT_RSS_MB, result
    assert result["message"].strip(), result
    assert "bomb" in result["message"] or "more than" in result["message"] or "deeper" in result["message"], result


def test_the_gzip_bombs_really_are_bombs(bombs):
    """Sanity: the files are small and would inflate by three orders of magnitude."""
    path = bombs["trace.json.gz"][1]
    assert path.stat().st_size < 4 << 20
    inflater = zlib.decompressobj(wbits=31)
    assert len(inflater.decompress(path.read_bytes()[:1 << 16], 1 << 26)) > 100 * (1 << 16) or inflater.eof
