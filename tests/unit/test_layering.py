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


# The declared layer order (docs/architecture.md), bottom up: a module may import only from its own
# layer or the layers below. Top-level modules and packages of procure, by layer.
LAYERS = (
    {"errors", "money", "resources", "assumptions", "precision", "jsontext", "jsonpos", "__init__"},   # 1 facts, policies
    {"sources"},                                                              # 2 reading sources
    {"catalog"},                                                              # 3
    {"inputs"},                                                               # 4
    {"model", "measure", "economics"},                                        # 5 pure cores
    {"compare", "recommendation", "backtest", "acceptance"},                  # 6
    {"document"},                                                             # 7
    {"pipeline", "sweep"},                                                    # 8 wiring the cores
    {"report", "compare_rounds"},                                             # 9
    {"api", "cli", "cli_views", "__main__"},                                  # 10
)
# Inside layer 5 the cores are peers that do not import each other (economics takes plain numbers).
PEERS_APART = {"model", "measure", "economics"}


def _unit(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _layer(unit: str) -> int:
    for i, units in enumerate(LAYERS):
        if unit in units:
            return i
    raise AssertionError(f"procure.{unit} is in no declared layer: add it to LAYERS and docs/architecture.md")


def _project_imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            if name == "procure":
                yield "__init__", node.lineno
            elif name.startswith("procure."):
                yield name.split(".")[1], node.lineno


def test_every_import_points_down_the_declared_layer_order():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        unit = _unit(path)
        if unit == "_data":
            continue
        here = _layer(unit)
        for target, line in _project_imports(path):
            if target == unit:
                continue
            there = _layer(target)
            if there > here or (there == here and {unit, target} <= PEERS_APART):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({unit}, layer {here + 1}) "
                                 f"imports procure.{target} (layer {there + 1})")
    assert offenders == []


def test_the_layer_order_is_written_in_the_architecture_doc():
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    for units in LAYERS:
        for unit in units - {"__init__", "__main__"}:
            assert f"`{unit}`" in doc, unit
