"""DeepSpeed engine logs: throughput timer and wall-clock breakdown.

- ``CurrSamplesPerSec`` is per step: step time = train_batch_size / CurrSamplesPerSec (the
  batch size comes from the config DeepSpeed prints; without it there is no step time);
- ``RunningAvgSamplesPerSec`` is cumulative since step 2: reported as a note, not a sample;
- without throughput lines, the global wall-clock breakdown ``time (ms) | fwd: | bwd: | step:``
  gives fwd + bwd + step per printed step (this excludes data loading and host time).
"""

from __future__ import annotations

import re

from procure.measure.normalize import fields, parse_number
from procure.measure.normalize import lines as split_lines
from procure.measure.parsers.common import (first_positive_int, interval_from_steps, no_steps_note,
                                            world_size)
from procure.measure.samples import Parsed, SampleBuilder

_THROUGHPUT = re.compile(r"global_step=(\d{1,18})(?!\d),\s*RunningAvgSamplesPerSec=([^,\s]+),\s*"
                         r"CurrSamplesPerSec=([^,\s]+)")
_BATCH = (re.compile(r"\btrain_batch_size\s*\.{2,}\s*(\d{1,18})(?!\d)"),
          re.compile(r"['\"]train_batch_size['\"]\s*:\s*(\d{1,18})(?!\d)"))
_STEP_LINE = re.compile(r"\bstep=(\d{1,18})(?!\d),\s*skipped=(\d{1,18})(?!\d)")
_BREAKDOWN = re.compile(r"time \(ms\)\s*\|\s*fwd:")


def parse(text: str, name: str = "") -> Parsed:
    rows = split_lines(text)
    texts = [r.text for r in rows]
    batch = _batch_size(texts)
    throughput = [m for m in map(_THROUGHPUT.search, texts) if m]
    if throughput:
        return _from_throughput(throughput, batch, texts)
    return _from_breakdown(texts)


def _batch_size(texts: list[str]) -> int | None:
    return first_positive_int(_BATCH, texts)


def _from_throughput(matches: list[re.Match[str]], batch: int | None,
                     texts: list[str]) -> Parsed:
    builder = SampleBuilder()
    notes: list[str] = []
    steps = [float(m.group(1)) for m in matches]
    every = interval_from_steps(steps) or 1
    if batch:
        for m in matches:
            rate = parse_number(m.group(3))
            if rate:
                builder.add(batch / rate, step=float(m.group(1)))
        notes.append(f"step time = train_batch_size {batch} / CurrSamplesPerSec (per step)")
        if every > 1:
            notes.append(f"printed every {every} steps (one step's rate each)")
    else:
        notes.append(no_steps_note("CurrSamplesPerSec needs train_batch_size, which the log "
                                   "does not state"))
    running = parse_number(matches[-1].group(2))
    if running:
        per_step = f" = {batch / running:.4g} s per step" if batch else ""
        notes.append(f"cumulative RunningAvgSamplesPerSec {running:g} at step "
                     f"{matches[-1].group(1)}{per_step} (since step 2; not a per-step sample)")
    return Parsed(format="deepspeed", variant="throughput-timer", samples=builder.arrays(),
                  gpus=world_size(texts), notes=notes)


def _from_breakdown(texts: list[str]) -> Parsed:
    builder = SampleBuilder()
    step: float | None = None
    count = 0
    for text in texts:
        m_step = _STEP_LINE.search(text)
        if m_step:
            step = float(m_step.group(1))
        if not _BREAKDOWN.search(text):
            continue
        timers = fields(text.split("time (ms)", 1)[1])
        parts = [parse_number(timers.get(k)) for k in ("fwd", "bwd", "step")]
        timings_ms = [p for p in parts if p is not None]
        count += 1
        if len(timings_ms) == len(parts):
            builder.add(sum(timings_ms) / 1000.0, step=step if step is not None else count)
    notes = ["step time = fwd + bwd + step wall-clock timers (excludes data loading and host "
             "time between steps)"] if len(builder) else [
        no_steps_note("no throughput or wall-clock breakdown lines")]
    return Parsed(format="deepspeed", variant="wall-clock-breakdown", samples=builder.arrays(),
                  gpus=world_size(texts), notes=notes)
