"""NeMo 2 / Megatron-Bridge console lines and NeMo 1 (Lightning tqdm progress bars).

NeMo 2: ``Training epoch 0, iteration 527/999 | ... | train_step_timing in s: 2.389 | ...``.
NeMo 1: ``Epoch 0: :  47%|####  | 7/15 [06:19<07:13, ..., train_step_timing in s=49.50]``.
``train_step_timing`` is the last step's timer value when the line is printed (a sampled
single step). Without it, NeMo 1 step time comes from the bar's elapsed time, in windows of at
least 60 s because tqdm prints whole seconds.
"""

from __future__ import annotations

import re

from procure.measure.normalize import Line, parse_clock, parse_number
from procure.measure.normalize import lines as split_lines
from procure.measure.parsers.common import interval_from_steps, no_steps_note, world_size
from procure.measure.samples import Parsed, SampleBuilder

_NEMO2 = re.compile(r"Training epoch (\d{1,18})(?!\d), iteration (\d{1,18})(?!\d)/(\d{1,18})(?!\d)")
_TIMING = re.compile(r"train_step_timing(?: in s)?\s*[:=]\s*([-+\d.eE]+)")
_GLOBAL_STEP = re.compile(r"global_step\s*[:=]\s*([-+\d.eE]+)")
_BAR = re.compile(r"^\s*Epoch\s+(\d{1,18})(?!\d):[^\[]*?(\d{1,18})(?!\d)(?:/(\d{1,18})(?!\d)|it)\s*\[([^\]]*)\]?")
MIN_WINDOW_S = 60.0


def parse(text: str, name: str = "") -> Parsed:
    rows = split_lines(text)
    texts = [row.text for row in rows]
    nemo2 = [(row, m) for row in rows if (m := _NEMO2.search(row.text))]
    if nemo2:
        return _parse_nemo2(nemo2, texts)
    return _parse_bars(rows, texts)


def _parse_nemo2(rows: list[tuple[Line, re.Match[str]]], texts: list[str]) -> Parsed:
    """NeMo 2 lines, each with its ``Training epoch E, iteration I/N`` match."""
    builder = SampleBuilder()
    steps: list[float] = []
    for row, m_iteration in rows:
        m_step, m_time = _GLOBAL_STEP.search(row.text), _TIMING.search(row.text)
        iteration = float(m_iteration.group(2))
        step = parse_number(m_step.group(1)) if m_step else iteration
        if m_time:
            builder.add(parse_number(m_time.group(1)), step=step)
            steps.append(step if step is not None else iteration)
    return Parsed(format="nemo", variant="nemo2", samples=builder.arrays(),
                  gpus=world_size(texts), notes=_sampling_notes(steps, len(builder)))


def _sampling_notes(steps: list[float], count: int) -> list[str]:
    if count == 0:
        return [no_steps_note("no 'train_step_timing' values")]
    every = interval_from_steps(steps)
    if every and every > 1:
        return [f"train_step_timing is sampled every {every} steps (one step's time each)"]
    return []


def _parse_bars(rows: list[Line], texts: list[str]) -> Parsed:
    timed = SampleBuilder()
    elapsed: list[tuple[float, float]] = []
    for row in rows:
        m = _BAR.search(row.text)
        if not m:
            continue
        n = float(m.group(2))
        inside = m.group(4)
        m_time = _TIMING.search(inside)
        if m_time:
            timed.add(parse_number(m_time.group(1)), step=n)
        seconds = parse_clock(inside.split("<")[0].split(",")[0])
        if seconds is not None:
            elapsed.append((n, seconds))
    if len(timed):
        return Parsed(format="nemo", variant="nemo1", samples=timed.arrays(),
                      gpus=world_size(texts),
                      notes=["train_step_timing from the progress bar: the last step's time "
                             "at each bar update"])
    return _from_elapsed(elapsed, texts)


def _from_elapsed(points: list[tuple[float, float]], texts: list[str]) -> Parsed:
    """Interval means from the bar's elapsed time, windows of >= 60 s (1 s resolution)."""
    latest: dict[float, float] = {}
    for n, seconds in points:
        latest[n] = max(seconds, latest.get(n, 0.0))
    ordered = sorted(latest.items())
    builder = SampleBuilder()
    if ordered:
        last_n, last_t = ordered[0]
        for n, seconds in ordered[1:]:
            if n > last_n and seconds - last_t >= MIN_WINDOW_S:
                builder.add((seconds - last_t) / (n - last_n), step=n, covers=n - last_n)
                last_n, last_t = n, seconds
    notes = ["step time from the progress bar's elapsed time (whole seconds) over windows of "
             f">= {MIN_WINDOW_S:.0f} s; percentiles over interval means understate the tail"]
    if not len(builder):
        notes = [no_steps_note("no train_step_timing and under 60 s of progress-bar time")]
    return Parsed(format="nemo", variant="nemo1-tqdm", samples=builder.arrays(),
                  aggregation="interval-mean", gpus=world_size(texts), notes=notes)
