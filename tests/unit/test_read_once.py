"""Each input file is read once per command (issue 29, "gather, then compute"): cluster.yaml,
the catalog and price books, templates and measured logs are opened once, and the bytes parsed
are the bytes hashed into the document and attached to the PDF. Counted with an audit hook on
every ``open`` (``builtins.open``, ``os.open``, ``io.open``); the cache and the output folder,
which procure writes, are not inputs."""

from __future__ import annotations

import collections
import os
import shutil
import sys
from pathlib import Path

import pytest

from procure import api
from procure.sources import once

REPO = Path(__file__).resolve().parents[2]
_OPENS: list[collections.Counter[str]] = []


def _hook(event: str, args: tuple) -> None:
    if event != "open" or not _OPENS or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    mode = args[1] if len(args) > 1 else "r"
    writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
        isinstance(mode, int) and mode & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
    if not writing:
        _OPENS[-1][os.path.realpath(os.fsdecode(args[0]))] += 1


sys.addaudithook(_hook)   # permanent for the process: it counts only while a test has asked


def _inputs_opened(run, skip: list[Path]) -> collections.Counter[str]:
    _OPENS.append(collections.Counter())
    try:
        run()
    finally:
        counts = _OPENS.pop()
    skipped = [os.path.realpath(p) for p in skip]
    return collections.Counter({
        path: n for path, n in counts.items()
        if not path.endswith((".py", ".pyc")) and "site-packages" not in path
        and not path.startswith(("/dev/", "/proc/", "/sys/", sys.base_prefix))
        and not any(path == s or path.startswith(s + os.sep) for s in skipped)})


def _cache() -> Path:
    return Path(os.environ["PROCURE_CACHE_DIR"])


@pytest.mark.parametrize("case", ["measured-sla", "example"])
def test_every_input_file_is_opened_once_per_quote(case, tmp_path):
    source = REPO / "examples" if case == "example" else REPO / "tests" / "cases" / case
    folder = tmp_path / "case"
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("expected"))
    out = tmp_path / "out"
    opened = _inputs_opened(lambda: api.quote(folder / "cluster.yaml", out, ["json", "html", "pdf"]),
                            skip=[out, _cache()])
    assert os.path.realpath(folder / "cluster.yaml") in opened
    assert any("/hardware_catalog/" in p for p in opened) and any("/templates/" in p for p in opened)
    logs = [p for p in opened if "/logs/" in p]
    assert logs, "the case's measured logs were read"
    assert {p: n for p, n in opened.items() if n > 1} == {}


def test_outside_a_command_each_read_goes_to_the_file(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("one")
    from procure.sources.files import read_bytes_limited

    assert read_bytes_limited(path, "a.txt") == b"one"
    path.write_text("two")
    assert read_bytes_limited(path, "a.txt") == b"two"
    with once.reading_once():
        assert read_bytes_limited(path, "a.txt") == b"two"
        path.write_text("three")
        assert read_bytes_limited(path, "a.txt") == b"two"     # one command sees one content
        assert once.file_digest(path)[1] == 3


def test_once_gathered_the_pipeline_opens_no_file(tmp_path):
    """Gather, then compute: after ``gather`` the quote's document is built without reading a
    file (the catalog's cache included)."""
    from procure.pipeline import build_document, gather

    folder = tmp_path / "case"
    shutil.copytree(REPO / "tests" / "cases" / "measured-sla", folder, ignore=shutil.ignore_patterns("expected"))
    with once.reading_once():
        inputs = api.load_inputs(folder / "cluster.yaml")
        gathered = gather(inputs)
        opened = _inputs_opened(lambda: build_document(inputs, gathered=gathered), skip=[])
    assert gathered.measured[0] is not None
    assert opened == collections.Counter()
