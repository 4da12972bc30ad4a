"""MLPerf Training ``:::MLLOG`` result logs (v3.0-v5.0) and system description JSON.

Step time, in order of preference:

1. per-step ``tracked_stats`` (``train_step_timing``, ``train_step_timing in s``,
   ``train_step_time``) - records that also carry ``throughput`` are block means that repeat the
   per-step values and are not counted again;
2. block means of ``train_step_time`` (with ``throughput``) when there are no per-step records;
3. per-block ``throughput`` (samples/s): step time = units per step / throughput;
4. ``block_start``/``block_stop`` durations divided by the steps in the block (``epoch_count``);
5. a whole-run throughput figure.

Positions (``metadata.step``, ``epoch_num``, ``samples_count``) are in samples, or in tokens
for GPT-3 (v3.0/v3.1 per-step records advance by global_batch_size x max_sequence_length). GPU
count only from a system JSON: ``number_of_nodes x accelerators_per_node`` (strings), embedded
as ``:::SYSJSON`` in raw submitter logs or given as a separate file.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from procure.measure.normalize import parse_number
from procure.measure.parsers.common import no_steps_note
from procure.measure.samples import MAX_GPUS, Parsed, SampleBuilder

STEP_KEYS = ("train_step_timing", "train_step_timing in s", "train_step_time")
TOKEN_BENCHMARKS = ("gpt3",)
_PLATFORM_NODES = re.compile(r"^\s*(\d{1,18})(?!\d)\s*x", re.IGNORECASE)


@dataclass
class _Block:
    start_ms: float
    stop_ms: float | None
    start_pos: float | None
    size: float | None


@dataclass(frozen=True)
class _Span:
    """A block whose stop and size (samples) are known: the only blocks timings are read from."""

    start_ms: float
    stop_ms: float
    start_pos: float | None
    size: float


def records(text: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """(MLLOG records, SYSJSON objects, unparsable MLLOG lines) from a possibly noisy log."""
    out: list[dict[str, Any]] = []
    systems: list[dict[str, Any]] = []
    bad = 0
    for line in text.splitlines():
        for marker, target in ((":::MLLOG", out), (":::SYSJSON", systems)):
            at = line.find(marker)
            if at < 0:
                continue
            try:
                obj = json.loads(line[at + len(marker):].strip())
            except ValueError:
                bad += marker == ":::MLLOG"
                continue
            if isinstance(obj, dict):
                target.append(_well_typed(obj))
    return out, systems, bad


def _well_typed(record: dict[str, Any]) -> dict[str, Any]:
    """A record whose ``key`` is text (or absent) and ``metadata`` a mapping: the rest of the
    parser may then trust those two; any other field is checked where it is used."""
    if not isinstance(record.get("metadata", {}), dict):
        record["metadata"] = {}
    if "key" in record and not isinstance(record["key"], str):
        del record["key"]
    return record


def parse(text: str, name: str = "") -> Parsed:
    recs, systems, bad = records(text)
    meta = _metadata(recs)
    parsed = _step_times(recs, meta)
    parsed.variant = meta.get("benchmark")
    parsed.info.update({k: meta[k] for k in ("platform", "platform_nodes") if k in meta})
    if systems:
        system = system_facts(systems[-1])
        parsed.gpus, parsed.accelerator = system.get("gpus"), system.get("accelerator")
    if bad:
        parsed.notes.append(f"{bad} :::MLLOG lines were not valid JSON and were skipped")
    return parsed


def _metadata(recs: list[dict[str, Any]]) -> dict[str, Any]:
    values = {r.get("key"): r.get("value") for r in recs if "key" in r}
    meta: dict[str, Any] = {}
    for key, name in (("global_batch_size", "gbs"), ("max_sequence_length", "seq"),
                      ("train_samples", "train_samples"), ("trained_samples", "trained_samples")):
        value = parse_number(values.get(key))
        if value:
            meta[name] = value
    if isinstance(values.get("submission_benchmark"), str):
        meta["benchmark"] = values["submission_benchmark"]
    platform = values.get("submission_platform")
    if isinstance(platform, str):
        meta["platform"] = platform
        m = _PLATFORM_NODES.match(platform)
        if m:
            meta["platform_nodes"] = int(m.group(1))
    return meta


def _tracked(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in recs if r.get("key") == "tracked_stats" and isinstance(r.get("value"), dict)]


def _step_key(value: dict[str, Any]) -> str | None:
    return next((k for k in STEP_KEYS if k in value), None)


def _units_per_step(per_step: list[dict[str, Any]], meta: dict[str, Any]) -> float | None:
    """Samples (or tokens) per step: from per-step positions, else the benchmark's rule."""
    positions = sorted({p for p in (_position(r) for r in per_step) if p is not None})
    deltas = [b - a for a, b in zip(positions, positions[1:]) if b > a]
    if deltas:
        return float(Counter(deltas).most_common(1)[0][0])
    gbs: float | None = meta.get("gbs")   # _metadata keeps numbers as parse_number made them
    if gbs and meta.get("seq") and meta.get("benchmark", "").lower() in TOKEN_BENCHMARKS:
        tokens: float = gbs * meta["seq"]
        return tokens
    return gbs


def _position(record: dict[str, Any]) -> float | None:
    md = record.get("metadata") or {}
    for key in ("step", "epoch_num", "samples_count"):
        value = md.get(key)
        if not isinstance(value, list):
            number = parse_number(value) if value is not None else None
            if number is not None:
                return number
    return None


def _step_times(recs: list[dict[str, Any]], meta: dict[str, Any]) -> Parsed:
    tracked = _tracked(recs)
    per_step = [r for r in tracked if _step_key(r["value"]) and "throughput" not in r["value"]]
    block_means = [r for r in tracked if _step_key(r["value"]) and "throughput" in r["value"]]
    units = _units_per_step(per_step, meta)
    throughput = [r for r in tracked if "throughput" in r["value"]]
    whole = [r for r in throughput if _is_whole_run(r, len(throughput))]
    if per_step and units:
        parsed = _from_per_step(per_step, block_means, units)
        parsed.notes.extend(_whole_run_notes(whole, units))
        return parsed
    blocks = _blocks(recs, meta, units)
    intervals = [r for r in throughput if r not in whole]
    for attempt in (_from_block_means, _from_throughput, _from_blocks):
        found = attempt(intervals, blocks, units, meta)
        if found is not None:
            found.notes.extend(_whole_run_notes(whole, units))
            return found
    return _from_whole_run(whole, units, meta)


def _from_per_step(per_step: list[dict[str, Any]], block_means: list[dict[str, Any]],
                   units: float) -> Parsed:
    builder = SampleBuilder()
    for r in per_step:
        position = _position(r)
        step = position / units if position is not None else None
        builder.add(parse_number(r["value"][_step_key(r["value"])]), step=step)
    notes = []
    if block_means:
        notes.append(f"{len(block_means)} block means of the step time (logged with "
                     "throughput) repeat the per-step values and are not counted as steps")
    return Parsed(format="mlperf", samples=builder.arrays(), notes=notes)


def _is_whole_run(record: dict[str, Any], count: int) -> bool:
    md = record.get("metadata") or {}
    return isinstance(md.get("step"), list) or "epoch_num" in record["value"] or count == 1


def _blocks(recs: list[dict[str, Any]], meta: dict[str, Any], units: float | None) -> list[_Span]:
    blocks: list[_Block] = []
    end_pos = None
    for r in recs:
        md, key = r.get("metadata") or {}, r.get("key")
        time_ms = parse_number(r.get("time_ms"))
        if key == "block_start" and time_ms is not None:
            start = parse_number(md.get("first_epoch_num", md.get("samples_count")))
            size = parse_number(md.get("epoch_count"))
            blocks.append(_Block(time_ms, None, start, size))
        elif key == "block_stop" and blocks and blocks[-1].stop_ms is None:
            blocks[-1].stop_ms = time_ms
            stop = parse_number(md.get("samples_count"))
            last = blocks[-1]
            if last.size is None and stop is not None and last.start_pos is not None \
                    and stop > last.start_pos:
                last.size = stop - last.start_pos
        elif key == "run_stop":
            end_pos = parse_number(md.get("samples_count"))
    _fill_sizes(blocks, end_pos or meta.get("trained_samples") or meta.get("train_samples"))
    if units:  # a block must hold at least one step (BERT blocks count epochs, not samples)
        blocks = [b for b in blocks if b.size is None or b.size >= units]
    return [_Span(b.start_ms, b.stop_ms, b.start_pos, b.size)
            for b in blocks if b.stop_ms is not None and b.size]


def _fill_sizes(blocks: list[_Block], end_pos: float | None) -> None:
    for block, following in zip(blocks, blocks[1:] + [None]):
        if block.size is not None or block.start_pos is None:
            continue
        nxt = following.start_pos if following is not None else end_pos
        if nxt is not None and nxt > block.start_pos:
            block.size = nxt - block.start_pos


def _block_of(record: dict[str, Any], blocks: list[_Span]) -> _Span | None:
    time_ms = parse_number(record.get("time_ms"))
    if time_ms is None:
        return None
    for block in blocks:
        if block.start_ms <= time_ms <= block.stop_ms + 1000.0:
            return block
    return None


def _from_block_means(intervals: list[dict[str, Any]], blocks: list[_Span],
                      units: float | None, meta: dict[str, Any]) -> Parsed | None:
    means = [r for r in intervals if _step_key(r["value"])]
    if not means or not units:
        return None
    builder = SampleBuilder()
    for r in means:
        block = _block_of(r, blocks)
        if block is not None:
            builder.add(parse_number(r["value"][_step_key(r["value"])]),
                        step=(block.start_pos or 0) / units, covers=block.size / units)
    if not len(builder):
        return None
    return Parsed(format="mlperf", samples=builder.arrays(), aggregation="interval-mean",
                  notes=["step time is the mean over each block between evaluations; "
                         "percentiles over block means understate the tail"])


def _from_throughput(intervals: list[dict[str, Any]], blocks: list[_Span],
                     units: float | None, meta: dict[str, Any]) -> Parsed | None:
    if not intervals or not units:
        return None
    builder = SampleBuilder()
    previous = 0.0
    for r in intervals:
        rate = parse_number(r["value"]["throughput"])
        block = _block_of(r, blocks)
        if block is not None:
            start, covers = block.start_pos or 0.0, block.size / units
        else:
            end = _position(r)
            if end is None or end <= previous:
                continue
            start, covers, previous = previous, (end - previous) / units, end
        if rate:
            builder.add(units / rate, step=start / units, covers=covers)
    if not len(builder):
        return None
    return Parsed(format="mlperf", samples=builder.arrays(), aggregation="interval-mean",
                  notes=[f"step time = {units:g} samples per step / throughput of each interval "
                         "between evaluations; percentiles over interval means understate the "
                         "tail"])


def _from_blocks(intervals: list[dict[str, Any]], blocks: list[_Span], units: float | None,
                 meta: dict[str, Any]) -> Parsed | None:
    if not blocks or not units:
        return None
    builder = SampleBuilder()
    for block in blocks:
        steps = block.size / units
        builder.add((block.stop_ms - block.start_ms) / 1000.0 / steps,
                    step=(block.start_pos or 0) / units, covers=steps)
    unit = "tokens" if meta.get("benchmark", "").lower() in TOKEN_BENCHMARKS else "samples"
    return Parsed(format="mlperf", samples=builder.arrays(), aggregation="interval-mean",
                  notes=[f"no per-step timings: step time = block_start..block_stop duration / "
                         f"steps in the block (epoch_count / {units:g} {unit} per step); "
                         "percentiles over block means understate the tail"])


def _whole_run_notes(whole: list[dict[str, Any]], units: float | None) -> list[str]:
    notes = []
    for r in whole:
        rate = parse_number(r["value"].get("throughput"))
        if rate and units:
            notes.append(f"whole-run throughput {rate:g}/s = {units / rate:.4g} s per step "
                         "(includes evaluation and other time between steps)")
    return notes


def _from_whole_run(whole: list[dict[str, Any]], units: float | None,
                    meta: dict[str, Any]) -> Parsed:
    builder = SampleBuilder()
    total = meta.get("trained_samples") or meta.get("train_samples")
    for r in whole[-1:]:
        rate = parse_number(r["value"].get("throughput"))
        steps = _listed_steps(r) or (total / units if total and units else None)
        if rate and units and steps:
            builder.add(units / rate, covers=steps)
    if not len(builder):
        return Parsed(format="mlperf", notes=[no_steps_note(
            "no per-step timings, blocks or throughput in the MLLOG records")])
    return Parsed(format="mlperf", samples=builder.arrays(), aggregation="whole-run",
                  notes=["only a whole-run throughput: one sample covering the run"])


def _listed_steps(record: dict[str, Any]) -> float | None:
    step = (record.get("metadata") or {}).get("step")
    if isinstance(step, list) and step:
        return parse_number(step[-1])
    return None


def system_facts(system: dict[str, Any]) -> dict[str, Any]:
    """GPUs (nodes x accelerators per node, numbers given as strings) and accelerator name."""
    nodes = parse_number(system.get("number_of_nodes"))
    per_node = parse_number(system.get("accelerators_per_node"))
    facts: dict[str, Any] = {"system_name": system.get("system_name")}
    if nodes and per_node and 1 <= nodes * per_node <= MAX_GPUS and nodes >= 1:
        facts["gpus"] = int(nodes * per_node)
        facts["nodes"] = int(nodes)
    if system.get("accelerator_model_name"):
        facts["accelerator"] = str(system["accelerator_model_name"])
    return facts


def parse_system(text: str, name: str = "") -> Parsed:
    """A system description JSON: GPU count and accelerator, no step times."""
    try:
        system = json.loads(text)
    except ValueError as exc:
        return Parsed(format="mlperf-system", notes=[f"not valid JSON: {exc}"])
    if not isinstance(system, dict):
        return Parsed(format="mlperf-system", notes=["not a JSON object"])
    facts = system_facts(system)
    parsed = Parsed(format="mlperf-system", gpus=facts.get("gpus"),
                    accelerator=facts.get("accelerator"),
                    notes=["system description: GPU count and accelerator, no step times"])
    parsed.info.update({"system": facts})
    return parsed
