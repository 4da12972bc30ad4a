"""Format detection from a file name and its first bytes, by the signatures of procure.measure.formats."""

from __future__ import annotations

import re
from typing import Iterator

from procure.measure.formats import FORMATS, SIGNATURES, TABLE_FORMATS

__all__ = ["FORMATS", "TABLE_FORMATS", "detect_format", "detect_in_body"]
MAX_OCCURRENCES = 200      # lines tried per word: a word that is everywhere but never matches stops here
MAX_LINE_BYTES = 1 << 16


def detect_in_body(name: str, data: bytes) -> str | None:
    """``detect_format`` for a whole file, in time linear in its size (see ``Signature.words``)."""
    lower = name.lower()
    if lower.endswith(NOT_LOGS):
        return None
    for fmt, sig in SIGNATURES:
        for word in sig.words:
            if any(sig.pattern.search(line) for line in _lines_with(data, word)):
                return fmt
    return None


def _lines_with(data: bytes, word: bytes) -> Iterator[bytes]:
    at = data.find(word)
    for _ in range(MAX_OCCURRENCES):
        if at < 0:
            return
        start = max(data.rfind(b"\n", max(0, at - MAX_LINE_BYTES), at) + 1, at - MAX_LINE_BYTES)
        end = data.find(b"\n", at, at + MAX_LINE_BYTES)
        end = at + MAX_LINE_BYTES if end < 0 else end
        yield data[start:end + 1]
        at = data.find(word, end)


_META = re.compile(rb"^\s*world_size:\s*\d+", re.MULTILINE)
_META_PARALLEL = re.compile(rb"^\s*(?:pp|dp|tp)_size:\s*\d+", re.MULTILINE)
_CSV_HEADER = re.compile(rb"\A[^\n]*\bstep\b[^\n]*\brank\b|\A[^\n]*\brank\b[^\n]*\bstep\b",
                         re.IGNORECASE)


NOT_LOGS = (".md", ".rst", ".html", ".htm", ".pdf", ".png", ".jpg", ".jpeg", ".gif", ".svg",
            ".py", ".sh", ".ipynb", ".zip", ".tar", ".tgz", ".xlsx", ".docx")


def detect_format(name: str, head: bytes) -> str | None:
    """The format of a file from its name and first bytes, or None when nothing matches.

    Documents and code (README.md, scripts) are never logs, even when they quote log lines.
    """
    lower = name.lower()
    if lower.endswith(NOT_LOGS):
        return None
    if head.startswith(b"PAR1") or lower.endswith((".parquet", ".pq")):
        return "rank-table"
    if lower.endswith((".csv", ".tsv", ".csv.gz")) and _CSV_HEADER.search(head[:4096]):
        return "rank-table"
    if lower.endswith((".yaml", ".yml")) and _META.search(head) and _META_PARALLEL.search(head):
        return "straggler-meta"
    for fmt, sig in SIGNATURES:
        if sig.pattern.search(head):
            return fmt
    return None
