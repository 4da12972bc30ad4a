"""Every kind of file procure reads, broken in ten or more ways, through the command line: each ends
in exit 1 with the file named at a line and column (logs: the file named), never a traceback, and
the unbroken file passes (so it is the break that is caught)."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

import procure.resources
from procure.cli import main

REPO = Path(__file__).resolve().parents[2]
POSITION = re.compile(r"(?m)^(?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+): error\[[\w-]+\]")
BOMB = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
    f'{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n' for p, c in zip("abcdefgh", "bcdefghi"))


@dataclass(frozen=True)
class Kind:
    """A kind of file: how to lay out a valid one, which file to break, and the command that reads it."""

    name: str
    setup: Callable[[Path], tuple[Path, list[str]]]   # -> (the file to break, argv)
    value_key: str          # a scalar the schema bounds (wrong type and out-of-range replace it)
    bad_value: str          # out of range for value_key
    required_key: str       # a one-line required key (the "missing" break deletes it)
    catalog: bool = False   # the file is part of the shipped catalog (read from a copy)


def _example(tmp: Path) -> Path:
    shutil.copytree(REPO / "examples", tmp / "rfq")
    return tmp / "rfq"


def _catalog_copy(tmp: Path, relative: str, command: str = "validate") -> tuple[Path, list[str]]:
    for folder in ("hardware_catalog", "price_books"):
        shutil.copytree(REPO / folder, tmp / folder)
    return tmp / relative, [command, str(_example(tmp) / "cluster.yaml")]


def _user_book(tmp: Path) -> tuple[Path, list[str]]:
    books = tmp / "books"
    books.mkdir()
    text = (REPO / "price_books" / "lambda-2026q3.yaml").read_text(encoding="utf-8")
    (books / "my-lambda.yaml").write_text(text.replace("id: lambda-2026q3", "id: my-lambda"), encoding="utf-8")
    return books / "my-lambda.yaml", ["validate", str(_example(tmp) / "cluster.yaml"), "--price-books", str(books)]


def _runs(tmp: Path) -> tuple[Path, list[str]]:
    lines = (REPO / "hardware_catalog" / "published_runs" / "dense.yaml").read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("- id:")]
    (tmp / "runs.yaml").write_text("\n".join(lines[:starts[1]]) + "\n", encoding="utf-8")
    return tmp / "runs.yaml", ["backtest", str(tmp / "runs.yaml")]


KINDS = [
    Kind("cluster.yaml", lambda t: ((r := _example(t)) / "cluster.yaml", ["validate", str(r / "cluster.yaml")]),
         "seq_len", "-8192", "title"),
    Kind("sweep.yaml", lambda t: ((r := _example(t)) / "sweep.yaml", ["validate", str(r / "sweep.yaml")]),
         "seq_len", "-8192", "title"),
    Kind("user price book", _user_book, "min_commit_months", "-3", "currency"),
    Kind("published runs", _runs, "step_time_s", "-12.9", "precision"),
    Kind("accelerator", lambda t: _catalog_copy(t, "hardware_catalog/accelerators/h100-sxm5-80gb.yaml"),
         "hbm_gb", "-80", "hbm_bw_tbs", catalog=True),
    Kind("network", lambda t: _catalog_copy(t, "hardware_catalog/networks/efa-p5.yaml"),
         "latency_us", "-15", "scale_out_gbps_per_gpu", catalog=True),
    Kind("model preset", lambda t: _catalog_copy(t, "hardware_catalog/models/llama3-70b.yaml"),
         "layers", "-80", "hidden", catalog=True),
    Kind("system", lambda t: _catalog_copy(t, "hardware_catalog/systems/dgx-h100.yaml"),
         "node_power_kw", "-10.2", "gpus_per_node", catalog=True),
    Kind("calibration", lambda t: _catalog_copy(t, "hardware_catalog/calibration.yaml", "estimate"),
         "membound_factor", "-0.7", "schema", catalog=True),
    Kind("shipped price book", lambda t: _catalog_copy(t, "price_books/aws-2026q3.yaml"),
         "effective", "2026-13-45", "currency", catalog=True),
    Kind("fx table", lambda t: _catalog_copy(t, "price_books/fx.yaml"), "EUR", '"-0.85"', "rates", catalog=True),
]


def _replace_value(text: str, key: str, value: str) -> str:
    found = re.search(rf"(?m)(\b{re.escape(key)}:[ \t]*)([^,}}\n#]+)", text)
    assert found, f"no {key}: in the sample"
    return text[:found.start(2)] + value + text[found.end(2):]


def _drop_line(text: str, key: str) -> str:
    found = re.search(rf"(?m)^[ \t]*(?:- )?{re.escape(key)}:[^\n]*\n", text)
    assert found, f"no {key}: line in the sample"
    return text[:found.start()] + text[found.end():]


def _duplicate_first_key(text: str) -> str:
    found = re.search(r"(?m)^[A-Za-z_]\w*:[ \t]*\S[^\n]*\n", text)
    assert found
    return text[:found.end()] + found.group() + text[found.end():]


YAML_BREAKS: dict[str, Callable[[str, Kind], str | bytes]] = {
    "syntax": lambda s, k: s + "\n  [unclosed: {\n",
    "tab-indent": lambda s, k: "\t" + s,
    "duplicate-key": lambda s, k: _duplicate_first_key(s),
    "not-a-mapping": lambda s, k: "- a list\n- not a mapping\n",
    "empty": lambda s, k: "",
    "unknown-key": lambda s, k: s + "\nfrobnicate_typo: 1\n",
    "wrong-type": lambda s, k: _replace_value(s, k.value_key, '"fast"' if k.value_key != "EUR" else "[1, 2]"),
    "out-of-range": lambda s, k: _replace_value(s, k.value_key, k.bad_value),
    "not-a-number": lambda s, k: _replace_value(s, k.value_key, ".nan"),
    "missing-field": lambda s, k: _drop_line(s, k.required_key),
    "not-utf8": lambda s, k: b"\xff\xfe" + s.encode("utf-8"),
    "alias-bomb": lambda s, k: BOMB,
}


@pytest.fixture
def patched_data(monkeypatch, tmp_path):
    """Point the shipped data folders at a copy under tmp_path (the catalog caches are cleared)."""
    from procure.catalog import calibration, load

    def use_copy() -> None:
        real = procure.resources.data_dir
        monkeypatch.setattr(procure.resources, "data_dir",
                            lambda name: tmp_path / name if name != "templates" else real(name))
        load.default_catalog.cache_clear()
        calibration._load.cache_clear()

    yield use_copy
    load.default_catalog.cache_clear()
    calibration._load.cache_clear()


def _run(argv: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(main, argv)
    assert not isinstance(result.exception, (AssertionError, KeyError, TypeError, AttributeError)), result.exc_info
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes is not None else "")


def _assert_refused(code: int, output: str, target: Path) -> None:
    assert code == 1, output
    assert "Traceback" not in output and "internal error" not in output, output
    positions = [m for m in POSITION.finditer(output) if Path(m["file"]).name == target.name]
    assert positions, f"no {target.name}:line:col position in:\n{output}"


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_the_unbroken_file_passes(kind, tmp_path, patched_data):
    target, argv = kind.setup(tmp_path)
    if kind.catalog:
        patched_data()
    code, output = _run(argv)
    assert code == 0, output


@pytest.mark.parametrize("breakage", list(YAML_BREAKS))
@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_a_broken_yaml_file_is_exit_1_with_a_position(kind, breakage, tmp_path, patched_data):
    target, argv = kind.setup(tmp_path)
    broken = YAML_BREAKS[breakage](target.read_text(encoding="utf-8"), kind)
    if isinstance(broken, bytes):
        target.write_bytes(broken)
    else:
        target.write_text(broken, encoding="utf-8")
    if kind.catalog:
        patched_data()
    _assert_refused(*_run(argv), target)


# ------------------------------------------------------------------ saved result documents (JSON)

@pytest.fixture(scope="module")
def saved_quote(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("quote")
    code, output = _run(["quote", str(REPO / "examples" / "cluster.yaml"), "-o", str(out), "--format", "json",
                         "-q", "--force"])
    assert code == 0, output
    return next(out.glob("*.json")).read_text(encoding="utf-8")


def _edit(text: str, change: Callable[[dict], None]) -> str:
    data = json.loads(text)
    change(data)
    return json.dumps(data, indent=2)


JSON_BREAKS: dict[str, Callable[[str], str | bytes]] = {
    "truncated": lambda s: s[: len(s) // 2],
    "not-an-object": lambda s: "[1, 2, 3]\n",
    "empty": lambda s: "",
    "not-utf8": lambda s: b"\xff" + s.encode("utf-8"),
    "wrong-schema": lambda s: _edit(s, lambda d: d.update(schema="procure.quote/v9")),
    "wrong-type": lambda s: _edit(s, lambda d: d["bids"][0].update(step_time_s="fast")),
    "unknown-key": lambda s: _edit(s, lambda d: d["bids"][1].update(frobnicate=1)),
    "missing-field": lambda s: _edit(s, lambda d: d["bids"][2].pop("vendor")),
    "not-a-number": lambda s: s.replace('"step_time_s": ', '"step_time_s": NaN, "x": ', 1),
    "deep-nesting": lambda s: "[" * 100_000 + "]" * 100_000,
    "negative-count": lambda s: _edit(s, lambda d: d["bids"][0]["plan"].update(tp=-4)),
}


@pytest.mark.parametrize("breakage", list(JSON_BREAKS))
def test_a_broken_saved_result_is_exit_1_with_a_position(breakage, saved_quote, tmp_path):
    target = tmp_path / "result.json"
    broken = JSON_BREAKS[breakage](saved_quote)
    if isinstance(broken, bytes):
        target.write_bytes(broken)
    else:
        target.write_text(broken, encoding="utf-8")
    _assert_refused(*_run(["render", str(target), "-o", str(tmp_path / "out"), "--format", "html"]), target)


def test_the_saved_result_renders(saved_quote, tmp_path):
    (tmp_path / "result.json").write_text(saved_quote, encoding="utf-8")
    assert _run(["render", str(tmp_path / "result.json"), "-o", str(tmp_path / "out"), "--format", "html"])[0] == 0


# ------------------------------------------------------------------ training logs

GOOD_LOG = "".join(f" iteration {i}/ 100 | elapsed time per iteration (ms): {1000 + i}.0 |\n" for i in range(1, 21))
LOG_BREAKS: dict[str, tuple[str, str | bytes]] = {
    "not-utf8": ("run.log", b"\xff\xfe" + GOOD_LOG.encode()),
    "empty": ("run.log", ""),
    "unknown-format": ("run.log", "hello\nworld\n"),
    "no-step-times": ("run.log", " iteration 1/ 100 | elapsed time per iteration (ms): nan |\n"),
    "negative-times": ("run.log", " iteration 1/ 100 | elapsed time per iteration (ms): -5.0 |\n"),
    "parse-bomb": ("run.log", "\n" * 2_000_000),
    "not-gzip": ("run.log.gz", b"\x1f\x8b\x08 definitely not gzip"),
    "binary": ("run.log", bytes(range(256)) * 64),
    "broken-json-trace": ("trace.json", '{"traceEvents": [ {"ph": "X", '),
    "broken-rank-table": ("ranks.csv", "step,rank,duration_s\n1,0,abc\n1,1,\n"),
}


@pytest.mark.parametrize("breakage", list(LOG_BREAKS))
def test_a_broken_log_is_exit_1_and_names_the_file(breakage, tmp_path):
    name, content = LOG_BREAKS[breakage]
    target = tmp_path / name
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content, encoding="utf-8")
    code, output = _run(["ingest", str(target)])
    assert code == 1, output
    assert "Traceback" not in output and "internal error" not in output, output
    assert name in output, output


def test_the_good_log_is_read(tmp_path):
    (tmp_path / "run.log").write_text(GOOD_LOG, encoding="utf-8")
    assert _run(["ingest", str(tmp_path / "run.log")])[0] == 0
