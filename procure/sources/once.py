"""Each file read once per command: the bytes of every input file a command reads are kept for
the length of that command, so parsing it, hashing it for the document and attaching it to the
PDF all see the same bytes, read once (issue 29: "gather, then compute").

A command opens the scope with ``reading_once()``; outside a scope nothing is kept and every read
goes to the file system (a long-lived caller, such as a test that edits a file between two
loads, sees the edit). The key is the file's resolved path."""

from __future__ import annotations

import functools
import hashlib
import os
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Callable, Iterator, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_KEPT: ContextVar[dict[str, bytes] | None] = ContextVar("procure_files_read", default=None)
_DERIVED: ContextVar[dict[object, object] | None] = ContextVar("procure_derived", default=None)


@contextmanager
def reading_once() -> Iterator[None]:
    """Keep every file's bytes for the length of the block (nested blocks share the outer one)."""
    if _KEPT.get() is not None:
        yield
        return
    kept, derived = _KEPT.set({}), _DERIVED.set({})
    try:
        yield
    finally:
        _KEPT.reset(kept)
        _DERIVED.reset(derived)


def _key(path: Path | str) -> str:
    return os.path.realpath(os.fspath(path))


def recall(path: Path | str) -> bytes | None:
    """The bytes read from ``path`` earlier in this scope, or None."""
    kept = _KEPT.get()
    return None if kept is None else kept.get(_key(path))


def keep(path: Path | str, data: bytes) -> bytes:
    """Remember ``data`` as the content of ``path`` for the rest of the scope; returns it."""
    kept = _KEPT.get()
    if kept is not None:
        kept[_key(path)] = data
    return data


def active() -> bool:
    return _KEPT.get() is not None


def derived(key: object) -> object | None:
    """A value computed from kept files earlier in this scope (e.g. the catalog's cache key)."""
    memo = _DERIVED.get()
    return None if memo is None else memo.get(key)


def remember_derived(key: object, value: object) -> None:
    memo = _DERIVED.get()
    if memo is not None:
        memo[key] = value


def file_digest(path: Path | str) -> tuple[str, int]:
    """(SHA-256 hex, size) of a file: from the bytes kept in this scope when it was read, else
    streamed from disk (telemetry tables are read by their own library and can be gigabytes)."""
    data = recall(path)
    if data is not None:
        return hashlib.sha256(data).hexdigest(), len(data)
    with open(path, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
        return digest, handle.tell()


def each_file_once(command: Callable[P, R]) -> Callable[P, R]:
    """Run ``command`` in a read-once scope (the API's commands are wrapped with it)."""
    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with reading_once():
            return command(*args, **kwargs)
    return run
