"""Helpers shared by the text parsers."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from procure.measure.samples import MAX_RANK, Parsed, SampleBuilder

_WORLD = (
    re.compile(r"using world size:\s*(\d{1,18})(?!\d)"),
    re.compile(r"^\s*world_size\s*\.{2,}\s*(\d{1,18})(?!\d)\s*$"),
    re.compile(r"\bworld[_ ]size[=:]\s*(\d{1,18})(?!\d)", re.IGNORECASE),
)


def first_positive_int(patterns: Iterable[re.Pattern[str]], lines: list[str]) -> int | None:
    """The first positive integer group 1 of any pattern finds, patterns tried in order."""
    for pattern in patterns:
        for text in lines:
            m = pattern.search(text)
            if m and 0 < int(m.group(1)) <= MAX_RANK:
                return int(m.group(1))
    return None


def world_size(lines: list[str]) -> int | None:
    """GPU count from the log's own world-size statement (first one found)."""
    return first_positive_int(_WORLD, lines)


def interval_from_steps(steps: list[float]) -> int | None:
    """The most common positive step delta (the log interval), or None with < 2 steps."""
    ordered = sorted(set(s for s in steps if s == s))
    deltas = [b - a for a, b in zip(ordered, ordered[1:]) if b > a]
    if not deltas:
        return None
    value, _count = Counter(deltas).most_common(1)[0]
    return int(value) if float(value).is_integer() and value >= 1 else None


def finish(fmt: str, builder: SampleBuilder, covers: float, *, variant: str | None = None,
           gpus: int | None = None, notes: list[str] | None = None) -> Parsed:
    """A Parsed whose aggregation follows from how many steps a sample covers."""
    aggregation = "per-step" if covers == 1 else "interval-mean"
    return Parsed(format=fmt, samples=builder.arrays(), aggregation=aggregation, variant=variant, gpus=gpus,
                  notes=[] if notes is None else notes)


def no_steps_note(what: str) -> str:
    return f"no step times found: {what}"
