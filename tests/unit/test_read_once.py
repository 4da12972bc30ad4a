"""Each file is read once per command (issue 29, "gather, then compute"): cluster.yaml, the
catalog and price books, the calibration, the published tuned recipes, templates and measured
logs are opened once, and the bytes parsed are the bytes hashed into the document and attached to
the PDF; in the output folder, the manifest and each previous report are read once under the lock.
Counted with an audit hook on every ``open`` (``builtins.open``, ``os.open``, ``io.open``) that
opens for reading; files procure creates or writes (temp files, the lock) are not reads."""

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
    flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0   # the OS flags of every kind of open
    if not flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and not os.path.isdir(args[0]):
        _OPENS[-1][os.path.realpath(os.fsdecode(args[0]))] += 1


sys.addaudithook(_hook)   # permanent for the process: it counts only while a test has asked


def _inputs_opened(run, skip: list[Path] = ()) -> collections.Counter[str]:
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


def _case(name: str, tmp_path: Path) -> Path:
    source = REPO / "examples" if name == "example" else REPO / "tests" / "cases" / name
    folder = tmp_path / "case"
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("expected"))
    return folder


def _kinds(opened: collections.Counter[str], folder: Path, out: Path) -> dict[str, int]:
    """The most opens of one file, per kind of file."""
    def kind(path: str) -> str:
        name = Path(path).name
        if path.startswith(os.path.realpath(out) + os.sep):
            return "manifest" if name == ".procure-manifest" else "previous report"
        if path == os.path.realpath(folder / "cluster.yaml"):
            return "cluster.yaml"
        for part, label in (("/logs/", "measured log"), ("/published_runs/", "tuned recipes"),
                            ("/calibration", "calibration"), ("/price_books/", "price book"),
                            ("/hardware_catalog/", "catalog"), ("/templates/", "template")):
            if part in path:
                return label
        return "other"
    most: dict[str, int] = {}
    for path, n in opened.items():
        most[kind(path)] = max(most.get(kind(path), 0), n)
    return most


@pytest.mark.parametrize("case", ["measured-sla", "example"])
def test_every_file_a_quote_reads_is_opened_once(case, tmp_path):
    """Twice into one folder: the second quote also reads the folder's manifest and the reports it
    replaces (the previous JSON is kept as a round from the one read the target check made)."""
    folder, out = _case(case, tmp_path), tmp_path / "out"
    formats = ["json", "html", "pdf", "xlsx"]
    first = _inputs_opened(lambda: api.quote(folder / "cluster.yaml", out, formats))
    second = _inputs_opened(lambda: api.quote(folder / "cluster.yaml", out, formats))
    for opened in (first, second):
        kinds = _kinds(opened, folder, out)
        for kind in ("cluster.yaml", "catalog", "price book", "calibration", "tuned recipes", "measured log",
                     "template"):
            assert kinds.get(kind) == 1, (kind, kinds)
        assert {p: n for p, n in opened.items() if n > 1} == {}
    assert _kinds(second, folder, out)["manifest"] == 1
    previous = sorted(Path(p).suffix for p in second if p.startswith(os.path.realpath(out) + os.sep)
                      and not p.endswith(".procure-manifest"))
    assert previous == [".html", ".json", ".pdf", ".xlsx"]


def test_a_rerender_reads_the_folders_manifest_once(tmp_path):
    """``procure render`` of a saved JSON into its own folder: the manifest that names the JSON's
    input is the one the slug, the target check and the commit use. The saved JSON is read twice
    by design: once as the input (before the lock) and once as the target it replaces (under the
    lock, so a file edited in between is seen as edited)."""
    folder, out = _case("measured-sla", tmp_path), tmp_path / "out"
    (saved,) = (p for p in api.quote(folder / "cluster.yaml", out, ["json"]).written)
    opened = _inputs_opened(lambda: api.render_saved(saved, out, ["json", "html"]))
    assert opened[os.path.realpath(out / ".procure-manifest")] == 1
    assert {p: n for p, n in opened.items() if n > 1} == {os.path.realpath(saved): 2}


def test_estimate_gathers_once_and_reads_no_log(tmp_path):
    """``procure estimate`` times the model alone: its gather reads the inputs, catalog,
    calibration and tuned recipes once each, and no measured log."""
    folder = _case("measured-sla", tmp_path)
    opened = _inputs_opened(lambda: api.estimate(folder / "cluster.yaml"))
    kinds = _kinds(opened, folder, tmp_path / "out")
    assert {kinds.get(k) for k in ("cluster.yaml", "catalog", "calibration", "tuned recipes")} == {1}
    assert "measured log" not in kinds
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


def test_the_pipeline_runs_each_bid_on_the_release_gathered_for_it(tmp_path, monkeypatch):
    """Gather resolves each bid's software release; the pipeline uses that one and looks nothing up
    again: with the catalog's resolver gone, the document is built, each bid on the gathered
    release (here another one than its own: DeepSpeed of 2022)."""
    from dataclasses import replace

    from procure.catalog import software as catalog_software
    from procure.pipeline import build_document, gather

    folder = _case("measured-sla", tmp_path)
    inputs = api.load_inputs(folder / "cluster.yaml")
    gathered = gather(inputs)
    other = catalog_software.resolve_software("deepspeed", when="2022-12-31")
    assert other not in gathered.software
    chosen = replace(gathered, software=(other,) * len(inputs.bids))

    def no_lookup(*_args, **_kwargs):
        raise AssertionError("a software release looked up after gather")
    monkeypatch.setattr(catalog_software, "software_for", no_lookup)
    monkeypatch.setattr(catalog_software, "resolve_software", no_lookup)
    document = build_document(inputs, gathered=chosen)
    assert {(bid.software.stack, bid.software.version) for bid in document.bids} == {("deepspeed", other.version)}
