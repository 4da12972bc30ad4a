"""Help and docs agree with the commands: every `procure COMMAND --option` that the generated help,
the README or the docs tell a user to type names a command and options that exist."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from procure.cli import main

REPO = Path(__file__).resolve().parents[2]
INLINE = re.compile(r"`(procure\s[^`]+)`")
FENCE = re.compile(r"```(?:bash|sh|text)?\n(.*?)```", re.S)


def _help_pages() -> dict[str, str]:
    runner = CliRunner()
    pages = {"procure --help": runner.invoke(main, ["--help"]).output}
    for name in main.commands:
        pages[f"procure {name} --help"] = runner.invoke(main, [name, "--help"]).output
    return pages


def _doc_pages() -> dict[str, str]:
    files = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
    return {str(p.relative_to(REPO)): p.read_text(encoding="utf-8") for p in files}


def _commands_in(text: str, help_page: bool) -> list[str]:
    found = [m.group(1) for m in INLINE.finditer(text)]
    for block in FENCE.findall(text):
        found += [line.strip() for line in block.splitlines() if line.strip().startswith("procure ")]
    if help_page:   # help is not Markdown: a command it shows sits in backticks or starts an indented line
        found += [line.strip() for line in text.splitlines() if re.match(r"\s+procure [a-z]", line)]
    return found


def _problems(snippet: str) -> list[str]:
    try:
        words = shlex.split(snippet.replace("\\|", "|"))
    except ValueError:
        words = snippet.split()
    global_opts = {o for p in main.params for o in getattr(p, "opts", []) + getattr(p, "secondary_opts", [])}
    global_opts |= {"-h", "--help", "--version"}
    rest = words[1:]
    while rest and rest[0].startswith("-"):
        if rest[0].split("=")[0] not in global_opts:
            return [f"{snippet!r}: no global option {rest[0]}"]
        rest = rest[1:]
    if not rest or not re.fullmatch(r"[a-z][a-z-]*", rest[0]):
        return []   # a usage line (procure [GLOBAL OPTIONS] COMMAND ...) or prose
    command = main.commands.get(rest[0])
    if command is None:
        return [f"{snippet!r}: no command {rest[0]!r}"]
    known = global_opts | {o for p in command.params for o in getattr(p, "opts", []) + getattr(p, "secondary_opts", [])}
    return [f"{snippet!r}: `procure {rest[0]}` has no option {w}" for w in rest[1:]
            if re.fullmatch(r"--?[a-zA-Z][\w-]*(=.*)?", w) and w.split("=")[0] not in known]


@pytest.mark.parametrize("where, text", list(_help_pages().items()) + list(_doc_pages().items()),
                         ids=lambda v: v if isinstance(v, str) and len(v) < 60 else "")
def test_every_command_line_it_shows_exists(where, text):
    problems = [p for snippet in _commands_in(text, where.endswith("--help")) for p in _problems(snippet)]
    assert not problems, f"{where}: " + "; ".join(problems)


def test_the_check_itself_catches_a_missing_option_and_command():
    assert _problems("procure ingest --list-formats") == []
    assert _problems("procure ingest --no-such-flag")
    assert _problems("procure frobnicate x.yaml")
    assert _problems("procure -q quote examples/cluster.yaml --force") == []


def test_ingest_list_formats_names_every_format_with_a_description():
    from procure.measure import FORMATS
    from procure.measure.formats import LOG_FORMATS

    result = CliRunner().invoke(main, ["ingest", "--list-formats"])
    assert result.exit_code == 0
    listed = [line.split()[0] for line in result.output.splitlines() if line.strip()]
    assert listed == list(FORMATS)
    assert all(f.summary for f in LOG_FORMATS)
    assert [line.split(None, 1)[1] for line in result.output.splitlines() if line.strip()] == \
        [f.summary for f in LOG_FORMATS]
