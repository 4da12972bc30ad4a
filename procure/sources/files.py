"""Bounded reads: a file is read only when it is a regular file under a size limit, and text
only as UTF-8, with the position of the first bad byte when it is not."""

from __future__ import annotations

from pathlib import Path

from procure.errors import Diagnostic, InputError

MAX_INPUT_BYTES = 10 * 1024 * 1024


def read_bytes_limited(path: Path, source: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise InputError(Diagnostic(source, 1, 1, "not-found", f"no such file: {path}")) from None
    except OSError as exc:
        raise InputError(Diagnostic(source, 1, 1, "unreadable", f"cannot read {path}: {exc.strerror}")) from None
    if path.is_dir():
        raise InputError(Diagnostic(source, 1, 1, "not-a-file", f"{path} is a folder, not a file"))
    if size > limit:
        raise InputError(Diagnostic(source, 1, 1, "too-large",
                                    f"file is {size / 1e6:.1f} MB; the limit is {limit / 1e6:.0f} MB"))
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputError(Diagnostic(source, 1, 1, "too-large", f"file is larger than {limit / 1e6:.0f} MB"))
    return data


def decode_utf8(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(Diagnostic(source, line, col, "not-utf8",
                                    f"the file is not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                                    "save it as UTF-8")) from None
