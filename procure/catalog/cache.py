"""A cache of the parsed catalog, so a short command does not re-read and re-validate ~70 YAML files.

The parsed ``Catalog`` (plain frozen dataclasses) is stored as JSON in the user's cache folder
under a key made of the SHA-256 of the content of every catalog and price-book file and of the
code that parses them, and the Python and procure versions: any edit (a same-size one with its
modification time put back included), added or removed file changes the key, and a stale entry is
never read. JSON cannot run code: reading an entry back builds only procure's own dataclasses,
validated records (pydantic models, such as the corpus's tuned recipes) and enums, Decimals, dates
and containers, field by field; anything else in the file (a pickle, a
foreign class, a missing or extra field, another key or schema) makes the entry ignored and
rebuilt, with a note under ``--verbose``. The cache is only a shortcut: a missing, unreadable,
foreign or corrupt file costs nothing but the speed-up, and so does a folder that cannot be written.

Where: ``$PROCURE_CACHE_DIR``, else ``$XDG_CACHE_HOME/procure``, else ``~/.cache/procure``;
``PROCURE_CACHE_DIR=off`` turns it off. Only a plain file (never a link: ``lstat``, then opened
with no-follow) owned by the current user and writable by no one else is read.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import hashlib
import json
import logging
import math
import os
import re
import stat
import sys
from decimal import Decimal
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Callable, TypeVar

if TYPE_CHECKING:
    from typing import TypeGuard

    from pydantic import BaseModel

T = TypeVar("T")
PREFIX = "catalog-"
SCHEMA = "procure.catalog-cache/v2"
MAX_ENTRY_BYTES = 256 * 1024 * 1024
_CODE = tuple(f"catalog/{name}" for name in (     # what shapes what is cached, relative to the package
    "types.py", "load.py", "entries.py", "arch_entries.py", "knobs.py", "views.py", "cache.py",
    "calibration.py", "calibration_schema.py", "software.py", "software_schema.py")) + (
    "sources/fields.py", "backtest/published_run.py", "backtest/runs.py", "backtest/tuned.py")


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
    """Everything the parsed catalog depends on, spelled out: the versions, then the name and the
    SHA-256 of the content of every catalog file and of the code that parses them. Any edit, added
    or removed file changes it (a same-size edit whose modification time was put back included);
    the whole key is stored in the cache entry and compared exactly. Hashing the ~1 MB read costs
    a few milliseconds."""
    from procure import __version__
    from procure.sources import once

    memo_key = ("catalog-key", tuple(str(r) for r in roots))
    known = once.derived(memo_key)     # one command asks for it once per cached form
    if isinstance(known, str):
        return known
    parts = [SCHEMA, __version__, sys.version]
    package = Path(__file__).resolve().parents[1]
    for path in [package / name for name in _CODE] + _files(roots):
        try:
            data = once.recall(path)
            data = once.keep(path, path.read_bytes()) if data is None else data
        except OSError:
            parts.append(f"{path}:missing")
            continue
        parts.append(f"{path}:{hashlib.sha256(data).hexdigest()}")
    key = "\n".join(parts)
    once.remember_derived(memo_key, key)
    return key


def _open_trusted(path: Path) -> int | None:
    """A descriptor for ``path`` when it is a plain file (not a link: lstat, then O_NOFOLLOW),
    ours and writable by us only; else None. A file someone else could have written is never read."""
    try:
        before = os.lstat(path)
    except OSError:
        return None
    if not _trusted_mode(before):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    after = os.fstat(fd)
    if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino) or not _trusted_mode(after):
        os.close(fd)
        return None
    return fd


def _trusted_mode(info: os.stat_result) -> bool:
    uid = getattr(os, "getuid", None)
    owned = uid is None or info.st_uid == uid()
    return owned and stat.S_ISREG(info.st_mode) and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _path(folder: Path, name: str, key: str) -> Path:
    return folder / f"{PREFIX}{name}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def read(folder: Path, name: str, key: str) -> object | None:
    path = _path(folder, name, key)
    if not os.path.lexists(path):
        return None
    fd = _open_trusted(path)
    if fd is None:
        _note(path, "it is a link, not a plain file, or others could have written it")
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(MAX_ENTRY_BYTES + 1)
        if len(data) > MAX_ENTRY_BYTES:
            raise CacheMismatch("it is larger than any catalog")
        stored = json.loads(data)
        if not isinstance(stored, dict) or stored.get("schema") != SCHEMA:
            raise CacheMismatch("it is not a procure catalog cache entry")
        if stored.get("key") != key:
            raise CacheMismatch("it was made from other catalog files or another procure")
        value: object = decode(stored.get("value"))
        return value
    except (OSError, ValueError, RecursionError, CacheMismatch) as exc:   # never fatal
        _note(path, str(exc) or type(exc).__name__)
        return None


def write(folder: Path, name: str, key: str, value: object) -> None:
    """Atomically (exclusive no-follow temp file, then rename), private (0600); older catalog
    caches are removed."""
    import tempfile

    try:
        data = json.dumps({"schema": SCHEMA, "key": key, "value": encode(value)},
                          separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError, RecursionError):
        return   # a value the format cannot hold: run without the cache
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)   # O_EXCL | O_NOFOLLOW, 0600
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            target = _path(folder, name, key)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        for pattern in (f"{PREFIX}{name}-*.json", f"{PREFIX}{name}-*.pickle"):   # pickles of old versions
            for old in folder.glob(pattern):
                if old != target:
                    old.unlink(missing_ok=True)
    except OSError:
        return   # a read-only home or a full disk: run without the cache


def _note(path: Path, why: str) -> None:
    logging.getLogger("procure.cache").info("ignored the catalog cache entry %s (%s); rebuilt it", path, why)


# ---------------------------------------------------------------------------------------------
# the format: JSON with tags for what JSON lacks; only procure's own classes come back


class CacheMismatch(ValueError):
    """The entry holds something the cache never writes."""


def encode(value: object) -> Any:
    if isinstance(value, enum.Enum):   # first: an IntEnum or StrEnum is an int or a str too
        return {"$enum": _class_name(type(value)), "v": encode(value.value)}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, Decimal):
        return {"$dec": str(value)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"$dc": _class_name(type(value)),
                "f": {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if _is_record(value):
        return {"$model": _class_name(type(value)),
                "f": {name: encode(getattr(value, name)) for name in type(value).model_fields}}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, (frozenset, set)):
        tag = "$frozenset" if isinstance(value, frozenset) else "$set"
        return {tag: sorted((encode(v) for v in value), key=lambda x: json.dumps(x, sort_keys=True))}
    if isinstance(value, dict):
        return {"$dict": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, datetime.datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"$date": value.isoformat()}
    if isinstance(value, PurePath):
        return {"$path": str(value)}
    raise TypeError(f"the catalog cache cannot hold a {type(value).__name__}")


def _is_record(value: object) -> TypeGuard[BaseModel]:
    """A pydantic model (only possible once pydantic is imported: the cache does not import it)."""
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(value, pydantic.BaseModel)


def _class_name(cls: type) -> str:
    if not cls.__module__.startswith("procure."):
        raise TypeError(f"the catalog cache holds only procure's classes, not {cls.__module__}")
    return f"{cls.__module__}:{cls.__qualname__}"


def decode(data: Any) -> Any:
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict) or len(data) not in (1, 2):
        raise CacheMismatch("an untagged object")
    tag = next(iter(data))
    body = data[tag]
    if tag == "$dec" and isinstance(body, str):
        return Decimal(body)
    if tag == "$float" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "$tuple" and isinstance(body, list):
        return tuple(decode(v) for v in body)
    if tag in ("$frozenset", "$set") and isinstance(body, list):
        items = [decode(v) for v in body]
        return frozenset(items) if tag == "$frozenset" else set(items)
    if tag == "$dict" and isinstance(body, list):
        if not all(isinstance(kv, list) and len(kv) == 2 for kv in body):
            raise CacheMismatch("a malformed mapping")
        return {decode(k): decode(v) for k, v in body}
    if tag == "$date" and isinstance(body, str):
        return datetime.date.fromisoformat(body)
    if tag == "$datetime" and isinstance(body, str):
        return datetime.datetime.fromisoformat(body)
    if tag == "$path" and isinstance(body, str):
        return Path(body)
    if tag == "$enum" and isinstance(body, str) and set(data) == {"$enum", "v"}:
        cls = _procure_class(body)
        if not issubclass(cls, enum.Enum):
            raise CacheMismatch(f"{body} is not an enum")
        return cls(decode(data["v"]))
    if tag == "$dc" and isinstance(body, str) and set(data) == {"$dc", "f"} and isinstance(data["f"], dict):
        cls = _procure_class(body)
        if not dataclasses.is_dataclass(cls):
            raise CacheMismatch(f"{body} is not a dataclass")
        names = [f.name for f in dataclasses.fields(cls)]
        if sorted(names) != sorted(data["f"]):
            raise CacheMismatch(f"the fields of {body} changed")
        obj = object.__new__(cls)   # as pickle did: no __init__, the fields as they were stored
        for field_name in names:
            object.__setattr__(obj, field_name, decode(data["f"][field_name]))
        return obj
    if tag == "$model" and isinstance(body, str) and set(data) == {"$model", "f"} and isinstance(data["f"], dict):
        return _record(_procure_class(body), data["f"])
    raise CacheMismatch(f"an unknown tag {tag!r}")


def _record(cls: type, fields: dict[str, Any]) -> Any:
    """A validated record stored by ``encode``, rebuilt field by field without validating again
    (it was validated before it was stored; the entry's key covers the code that validated it)."""
    from pydantic import BaseModel

    if not issubclass(cls, BaseModel):
        raise CacheMismatch(f"{cls.__qualname__} is not a validated record")
    if sorted(cls.model_fields) != sorted(fields):
        raise CacheMismatch(f"the fields of {cls.__qualname__} changed")
    return cls.model_construct(**{name: decode(value) for name, value in fields.items()})


def _procure_class(name: str) -> type:
    """A class of procure's own, already imported or from a module of the package; nothing else."""
    module_name, _, qualname = name.partition(":")
    if not re.fullmatch(r"procure(\.[a-z_][a-z0-9_]*)+", module_name) or \
            not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", qualname):
        raise CacheMismatch(f"{name} is not one of procure's classes")
    module = sys.modules.get(module_name)
    if module is None:
        import importlib.util

        if importlib.util.find_spec(module_name) is None:
            raise CacheMismatch(f"{module_name} is not a module of procure")
        module = importlib.import_module(module_name)
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    if not isinstance(obj, type) or not obj.__module__.startswith("procure."):
        raise CacheMismatch(f"{name} is not one of procure's classes")
    return obj


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
