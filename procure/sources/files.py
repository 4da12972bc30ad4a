"""Bounded reads: a file is read only when it is a regular file under a size limit, and text
only as UTF-8, with the position of the first bad byte when it is not.

Files are opened with ``O_NONBLOCK`` and checked with ``fstat`` on the open descriptor, so a
named pipe or a device given as input is refused at once (a plain ``open`` would wait forever
for a writer), and a file swapped after the check is still the file that was checked.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from procure.errors import Diagnostic, InputError
from procure.sources.once import keep, recall

MAX_INPUT_BYTES = 10 * 1024 * 1024
# Longer paths are refused before the file system sees them: resolving a path costs one lstat
# per component, each on a longer prefix, so a megabyte-long path would take minutes.
MAX_PATH_CHARS = 4096

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


class NotRegular(OSError):
    """The path exists but is not a regular file (a folder, a pipe, a device)."""


def kind_of(mode: int) -> str:
    """'a named pipe', 'a folder', ... for a stat mode that is not a regular file."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: Path | str, *, follow_symlinks: bool = True) -> int:
    """An fd open for reading on a regular file; NotRegular (or OSError) otherwise. Never blocks."""
    if len(os.fsencode(os.fspath(path))) > MAX_PATH_CHARS:
        raise OSError(errno.ENAMETOOLONG, "File name too long", os.fspath(path)[:80])
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular(errno.EINVAL, f"{kind_of(mode)}, not a regular file", os.fspath(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_fd_limited(fd: int, limit: int) -> bytes:
    """At most ``limit + 1`` bytes from ``fd`` (the caller learns "too large" without reading it all)."""
    chunks, size = [], 0
    while size <= limit:
        chunk = os.read(fd, min(1 << 20, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def os_problem(path: Path | str, exc: OSError) -> tuple[str, str]:
    """(code, message) for an OSError met while reading ``path``."""
    if isinstance(exc, NotRegular):
        return "not-a-file", f"{path} is {exc.strerror}"
    if exc.errno == errno.ENOENT:
        return "not-found", f"no such file: {path}"
    if exc.errno == errno.EISDIR:
        return "not-a-file", f"{path} is a folder, not a file"
    return "unreadable", f"cannot read {path}: {exc.strerror or exc}"


def read_bytes_limited(path: Path, source: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    kept = recall(path)
    if kept is not None and len(kept) <= limit:
        return kept
    try:
        fd = open_regular(path)
    except OSError as exc:
        code, message = os_problem(path, exc)
        raise InputError(Diagnostic(source, 1, 1, code, message)) from None
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise InputError(Diagnostic(source, 1, 1, "too-large",
                                        f"file is {size / 1e6:.1f} MB; the limit is {limit / 1e6:.0f} MB"))
        data = read_fd_limited(fd, limit)
    except OSError as exc:
        code, message = os_problem(path, exc)
        raise InputError(Diagnostic(source, 1, 1, code, message)) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise InputError(Diagnostic(source, 1, 1, "too-large", f"file is larger than {limit / 1e6:.0f} MB"))
    return keep(path, data)


def decode_utf8(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(Diagnostic(source, line, col, "not-utf8",
                                    f"the file is not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                                    "save it as UTF-8")) from None


def within(path: str, roots: list[str]) -> bool:
    """Is the resolved ``path`` one of ``roots`` or below one? (string prefixes: linear time)"""
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def hard_link_problem(st: os.stat_result) -> str | None:
    """Why a regular file with more than one name is refused, or None for a file of one name.

    A hard link is the same file under a second name: unlike a symbolic link it has no target
    to resolve, so nothing shows whether its other name lies outside the allowed folders (an
    ``ln ~/.ssh/id_rsa logs/rank0.log`` is indistinguishable from a log). Files procure reads
    from measured and template folders must therefore have exactly one name."""
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        return (f"a hard link ({st.st_nlink} names for one file), whose other names may lie outside the "
                "allowed folders; copy the file instead of linking it")
    return None


def walk_files(folder: str, roots: list[str], limit: int, *, single_name: bool = False
               ) -> tuple[list[str], list[tuple[str, bool, str]]]:
    """Every regular file under ``folder`` (sorted by real path, hidden names skipped), with each
    symbolic link resolved: a link that leads outside ``roots`` is listed as a problem, never
    followed; so are pipes, sockets and devices. A linked folder inside the roots is walked once.
    With ``single_name``, a regular file with more than one hard link is refused as if outside
    the roots (``hard_link_problem``).

    Returns (real paths of the files, [(path, outside the roots?, why)] of the entries refused).
    Stops with OverflowError past ``limit`` files.
    """
    files: list[str] = []
    refused: list[tuple[str, bool, str]] = []
    seen = {os.path.realpath(folder)}
    pending = [os.path.realpath(folder)]
    while pending:
        for entry in sorted(os.scandir(pending.pop()), key=lambda e: e.name):
            if entry.name.startswith("."):
                continue
            real = os.path.realpath(entry.path)
            if not within(real, roots):
                refused.append((entry.path, True, f"a link to {real}, outside the allowed folders"))
                continue
            try:
                st = os.stat(real)
            except OSError as exc:
                refused.append((entry.path, False, exc.strerror or str(exc)))
                continue
            mode = st.st_mode
            linked = hard_link_problem(st) if single_name else None
            if linked:
                refused.append((entry.path, True, linked))
                continue
            if stat.S_ISDIR(mode):
                if real not in seen:
                    seen.add(real)
                    pending.append(real)
            elif stat.S_ISREG(mode):
                files.append(real)
                if len(files) > limit:
                    raise OverflowError(f"{folder} holds more than {limit:,} files")
            else:
                refused.append((entry.path, False, f"{kind_of(mode)}, not a regular file"))
    return sorted(set(files)), refused


MIN_JSON_BYTES_PER_CONTAINER = 16   # procure's own JSON has ~150; `[{},{},...]` has 3
JSON_CONTAINER_FLOOR = 100_000
MAX_JSON_DEPTH = 500                 # procure's documents nest < 10 deep; the decoder gives up near 1,000
_BRACKETS = bytes(range(256)).translate(None, b"[]{}")


def read_json_limited(path: Path, source: str, limit: int) -> bytes:
    """A JSON file's bytes, bounded like ``read_bytes_limited`` and refused as a parse bomb when it
    holds more objects and arrays than its size can honestly carry (each costs ~100 bytes of Python
    objects once parsed: 200 MB of ``[{},{},...]`` would take 5 GB)."""
    data = read_bytes_limited(path, source, limit)
    containers = data.count(b"{") + data.count(b"[")
    if containers > max(JSON_CONTAINER_FLOOR, len(data) // MIN_JSON_BYTES_PER_CONTAINER):
        raise InputError(Diagnostic(source, 1, 1, "too-large",
                                    f"{containers:,} JSON objects and arrays in {len(data):,} bytes (under "
                                    f"{MIN_JSON_BYTES_PER_CONTAINER} bytes each): a parse bomb, refused"))
    if json_depth(data) > MAX_JSON_DEPTH:
        raise InputError(Diagnostic(source, 1, 1, "too-deep",
                                    f"JSON nested deeper than {MAX_JSON_DEPTH} levels: a parse bomb, refused"))
    return data


def json_depth(data: bytes) -> int:
    """The deepest nesting of brackets in ``data`` (brackets inside strings count too: an upper
    bound), in C speed: the brackets alone, then a running sum."""
    import numpy as np

    brackets = np.frombuffer(data.translate(None, _BRACKETS), dtype=np.uint8)
    if brackets.size == 0:
        return 0
    steps = np.where((brackets == ord("[")) | (brackets == ord("{")), 1, -1).astype(np.int32)
    return int(np.cumsum(steps).max())
