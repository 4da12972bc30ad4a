"""The architecture's boundaries, checked by walking imports (architecture.md)."""

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "procure"
PURE = ("model", "economics", "measure")
FORBIDDEN_IN_PURE = {"yaml", "jinja2", "weasyprint", "openpyxl", "rich", "click", "procure.report",
                     "procure.cli", "procure.api", "requests", "urllib", "socket", "http"}
IO_EDGE_MODULES = {"procure/measure/readers.py"}   # the one module of measure that opens files
HEAVY = {"pandas", "weasyprint", "openpyxl", "pyarrow", "dask"}


def _imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, node


def _top_level_imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def test_pure_core_imports_no_io_or_rendering_libraries():
    offenders = []
    for area in PURE:
        for path in sorted((PACKAGE / area).rglob("*.py")):
            for name, _ in _imports(path):
                if any(name == f or name.startswith(f + ".") for f in FORBIDDEN_IN_PURE):
                    offenders.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    assert offenders == []


def test_pure_core_does_not_open_files_or_read_the_clock():
    offenders = []
    for area in PURE:
        for path in sorted((PACKAGE / area).rglob("*.py")):
            rel = str(path.relative_to(PACKAGE.parent))
            if rel in IO_EDGE_MODULES:
                continue
            text = path.read_text(encoding="utf-8")
            for needle in ("open(", "time.time(", "datetime.now(", "date.today(", "print("):
                if needle in text.replace("def open(", ""):
                    offenders.append(f"{rel}: {needle}")
    assert offenders == []


def test_heavy_libraries_are_never_imported_at_module_top_level():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in _top_level_imports(path):
            if name.split(".")[0] in HEAVY:
                offenders.append(f"{path.relative_to(PACKAGE.parent)} imports {name} at top level")
    assert offenders == []


def test_help_does_not_import_heavy_libraries():
    code = ("import sys, procure.cli\n"
            "heavy = [m for m in ('pandas','weasyprint','openpyxl','pyarrow','pydantic','numpy') if m in sys.modules]\n"
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
