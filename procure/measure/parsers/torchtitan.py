"""torchtitan metrics lines: no step-time field, so step time = delta t / delta step.

``[rank0]:[titan] 2025-01-15 10:23:45,123 - root - INFO - step: 10  loss: 7.81  memory: ...
tps: 6,789  tflops: 312.45  mfu: 31.59%``. Every rank may print every step; each rank's lines
are differenced in file order (a restart, a repeated or a backwards step starts a new run, and
a gap of more than an hour per step is a break, not a step). With the default log frequency of
10 a sample is the mean over 10 steps.
"""

from __future__ import annotations

import re
from statistics import median

from procure.measure.normalize import Line, parse_number
from procure.measure.normalize import lines as split_lines
from procure.measure.parsers.common import no_steps_note, world_size
from procure.measure.samples import Parsed, SampleBuilder

_STEP = re.compile(r"(?<![\w/])step:\s*(\d{1,18})(?!\d)\s+loss:")
_TPS = re.compile(r"\b(?:tps|wps):\s*([\d,.]+)")
_MFU = re.compile(r"\bmfu:\s*([\d.]+)%")
MAX_GAP_PER_STEP_S = 3600.0


def parse(text: str, name: str = "") -> Parsed:
    rows = split_lines(text)
    metrics = [(r, m) for r in rows if (m := _STEP.search(r.text)) and "valid" not in r.text.lower()]
    metric_rows = [r for r, _ in metrics]
    builder = SampleBuilder()
    previous: dict[int, tuple[int, float]] = {}
    for row, m in metrics:
        if row.ts_s is None:
            continue
        step = int(m.group(1))
        rank = -1 if row.rank is None else row.rank
        _difference(builder, previous, rank, step, row.ts_s)
    covers = [c for c in builder.covers] or [1.0]
    aggregation = "per-step" if max(covers) == 1 else "interval-mean"
    return Parsed(format="torchtitan", samples=builder.arrays(), aggregation=aggregation,
                  gpus=world_size([r.text for r in rows]),
                  notes=_notes(metric_rows, len(builder), aggregation))


def _difference(builder: SampleBuilder, previous: dict[int, tuple[int, float]], rank: int,
                step: int, ts_s: float) -> None:
    last = previous.get(rank)
    if last is not None and step == last[0]:
        return  # the same step printed twice (two handlers): keep the first timestamp
    previous[rank] = (step, ts_s)
    if last is None or step < last[0]:
        return
    d_step, d_t = step - last[0], ts_s - last[1]
    if 0 < d_t <= MAX_GAP_PER_STEP_S * d_step:
        builder.add(round(d_t, 6) / d_step, step=step, covers=d_step, rank=None if rank < 0 else rank)


def _notes(rows: list[Line], count: int, aggregation: str) -> list[str]:
    if not rows:
        return [no_steps_note("no 'step: N  loss: ...' metrics lines")]
    if count == 0:
        return [no_steps_note("metrics lines without usable timestamps (step time needs two "
                              "timestamped lines of one run)")]
    notes = ["step time derived from log timestamps (delta t / delta step)"]
    if aggregation == "interval-mean":
        notes.append("each sample is the mean over the log interval; percentiles over interval "
                     "means understate the tail")
    tps = [v for v in (parse_number(m.group(1)) for m in map(_TPS.search, (r.text for r in rows))
                       if m) if v]
    mfu = [v for v in (parse_number(m.group(1)) for m in map(_MFU.search, (r.text for r in rows))
                       if m) if v is not None]
    if tps:
        notes.append(f"median printed tps (tokens/s per GPU): {median(tps):,.0f}")
    if mfu:
        notes.append(f"median printed MFU {median(mfu):.2f}% (the framework's own peak; "
                     "procure computes MFU from the catalog)")
    return notes
