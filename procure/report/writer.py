"""Report files: all of a run's files staged, then committed together or not at all.

- ``output_lock``: an exclusive lock on the output folder (``.procure.lock``, flock) for the
  whole run, so a second run into the same folder exits 1 ("busy") instead of racing.
- ``check_targets``: before anything is rendered, refuse to replace a file procure did not
  write (unless ``--force``); procure's own previous reports, recognised by the fingerprint
  inside them (``is_own_report``), are replaced: rerunning a command just works.
- ``write_all``: every file written to a synced temp file in its folder first; at commit time
  the targets are checked again (a file that appeared or changed since the check is not
  replaced), previous versions are kept as hard links until every rename succeeded, and a
  failure puts them back. SIGTERM during the run raises ``Terminated``, so temp files are
  removed and the lock released as for any other failure.

Environment failures (disk full, read-only file system, permission, a file where a folder
should be, a file-size limit) are exit-1 diagnostics naming the path, never tracebacks.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import tempfile
import threading
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from procure.errors import Diagnostic, InputError, ProcureError

LOCK_NAME = ".procure.lock"
FINGERPRINT_SCAN_BYTES = 512 * 1024 * 1024   # larger files are never taken for procure's own
_HELD: dict[str, list[int]] = {}             # folder -> [fd, depth]: the lock is re-entrant in a process
_HELD_GUARD = threading.Lock()
# What a run read of its output folder under the lock, kept for the rest of the hold (the lock keeps
# other procure runs out): folder -> its manifest as read, then as written (the slug, the checks and
# the commit all use one read), and folder -> {file name: bytes} of the reports the target check read,
# so the previous JSON kept as a round is the one that was checked, not read a second time.
_MANIFEST_HELD: dict[str, "Manifest"] = {}
_TARGETS_HELD: dict[str, dict[str, bytes]] = {}
KEEP_TARGET_BYTES = 64 * 1024 * 1024           # a larger report is read again rather than held in memory


class Terminated(ProcureError):
    """SIGTERM arrived: temp files were removed and nothing partial was committed."""

    exit_code = 128 + signal.SIGTERM


def _unwritable(path: Path | str, exc: OSError, doing: str = "write this file") -> InputError:
    reason = exc.strerror or str(exc)
    hints = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
             errno.EROFS: "the file system is read-only", errno.EFBIG: "the file-size limit was reached",
             errno.ENOTDIR: "a part of the path is a file, not a folder",
             errno.EACCES: "permission denied", errno.EPERM: "permission denied"}
    why = hints.get(exc.errno, reason) if exc.errno is not None else reason
    return InputError(Diagnostic(str(path), 0, 0, "unwritable",
                                 f"cannot {doing}: {why}; no report was written or replaced"))


# ---------------------------------------------------------------------------------------------
# the lock


@contextmanager
def output_lock(folder: Path) -> Iterator[None]:
    """Hold the output folder's lock (creating the folder) for the ``with`` block; InputError
    ``busy`` at once when another run holds it. Re-entrant within one process."""
    folder = Path(folder)
    created = _make_folder(folder)
    key = os.path.realpath(folder)
    try:
        with _terminate_as_exception():
            with _HELD_GUARD:
                held = _HELD.get(key)
                if held is not None:
                    held[1] += 1
                else:
                    _HELD[key] = [_acquire(folder), 1]
            try:
                yield
            finally:
                with _HELD_GUARD:
                    _HELD[key][1] -= 1
                    if _HELD[key][1] == 0:
                        _MANIFEST_HELD.pop(key, None)
                        _TARGETS_HELD.pop(key, None)
                        _release(folder, _HELD.pop(key)[0])
    finally:
        for made in created:   # a run that wrote nothing leaves no empty folder behind
            try:
                made.rmdir()
            except OSError:
                break


def _make_folder(folder: Path) -> list[Path]:
    """Create ``folder`` and missing parents; return those created, deepest first."""
    missing = []
    probe = folder
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise InputError(Diagnostic(str(folder), 0, 0, "unwritable",
                                    f"cannot write reports into {folder}: {probe} is a file, not a folder"))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(folder, exc, "create the folder") from None
    return missing


def _acquire(folder: Path) -> int:
    import fcntl

    path = folder / LOCK_NAME
    for _ in range(5):
        fd = _open_lock(folder, path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise InputError(Diagnostic(str(folder), 0, 0, "busy",
                                        f"{folder} is busy: another procure run{holder} is writing reports "
                                        "into it; wait for it to finish or choose another -o folder")) from None
        except OSError as exc:
            os.close(fd)
            raise _unwritable(folder, exc, "lock the report folder") from None
        if _same_file(fd, path):   # not unlinked by a finishing run between open and flock
            if not _lock_content_ok(fd):   # a regular file that is not a lock procure left: kept
                os.close(fd)
                raise _foreign_lock(path, "is a file procure did not write")
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            return fd
        os.close(fd)
    raise InputError(Diagnostic(str(folder), 0, 0, "busy", f"{folder} is busy: its lock keeps changing"))


_LOCK_CONTENT = re.compile(rb"\A(\d{1,20}\n)?\Z")   # empty (just created) or a PID line


def _foreign_lock(path: Path, what: str) -> InputError:
    return InputError(Diagnostic(str(path), 0, 0, "unsafe-lock",
                                 f"{path} {what}; procure neither opens nor removes it. Remove it "
                                 "yourself if it is safe, or choose another -o folder"))


def _open_lock(folder: Path, path: Path) -> int:
    """The lock file, opened without following a link, without blocking on a FIFO and without
    truncating: created exclusively when absent; an existing one only when it is a plain file
    with a single name (a hard link to another file is that file). Anything else is refused."""
    import stat

    flags = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(5):
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            try:
                return os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                continue   # another run created it in between: look again
            except OSError as exc:
                raise _unwritable(folder, exc, "lock the report folder") from None
        except OSError as exc:
            raise _unwritable(folder, exc, "lock the report folder") from None
        if stat.S_ISLNK(info.st_mode):
            raise _foreign_lock(path, "is a link")
        if not stat.S_ISREG(info.st_mode):
            raise _foreign_lock(path, "is not a regular file (a FIFO, device, socket or folder)")
        if info.st_nlink != 1:
            raise _foreign_lock(path, "has other names (a hard link to another file)")
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            continue
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO):
                raise _foreign_lock(path, "changed into a link or special file while being opened") from None
            raise _unwritable(folder, exc, "lock the report folder") from None
        after = os.fstat(fd)
        if not stat.S_ISREG(after.st_mode) or after.st_nlink != 1:
            os.close(fd)
            raise _foreign_lock(path, "is not a plain file of its own")
        return fd
    raise InputError(Diagnostic(str(folder), 0, 0, "busy", f"{folder} is busy: its lock keeps changing"))


def _lock_content_ok(fd: int) -> bool:
    try:
        if os.fstat(fd).st_size > 32:
            return False
        return bool(_LOCK_CONTENT.match(os.pread(fd, 33, 0)))
    except OSError:
        return False


def _holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).split()[0].decode()
        return f" (pid {int(pid)})"
    except (OSError, IndexError, ValueError):
        return ""


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.lstat(path)   # a link put in its place is not our lock
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _release(folder: Path, fd: int) -> None:
    try:
        if _same_file(fd, folder / LOCK_NAME):
            os.unlink(folder / LOCK_NAME)   # while still locked: a waiter re-checks the inode
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def _terminate_as_exception() -> Iterator[None]:
    """Turn SIGTERM into ``Terminated`` for the block (main thread only: Python's rule)."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
        yield
        return

    def handler(_signum: int, _frame: object) -> None:
        raise Terminated("terminated (SIGTERM); temporary files were removed and no report was replaced")

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


# ---------------------------------------------------------------------------------------------
# what is there before the run


State = tuple[int, int, int, int, int]          # device, inode, size, mtime (ns), mode
Snapshot = dict[Path, State | None]


def _state(path: Path) -> State | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _unwritable(path, exc, "check this file") from None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)


def check_targets(paths: list[Path], force: bool, manifest: Manifest | None = None) -> Snapshot:
    """Refuse, before any rendering, to replace what procure did not write (unless ``force``),
    and anything that is not a plain file. Returns what each target was, for the commit check.
    ``manifest``: the folder's record; a file it lists is procure's only while its SHA-256 still
    matches (an edited report is kept); a file it does not list falls back to the fingerprint."""
    snapshot = {Path(p): _state(Path(p)) for p in paths}
    problems = [d for p, state in snapshot.items() if (d := _target_problem(p, state, force, manifest))]
    if problems:
        raise InputError(problems)
    return snapshot


def _target_problem(path: Path, state: State | None, force: bool,
                    manifest: Manifest | None = None) -> Diagnostic | None:
    import stat

    if state is None:
        return None
    if not stat.S_ISREG(state[4]):
        return Diagnostic(str(path), 0, 0, "exists", f"{path} exists and is not a regular file "
                                                     "(a folder or a link); remove or rename it")
    if force:
        return None
    known = unedited(path, manifest) if manifest else None
    if known is False:
        return Diagnostic(str(path), 0, 0, "exists", f"{path} was written by procure and edited since; "
                                                     "it is kept: pass --force to overwrite it")
    if known or is_own_report(path):
        return None
    return Diagnostic(str(path), 0, 0, "exists", f"{path} already exists and was not written by procure "
                                                 "(or was edited since); pass --force to overwrite it")


# ---------------------------------------------------------------------------------------------
# the manifest: what procure wrote into this folder, for which input


MANIFEST_NAME = ".procure-manifest"
MANIFEST_SCHEMA = "procure.outputs/v1"
MANIFEST_MAX_BYTES = 4 * 1024 * 1024
Manifest = dict[str, dict[str, str]]        # file name -> {"sha256": hex, "source": resolved input}


def read_manifest(folder: Path) -> Manifest:
    """The folder's record of the files procure wrote (SHA-256 of each and the input it came
    from); empty when absent, a link, too large or not procure's. Under the folder's lock it is
    read once per hold: every later call of the run gets that record, as this run last wrote it."""
    key = os.path.realpath(folder)
    with _HELD_GUARD:
        held = key in _HELD
        if held and key in _MANIFEST_HELD:
            return _copy(_MANIFEST_HELD[key])
    manifest = _read_manifest_file(Path(folder))
    if held:
        _hold_manifest(key, manifest)
    return manifest


def _copy(manifest: Manifest) -> Manifest:
    return {name: dict(entry) for name, entry in manifest.items()}


def _hold_manifest(key: str, manifest: Manifest) -> None:
    with _HELD_GUARD:
        if key in _HELD:
            _MANIFEST_HELD[key] = _copy(manifest)


def _read_manifest_file(folder: Path) -> Manifest:
    import json

    from procure.sources.files import open_regular, read_fd_limited

    try:
        fd = open_regular(Path(folder) / MANIFEST_NAME, follow_symlinks=False)
    except OSError:
        return {}
    try:
        data = read_fd_limited(fd, MANIFEST_MAX_BYTES)
    except OSError:
        return {}
    finally:
        os.close(fd)
    try:
        doc = json.loads(data) if len(data) <= MANIFEST_MAX_BYTES else None
    except ValueError:
        return {}
    if not isinstance(doc, dict) or doc.get("schema") != MANIFEST_SCHEMA or not isinstance(doc.get("files"), dict):
        return {}
    return {str(name): {k: str(v) for k, v in entry.items() if k in ("sha256", "source") and isinstance(v, str)}
            for name, entry in doc["files"].items() if isinstance(entry, dict)}


def recorded(manifest: Manifest, written: list[tuple[Path, bytes]], source: str) -> Manifest:
    """The manifest after ``written`` (each with the input it came from) replaced their entries."""
    import hashlib

    files = _copy(manifest)
    for path, data in written:
        files[Path(path).name] = {"sha256": hashlib.sha256(data).hexdigest(), "source": source}
    return dict(sorted(files.items()))


def manifest_bytes(manifest: Manifest) -> bytes:
    """The manifest file's content."""
    import json

    return (json.dumps({"schema": MANIFEST_SCHEMA, "files": dict(sorted(manifest.items()))},
                       indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def write_recorded(folder: Path, targets: list[Path], produce: Callable[[Snapshot], list[tuple[Path, bytes]]],
                   *, force: bool, source: str) -> list[Path]:
    """Under the folder's lock: check ``targets`` against the manifest, render them with
    ``produce`` (given what each target was), and commit them together with the manifest's new
    record (``source``: the input they came from). Returns the paths written, manifest aside."""
    folder = Path(folder)
    with output_lock(folder):
        manifest = read_manifest(folder)
        before = check_targets(targets, force, manifest)
        outputs = produce(before)
        after = recorded(manifest, outputs, source)
        written = write_all(outputs + [(folder / MANIFEST_NAME, manifest_bytes(after))], expected=before,
                            force=force)
        _hold_manifest(os.path.realpath(folder), after)     # what the file now says, for the rest of the hold
        with _HELD_GUARD:
            _TARGETS_HELD.pop(os.path.realpath(folder), None)   # the reports read before are replaced
        return [p for p in written if p.name != MANIFEST_NAME]


def owner(manifest: Manifest, name: str) -> str | None:
    """The input a file in the folder was written for, per the manifest (None: unknown)."""
    entry = manifest.get(name)
    return entry.get("source") if entry else None


def unedited(path: Path, manifest: Manifest) -> bool | None:
    """True: the file is exactly what procure wrote; False: procure wrote it and it was edited
    since; None: the manifest does not know it."""
    import hashlib

    entry = manifest.get(path.name)
    if not entry or "sha256" not in entry:
        return None
    from procure.sources.files import open_regular

    try:
        fd = open_regular(path, follow_symlinks=False)
    except OSError:
        return False
    digest, chunks, size = hashlib.sha256(), [], 0
    try:
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
            size += len(chunk)
            if size <= KEEP_TARGET_BYTES:
                chunks.append(chunk)
    except OSError:
        return False
    finally:
        os.close(fd)
    if size <= KEEP_TARGET_BYTES:
        _keep_target(path, b"".join(chunks))
    return digest.hexdigest() == entry["sha256"]


def _keep_target(path: Path, data: bytes) -> None:
    """Hold ``data`` as ``path``'s content while its folder's lock is held (else nothing)."""
    key = os.path.realpath(path.parent)
    with _HELD_GUARD:
        if key in _HELD:
            _TARGETS_HELD.setdefault(key, {})[path.name] = data


def previous_content(path: Path, limit: int) -> bytes | None:
    """The report at ``path`` as the target check read it under the lock (else read now, at most
    ``limit + 1`` bytes); None when it cannot be read."""
    with _HELD_GUARD:
        kept = _TARGETS_HELD.get(os.path.realpath(path.parent), {}).get(path.name)
    if kept is not None:
        return kept
    from procure.sources.files import open_regular, read_fd_limited

    try:
        fd = open_regular(path, follow_symlinks=False)
        try:
            return read_fd_limited(fd, limit)
        finally:
            os.close(fd)
    except OSError:
        return None


# ---------------------------------------------------------------------------------------------
# the fingerprint: procure's own reports


_JSON_MARKS = (b'\n  "schema": "procure.', b'\n  "procure_version": "')   # a quote or a sweep
_HTML_MARK = re.compile(rb'<meta\s+name="generator"\s+content="procure', re.IGNORECASE)
_PDF_STREAM = re.compile(rb"stream\r?\n")


def is_own_report(path: Path) -> bool:
    """Is ``path`` a report procure wrote and nobody edited since? Each format carries procure's
    fingerprint: JSON its top-level ``schema``/``procure_version``; HTML the generator meta; the
    PDF that generator as /Creator, WeasyPrint as /Producer and one revision (an editor appends a
    second); the workbook ``procure`` as creator *and* last modifier (Excel records its user)."""
    check = {".json": _own_json, ".html": _own_html, ".pdf": _own_pdf, ".xlsx": _own_xlsx,
             ".parquet": _own_parquet, ".yaml": _own_yaml}.get(path.suffix.lower())
    if check is None:
        return False
    try:
        if not path.is_file() or path.stat().st_size > FINGERPRINT_SCAN_BYTES:
            return False
        from procure.sources.files import open_regular, read_fd_limited

        fd = open_regular(path, follow_symlinks=False)
        try:
            data = read_fd_limited(fd, FINGERPRINT_SCAN_BYTES)
        finally:
            os.close(fd)
        if len(data) <= KEEP_TARGET_BYTES:
            _keep_target(path, data)
        return check(data)
    except (OSError, ValueError, zipfile.BadZipFile, zlib.error, KeyError):
        return False


def _own_json(data: bytes) -> bool:
    return data.startswith(b"{") and all(mark in data for mark in _JSON_MARKS)


def _own_yaml(data: bytes) -> bool:
    """A response form or an acceptance spec procure wrote: its mark in the first lines."""
    return b"# procure response form\n" in data[:2048] or b"# procure acceptance spec\n" in data[:2048]


def _own_html(data: bytes) -> bool:
    return bool(_HTML_MARK.search(data[:65536]))


def _own_pdf(data: bytes) -> bool:
    if not data.startswith(b"%PDF-") or data.count(b"%%EOF") != 1:
        return False
    for match in _PDF_STREAM.finditer(data):   # the document info sits in a compressed object stream
        try:
            text = zlib.decompressobj().decompress(data[match.end():match.end() + (1 << 22)], 1 << 22)
        except zlib.error:
            continue
        if b"/Creator (procure" in text:
            return b"/Producer (WeasyPrint" in text
    return False


def _own_parquet(data: bytes) -> bool:
    """The sweep's table: procure as the generator in the footer's key-value metadata."""
    if len(data) < 12 or not data.startswith(b"PAR1") or not data.endswith(b"PAR1"):
        return False
    from procure.sweep.columns import GENERATOR_KEY   # only when a Parquet file is in the way

    footer = int.from_bytes(data[-8:-4], "little")
    return footer + 8 <= len(data) and GENERATOR_KEY.encode() in data[-8 - footer:-8]



def _own_xlsx(data: bytes) -> bool:
    import io

    with zipfile.ZipFile(io.BytesIO(data)) as book:
        info = book.getinfo("docProps/core.xml")
        if info.file_size > 65536:
            return False
        core = book.read(info)
    return b"<dc:creator>procure</dc:creator>" in core and b"<cp:lastModifiedBy>procure</cp:lastModifiedBy>" in core


# ---------------------------------------------------------------------------------------------
# staging and committing


def write_all(outputs: list[tuple[Path, bytes]], *, expected: Snapshot | None = None,
              force: bool = False) -> list[Path]:
    """Stage every output as a synced temp file, check the targets again, then rename them all
    into place; on any failure (SIGTERM included) no temp file remains and every previous
    report is back. ``expected``: what ``check_targets`` saw (default: what is there now)."""
    outputs = [(Path(p), data) for p, data in outputs]
    expected = {p: _state(p) for p, _ in outputs} if expected is None else expected
    staged: list[tuple[str, Path]] = []
    with _terminate_as_exception():
        try:
            for path, data in outputs:
                _stage(path, data, staged)
            _recheck(expected, [p for _, p in staged], force)
            _commit(staged)
        except BaseException:
            for tmp_name, _ in staged:
                _remove_quietly(tmp_name)
            raise
    for folder in sorted({p.parent for _, p in staged}):
        _fsync_dir(folder)
    return [p for _, p in staged]


def _recheck(expected: Snapshot, paths: list[Path], force: bool) -> None:
    """Existence at commit time: a target that appeared or changed since the check is another
    writer's file; it is not replaced unless ``force`` (or it is procure's own report)."""
    problems = []
    for path in paths:
        now = _state(path)
        if now == expected.get(path, now):
            continue
        problem = _target_problem(path, now, force)
        if problem is not None:
            problems.append(Diagnostic(str(path), 0, 0, "exists",
                                       f"{path} was created or changed by someone else during this run; "
                                       "nothing was replaced (pass --force to overwrite it)"))
    if problems:
        raise InputError(problems)


def _commit(staged: list[tuple[str, Path]]) -> None:
    """Rename every temp file into place; previous versions are hard links until all succeeded."""
    backups: list[tuple[str | None, Path]] = []
    try:
        for tmp_name, path in staged:
            backups.append((_backup(path), path))
            os.replace(tmp_name, path)
    except BaseException as exc:
        for backup, path in reversed(backups):
            _restore(backup, path)
        if isinstance(exc, OSError):
            raise _unwritable(path, exc) from None
        raise
    for backup, _ in backups:
        if backup:
            _remove_quietly(backup)


def _backup(path: Path) -> str | None:
    """A hard link to the previous version (no copy: its bytes stay where they are)."""
    if not os.path.lexists(path):
        return None
    for _ in range(100):
        name = str(path.parent / f".{path.name}.{os.urandom(6).hex()}.old")
        try:
            os.link(path, name, follow_symlinks=False)
            return name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free name for a backup link", str(path))


def _restore(backup: str | None, path: Path) -> None:
    try:
        if backup is None:
            if os.path.lexists(path):
                os.unlink(path)   # a new file of this failed run
        else:
            os.replace(backup, path)
    except OSError:
        pass


def _stage(path: Path, data: bytes, staged: list[tuple[str, Path]]) -> None:
    """Write ``data`` to a synced temp file next to ``path``, listed in ``staged`` from the moment
    it exists (so a failure or SIGTERM at any point finds it to remove)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _unwritable(path, exc) from None
    staged.append((tmp_name, path))
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)   # mkstemp makes 0600; a report is an ordinary file
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        raise _unwritable(path, exc) from None


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def _remove_quietly(name: str) -> None:
    try:
        os.unlink(name)
    except FileNotFoundError:
        pass


def _fsync_dir(folder: Path) -> None:
    # Makes the rename durable on POSIX; not supported (and not needed) everywhere.
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
