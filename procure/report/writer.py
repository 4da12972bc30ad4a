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
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        _remove_quietly(tmp_name)
        raise
    _fsync_dir(path.parent)
    return path


def write_all(outputs: list[tuple[Path, bytes]]) -> list[Path]:
    """Write already rendered outputs; each file is atomic on its own."""
    return [write_atomic(path, data) for path, data in outputs]


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
