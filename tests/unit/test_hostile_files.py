"""Issue 30: the files procure writes are its own (lock), the cache runs no code, resume chunks
are checked, and the process environment (/dev/full, locale, long names) ends in exit 1."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from procure.errors import InputError
from procure.report import writer
from procure.report.writer import LOCK_NAME, output_lock


def _refused(folder: Path) -> InputError:
    with pytest.raises(InputError) as info:
        with output_lock(folder):
            pass
    return info.value


def test_a_lock_that_links_to_a_users_file_leaves_it_intact(tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("my notes\n")
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / LOCK_NAME).symlink_to("../notes.md")
    err = _refused(reports)
    assert err.diagnostics[0].code == "unsafe-lock" and "link" in err.diagnostics[0].message
    assert notes.read_text() == "my notes\n"
    assert os.path.islink(reports / LOCK_NAME)   # the link is neither followed nor removed


def test_a_lock_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    os.mkfifo(reports / LOCK_NAME)
    err = _refused(reports)
    assert err.diagnostics[0].code == "unsafe-lock"
    assert stat.S_ISFIFO(os.lstat(reports / LOCK_NAME).st_mode)


def test_a_lock_that_links_to_dev_zero_is_refused(tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / LOCK_NAME).symlink_to("/dev/zero")
    assert _refused(reports).diagnostics[0].code == "unsafe-lock"


def test_a_lock_that_is_a_hard_link_to_a_users_file_is_not_truncated(tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("123\n")          # even content that looks like a PID
    reports = tmp_path / "reports"
    reports.mkdir()
    os.link(notes, reports / LOCK_NAME)
    assert _refused(reports).diagnostics[0].code == "unsafe-lock"
    assert notes.read_text() == "123\n"


def test_a_regular_lock_file_with_foreign_content_is_kept(tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / LOCK_NAME).write_text("not a pid, somebody's text\n")
    assert _refused(reports).diagnostics[0].code == "unsafe-lock"
    assert (reports / LOCK_NAME).read_text() == "not a pid, somebody's text\n"


def test_a_stale_lock_procure_left_is_taken_over_and_removed(tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / LOCK_NAME).write_text("999999\n")
    with output_lock(reports):
        assert (reports / LOCK_NAME).read_text() == f"{os.getpid()}\n"
    assert not os.path.lexists(reports / LOCK_NAME)


def test_the_cli_exits_1_on_a_symlinked_lock(tmp_path, monkeypatch, capsys):
    from procure import cli

    notes = tmp_path / "notes.md"
    notes.write_text("keep me\n")
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / LOCK_NAME).symlink_to(notes)
    monkeypatch.setattr(writer, "_HELD", {})
    example = Path(__file__).resolve().parents[2] / "examples"
    cluster = next(iter(sorted(example.rglob("cluster.yaml"))), None)
    if cluster is None:
        pytest.skip("no example cluster.yaml in this checkout")
    with pytest.raises(SystemExit) as info:
        cli.main(["quote", str(cluster), "-o", str(reports), "--format", "json"])
    assert info.value.code == 1
    assert notes.read_text() == "keep me\n"
    assert "unsafe-lock" in capsys.readouterr().err
