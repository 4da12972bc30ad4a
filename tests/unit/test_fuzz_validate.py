"""Hostile input for `procure validate`: random and mutated YAML must end in success or a clean
InputError (every diagnostic has a line >= 1, a column >= 1, a code and a message), never in
another exception. Oversized files and alias bombs are refused quickly with exit 1.

The mutations start from examples/cluster.yaml: delete, duplicate and swap lines; replace
scalars with random text, numbers, huge numbers, unicode, YAML specials (tags, anchors, bad
dates); truncate; insert tabs, anchors and aliases, raw bytes.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, strategies as st

from fuzz_budget import fuzz_settings
from procure import api
from procure.catalog.load import default_catalog
from procure.cli import main
from procure.errors import InputError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = (REPO / "examples" / "cluster.yaml").read_text(encoding="utf-8")
LINES = EXAMPLE.splitlines(keepends=True)
CODE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
# `key: value` (optionally a list item), value without a trailing comment
KEY_VALUE = re.compile(r"^(?P<head>\s*(?:- )?[A-Za-z_][\w.-]*:[ \t]+)(?P<value>[^#\n]*?)(?P<tail>[ \t]*(?:#.*)?\n?)$")
# Seeded, budgeted and without shrinking in CI (see fuzz_budget: PROCURE_FUZZ_EXAMPLES, PROCURE_FUZZ_SHRINK).
YAML_SPECIALS = [
    "~", "null", "yes", "no", "on", "off", "y", "n", "True", "0x1F", "0o17", "0b101", "1_000", "1__0", "_1",
    "-0", "+5", "0.", ".5", ".inf", "-.inf", ".nan", "1e308", "1e999", "-1e-999", "9" * 70, "1" + "0" * 400,
    "2026-13-01", "2026-02-30", "2026-00-10", "0000-01-01", "9999-12-31", "2026-12-01T25:61:00",
    "2026-1-1 10:00:00 +99:00", "12:30:00", "190:20:30", "!!timestamp 2026-99-99", "!!binary aGk=",
    "!!binary !!!", "!!python/object:os.system x", "!!int x", "!!float y", "!!bool maybe", "!!str 5",
    "!!null x", "!!set {a, b}", "!!omap [a: 1]", "!!pairs [a: 1]", "!!map [1]", "!!seq {a: 1}", "!custom x",
    "&a x", "*a", "*undefined", "[", "]", "{", "}", "'", '"', "|", ">", "? x", "- x", "%TAG ! x", "@x", "`x",
    "[1, [2, [3]]]", "{a: {b: {c: 1}}}", "{<<: [1, 2]}", "[*a, *a]", '"\\0"', '"\\x00x"', '"\\uD800"',
    '"~nosuchuser/log"', "/etc/passwd", "../../outside.log", "x" * 300, "/".join(["y" * 200] * 21),
    "＄２．３５", "١٢٣", "二〇二六", "\u202e", "\ufeff", "\x85", "\u2028", "é" * 50, "🙂",
]

scalars = st.one_of(
    st.text(max_size=40),
    st.integers(min_value=-(10 ** 80), max_value=10 ** 80).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(YAML_SPECIALS),
)


# ---------------------------------------------------------------------------------------------
# the oracle


@pytest.fixture(scope="module")
def cluster_file(tmp_path_factory) -> Path:
    default_catalog()            # warm the cache so the first example is not charged the load
    folder = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(REPO / "examples", folder, dirs_exist_ok=True)     # the example's measured logs
    (folder / "logs").mkdir(exist_ok=True)
    (folder / "logs" / "burnin.log").write_text("iteration 1/ 10 | elapsed time per iteration (ms): 1000.0\n")
    return folder / "cluster.yaml"


def validate_bytes(path: Path, data: bytes):
    """api.validate on ``data``; returns Inputs or the InputError. Any other exception escapes."""
    path.write_bytes(data)
    try:
        return api.validate(path)
    except InputError as exc:
        assert_clean(exc, path, data)
        return exc


def assert_clean(exc: InputError, path: Path, data: bytes) -> None:
    assert exc.diagnostics, "an InputError without diagnostics"
    text = data.decode("utf-8", "replace")
    max_line = sum(text.count(br) for br in ("\n", "\r", "\x85", "\u2028", "\u2029")) + 1   # YAML's line breaks
    for diag in exc.diagnostics:
        assert isinstance(diag.line, int) and 1 <= diag.line <= max_line + 1, diag
        assert isinstance(diag.col, int) and diag.col >= 1, diag
        assert isinstance(diag.code, str) and CODE.match(diag.code), diag
        assert isinstance(diag.message, str) and diag.message.strip(), diag
        assert diag.source == str(path), diag
        # one line per problem, and nothing from the file may drive the terminal (escapes, newlines)
        assert not any(ch in diag.message for ch in "\n\r\x1b\x00"), diag


# ---------------------------------------------------------------------------------------------
# text mutations: each takes (lines, data) and returns new lines


def _index(data, lines) -> int:
    return data.draw(st.integers(0, max(len(lines) - 1, 0)), label="line")


def delete_line(lines, data):
    if lines:
        del lines[_index(data, lines)]
    return lines


def duplicate_line(lines, data):
    if lines:
        i = _index(data, lines)
        lines.insert(data.draw(st.integers(0, len(lines)), label="to"), lines[i])
    return lines


def swap_lines(lines, data):
    if len(lines) > 1:
        i, j = _index(data, lines), _index(data, lines)
        lines[i], lines[j] = lines[j], lines[i]
    return lines


def replace_scalar(lines, data):
    candidates = [i for i, line in enumerate(lines) if KEY_VALUE.match(line)]
    if candidates:
        i = data.draw(st.sampled_from(candidates), label="scalar line")
        m = KEY_VALUE.match(lines[i])
        lines[i] = m["head"] + data.draw(scalars, label="scalar") + m["tail"]
    return lines


def replace_key(lines, data):
    candidates = [i for i, line in enumerate(lines) if KEY_VALUE.match(line)]
    if candidates:
        i = data.draw(st.sampled_from(candidates), label="key line")
        m = KEY_VALUE.match(lines[i])
        indent = re.match(r"\s*(?:- )?", m["head"]).group(0)
        key = data.draw(st.one_of(st.text(min_size=1, max_size=12), st.sampled_from(YAML_SPECIALS)), label="key")
        lines[i] = f"{indent}{key}: {m['value']}{m['tail']}"
    return lines


def truncate(lines, data):
    text = "".join(lines)
    cut = data.draw(st.integers(0, len(text)), label="cut")
    return text[:cut].splitlines(keepends=True)


def insert_text(lines, data):
    """A tab, an anchor/alias, a flow bracket or random unicode at a random place in a line."""
    if not lines:
        return lines
    i = _index(data, lines)
    col = data.draw(st.integers(0, len(lines[i])), label="col")
    piece = data.draw(st.one_of(st.sampled_from(["\t", "\t\t", " &a ", " *a ", "&b", "*b", "[", "{", ": ",
                                                 "- ", "#", "\\", "\r", "\x00", "\x1b[31m", "\u00a0"]),
                                st.text(max_size=8)), label="piece")
    lines[i] = lines[i][:col] + piece + lines[i][col:]
    return lines


def anchor_and_alias(lines, data):
    """Anchor one value and alias it from another key: shared structure in odd places."""
    candidates = [i for i, line in enumerate(lines) if KEY_VALUE.match(line)]
    if len(candidates) > 1:
        i, j = data.draw(st.sampled_from(candidates)), data.draw(st.sampled_from(candidates))
        mi, mj = KEY_VALUE.match(lines[i]), KEY_VALUE.match(lines[j])
        lines[i] = f"{mi['head']}&x {mi['value']}{mi['tail']}"
        lines[j] = f"{mj['head']}*x{mj['tail']}"
    return lines


def reindent(lines, data):
    if lines:
        i = _index(data, lines)
        delta = data.draw(st.integers(-4, 4), label="delta")
        stripped = lines[i].lstrip(" ")
        width = max(0, len(lines[i]) - len(stripped) + delta)
        lines[i] = " " * width + stripped
    return lines


MUTATIONS = [delete_line, duplicate_line, swap_lines, replace_scalar, replace_key, truncate, insert_text,
             anchor_and_alias, reindent]


def mutated_bytes(data) -> bytes:
    lines = list(LINES)
    for mutation in data.draw(st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=4), label="mutations"):
        lines = mutation(lines, data)
    encoded = "".join(lines).encode("utf-8", "surrogatepass")
    if data.draw(st.booleans(), label="raw bytes"):          # invalid UTF-8, BOMs, NULs
        at = data.draw(st.integers(0, len(encoded)), label="at")
        encoded = encoded[:at] + data.draw(st.binary(min_size=1, max_size=4), label="bytes") + encoded[at:]
    return encoded


# ---------------------------------------------------------------------------------------------
# structured mutations: random values at random places of the parsed example

leaves = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2 ** 70), max_value=2 ** 70),
                   st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20), st.dates(),
                   st.sampled_from(YAML_SPECIALS))
values = st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                      max_leaves=8)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, child in node.items():
            yield from _paths(child, prefix + (key,))
    elif isinstance(node, list):
        for i, child in enumerate(node):
            yield from _paths(child, prefix + (i,))


def _edit(root, path, action, value, key):
    if not path:
        return value if action == "set" else root
    parent = root
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if action == "set":
        parent[last] = value
    elif action == "delete":
        del parent[last]
    elif isinstance(parent, dict):
        parent[key] = value             # an extra (usually unknown) key next to the chosen one
    else:
        parent.append(value)
    return root


DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
EXAMPLE_DATA = yaml.safe_load(EXAMPLE)


def structured_bytes(data) -> bytes:
    root = copy.deepcopy(EXAMPLE_DATA)
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        paths = list(_paths(root))
        path = data.draw(st.sampled_from(paths), label="path")
        action = data.draw(st.sampled_from(["set", "delete", "add"]), label="action")
        root = _edit(root, path, action, data.draw(values, label="value"), data.draw(st.text(max_size=10)))
    return yaml.dump(root, Dumper=DUMPER, allow_unicode=True, sort_keys=False).encode("utf-8")


# ---------------------------------------------------------------------------------------------
# properties


def test_the_unmutated_example_validates(cluster_file):
    result = validate_bytes(cluster_file, EXAMPLE.encode())
    assert not isinstance(result, InputError), result


@fuzz_settings("cluster.yaml: mutated text", 300)
@given(data=st.data())
def test_mutated_example_ends_in_success_or_clean_input_error(cluster_file, data):
    validate_bytes(cluster_file, mutated_bytes(data))


@fuzz_settings("cluster.yaml: random values", 300)
@given(data=st.data())
def test_random_values_in_the_example_end_in_success_or_clean_input_error(cluster_file, data):
    validate_bytes(cluster_file, structured_bytes(data))


@fuzz_settings("cluster.yaml: random text and bytes", 200)
@given(blob=st.one_of(st.text(max_size=400).map(lambda t: t.encode("utf-8", "surrogatepass")),
                      st.binary(max_size=400)))
def test_random_text_and_bytes_end_in_clean_input_error(cluster_file, blob):
    result = validate_bytes(cluster_file, blob)
    assert isinstance(result, InputError)     # nothing random is a complete procure/v1 file


@fuzz_settings("cluster.yaml: validate --format json", 50)
@given(data=st.data())
def test_cli_validate_json_on_mutated_input_is_exit_0_or_1_with_a_report(cluster_file, data):
    cluster_file.write_bytes(mutated_bytes(data))
    result = CliRunner().invoke(main, ["validate", "--format", "json", str(cluster_file)])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    assert report["schema"] == "procure.validate/v1"
    assert report["ok"] == (result.exit_code == 0) == (report["problems"] == [])
    for problem in report["problems"]:
        assert problem["line"] >= 1 and problem["col"] >= 1 and CODE.match(problem["code"]) and problem["message"]


# Inputs the fuzzers found or that target known weak spots, kept as fixed regressions. Each edit
# is (regex of a whole line of the example, replacement); anchored on keys, not on the example's
# values, so that editing the example's numbers does not break these tests. MEASURED appends a
# `measured:` list to the last bid.
MEASURED = "<append measured>"
HOSTILE_VALUES = {
    "month 13": [(r"^as_of: .*$", "as_of: 2026-13-01")],
    "february 30": [(r"^as_of: .*$", "as_of: 2026-02-30")],
    "hour 25": [(r"^as_of: .*$", "as_of: 2026-12-01T25:00:00")],
    "explicit bad timestamp": [(r"^as_of: .*$", "as_of: !!timestamp 2026-99-99")],
    "offset beyond a day": [(r"^as_of: .*$", "as_of: 2026-1-1 10:00:00 +99:00")],
    "unknown home": [(MEASURED, "['~nosuchuser/burnin.log']")],
    "nul in path": [(MEASURED, '["logs/a\\0b.log"]')],
    "path too long": [(MEASURED, f"[{'x' * 300}]")],
    "deep path too long": [(MEASURED, f"[{'/'.join(['y' * 200] * 21)}]")],
    "newline in path": [(MEASURED, '["logs/a\\nb.log"]')],
    "escape in path": [(MEASURED, '["\\e[31mred.log"]')],
    "newline outside": [(MEASURED, '["../a\\nb.log"]')],
    "path is a folder": [(MEASURED, "[logs]")],
    "escape in accelerator": [(r"^    accelerator: .*$", '    accelerator: "b200\\e[2J"')],
    "binary tag": [(r"^title: .*$", "title: !!binary aGk=")],
    "python tag": [(r"^title: .*$", "title: !!python/object:os.system x")],
    "recursive alias": [(r"^  pue: .*$", "  pue: &r [*r]")],
    "merge of scalar": [(r"^  pue: .*$", "  pue: {<<: 5}")],
    "set tag": [(r"^  pue: .*$", "  pue: !!set {a, b}")],
    "float tag on text": [(r"^  pue: .*$", "  pue: !!float y")],
    "timestamp key": [(r"^  precision: .*$", "  2026-13-01: bf16")],
    "pricing is text": [(r"^    pricing: .*$", "    pricing: foo")],
    "pricing is an alias of text": [(r"^schema: .*$", "schema: &s procure/v1"), (r"^    pricing: .*$", "    pricing: *s")],
    "sexagesimal gpus": [(r"^    gpus: .*$", "    gpus: 12:30:00")],
    "int tag on text": [(r"^    gpus: .*$", "    gpus: !!int x")],
    "hex gpus": [(r"^    gpus: .*$", "    gpus: 0x800")],
    "binary gpus": [(r"^    gpus: .*$", "    gpus: 0b100000000000")],
    "huge integer gpus": [(r"^    gpus: .*$", f"    gpus: {'9' * 60}")],
    "float gpus": [(r"^    gpus: .*$", "    gpus: 2048.5")],
    "inf train_tokens": [(r"^  train_tokens: .*$", "  train_tokens: .inf")],
    "nan price": [(r"^  power_usd_per_kwh: .*$", "  power_usd_per_kwh: .nan")],
    "tiny exponent price": [(r"^  power_usd_per_kwh: .*$", "  power_usd_per_kwh: 1e-300")],
    "many digits price": [(r"^  power_usd_per_kwh: .*$", f"  power_usd_per_kwh: 0.{'1' * 40}")],
}


def edited(edits) -> str:
    text = EXAMPLE
    for pattern, replacement in edits:
        if pattern == MEASURED:
            last_bid = text[text.rindex("\n  - id:"):]
            assert "measured:" not in last_bid, "the example's last bid has logs; update MEASURED"
            text = text.rstrip("\n") + f"\n    measured: {replacement}\n"
            continue
        assert re.search(pattern, text, flags=re.M), f"the example changed: no line matches {pattern!r}"
        text = re.sub(pattern, lambda _m, new=replacement: new, text, count=1, flags=re.M)
    return text


@pytest.mark.parametrize("name", sorted(HOSTILE_VALUES))
def test_hostile_values_end_in_success_or_clean_input_error(cluster_file, name):
    validate_bytes(cluster_file, edited(HOSTILE_VALUES[name]).encode("utf-8"))


def _block(key: str, until: str | None) -> str:
    """The example's text from the line `key:` to the line `until:` (or the end)."""
    start = EXAMPLE.index(f"\n{key}:") + 1
    return EXAMPLE[start:EXAMPLE.index(f"\n{until}:") + 1 if until else len(EXAMPLE)]


# A section replaced by a value of the wrong shape must be reported at its line, not dropped.
WRONG_SHAPES = {
    "pricing": [(r"^    pricing: .*$", "    pricing: foo")],
    "committed": [(r"^    committed: .*$", "    committed: fast")],
    "plan": [(r"^    plan: .*$", "    plan: aut")],
    "assumptions": [(re.escape(_block("assumptions", "bids")), "assumptions: cheap\n\n")],
    "workload": [(re.escape(_block("workload", "assumptions")), "workload: big\n\n")],
    "bids": [(re.escape(_block("bids", None)), "bids: many\n")],
    # a number is not a date: pydantic would read 0 as 1970-01-01 while the catalog checks skip it
    "as_of zero": [(r"^as_of: .*$", "as_of: 0")],
    "as_of seconds": [(r"^as_of: .*$", "as_of: 1798761600")],
}


@pytest.mark.parametrize("name", sorted(WRONG_SHAPES))
def test_a_section_of_the_wrong_shape_is_reported_at_its_line(cluster_file, name):
    edits = WRONG_SHAPES[name]
    text = edited(edits)
    marker = edits[0][1].split("\n")[0]
    line = text[: text.index(marker)].count("\n") + 1
    result = validate_bytes(cluster_file, text.encode("utf-8"))
    assert isinstance(result, InputError), f"{name}: {marker!r} was accepted"
    assert any(d.line == line for d in result.diagnostics), (line, [d.format() for d in result.diagnostics])


# ---------------------------------------------------------------------------------------------
# resource limits, through the real command line


def _procure(*args, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    # The timeout is a hang guard: refusing these inputs takes well under a second.
    return subprocess.run([sys.executable, "-m", "procure.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def test_60_mb_yaml_is_refused_without_reading_it(tmp_path):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as handle:
        handle.write(b"schema: procure/v1\nbids:\n")
        handle.write(b"  - {id: x, vendor: y, accelerator: z, gpus: 1}\n" * (60 * 1024 * 1024 // 48))
    assert big.stat().st_size > 60 * 1024 * 1024
    result = _procure("validate", str(big), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "error[too-large]" in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    lines = ["schema: procure/v1", "title: &l0 lol"]
    for level in range(1, levels + 1):
        lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_refused_by_the_command(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(alias_bomb(), encoding="utf-8")
    assert bomb.stat().st_size < 2000          # 9**9 = 387 million nodes if expanded
    result = _procure("validate", str(bomb), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "error[too-large]" in result.stderr and "alias" in result.stderr
    assert "Traceback" not in result.stderr


def test_alias_bomb_inside_a_cluster_file_is_refused_too(tmp_path):
    bomb_lines = "".join(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10))
    text = EXAMPLE.replace("assumptions:", "x_bomb:\n  l0: &l0 lol\n" + bomb_lines + "assumptions:", 1)
    bomb = tmp_path / "cluster.yaml"
    bomb.write_text(text, encoding="utf-8")
    result = _procure("validate", "--format", "json", str(bomb), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    codes = {p["code"] for p in json.loads(result.stdout)["problems"]}
    assert "too-large" in codes
