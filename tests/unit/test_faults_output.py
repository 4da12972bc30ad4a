"""Output faults: a full, read-only or forbidden disk, a file-size limit, a file where the folder
should be, a folder where a report should be, a failure half-way through the commit, a file that
appears during the run, SIGTERM while writing, two runs into one folder, and reruns.

Every one ends in exit 1 with a message (or, for reruns of procure's own reports, success), no
temp file left behind and every previous report intact.
"""

from __future__ import annotations

import errno
import io
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import procure.report as report
from procure.cli import main
from procure.errors import InputError
from procure.report import render
from procure.report import writer
from procure.document import load_quote
from procure.jsontext import to_json_bytes
from procure.report.writer import MANIFEST_NAME, check_targets, is_own_report, output_lock, write_all

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "tests" / "fixtures" / "quote_sample.json"
DOC = load_quote(SAMPLE.read_bytes(), "sample")
ENV = dict(os.environ, PYTHONPATH=str(REPO))


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".tmp", ".old", ".lock")))


# ---------------------------------------------------------------------------------------------
# environment errors are exit-1 diagnostics, nothing half-written


@pytest.mark.parametrize("code, words", [
    (errno.ENOSPC, "the disk is full"), (errno.EDQUOT, "quota"), (errno.EROFS, "read-only"),
    (errno.EACCES, "permission denied"), (errno.EFBIG, "file-size limit"), (errno.EIO, "Input/output error"),
])
def test_an_error_while_staging_is_an_input_error_and_leaves_the_old_reports(tmp_path, monkeypatch, code, words):
    (tmp_path / "q.json").write_bytes(to_json_bytes(DOC.to_data()))
    before = (tmp_path / "q.json").read_bytes()
    real = os.fsync

    def failing(fd):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(InputError) as info:
        render(DOC, ["json", "html"], tmp_path, "q")
    monkeypatch.setattr(os, "fsync", real)
    diag = info.value.diagnostics[0]
    assert diag.code == "unwritable" and words in diag.message and "no report was written" in diag.message
    assert (tmp_path / "q.json").read_bytes() == before and not (tmp_path / "q.html").exists()
    assert leftovers(tmp_path) == []


def test_a_read_only_folder_is_refused_at_the_lock(tmp_path, monkeypatch):
    real_open = os.open

    def read_only(path, flags, *args, **kwargs):
        if str(path).endswith(writer.LOCK_NAME):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(InputError, match="read-only"):
        render(DOC, ["json"], tmp_path / "out", "q")


def test_an_output_path_that_is_a_file_is_an_input_error(tmp_path):
    (tmp_path / "reports").write_text("I am a file")
    with pytest.raises(InputError, match="is a file, not a folder") as info:
        render(DOC, ["json"], tmp_path / "reports" / "deeper", "q")
    assert info.value.diagnostics[0].code == "unwritable"
    assert (tmp_path / "reports").read_text() == "I am a file"


def test_a_folder_where_a_report_goes_is_refused_even_with_force(tmp_path):
    (tmp_path / "q.json").mkdir()
    with pytest.raises(InputError, match="not a regular file"):
        render(DOC, ["json"], tmp_path, "q", force=True)
    assert (tmp_path / "q.json").is_dir() and leftovers(tmp_path) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_a_folder_without_write_permission_is_an_input_error(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(InputError, match="permission denied"):
            render(DOC, ["json"], folder, "q")
    finally:
        folder.chmod(0o755)


def test_a_real_file_size_limit_is_exit_1_with_a_message(tmp_path):
    """RLIMIT_FSIZE in a child: the write fails with EFBIG (Python ignores SIGXFSZ)."""
    script = textwrap.dedent(f"""
        import resource, sys
        from pathlib import Path
        from procure.report import render
        from procure.document import load_quote
        from procure.errors import InputError
        doc = load_quote(Path({str(SAMPLE)!r}).read_bytes(), "sample")
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
        try:
            render(doc, ["json"], Path({str(tmp_path)!r}), "q")
        except InputError as exc:
            print(exc); sys.exit(1)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=ENV, timeout=120)
    assert out.returncode == 1, out.stderr
    assert "file-size limit" in out.stdout and "unwritable" in out.stdout
    assert leftovers(tmp_path) == [] and not (tmp_path / "q.json").exists()


# ---------------------------------------------------------------------------------------------
# all or nothing


def test_a_failure_half_way_through_the_commit_puts_every_previous_report_back(tmp_path, monkeypatch):
    (tmp_path / "a.json").write_bytes(b"old a")
    (tmp_path / "c.json").write_bytes(b"old c")
    real_replace = os.replace
    calls = []

    def failing_second(src, dst, *args, **kwargs):
        if str(src).endswith(".tmp"):
            calls.append(dst)
            if len(calls) == 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", failing_second)
    with pytest.raises(InputError, match="the disk is full"):
        write_all([(tmp_path / "a.json", b"new a"), (tmp_path / "b.json", b"new b"), (tmp_path / "c.json", b"new c")])
    monkeypatch.setattr(os, "replace", real_replace)
    assert (tmp_path / "a.json").read_bytes() == b"old a"       # renamed, then put back
    assert not (tmp_path / "b.json").exists()                     # the failed one
    assert (tmp_path / "c.json").read_bytes() == b"old c"        # never reached
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "c.json"]


def test_a_file_that_appears_during_the_run_is_not_replaced(tmp_path, monkeypatch):
    real = report.render_bytes

    def slow_render(*args, **kwargs):
        out = real(*args, **kwargs)
        (tmp_path / "q.json").write_bytes(b"another program wrote this meanwhile")
        return out

    monkeypatch.setattr(report, "render_bytes", slow_render)
    with pytest.raises(InputError, match="during this run") as info:
        render(DOC, ["html", "json"], tmp_path, "q")
    assert info.value.diagnostics[0].code == "exists"
    assert (tmp_path / "q.json").read_bytes() == b"another program wrote this meanwhile"
    assert not (tmp_path / "q.html").exists() and leftovers(tmp_path) == []


def test_check_targets_snapshots_what_was_there(tmp_path):
    (tmp_path / "q.json").write_bytes(to_json_bytes(DOC.to_data()))
    snapshot = check_targets([tmp_path / "q.json", tmp_path / "q.html"], force=False)
    assert snapshot[tmp_path / "q.html"] is None and snapshot[tmp_path / "q.json"] is not None


# ---------------------------------------------------------------------------------------------
# reruns: procure's own reports are replaced, anything else needs --force


@pytest.fixture(scope="module")
def quick_start(tmp_path_factory) -> Path:
    """The README's first command, run once in a fresh folder (its reports are reused below)."""
    folder = tmp_path_factory.mktemp("readme")
    shutil.copytree(REPO / "examples", folder / "examples")
    previous = os.getcwd()
    os.chdir(folder)
    try:
        result = CliRunner().invoke(main, ["quote", "examples/cluster.yaml", "-q"], catch_exceptions=False)
    finally:
        os.chdir(previous)
    assert result.exit_code == 0, result.output
    return folder


@pytest.fixture(scope="module")
def all_formats(quick_start, tmp_path_factory) -> dict[str, bytes]:
    reports = {p.suffix[1:]: p.read_bytes() for p in (quick_start / "reports").iterdir()}
    folder = tmp_path_factory.mktemp("html")
    render(DOC, ["html"], folder, "q")
    reports["html"] = (folder / "q.html").read_bytes()
    return reports


@pytest.mark.parametrize("fmt", ["pdf", "xlsx", "json", "html"])
def test_procure_recognises_its_own_report_of_every_format(all_formats, tmp_path, fmt):
    path = tmp_path / f"q.{fmt}"
    path.write_bytes(all_formats[fmt])
    assert is_own_report(path)


@pytest.mark.parametrize("fmt, edit", [
    ("json", lambda b: b.replace(b'"schema": "procure.quote/v2"', b'"schema": "mine"')),
    ("html", lambda b: b.replace(b'name="generator" content="procure"', b'name="generator" content="vim"')),
    ("pdf", lambda b: b + b"\n1 0 obj\n<< >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"),   # an editor's update
    ("xlsx", None),
    ("json", lambda b: b"my own notes"),
])
def test_a_report_someone_edited_or_wrote_is_not_procures(all_formats, tmp_path, fmt, edit):
    path = tmp_path / f"q.{fmt}"
    if edit is None:     # the workbook saved by Excel: it records who saved it last
        path.write_bytes(_resaved_by_someone(all_formats["xlsx"]))
    else:
        path.write_bytes(edit(all_formats[fmt]))
    assert not is_own_report(path)
    with pytest.raises(InputError, match="not written by procure"):
        check_targets([path], force=False)
    check_targets([path], force=True)


def _resaved_by_someone(xlsx: bytes) -> bytes:
    source, target = zipfile.ZipFile(io.BytesIO(xlsx)), io.BytesIO()
    with zipfile.ZipFile(target, "w") as out:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "docProps/core.xml":
                data = data.replace(b"<cp:lastModifiedBy>procure</cp:lastModifiedBy>",
                                    b"<cp:lastModifiedBy>Jane Finance</cp:lastModifiedBy>")
            out.writestr(item, data)
    return target.getvalue()


def test_rerunning_replaces_procures_own_reports_without_force(tmp_path):
    first = render(DOC, ["json", "html"], tmp_path, "q")
    second = render(DOC, ["json", "html"], tmp_path, "q")
    assert first == second and leftovers(tmp_path) == []


def test_the_readme_quick_start_command_twice_exits_0_both_times(quick_start, monkeypatch):
    first = {p.name: p.stat().st_ino for p in (quick_start / "reports").iterdir() if p.name != MANIFEST_NAME}
    monkeypatch.chdir(quick_start)
    result = CliRunner().invoke(main, ["quote", "examples/cluster.yaml", "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output            # the second time: its own reports are replaced
    second = {p.name: p.stat().st_ino for p in (quick_start / "reports").iterdir() if p.name != MANIFEST_NAME}
    assert sorted(Path(n).suffix for n in second) == [".json", ".pdf", ".xlsx"]
    assert first.keys() == second.keys() and all(first[n] != second[n] for n in first)     # new files, renamed in


# ---------------------------------------------------------------------------------------------
# two runs into one folder; SIGTERM


def test_a_second_process_into_a_locked_folder_exits_1_busy(tmp_path):
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    out = tmp_path / "reports"
    with output_lock(out):          # this process is "the first run", mid-way
        run = subprocess.run([sys.executable, "-m", "procure.cli", "quote", "examples/cluster.yaml", "-o", str(out),
                              "--format", "json"], cwd=tmp_path, capture_output=True, text=True, env=ENV, timeout=300)
    assert run.returncode == 1, run.stderr
    assert "busy" in run.stderr and f"pid {os.getpid()}" in run.stderr
    assert not any(out.glob("*.json"))


def test_two_concurrent_quotes_into_one_folder_one_writes_the_other_exits_1(tmp_path):
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    out = tmp_path / "reports"
    command = [sys.executable, "-m", "procure.cli", "quote", "examples/cluster.yaml", "-o", str(out), "-q"]
    first = subprocess.Popen(command + ["--format", "pdf,json"], cwd=tmp_path, env=ENV,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not (out / writer.LOCK_NAME).exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)            # the first run holds the folder: start the second now
    second = subprocess.run(command + ["--format", "json"], cwd=tmp_path, env=ENV, capture_output=True, text=True,
                            timeout=300)
    _, first_err = first.communicate(timeout=300)
    assert first.returncode == 0, first_err
    assert second.returncode == 1, second.stderr
    assert "busy" in second.stderr or "exists" in second.stderr
    assert sorted(p.suffix for p in out.iterdir() if p.name != MANIFEST_NAME) == [".json", ".pdf"]   # the first run's
    assert is_own_report(next(p for p in out.glob("*.json") if p.name != MANIFEST_NAME))


def test_sigterm_while_writing_removes_temp_files_and_keeps_the_old_report(tmp_path):
    (tmp_path / "q.json").write_bytes(b"the previous report")
    marker = tmp_path.parent / f"{tmp_path.name}-staged"
    script = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from procure.report import render, writer
        from procure.document import load_quote
        def slow(expected, paths, force):    # every file staged, about to commit
            Path({str(marker)!r}).write_text("x")
            time.sleep(60)
        writer._recheck = slow
        render(load_quote(Path({str(SAMPLE)!r}).read_bytes(), "sample"), ["json", "html"], Path({str(tmp_path)!r}), "q",
               force=True)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    deadline = time.monotonic() + 120
    while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert any(p.suffix == ".tmp" for p in tmp_path.iterdir())      # caught mid-write
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)
    assert child.returncode != 0 and "Terminated" in err
    assert (tmp_path / "q.json").read_bytes() == b"the previous report"
    assert leftovers(tmp_path) == [] and not (tmp_path / "q.html").exists()


def test_sigterm_during_a_cli_quote_exits_143_and_leaves_nothing(tmp_path):
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    out = tmp_path / "reports"
    child = subprocess.Popen([sys.executable, "-m", "procure.cli", "quote", "examples/cluster.yaml", "-o", str(out),
                              "--format", "pdf,json"], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not (out / writer.LOCK_NAME).exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 143, err
    assert "terminated" in err
    assert not out.exists() or list(out.iterdir()) == []
