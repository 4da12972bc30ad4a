"""Atomic report files: bytes first, then a temp file in the target folder, fsync, rename.

A failure at any point leaves no temp file behind and the previous report untouched, so a
reader never sees half a PDF. Every check (does the file exist, may we overwrite it) happens
before anything is rendered: see ``check_targets``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from procure.errors import Diagnostic, InputError


def check_targets(paths: list[Path], force: bool) -> None:
    """Refuse, before any rendering, to overwrite existing reports unless ``force``."""
    if force:
        return
    existing = [p for p in paths if p.exists()]
    if existing:
        raise InputError([
            Diagnostic(str(p), 1, 1, "exists", f"{p} already exists; pass --force to overwrite it")
            for p in existing
        ])


def write_atomic(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (same-folder temp file, fsync, os.replace)."""
    return write_all([(Path(path), data)])[0]


def write_all(outputs: list[tuple[Path, bytes]]) -> list[Path]:
    """Stage every output as a synced temp file first, then rename them all into place.

    A failure while staging (disk full, permissions) removes every temp file and leaves all
    previous reports untouched; only the renames, each atomic, remain after that point.
    """
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in outputs:
            staged.append((_stage(Path(path), data), Path(path)))
        for tmp_name, path in staged:
            os.replace(tmp_name, path)
    except BaseException:
        for tmp_name, _ in staged:
            _remove_quietly(tmp_name)
        raise
    for folder in sorted({p.parent for _, p in staged}):
        _fsync_dir(folder)
    return [p for _, p in staged]


def _stage(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)   # mkstemp makes 0600; a report is an ordinary file
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        _remove_quietly(tmp_name)
        raise
    return tmp_name


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
