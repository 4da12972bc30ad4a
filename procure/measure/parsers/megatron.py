"""Megatron-LM and forks (Megatron-DeepSpeed, GPT-NeoX, PAI-Megatron-Patch, Argonne k=v).

``iteration N/M | ... | elapsed time per iteration (ms|s): T | ...`` is the mean over the log
interval (``log_interval``); validation lines carry no elapsed time and are not steps.
"""

from __future__ import annotations

import re

from procure.measure.normalize import lines as split_lines
from procure.measure.normalize import parse_number
from procure.measure.parsers.common import (finish, first_positive_int, interval_from_steps, no_steps_note,
                                            world_size)
from procure.measure.samples import MAX_GPUS, Parsed, SampleBuilder

_ITERATION = re.compile(r"\biteration[\s=:]+(\d{1,18})(?!\d)\s*/\s*(\d{1,18})(?!\d)")
_ELAPSED = re.compile(
    r"elapsed[ _]time[ _]per[ _]iteration[ _]?\(?(ms|s)\)?\s*[:=]\s*([-+\d.eE]+)")
_SKIPPED = re.compile(r"number of skipped iterations:\s*(\d{1,18})(?!\d)")
_LOG_INTERVAL = (re.compile(r"^\s*log_interval\s*\.{2,}\s*(\d{1,18})(?!\d)\s*$"),
                 re.compile(r"--log[-_]interval[= ](\d{1,18})(?!\d)"))
_TGS = re.compile(r"tokens per gpu per second \(tgs\):\s*([\d.,eE+]+)")
_TOKENS = re.compile(r"consumed tokens:\s*(\d{1,18})(?!\d)")
# What the run trained per step, where the log states it (the argument dump or the iteration lines):
# a measurement at another batch or sequence length is another job's step time.
_BATCH = (re.compile(r"^\s*global_batch_size\s*\.{2,}\s*(\d{1,12})(?!\d)\s*$"),
          re.compile(r"global batch size:\s*(\d{1,12})(?!\d)"))
_SEQ = (re.compile(r"^\s*(?:encoder_)?seq_length\s*\.{2,}\s*(\d{1,12})(?!\d)\s*$"),
        re.compile(r"--seq[-_]length[= ](\d{1,12})(?!\d)"))


def parse(text: str, name: str = "") -> Parsed:
    rows = split_lines(text)
    texts = [row.text for row in rows]
    builder = SampleBuilder()
    records: list[tuple[int, float, str]] = []
    skipped = 0
    for row in rows:
        m_it, m_el = _ITERATION.search(row.text), _ELAPSED.search(row.text)
        if not (m_it and m_el):
            continue
        value = parse_number(m_el.group(2))
        if value is None:
            continue
        seconds = value / 1000.0 if m_el.group(1) == "ms" else value
        records.append((int(m_it.group(1)), seconds, row.text))
        m_skip = _SKIPPED.search(row.text)
        skipped += int(m_skip.group(1)) if m_skip else 0
    interval = _log_interval(texts) or interval_from_steps([float(r[0]) for r in records]) or 1
    for step, seconds, _text in records:
        builder.add(seconds, step=step, covers=interval)
    notes = _notes(records, interval, skipped, texts)
    parsed = finish("megatron", builder, interval, variant=_variant(text), gpus=world_size(texts), notes=notes)
    stated = {"global_batch": first_positive_int(_BATCH, texts), "seq_len": first_positive_int(_SEQ, texts)}
    parsed.info.update({k: v for k, v in stated.items() if v})
    return parsed


def _log_interval(texts: list[str]) -> int | None:
    return first_positive_int(_LOG_INTERVAL, texts)


def _variant(text: str) -> str:
    if "approx flops per GPU" in text or "samples/sec:" in text:
        return "gpt-neox"
    if "elapsed_time_per_iteration_ms=" in text or "(tgs)" in text or "DeepSpeed" in text:
        return "megatron-deepspeed"
    return "megatron-lm"


def _notes(records: list[tuple[int, float, str]], interval: int, skipped: int,
           texts: list[str]) -> list[str]:
    notes: list[str] = []
    if not records:
        notes.append(no_steps_note("no 'iteration ... elapsed time per iteration' lines"))
        return notes
    if interval > 1:
        notes.append(f"each sample is the mean over the log interval of {interval} iterations; "
                     "percentiles over interval means understate the tail")
    if skipped:
        notes.append(f"{skipped} skipped iteration(s) (fp16 overflow); their time is "
                     "included in the samples")
    implied = _implied_gpus(records)
    if implied:
        notes.append(f"tokens per GPU per second implies {implied} GPUs (not stated)")
    return notes


def _implied_gpus(records: list[tuple[int, float, str]]) -> int | None:
    """GPUs implied by tgs and consumed tokens (a note only: the count is not stated)."""
    parsed = []
    for step, seconds, text in records:
        m_tgs, m_tok = _TGS.search(text), _TOKENS.search(text)
        if m_tgs and m_tok:
            parsed.append((step, seconds, parse_number(m_tgs.group(1)), int(m_tok.group(1))))
    for (s0, _t0, _g0, k0), (s1, t1, g1, k1) in zip(parsed, parsed[1:]):
        if s1 > s0 and k1 > k0 and g1:
            gpus = (k1 - k0) / (s1 - s0) / (t1 * g1)
            if not 1 <= gpus <= MAX_GPUS:
                return None
            return int(round(gpus)) if abs(gpus - round(gpus)) < 0.05 else None
    return None
