"""The economics layer and compare.py stay pure: no I/O, no clock, no forbidden imports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted((REPO / "procure" / "economics").glob("*.py")) + [REPO / "procure" / "compare.py"]
FORBIDDEN_MODULES = ("yaml", "jinja2", "weasyprint", "openpyxl", "rich", "pandas", "pyarrow",
                     "procure.report", "procure.cli", "procure.model", "procure.measure",
                     "procure.inputs", "time", "datetime", "os", "pathlib", "io", "random")
FORBIDDEN_CALLS = ("print", "open", "input")


def imported_modules(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_module_imports_and_calls_nothing_impure(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for module in imported_modules(tree):
        bad = [b for b in FORBIDDEN_MODULES if module == b or module.startswith(b + ".")]
        assert not bad, f"{path.name} imports {module}"
    calls = {node.func.id for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert not calls & set(FORBIDDEN_CALLS), f"{path.name} calls {calls & set(FORBIDDEN_CALLS)}"


def test_importing_the_layer_loads_no_heavy_library():
    code = ("import sys, procure.economics, procure.compare; "
            "print(','.join(sorted(m for m in ('numpy', 'pandas', 'yaml', 'openpyxl', 'rich') "
            "if m in sys.modules)))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert loaded == ""
