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


# ---------------------------------------------------------------------------------------------
# the catalog cache runs no code


@pytest.fixture
def cache_roots(tmp_path, monkeypatch) -> tuple[list[Path], Path]:
    import shutil

    from procure.resources import catalog_dir, price_books_dir

    shutil.copytree(catalog_dir(), tmp_path / "hardware_catalog")
    shutil.copytree(price_books_dir(), tmp_path / "price_books")
    monkeypatch.setenv("PROCURE_CACHE_DIR", str(tmp_path / "cache"))
    return [tmp_path / "hardware_catalog", tmp_path / "price_books"], tmp_path / "cache"


def _load(roots: list[Path], calls: list[int]):
    from procure.catalog import cache
    from procure.catalog.load import load_catalog

    def build():
        calls.append(1)
        return load_catalog(*roots)
    return cache.cached("parsed", roots, build)


def test_a_pickle_in_the_cache_runs_nothing_and_changes_no_figure(cache_roots, tmp_path):
    import pickle

    from procure.catalog import cache

    roots, folder = cache_roots
    calls: list[int] = []
    honest = _load(roots, calls)
    (entry,) = folder.glob("catalog-parsed-*")
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    key = cache.catalog_key(roots)
    entry.write_bytes(pickle.dumps((key, Evil())))
    entry.chmod(0o600)
    again = _load(roots, calls)
    assert not marker.exists() and calls == [1, 1] and again == honest


def test_a_forged_json_entry_with_the_right_key_is_not_read_into_foreign_classes(cache_roots, tmp_path):
    import json

    from procure.catalog import cache

    roots, folder = cache_roots
    calls: list[int] = []
    honest = _load(roots, calls)
    (entry,) = folder.glob("catalog-parsed-*")
    key = cache.catalog_key(roots)
    for value in ({"$dc": "os:_wrap_close", "f": {}}, {"$dc": "subprocess:Popen", "f": {}},
                  {"$enum": "procure.x:Y", "v": 1}, {"__reduce__": ["os.system", "true"]}):
        entry.write_text(json.dumps({"schema": cache.SCHEMA, "key": key, "value": value}))
        assert _load(roots, calls) == honest
    assert calls == [1, 1, 1, 1, 1]


def test_a_same_size_price_edit_with_its_mtime_restored_is_picked_up(cache_roots):
    roots, _folder = cache_roots
    calls: list[int] = []
    _load(roots, calls)
    book = roots[1] / "aws-2026q3.yaml"
    info = book.stat()
    text = book.read_text(encoding="utf-8")
    assert 'price_per_gpu_hour: "6.88"' in text
    book.write_text(text.replace('price_per_gpu_hour: "6.88"', 'price_per_gpu_hour: "9.88"'), encoding="utf-8")
    os.utime(book, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert book.stat().st_size == info.st_size
    edited = _load(roots, calls)
    assert calls == [1, 1]
    assert str(edited.price_books["aws-2026q3"].line("h100-sxm5-80gb", "on-demand").price_per_gpu_hour) == "9.88"


def test_a_cache_entry_that_is_a_link_is_not_followed(cache_roots, tmp_path):
    roots, folder = cache_roots
    calls: list[int] = []
    _load(roots, calls)
    (entry,) = folder.glob("catalog-parsed-*")
    real = tmp_path / "elsewhere.json"
    real.write_bytes(entry.read_bytes())
    real.chmod(0o600)
    entry.unlink()
    entry.symlink_to(real)
    _load(roots, calls)
    assert calls == [1, 1]


def test_an_ignored_entry_is_noted_in_verbose_mode(cache_roots, caplog):
    import logging

    roots, folder = cache_roots
    calls: list[int] = []
    _load(roots, calls)
    (entry,) = folder.glob("catalog-parsed-*")
    entry.write_text("{not json")
    with caplog.at_level(logging.INFO, logger="procure.cache"):
        _load(roots, calls)
    assert "ignored the catalog cache entry" in caplog.text


# ---------------------------------------------------------------------------------------------
# the process environment: /dev/full, a non-UTF-8 locale, long names, an unreachable scheduler


def _procure(args: list[str], stdout, **env: str):
    import subprocess
    import sys

    environ = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), **env}
    return subprocess.run([sys.executable, "-m", "procure.cli", *args], stdout=stdout,
                          stderr=subprocess.PIPE, env=environ, timeout=120)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_stdout_on_dev_full_is_exit_1_with_a_message():
    with open("/dev/full", "w") as full:
        done = _procure(["catalog", "list"], full)
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert "No space left" in err and "Traceback" not in err and "internal error" not in err


def test_a_non_utf8_terminal_still_gets_the_catalog():
    import subprocess

    for encoding in ("ascii", "latin-1"):
        done = _procure(["catalog", "show", "h100-sxm5-80gb"], subprocess.PIPE, PYTHONIOENCODING=encoding)
        assert done.returncode == 0, done.stderr.decode()
        assert b"H100 SXM5 80GB" in done.stdout


def test_an_output_folder_name_too_long_is_exit_1(tmp_path, capsys):
    from procure import cli

    cluster = Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"
    with pytest.raises(SystemExit) as info:
        cli.main(["quote", str(cluster), "-o", str(tmp_path / ("a" * 300)), "--format", "json", "-q"])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert "too long" in err and "internal error" not in err


def test_an_unreachable_scheduler_is_exit_1_within_its_timeout(monkeypatch):
    pytest.importorskip("distributed")
    from procure.measure import scale

    monkeypatch.setattr(scale, "SCHEDULER_CONNECT_S", 1)
    with pytest.raises(scale.ScaleUnavailable) as info:
        with scale.connect("tcp://127.0.0.1:1"):
            pass
    assert info.value.exit_code == 1 and "cannot reach" in str(info.value) and "within 1 s" in str(info.value)


# ---------------------------------------------------------------------------------------------
# report names per input, edited reports kept, previous rounds kept


def _two_rfqs_with_one_name(tmp_path: Path) -> tuple[Path, Path]:
    import shutil

    examples = Path(__file__).resolve().parents[2] / "examples"
    made = []
    for vendor in ("a", "b"):
        folder = tmp_path / vendor
        shutil.copytree(examples, folder, symlinks=True)
        made.append(folder / "cluster.yaml")
    return made[0], made[1]       # the same title and file name, in two folders


def test_two_inputs_with_the_same_title_do_not_overwrite_each_other(tmp_path):
    from procure import api

    first_input, second_input = _two_rfqs_with_one_name(tmp_path)
    out = tmp_path / "reports"
    first = api.quote(first_input, out, ["json"])
    (first_json,) = first.written
    first_bytes = first_json.read_bytes()
    second = api.quote(second_input, out, ["json"])
    (second_json,) = second.written
    assert second_json != first_json and first_json.read_bytes() == first_bytes
    assert second_json.name.startswith(first_json.stem + "-")
    again = api.quote(first_input, out, ["json"])       # a rerun of the first keeps its name
    assert again.written == [first_json]


def test_a_report_edited_since_procure_wrote_it_is_kept_without_force(tmp_path):
    from procure import api

    first_input, _ = _two_rfqs_with_one_name(tmp_path)
    out = tmp_path / "reports"
    (written,) = api.quote(first_input, out, ["json"]).written
    original = written.read_text(encoding="utf-8")
    edited = original.replace('"title": "', '"title": "Edited: ', 1)
    assert edited != original
    written.write_text(edited, encoding="utf-8")       # still carries procure's fingerprint
    with pytest.raises(InputError) as info:
        api.quote(first_input, out, ["json"])
    assert info.value.diagnostics[0].code == "exists" and "--force" in info.value.diagnostics[0].message
    assert written.read_text(encoding="utf-8") == edited
    api.quote(first_input, out, ["json"], force=True)
    assert written.read_text(encoding="utf-8") != edited


def test_a_rerun_keeps_the_previous_rounds_json_for_diff(tmp_path):
    from procure import api

    first_input, _ = _two_rfqs_with_one_name(tmp_path)
    out = tmp_path / "reports"
    (written,) = api.quote(first_input, out, ["json"]).written
    round_one = written.read_bytes()
    api.quote(first_input, out, ["json"])               # same bytes: no round is added
    assert not list(out.glob("*.round-*.json"))
    text = first_input.read_text(encoding="utf-8")
    changed = text.replace("gpus: 4096", "gpus: 4000", 1)
    assert changed != text
    first_input.write_text(changed, encoding="utf-8")
    result = api.quote(first_input, out, ["json"])
    kept = out / f"{written.stem}.round-1.json"
    assert kept in result.written and kept.read_bytes() == round_one
    assert written.read_bytes() != round_one
