"""procure.measure opens files in readers.py only; the rest is pure (text/arrays in, data out)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

MEASURE = Path(__file__).resolve().parents[2] / "procure" / "measure"
IO_NAMES = {"open", "read_text", "read_bytes", "write_text", "write_bytes", "rglob", "glob",
            "iterdir", "stat", "is_file", "is_dir", "exists", "read_parquet", "read_csv",
            "read_table", "read_schema", "open_csv", "walk", "listdir", "urlopen", "perf_counter",
            "time", "now", "today"}
IO_MODULES = {"gzip", "io", "os", "shutil", "zlib", "socket", "urllib", "time"}
IO_EDGE = {"readers.py"}  # collect.py and scale.py reach files only through readers.<function>


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] in IO_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in IO_MODULES:
                found.append(f"from {node.module}")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(
                func.value, ast.Name) else ""
            if name in IO_NAMES and owner != "readers":
                found.append(f"{name}() at line {node.lineno}")
    return found


def test_only_readers_touches_the_file_system():
    offenders = {}
    for path in sorted(MEASURE.rglob("*.py")):
        if path.name in IO_EDGE:
            continue
        bad = _violations(path)
        if bad:
            offenders[str(path.relative_to(MEASURE))] = bad
    assert offenders == {}


def test_readers_is_where_the_io_is():
    assert _violations(MEASURE / "readers.py")


def test_importing_the_package_stays_light():
    code = ("import sys, procure.measure as m\n"
            "assert m.FORMATS and m.detect_format('a.parquet', b'') == 'rank-table'\n"
            "print(','.join(x for x in ('numpy', 'pandas', 'pyarrow', 'dask') if x in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
