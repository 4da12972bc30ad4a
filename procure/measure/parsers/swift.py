"""ms-swift training logs (stdout dicts or logging.jsonl).

``{'loss': ..., 'global_step/max_steps': '10/94', 'elapsed_time': '1m 3s',
'train_speed(iter/s)': 0.154297}``: the speed is cumulative (global_step / elapsed), so the
elapsed time is recovered as step / speed (more precise than the printed whole seconds) and
differenced between logged steps: interval means over ``logging_steps``.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from procure.measure.normalize import parse_clock, parse_number
from procure.measure.parsers.common import no_steps_note
from procure.measure.samples import Parsed, SampleBuilder

_RECORD = re.compile(r"\{[^{}]*(?:global_step|train_speed)[^{}]*\}")


def parse(text: str, name: str = "") -> Parsed:
    builder = SampleBuilder()
    points = [p for p in (_point(r) for r in _records(text)
                          if not any(str(k).startswith("eval_") for k in r)) if p is not None]
    last: tuple[float, float] | None = None
    for point in points:
        if last is not None and point[0] > last[0] and point[1] > last[1]:
            builder.add((point[1] - last[1]) / (point[0] - last[0]), step=point[0],
                        covers=point[0] - last[0])
        if last is None or point[0] != last[0]:
            last = point
    if len(builder):
        return Parsed(format="ms-swift", samples=builder.arrays(), aggregation="interval-mean",
                      notes=["step time by differencing the elapsed time (global_step / "
                             "cumulative train_speed) between logged steps; percentiles over "
                             "interval means understate the tail"])
    return _cumulative(points)


def _cumulative(points: list[tuple[float, float]]) -> Parsed:
    """One timed record: its cumulative mean (elapsed / steps since the start)."""
    builder = SampleBuilder()
    if points:
        step, elapsed = points[-1]
        builder.add(elapsed / step, step=step, covers=step)
    notes = ["one timed record: the cumulative mean since the start (includes warm-up)"] \
        if len(builder) else [no_steps_note("no timed records")]
    return Parsed(format="ms-swift", samples=builder.arrays(), aggregation="cumulative",
                  notes=notes)


def _records(text: str) -> list[dict[str, Any]]:
    out = []
    for m in _RECORD.finditer(text):
        chunk = m.group(0)
        for loader in (json.loads, ast.literal_eval):
            try:
                obj = loader(chunk)
            except (ValueError, SyntaxError):
                continue
            if isinstance(obj, dict):
                out.append(obj)
            break
    return out


def _point(record: dict[str, Any]) -> tuple[float, float] | None:
    """(global step, elapsed seconds) of one record."""
    raw = record.get("global_step/max_steps", record.get("global_step"))
    step = parse_number(str(raw).split("/")[0]) if raw is not None else None
    if not step:
        return None
    speed = parse_number(record.get("train_speed(iter/s)"))
    if speed:
        return step, step / speed
    per_iter = parse_number(record.get("train_speed(s/it)", record.get("train_speed(sec/iter)")))
    if per_iter:
        return step, step * per_iter
    elapsed = parse_clock(record.get("elapsed_time"))
    return (step, elapsed) if elapsed is not None else None
