"""Text normalisation shared by the log parsers: prefixes, colours, numbers, times.

Launchers decorate every line (``[1,0]<stdout>:``, ``0: ``, ``[rank3]:``, ``[default7]:``,
``stdout: ``, ISO timestamps, glog headers). Parsers match on the bare message, so these are
stripped first; the rank and the timestamp they carry are kept.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
_NBSP = re.compile("[\u00a0\u2007\u202f\ufeff]")

_OMPI = re.compile(r"\[\d+,(\d{1,18})(?!\d)\]<(?:stdout|stderr)>:\s?")
_RANK_TAG = re.compile(r"\[(?:rank|default|local_rank)\s*(\d{1,18})(?!\d)\]:\s?", re.IGNORECASE)
_SRUN = re.compile(r"(\d{1,6}):\s")
_STREAM = re.compile(r"(?:stdout|stderr):\s?|\[titan\]\s?")
_GLOG = re.compile(r"[IWEF]\d{4}\s+(?:\d\d:\d\d:\d\d\.\d+\s+\d+\s+)?\S+:\d+\]\s")
_TIMESTAMP = re.compile(
    r"\[?(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\]?\s?"
)

_MISSING = {"", "n/a", "na", "nan", "null", "none", "-", "inf", "-inf", "+inf"}
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_THOUSANDS = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Line:
    """One log line with its launcher decorations removed."""

    text: str
    rank: int | None
    ts_s: float | None
    lineno: int


def clean(text: str) -> str:
    """Remove ANSI escapes and turn non-breaking spaces into spaces."""
    return _NBSP.sub(" ", _ANSI.sub("", text))


def strip_prefixes(raw: str) -> tuple[str, int | None, float | None]:
    """Strip launcher prefixes and a leading timestamp; return (text, rank, timestamp_s)."""
    text = clean(raw).rstrip("\r\n")
    rank: int | None = None
    ts_s: float | None = None
    for _ in range(6):
        stripped = text.lstrip()
        for pattern in (_OMPI, _RANK_TAG, _SRUN):
            m = pattern.match(stripped)
            if m:
                rank = int(m.group(1)) if rank is None else rank
                text = stripped[m.end():]
                break
        else:
            m = _STREAM.match(stripped) or _GLOG.match(stripped)
            if m:
                text = stripped[m.end():]
                continue
            m = _TIMESTAMP.match(stripped)
            if m:
                ts_s = parse_timestamp(m.group(1)) if ts_s is None else ts_s
                text = stripped[m.end():]
                continue
            break
    return text.lstrip(), rank, ts_s


def lines(text: str) -> list[Line]:
    """Split a log into normalised lines (carriage returns from progress bars split too)."""
    out: list[Line] = []
    for lineno, raw in enumerate(re.split(r"\r\n|\n|\r", text), start=1):
        if raw.strip():
            body, rank, ts_s = strip_prefixes(raw)
            out.append(Line(body, rank, ts_s, lineno))
    return out


def parse_number(token: str | float | int | None) -> float | None:
    """A float from a log token: thousands separators, scientific, glued units, ``a/b`` pairs.

    Returns None for missing values (``N/A``, ``null``, empty, NaN, infinities).
    """
    if token is None or isinstance(token, bool):
        return None
    if isinstance(token, (int, float)):
        try:
            value = float(token)
        except OverflowError:   # a JSON integer of hundreds of digits
            return None
        return value if math.isfinite(value) else None
    text = str(token).strip().strip("'\"")
    if text.lower() in _MISSING:
        return None
    text = text.split("/")[0].strip() if "/" in text else text
    m = _THOUSANDS.match(text)
    if m and (m.end() == len(text) or not text[m.end()].isdigit()):
        return _finite(m.group(0).replace(",", ""))
    m = _NUMBER.match(text)
    return _finite(m.group(0)) if m else None


def _finite(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


_DAYS = re.compile(r"^\s*(\d{1,18})(?!\d)\s+days?,\s*")
_UNIT_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|m|s|ms)\b")
_UNIT_SECONDS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_clock(value: object) -> float | None:
    """Seconds from ``H:MM:SS``, ``MM:SS``, ``4 days, 7:14:51`` or ``1h 2m 3s`` forms."""
    if value is None:
        return None
    text = str(value).strip()   # a record's field: text or a number
    days = 0.0
    m = _DAYS.match(text)
    if m:
        days = float(m.group(1))
        text = text[m.end():]
    if ":" in text:
        parts = text.split(":")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            return None
        seconds = 0.0
        for field in values:
            seconds = seconds * 60.0 + field
        return days * 86400.0 + seconds
    units = _UNIT_DURATION.findall(text)
    if units and _UNIT_DURATION.sub("", text).strip() == "":
        return days * 86400.0 + sum(float(v) * _UNIT_SECONDS[u] for v, u in units)
    number = parse_number(text)
    return None if number is None else days * 86400.0 + number


def parse_timestamp(text: str) -> float | None:
    """Seconds since the epoch for an ISO-like timestamp (naive times are taken as UTC).

    Only differences between timestamps of one log are used, so the zone of naive times does
    not matter as long as the log is consistent.
    """
    text = text.strip().replace(",", ".")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def to_seconds(value: float, unit: str) -> float:
    """Convert a time in ``unit`` (s, ms, us, µs, ns, min) to seconds."""
    factors = {"s": 1.0, "sec": 1.0, "secs": 1.0, "seconds": 1.0, "ms": 1e-3, "us": 1e-6,
               "µs": 1e-6, "ns": 1e-9, "min": 60.0}
    return value * factors[unit.strip().lower()]


def fields(text: str, sep: str = "|") -> dict[str, str]:
    """``key: value`` or ``key=value`` fields of a separated line, keys lower-cased."""
    out: dict[str, str] = {}
    for part in text.split(sep):
        part = part.strip()
        if not part:
            continue
        key, value = _split_field(part)
        if key:
            out.setdefault(key.lower(), value)
    return out


def _split_field(part: str) -> tuple[str, str]:
    for marker in (": ", "=", ":"):
        if marker in part:
            key, value = part.split(marker, 1)
            return key.strip(), value.strip()
    return "", ""
