"""Issue 30's attack classes through the command line, in process (click's CliRunner): a mutated
cluster.yaml, a user price book with hostile values, log files of every text format with random
lines or bytes after a valid header, saved JSON for `render` and `diff`, and user templates whose
HTML is hostile to the PDF layout. Every run must end in exit 0, 1 or 2, print no traceback, and
write nothing on exit 1 (the output folder is exactly as it was).

Cheap enough for CI (seeded, no shrinking, deadline=None; about a minute on a loaded 2-core
machine). The other classes' fuzz suites (test_fuzz_validate, _logs, _saved_results, _templates)
check the library calls; these check what a user sees.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings, strategies as st

from fuzz_budget import PHASES, examples
from procure.cli import main
from procure.resources import price_books_dir

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "cluster.yaml"
SAMPLE = REPO / "tests" / "fixtures" / "quote_sample.json"
LOGS = REPO / "tests" / "fixtures" / "logs"
# every log format the fixtures hold (text logs, JSON traces and records, per-rank CSV)
TEXT_LOGS = sorted(p for p in LOGS.iterdir()
                   if p.suffix in (".log", ".txt", ".jsonl", ".json", ".csv") and p.stat().st_size < 200_000)
SPECIALS = ["0", "-1", "1e308", "1e-300", "-0", "nan", ".inf", "''", "~", "[]", "{}", "'x' ", "9" * 40, "1_0",
            "0x10", "2026-13-45", "9999-12-31", "yes", "!!binary AAAA", "&a 1", "*a", "\"\\x00\"", "é" * 50]
BOOK_VALUES = ["1", "2.5", "1e308", "-1", "abc", "", "1e400", "NaN", "Infinity", "0.12345678901", "1" * 60,
               "[1]", "{a: 1}", "2026-01-01"]
KEY_VALUE = re.compile(r"^(?P<head>\s*(?:- )?[A-Za-z_][\w.-]*:[ \t]+)(?P<value>[^#\n{]*?)(?P<tail>[ \t]*(?:#.*)?\n?)$")


def fuzz(weight: int):   # seeded (PROCURE_FUZZ_RANDOM=1: not), no shrinking, no deadline: whole commands run
    return settings(max_examples=examples(weight), deadline=None, phases=PHASES,
                    derandomize=os.environ.get("PROCURE_FUZZ_RANDOM") != "1", database=None,
                    suppress_health_check=list(HealthCheck))


def listing(folder: Path) -> dict[str, bytes]:
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def invoke(args: list[str], out: Path | None = None) -> Result:
    before = listing(out) if out is not None else {}
    result = CliRunner().invoke(main, args)
    text = result.output + (str(result.exception) if result.exception else "")
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        f"{args}: {type(result.exception).__name__}: {result.exception}"
    assert result.exit_code in (0, 1, 2), f"{args}: exit {result.exit_code}\n{text[-3000:]}"
    assert "Traceback" not in text, text[-3000:]
    if result.exit_code == 1 and out is not None:
        assert listing(out) == before, f"{args}: exit 1 changed {out}"
    return result


def _mutate_lines(text: str, rng: random.Random, count: int) -> str:
    lines = text.splitlines(keepends=True)
    for _ in range(count):
        i = rng.randrange(len(lines))
        match = KEY_VALUE.match(lines[i])
        kind = rng.random()
        if match and kind < 0.7:
            lines[i] = f"{match['head']}{rng.choice(SPECIALS)}{match['tail']}"
        elif kind < 0.8:
            del lines[i]
        elif kind < 0.9:
            lines.insert(i, lines[rng.randrange(len(lines))])
        else:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)] + "\n"
    return "".join(lines)


# --- cluster.yaml ------------------------------------------------------------------------------

@fuzz(30)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 4))
def test_mutated_cluster_yaml_through_validate(tmp_path_factory, seed, count):
    folder = tmp_path_factory.mktemp("cluster")
    shutil.copytree(EXAMPLE.parent / "logs", folder / "logs")
    path = folder / "cluster.yaml"
    path.write_text(_mutate_lines(EXAMPLE.read_text(encoding="utf-8"), random.Random(seed), count), encoding="utf-8")
    invoke(["validate", str(path)])


@fuzz(4)
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_cluster_yaml_through_quote(tmp_path_factory, seed):
    folder = tmp_path_factory.mktemp("cluster")
    shutil.copytree(EXAMPLE.parent / "logs", folder / "logs")
    path = folder / "cluster.yaml"
    path.write_text(_mutate_lines(EXAMPLE.read_text(encoding="utf-8"), random.Random(seed), 1), encoding="utf-8")
    out = folder / "reports"
    out.mkdir()
    (out / "notes.md").write_text("mine\n", encoding="utf-8")
    invoke(["quote", str(path), "-o", str(out), "--format", "json"], out)


# --- a user price book -------------------------------------------------------------------------

def _book_case(folder: Path, field: str, value: str) -> Path:
    """examples/cluster.yaml with its first bid priced from a user book (a copy of aws-2026q3 with
    ``field`` of the bid's line, or of the adders, set to ``value``)."""
    book = (price_books_dir() / "aws-2026q3.yaml").read_text(encoding="utf-8")
    book = book.replace("id: aws-2026q3", "id: fuzz-2026q3", 1)
    quoted = json.dumps(value)
    if field == "price_per_gpu_hour":
        book = re.sub(r'(accelerator: h100-sxm5-80gb\n\s+term: on-demand\n\s+price_per_gpu_hour: )"[^"]*"',
                      lambda m: m.group(1) + quoted, book, count=1)
    else:
        book = re.sub(rf'({field}: )"[^"]*"', lambda m: m.group(1) + quoted, book, count=1)
    (folder / "my-books").mkdir()
    (folder / "my-books" / "fuzz-2026q3.yaml").write_text(book, encoding="utf-8")
    shutil.copytree(EXAMPLE.parent / "logs", folder / "logs")
    cluster = EXAMPLE.read_text(encoding="utf-8").replace("price_book: aws-2026q3", "price_book: fuzz-2026q3", 1)
    cluster = "price_books: [my-books]\n" + cluster
    path = folder / "cluster.yaml"
    path.write_text(cluster, encoding="utf-8")
    return path


BOOK_FIELDS = ["price_per_gpu_hour", "storage_per_gpu_hour", "network_per_gpu_hour", "support_fraction"]


@fuzz(10)
@given(field=st.sampled_from(BOOK_FIELDS), value=st.sampled_from(BOOK_VALUES))
def test_hostile_price_book_values_through_quote(tmp_path_factory, field, value):
    folder = tmp_path_factory.mktemp("book")
    path = _book_case(folder, field, value)
    out = folder / "reports"
    out.mkdir()
    invoke(["quote", str(path), "-o", str(out), "--format", "json"], out)


# Found by the target above and fixed with the shared bounds (issue 30): a zero price or a fraction
# out of [0, 1] in a user book is refused like the inline term; a near-zero price is quoted, compared
# without dividing by it (exit 0), never exit 3.
@pytest.mark.parametrize("field, value, codes", [
    ("price_per_gpu_hour", "0", {1}),
    ("support_fraction", "1000000", {1}),
    ("price_per_gpu_hour", "1e-10", {0}),
])
def test_price_book_values_take_the_inline_bounds(tmp_path, field, value, codes):
    path = _book_case(tmp_path, field, value)
    out = tmp_path / "reports"
    out.mkdir()
    result = invoke(["quote", str(path), "-o", str(out), "--format", "json"], out)
    assert result.exit_code in codes, result.output[-2000:]


# --- logs of every text format -----------------------------------------------------------------

@fuzz(40)
@given(log=st.sampled_from(TEXT_LOGS), header=st.integers(1, 8), tail=st.one_of(
    st.binary(max_size=400),
    st.lists(st.text(st.characters(blacklist_categories=["Cs"]), max_size=80), max_size=30).map("\n".join)
    .map(lambda t: t.encode("utf-8"))))
def test_logs_with_random_lines_after_a_valid_header_through_ingest(tmp_path_factory, log, header, tail):
    folder = tmp_path_factory.mktemp("log")
    head = b"".join(log.read_bytes().splitlines(keepends=True)[:header])
    path = folder / log.name
    path.write_bytes(head + tail)
    invoke(["ingest", str(path), "--format", "json"])


# --- saved JSON for render and diff -------------------------------------------------------------

NUMBERS = [0, -1, 1e308, -1e308, 1e-300, 10**30, True, None, "1e308", "", [], {}]


def _mutate_json(value, rng: random.Random, rate: float):   # type: ignore[no-untyped-def]
    if isinstance(value, dict):
        return {k: _mutate_json(v, rng, rate) for k, v in value.items() if rng.random() > rate / 4}
    if isinstance(value, list):
        return [_mutate_json(v, rng, rate) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and rng.random() < rate:
        return rng.choice(NUMBERS)
    if isinstance(value, str) and rng.random() < rate / 2:
        return rng.choice(["", "x" * 300, "9999-12-31", "-1", "\u202e", "<script>", "1e308"])
    return value


@fuzz(12)
@given(seed=st.integers(0, 2**32 - 1), rate=st.sampled_from([0.01, 0.05, 0.2]))
def test_mutated_saved_json_through_render_and_diff(tmp_path_factory, seed, rate):
    folder = tmp_path_factory.mktemp("saved")
    original = json.loads(SAMPLE.read_text(encoding="utf-8"))
    path = folder / "mutated.json"
    path.write_text(json.dumps(_mutate_json(original, random.Random(seed), rate)), encoding="utf-8")
    out = folder / "out"
    out.mkdir()
    invoke(["render", str(path), "-o", str(out), "--format", "json,html"], out)
    invoke(["diff", str(SAMPLE), str(path)])


# --- user templates against the PDF layout ------------------------------------------------------

@st.composite
def hostile_html(draw) -> str:   # type: ignore[no-untyped-def]
    depth = draw(st.sampled_from([1, 5, 99, 101, 400]))
    rows, cols = draw(st.sampled_from([(1, 1), (20, 5), (3000, 30)]))
    length = draw(st.sampled_from(["10px", "50%", "-3mm", "99999px", "100001pt", "1e30px", "-1e308em"]))
    table = "<table>" + ("<tr>" + "<td>{{ meta.title }}</td>" * cols + "</tr>") * rows + "</table>"
    return (f"<html><head><style>div {{ width: {length} }}</style></head><body>"
            + "<div>" * depth + table + "</div>" * depth + "</body></html>")


@fuzz(8)
@given(html=hostile_html())
def test_templates_hostile_to_the_pdf_layout_through_render(tmp_path_factory, html):
    pytest.importorskip("weasyprint")
    folder = tmp_path_factory.mktemp("tpl")
    (folder / "report.html.j2").write_text(html, encoding="utf-8")
    out = folder / "out"
    out.mkdir()
    invoke(["render", str(SAMPLE), "-o", str(out), "--format", "pdf", "--templates", str(folder)], out)


# Found by test_mutated_cluster_yaml_through_validate: an empty id passed the schema (text) and
# the catalog check (which skipped empty text), then the lookup raised KeyError: exit 3.
@pytest.mark.parametrize("old, new, code", [
    ("accelerator: b200-sxm-180gb", "accelerator: ''", "unknown-accelerator"),
    ("model: llama3-70b", "model: ''", "unknown-model"),
    ("price_book: aws-2026q3", "price_book: ''", "unknown-price-book"),
])
def test_an_empty_catalog_id_is_unknown_not_an_internal_error(tmp_path, old, new, code):
    shutil.copytree(EXAMPLE.parent / "logs", tmp_path / "logs")
    text = EXAMPLE.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "cluster.yaml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    result = invoke(["validate", str(path)])
    assert result.exit_code == 1 and f"error[{code}]:" in result.output and "''" in result.output, result.output
