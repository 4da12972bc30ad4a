"""Input paths: nothing outside the cluster folder and the allowed paths is ever read (by symbolic
link or otherwise), a named pipe never blocks, `measured:` folders are read file by file,
duplicates once, and path checks take linear time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from procure import api
from procure.errors import InputError
from procure.measure import LogError, ingest
from procure.measure import readers

REPO = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(REPO))
LOG = "".join(f" iteration {i}/ 100 | elapsed time per iteration (ms): {1000 + i}.0 |\n" for i in range(1, 21))
SECRET = "iteration 7/ 9 | elapsed time per iteration (ms): 4242.0 | TOP-SECRET\n"


@pytest.fixture
def case(tmp_path) -> Path:
    """A cluster folder with the example, its logs, and a secret log next to (outside) it."""
    folder = tmp_path / "rfq"
    shutil.copytree(REPO / "examples", folder)
    (tmp_path / "secret.log").write_text(SECRET)
    return folder


def with_measured(folder: Path, entries: str) -> Path:
    text = (folder / "cluster.yaml").read_text(encoding="utf-8")
    assert "measured: [logs/coreweave-burnin.log]" in text
    (folder / "cluster.yaml").write_text(text.replace("measured: [logs/coreweave-burnin.log]", f"measured: {entries}"),
                                         encoding="utf-8")
    return folder / "cluster.yaml"


def codes(exc: InputError) -> list[str]:
    return [d.code for d in exc.diagnostics]


# ---------------------------------------------------------------------------------------------
# measured: folders, links, pipes


def test_a_measured_folder_is_read_as_its_files(case):
    (case / "logs" / "more").mkdir()
    (case / "logs" / "more" / "rank1.log").write_text(LOG)
    (case / "logs" / ".hidden.log").write_text("not read")
    inputs = api.load_inputs(with_measured(case, "[logs]"))
    files = next(b for b in inputs.bids if b.bid.id == "coreweave-h100-1y").measured_paths
    assert [p.name for p in files] == ["coreweave-burnin.log", "rank1.log"]
    document = api.quote_document(case / "cluster.yaml").to_data()
    measured = [p for p in document["inputs"] if p["role"] == "measured"]
    assert sorted(p["path"] for p in measured) == ["coreweave-burnin.log", "rank1.log"]


def test_a_link_inside_a_measured_folder_that_leads_outside_is_refused(case, tmp_path):
    os.symlink(tmp_path / "secret.log", case / "logs" / "evil.log")
    with pytest.raises(InputError) as info:
        api.quote_document(with_measured(case, "[logs]"))
    assert codes(info.value) == ["path-not-allowed"] and "evil.log" in str(info.value)
    assert "TOP-SECRET" not in str(info.value)


def test_a_link_to_proc_self_environ_is_refused(case):
    os.symlink("/proc/self/environ", case / "logs" / "environ.log")
    with pytest.raises(InputError, match="outside the allowed folders"):
        api.validate(with_measured(case, "[logs]"))


def test_a_link_inside_the_allowed_folders_is_read(case):
    os.symlink(case / "logs" / "coreweave-burnin.log", case / "logs" / "alias.log")
    inputs = api.load_inputs(with_measured(case, "[logs]"))
    files = next(b for b in inputs.bids if b.bid.id == "coreweave-h100-1y").measured_paths
    assert [p.name for p in files] == ["coreweave-burnin.log"]          # one file, once


def test_allow_path_admits_the_outside_file(case, tmp_path):
    os.symlink(tmp_path / "secret.log", case / "logs" / "evil.log")
    inputs = api.load_inputs(with_measured(case, "[logs]"), allow_paths=[tmp_path])
    files = next(b for b in inputs.bids if b.bid.id == "coreweave-h100-1y").measured_paths
    assert "secret.log" in [p.name for p in files]


def test_a_link_loop_in_a_measured_folder_ends(case):
    os.symlink(case / "logs", case / "logs" / "loop")
    inputs = api.load_inputs(with_measured(case, "[logs]"))
    assert len(next(b for b in inputs.bids if b.bid.id == "coreweave-h100-1y").measured_paths) == 1


def test_a_named_pipe_in_measured_is_refused_without_blocking(case):
    os.mkfifo(case / "logs" / "pipe.log")
    run = subprocess.run([sys.executable, "-m", "procure.cli", "validate", str(with_measured(case, "[logs/pipe.log]"))],
                         capture_output=True, text=True, env=ENV, timeout=120)
    assert run.returncode == 1 and "named pipe" in run.stderr and "not-a-file" in run.stderr


def test_a_named_pipe_inside_a_measured_folder_is_refused(case):
    os.mkfifo(case / "logs" / "pipe.log")
    with pytest.raises(InputError, match="named pipe"):
        api.validate(with_measured(case, "[logs]"))


@pytest.mark.parametrize("command", [["validate", "cluster.yaml"], ["quote", "cluster.yaml", "-o", "out"],
                                     ["render", "cluster.yaml"], ["diff", "cluster.yaml", "cluster.yaml"],
                                     ["ingest", "cluster.yaml"], ["backtest", "cluster.yaml"]])
def test_a_named_pipe_given_to_any_command_never_blocks(tmp_path, command):
    os.mkfifo(tmp_path / "cluster.yaml")
    run = subprocess.run([sys.executable, "-m", "procure.cli", *command], cwd=tmp_path, capture_output=True, text=True,
                         env=ENV, timeout=120)
    assert run.returncode == 1, run.stderr
    assert "pipe" in run.stderr or "regular file" in run.stderr, run.stderr


# ---------------------------------------------------------------------------------------------
# ingest: folders stay folders


def test_ingest_skips_links_out_of_a_folder_and_never_reads_them(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "run.log").write_text(LOG)
    os.symlink(tmp_path / "secret.log", folder / "evil.log")
    (tmp_path / "secret.log").write_text(SECRET)
    os.mkfifo(folder / "pipe.log")
    result = ingest([folder]).to_dict()
    assert [Path(s["path"]).name for s in result["sources"]] == ["run.log"]
    reasons = {Path(s["path"]).name: s["reason"] for s in result["skipped"]}
    assert "outside the folder" in reasons["evil.log"] and "named pipe" in reasons["pipe.log"]
    assert "4242" not in str(result)


def test_ingest_of_a_named_pipe_is_a_log_error(tmp_path):
    os.mkfifo(tmp_path / "pipe.log")
    with pytest.raises(LogError, match="named pipe"):
        ingest([tmp_path / "pipe.log"])


def test_the_readers_refuse_a_pipe_even_when_called_directly(tmp_path):
    os.mkfifo(tmp_path / "pipe.log")
    for read in (readers.read_head, readers.read_bytes):
        with pytest.raises(LogError, match="named pipe"):
            read(tmp_path / "pipe.log")


# ---------------------------------------------------------------------------------------------
# many entries, long paths


def test_ten_thousand_duplicate_entries_are_read_once(case, monkeypatch):
    reads = []
    real = readers.read_bytes
    monkeypatch.setattr(readers, "read_bytes", lambda path, *a, **k: reads.append(path) or real(path, *a, **k))
    entries = "[" + ", ".join(["logs/coreweave-burnin.log", "./logs/coreweave-burnin.log", "logs"] * 3333 + ["logs/"]) + "]"
    document = api.quote_document(with_measured(case, entries)).to_data()
    assert len(reads) == 1
    assert [p["path"] for p in document["inputs"] if p["role"] == "measured"] == ["coreweave-burnin.log"]


def test_a_megabyte_long_measured_path_is_refused_at_once(case):
    with pytest.raises(InputError) as info:
        api.validate(with_measured(case, "[" + "a/" * 500_000 + "x.log]"))
    assert codes(info.value) == ["bad-path"] and len(str(info.value)) < 1000     # the path is not echoed in full


def test_a_path_with_a_nul_byte_or_an_unknown_user_is_a_bad_path(case):
    with pytest.raises(InputError) as info:
        api.validate(with_measured(case, '["logs/a\\0b.log", "~nosuchuser_xyz/x.log"]'))
    assert sorted(codes(info.value)) == ["bad-path", "bad-path"]
