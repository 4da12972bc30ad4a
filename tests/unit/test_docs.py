"""The reference docs are generated from the code (tools/gen_docs.py) and must stay in step with it."""

from __future__ import annotations

import datetime as dt
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from procure import api
from procure.cli import main
from procure.errors import InputError
from procure.inputs import schema as S
from procure.sources.validate import validate_document
from procure.sources.yamlpos import parse_yaml_text

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
GENERATED = ("cluster-yaml.md", "catalog-files.md", "commands.md", "troubleshooting.md", "result-document.md",
             "quote.schema.json")
RERUN = "run `python tools/gen_docs.py` and commit the result"


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_docs", REPO / "tools" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_docs"] = module          # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def troubleshooting() -> str:
    return (DOCS / "troubleshooting.md").read_text(encoding="utf-8")


def test_committed_docs_are_up_to_date(gen, tmp_path):
    written = {p.name: p for p in gen.write_docs(tmp_path)}
    assert sorted(written) == sorted(GENERATED)
    stale = [name for name in GENERATED
             if not (DOCS / name).is_file() or (DOCS / name).read_bytes() != written[name].read_bytes()]
    assert not stale, f"docs/{', docs/'.join(stale)} out of date: {RERUN}"


def test_generation_is_deterministic(gen):
    assert gen.render_all() == gen.render_all()


def test_every_field_option_and_code_has_text(gen):
    assert gen.problems() == [], f"add the missing text to tools/gen_docs.py, then {RERUN}"


def test_check_mode_reports_a_stale_file(tmp_path):
    (tmp_path / "commands.md").write_text("old\n", encoding="utf-8")
    result = subprocess.run([sys.executable, str(REPO / "tools" / "gen_docs.py"), "--check", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "commands.md is out of date" in result.stderr and "python tools/gen_docs.py" in result.stderr


# ---------------------------------------------------------------------------------------------
# diagnostic codes


def test_the_code_scan_finds_codes_of_every_kind_of_call(gen):
    codes = gen.diagnostic_codes()
    # input_error(...), doc.diagnostic(...), Diagnostic(src, l, c, code), Diagnostic(src, *pos, code),
    # self._diag(...), and the (code, message, at_key) tuples of loader._message
    for code in ("unknown-bid", "unknown-accelerator", "bad-key", "id-mismatch", "duplicate-key", "unknown-key",
                 "out-of-range", "exists", "yaml-syntax"):
        assert code in codes, code
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", code) for code in codes), codes


def test_every_diagnostic_code_used_in_the_code_base_is_explained(gen, troubleshooting):
    missing = [code for code in gen.diagnostic_codes() if f"#### `{code}`" not in troubleshooting]
    assert not missing, f"codes missing from docs/troubleshooting.md: {missing}; add them to CODES in " \
                        f"tools/gen_docs.py, then {RERUN}"
    assert "### Not yet documented" not in troubleshooting


def test_troubleshooting_covers_the_common_problems(troubleshooting):
    for needle in ("Pango", "fonts-noto-cjk", "LibreOffice", "--force", "--allow-path", "--verbose"):
        assert needle in troubleshooting, needle


WRONG_VALUES = ["text", "", "x" * 400, 3.5, -1, 0, 10 ** 30, True, [1, 2], {"k": 1}, None,
                dt.date(2026, 1, 1), "2026-13-01", ".inf", "1.00000000001"]


def _leaf_paths(node, prefix=()):
    if isinstance(node, dict):
        for key, child in node.items():
            yield from _leaf_paths(child, prefix + (key,))
    elif isinstance(node, list):
        for i, child in enumerate(node):
            yield from _leaf_paths(child, prefix + (i,))
    if prefix:
        yield prefix


def _replaced(data, path, value):
    import copy

    data = copy.deepcopy(data)
    node = data
    for part in path[:-1]:
        node = node[part]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


_DELETE = object()
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def test_every_code_the_schema_can_produce_is_explained(gen, troubleshooting):
    """Put a wrong value of every kind into every field of the examples: each code is documented."""
    seen: dict[str, str] = {}
    for example in (gen.CLUSTER_EXAMPLE, gen.INLINE_ARCHITECTURE_EXAMPLE):
        data = yaml.safe_load(example)
        shapes = set()
        for path in _leaf_paths(data):
            shape = tuple("[]" if isinstance(p, int) else p for p in path)
            if shape in shapes:            # bids[1].gpus is the same field as bids[0].gpus
                continue
            shapes.add(shape)
            for value in WRONG_VALUES + [_DELETE]:
                text = yaml.dump(_replaced(data, path, value), Dumper=DUMPER, allow_unicode=True, sort_keys=False)
                try:
                    validate_document(parse_yaml_text(text, "x.yaml"), S.Cluster)
                except InputError as exc:
                    for diag in exc.diagnostics:
                        seen.setdefault(diag.code, f"{path} = {value!r}: {diag.message}")
    missing = {code: why for code, why in seen.items() if f"#### `{code}`" not in troubleshooting}
    assert not missing, f"undocumented schema codes (add them to SCHEMA_CODES): {missing}"
    assert {"bad-type", "out-of-range", "bad-value", "missing-field", "invalid", "string-type"} <= set(seen)


# ---------------------------------------------------------------------------------------------
# the generated content is right, not only present


def _write_example(folder: Path, text: str) -> Path:
    (folder / "logs" / "acme").mkdir(parents=True, exist_ok=True)
    (folder / "my-books").mkdir(exist_ok=True)              # the example's `price_books:` folder
    (folder / "logs" / "acme" / "burnin.log").write_text("iteration 1/ 10 | elapsed time per iteration (ms): 1.0\n")
    path = folder / "cluster.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["CLUSTER_EXAMPLE", "INLINE_ARCHITECTURE_EXAMPLE"])
def test_the_documented_examples_validate(gen, tmp_path, name):
    inputs = api.validate(_write_example(tmp_path, getattr(gen, name)))
    assert inputs.cluster.bids


def _keys(node, out: set) -> set:
    if isinstance(node, dict):
        out.update(node)
        for child in node.values():
            _keys(child, out)
    elif isinstance(node, list):
        for child in node:
            _keys(child, out)
    return out


def test_the_examples_use_every_field_of_cluster_yaml(gen):
    keys = _keys(yaml.safe_load(gen.CLUSTER_EXAMPLE), set()) | _keys(yaml.safe_load(gen.INLINE_ARCHITECTURE_EXAMPLE), set())
    expected = {info.alias or name for _h, model, _i, _r in gen.CLUSTER_SECTIONS
                for name, info in model.model_fields.items()}
    # the alternatives of one another cannot share a file; the examples give each once
    assert expected - keys == set(), f"fields missing from the examples: {sorted(expected - keys)}"


@pytest.mark.parametrize("heading", ["Accelerators", "Networks", "Model presets", "Price books", "Systems", "FX rates"])
def test_the_catalog_file_examples_validate(gen, heading):
    model, example = gen.CATALOG_EXAMPLES[heading]
    entry = validate_document(parse_yaml_text(example, f"{heading}.yaml"), model)
    assert entry is not None


def test_field_rows_carry_types_units_bounds_and_defaults(gen):
    bid = {row.name: row for row in gen.field_docs(S.Bid)}
    assert (bid["gpus"].type, bid["gpus"].unit, bid["gpus"].required, bid["gpus"].bounds) == \
        ("integer", "GPUs", True, "> 0, ≤ 10,000,000")
    assert bid["plan"].default == "`auto`" and not bid["plan"].required
    pricing = {row.name: row for row in gen.field_docs(S.PricingSpec)}
    assert pricing["usd_per_gpu_hour"].unit == "USD per GPU-hour"
    assert pricing["usd_per_gpu_hour"].type == "money (exact decimal)"
    assert pricing["usd_per_gpu_hour"].bounds.startswith("≥ 0")       # from inside Optional[Annotated[...]]
    committed = {row.name: row for row in gen.field_docs(S.CommittedSpec)}
    assert committed["step_time_s"].unit == "s" and committed["step_time_s"].bounds == "≥ 1e-6, ≤ 1,000,000"
    assert {row.name for row in gen.field_docs(S.Cluster)} >= {"schema", "title", "as_of", "bids"}


def test_assumption_defaults_come_from_the_economics(gen):
    economics = pytest.importorskip("procure.economics.inputs")
    defaults = economics.Assumptions()
    rows = {row.name: row for row in gen.assumptions_rows()}
    assert rows["restart_min"].default == f"`{gen._number(defaults.restart_min, False)}`"
    assert rows["mfu_ceiling"].default == f"`{gen._number(defaults.mfu_ceiling, False)}`"
    assert rows["seed"].default == f"`{defaults.seed}`"
    cluster_doc = (DOCS / "cluster-yaml.md").read_text(encoding="utf-8")
    assert f"| `seed` | integer |  | no | `{defaults.seed}` |" in cluster_doc


def test_commands_doc_lists_every_command_and_option():
    text = (DOCS / "commands.md").read_text(encoding="utf-8")
    for name, command in main.commands.items():
        section = text.split(f"## procure {name}\n", 1)
        assert len(section) == 2, f"no section for procure {name}"
        body = section[1].split("\n## procure ", 1)[0]
        for param in command.params:
            for flag in getattr(param, "opts", []) if param.param_type_name == "option" else []:
                assert f"`{flag}`" in body, f"procure {name} {flag}"
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |"):
        assert code in text
