"""A cache of the parsed catalog, so a short command does not re-read and re-validate ~70 YAML files.

The parsed ``Catalog`` (plain frozen dataclasses) is pickled into the user's cache folder under a
key made of the content of every catalog and price-book file, the code that parses them and the
Python and procure versions: any edit, added or removed file changes the key, and a stale entry
is never read. The cache is only a shortcut: a missing, unreadable, foreign or corrupt file is
ignored (the catalog is then parsed as before), and a cache folder that cannot be written costs
nothing but the speed-up.

Where: ``$PROCURE_CACHE_DIR``, else ``$XDG_CACHE_HOME/procure``, else ``~/.cache/procure``;
``PROCURE_CACHE_DIR=off`` turns it off. Only a file owned by the current user and writable by
no one else is unpickled (pickle runs code; the cache folder is the user's own).
"""

from __future__ import annotations

import os
import pickle
import stat
import sys
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")
PREFIX = "catalog-"
_CODE = tuple(f"catalog/{name}" for name in (     # what shapes what is cached, relative to the package
    "types.py", "load.py", "entries.py", "arch_entries.py", "knobs.py", "views.py", "cache.py",
    "calibration.py", "calibration_schema.py", "software.py", "software_schema.py")) + (
    "sources/fields.py", "backtest/runs.py", "backtest/tuned.py")


def cache_dir() -> Path | None:
    configured = os.environ.get("PROCURE_CACHE_DIR")
    if configured:
        return None if configured.lower() in ("off", "0", "none") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "procure"


def _files(roots: list[Path]) -> list[Path]:
    found: list[Path] = []
    for root in roots:
        if root.is_dir():
            found.extend(sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml")))
    return found


def default_roots() -> list[Path]:
    """The folders the shipped catalog is read from: what its cache entries depend on."""
    from procure.resources import catalog_dir, price_books_dir

    return [Path(catalog_dir()), Path(price_books_dir())]


def catalog_key(roots: list[Path]) -> str:
    """Everything the parsed catalog depends on, spelled out: the versions, then the name, size and
    modification time (ns) of every catalog file and of the code that parses them. Any edit, added
    or removed file changes it; the whole key is stored in the cache file and compared exactly (its
    CRC only names the file). A stat per file, not a read: the key costs well under a millisecond."""
    from procure import __version__

    parts = [__version__, sys.version]
    package = Path(__file__).resolve().parents[1]
    for path in [package / name for name in _CODE] + _files(roots):
        try:
            info = path.stat()
        except OSError:
            parts.append(f"{path}:missing")
            continue
        parts.append(f"{path}:{info.st_size}:{info.st_mtime_ns}:{info.st_ino}")
    return "\n".join(parts)


def _trusted(path: Path) -> bool:
    """Ours and writable by us only: a file someone else could have written is never unpickled."""
    try:
        info = path.stat()
    except OSError:
        return False
    uid = getattr(os, "getuid", None)
    owned = uid is None or info.st_uid == uid()
    return owned and stat.S_ISREG(info.st_mode) and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _path(folder: Path, name: str, key: str) -> Path:
    import zlib

    return folder / f"{PREFIX}{name}-{zlib.crc32(key.encode()):08x}.pickle"


def read(folder: Path, name: str, key: str) -> object | None:
    path = _path(folder, name, key)
    if not _trusted(path):
        return None
    try:
        with open(path, "rb") as fh:
            stored_key, value = pickle.load(fh)
    except Exception:   # noqa: BLE001 - a corrupt or foreign cache file is ignored, never fatal
        return None
    return value if stored_key == key else None


def write(folder: Path, name: str, key: str, value: object) -> None:
    """Atomically (temp file, then rename), private (0600); older catalog caches are removed."""
    import tempfile

    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump((key, value), fh, protocol=pickle.HIGHEST_PROTOCOL)
            target = _path(folder, name, key)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        for old in folder.glob(f"{PREFIX}{name}-*.pickle"):
            if old != target:
                old.unlink(missing_ok=True)
    except (OSError, pickle.PicklingError):
        return   # a read-only home or a full disk: run without the cache


def cached(name: str, roots: list[Path], build: Callable[[], T]) -> T:
    """``build()``'s value, from the cache entry ``name`` when the files under ``roots`` are unchanged.

    ``name`` tells apart the forms kept: the parsed catalog itself, and the plain-data views that
    `procure catalog` prints (which need none of the catalog's classes to be read back)."""
    folder = cache_dir()
    if folder is None:
        return build()
    key = catalog_key(roots)
    value = read(folder, name, key)
    if value is not None:
        return value  # type: ignore[return-value]
    value = build()
    write(folder, name, key, value)
    return value
