"""Single-line-per-step trainers: MaxText, nanochat (and nanoGPT / llm.c), InternEvo.

- MaxText: ``completed step: 12, seconds: 0.287, TFLOP/s/device: ..., loss: ...`` (per step);
- nanochat: ``step 00010/01000 (1.00%) | loss: ... | dt: 989.44ms | tok/sec: 529,912 | ...``;
  nanoGPT ``iter 10: loss 3.21, time 123.45ms, ...``; llm.c ``step 1/74 | ... (123.45 ms | ...)``;
- InternEvo ``k=v`` metrics (space or comma separated) have no step time: it is derived from
  the timestamps of consecutive lines of one run (delta t / delta step); ``fwd_bwd_time`` is
  only the forward-backward part and is reported as a note.
"""

from __future__ import annotations

import re
from statistics import median

from procure.measure.normalize import Line, parse_number, to_seconds
from procure.measure.normalize import lines as split_lines
from procure.measure.parsers.common import no_steps_note, world_size
from procure.measure.samples import Parsed, SampleBuilder

_MAXTEXT = re.compile(r"completed step:\s*(\d{1,18})(?!\d),\s*seconds:\s*([-+\d.eE]+)")
_NANOCHAT = (
    re.compile(r"\bstep\s+(\d{1,18})(?!\d)(?:/\d+)?\b.*?\|\s*dt:\s*([\d.]+)\s*(ms|s)\b"),
    re.compile(r"^iter\s+(\d{1,18})(?!\d):\s*loss\s+[-\d.]+,\s*time\s+([\d.]+)\s*(ms|s)\b"),
    re.compile(r"\bstep\s+(\d{1,18})(?!\d)/\d+\s*\|.*\(\s*([\d.]+)\s*(ms|s)\s*\|"),
)
_IE_STEP = re.compile(r"(?:^|[\s,])step=(\d{1,18})(?!\d)")
_IE_FWD_BWD = re.compile(r"fwd_bwd_time=([\d.]+)")
_IE_TGS = re.compile(r"tgs \(tokens/gpu/second\)=([\d.]+)")
MAX_GAP_PER_STEP_S = 3600.0


def parse_maxtext(text: str, name: str = "") -> Parsed:
    rows = split_lines(text)
    builder = SampleBuilder()
    for row in rows:
        m = _MAXTEXT.search(row.text)
        if m:
            builder.add(parse_number(m.group(2)), step=float(m.group(1)))
    notes = [] if len(builder) else [no_steps_note("no 'completed step: N, seconds: T' lines")]
    return Parsed(format="maxtext", samples=builder.arrays(),
                  gpus=world_size([r.text for r in rows]), notes=notes)


def parse_nanochat(text: str, name: str = "") -> Parsed:
    rows = split_lines(text)
    builder = SampleBuilder()
    for row in rows:
        for pattern in _NANOCHAT:
            m = pattern.search(row.text)
            if m:
                value = parse_number(m.group(2))
                if value is not None:
                    builder.add(to_seconds(value, m.group(3)), step=float(m.group(1)))
                break
    notes = [] if len(builder) else [no_steps_note("no 'step N ... dt: T ms' lines")]
    return Parsed(format="nanochat", samples=builder.arrays(),
                  gpus=world_size([r.text for r in rows]), notes=notes)


def parse_internevo(text: str, name: str = "") -> Parsed:
    matched = [(r, m) for r in split_lines(text) if (m := _IE_STEP.search(r.text))]
    rows = [r for r, _ in matched]
    builder = SampleBuilder()
    previous: tuple[int, float] | None = None
    for row, m in matched:
        previous = _difference(builder, previous, int(m.group(1)), row)
    return Parsed(format="internevo", samples=builder.arrays(),
                  aggregation=_aggregation(builder), notes=_internevo_notes(rows, len(builder)))


def _difference(builder: SampleBuilder, previous: tuple[int, float] | None, step: int,
                row: Line) -> tuple[int, float] | None:
    if row.ts_s is None:
        return previous
    if previous is not None and step > previous[0]:
        d_step, d_t = step - previous[0], row.ts_s - previous[1]
        if 0 < d_t <= MAX_GAP_PER_STEP_S * d_step:
            builder.add(round(d_t, 6) / d_step, step=step, covers=d_step)
    return (step, row.ts_s) if previous is None or step != previous[0] else previous


def _aggregation(builder: SampleBuilder) -> str:
    return "interval-mean" if any(c > 1 for c in builder.covers) else "per-step"


def _numbers(pattern: re.Pattern[str], rows: list[Line]) -> list[float]:
    found = (pattern.search(r.text) for r in rows)
    return [v for v in (parse_number(m.group(1)) for m in found if m) if v is not None]


def _internevo_notes(rows: list[Line], count: int) -> list[str]:
    fwd_bwd = _numbers(_IE_FWD_BWD, rows)
    tgs = _numbers(_IE_TGS, rows)
    notes = ["step time derived from timestamps of consecutive lines of one run"] if count else [
        no_steps_note("InternEvo prints no step time and no two consecutive timestamped lines "
                      "of one run were found (a gap of over an hour per step is a new run)")]
    if fwd_bwd:
        notes.append(f"median fwd_bwd_time {median(fwd_bwd):g} s over {len(fwd_bwd)} lines "
                     "(forward-backward only: a lower bound of the step time, not used)")
    if tgs:
        notes.append(f"median tgs {median(tgs):g} tokens/GPU/s")
    return notes
