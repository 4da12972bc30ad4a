"""Hugging Face Trainer outputs and LLaMA-Factory's trainer_log.jsonl.

- LLaMA-Factory JSONL (``current_steps``, ``elapsed_time`` as ``H:MM:SS`` or
  ``4 days, 7:14:51``): step time only by differencing elapsed time between logged steps
  (interval means over ``logging_steps``; 1 s resolution);
- ``trainer_state.json``: ``train_runtime / global_step`` (whole run);
- ``train_results.json`` / ``all_results.json`` / the final stdout dict: whole-run
  ``1 / train_steps_per_second`` (rounded to 3 decimals by the Trainer).
"""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Any

from procure.measure.errors import LogError
from procure.measure.normalize import parse_clock, parse_number
from procure.measure.parsers.common import no_steps_note
from procure.measure.samples import Parsed, SampleBuilder

_DICT = re.compile(r"\{[^{}]*'train_runtime'[^{}]*\}")


def parse(text: str, name: str = "") -> Parsed:
    obj = _json_object(text)
    if isinstance(obj, dict) and "log_history" in obj:
        if not isinstance(obj["log_history"], list):
            where = _position(text, name, '"log_history"')
            raise LogError(f"{where}: `log_history` is {_kind(obj['log_history'])}, not a list of logged "
                           "entries (not a trainer_state.json the Trainer wrote)")
        return _trainer_state(obj)
    if isinstance(obj, dict) and "train_runtime" in obj:
        return _results(obj, "train-results")
    rows = _jsonl(text)
    if any("current_steps" in r and "elapsed_time" in r for r in rows):
        return _llamafactory(rows)
    m = _DICT.search(text)
    if m:
        try:
            final = ast.literal_eval(m.group(0))
        except (ValueError, SyntaxError):
            final = None
        if isinstance(final, dict):
            return _results(final, "trainer-stdout")
    return Parsed(format="hf-trainer", notes=[no_steps_note(
        "no elapsed_time rows, trainer_state.json or train_runtime")])


def _position(text: str, name: str, key: str) -> str:
    """``name:line:col`` of the first ``key`` in ``text`` (``name`` alone when it is absent)."""
    at = text.find(key)
    if at < 0:
        return name
    line = text.count("\n", 0, at) + 1
    return f"{name}:{line}:{at - (text.rfind(chr(10), 0, at) + 1) + 1}"


def _kind(value: Any) -> str:
    return {dict: "an object", str: "a string", bool: "true or false", type(None): "null"}.get(
        type(value), "a number")


def _json_object(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _jsonl(text: str) -> list[dict[str, Any]]:
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                rows.append(obj)
    return rows


def _llamafactory(rows: list[dict[str, Any]]) -> Parsed:
    builder = SampleBuilder()
    last_step, last_t = 0.0, 0.0
    for row in rows:
        if row.get("loss") is None and row.get("eval_loss") is not None:
            continue  # an evaluation record, not a training step
        step = parse_number(row.get("current_steps"))
        elapsed = parse_clock(row.get("elapsed_time"))
        if step is None or elapsed is None:
            continue
        if step == last_step:
            continue  # the same step logged twice
        if step < last_step or elapsed < last_t:
            last_step, last_t = step, elapsed  # a restart: a new baseline, no sample
            continue
        builder.add((elapsed - last_t) / (step - last_step), step=step, covers=step - last_step)
        last_step, last_t = step, elapsed
    notes = ["step time by differencing elapsed_time (whole seconds) between logged steps; "
             "percentiles over interval means understate the tail"]
    total = parse_number(rows[-1].get("total_steps")) if rows else None
    if total:
        notes.append(f"{total:g} steps planned")
    return Parsed(format="hf-trainer", variant="llamafactory-jsonl", samples=builder.arrays(),
                  aggregation="interval-mean", notes=notes if len(builder) else [
                      no_steps_note("no two rows with increasing current_steps")])


def _trainer_state(state: dict[str, Any]) -> Parsed:
    history = state.get("log_history") or []
    runtime = next((parse_number(h.get("train_runtime")) for h in reversed(history)
                    if isinstance(h, dict) and "train_runtime" in h), None)
    steps = parse_number(state.get("global_step"))
    builder = SampleBuilder()
    if runtime and steps:
        builder.add(runtime / steps, covers=steps)
    notes = ["whole-run: train_runtime / global_step (includes evaluation and checkpoints)"]
    return Parsed(format="hf-trainer", variant="trainer-state", samples=builder.arrays(),
                  aggregation="whole-run", notes=notes if len(builder) else [
                      no_steps_note("trainer_state.json without train_runtime")])


def _results(results: dict[str, Any], variant: str) -> Parsed:
    runtime = parse_number(results.get("train_runtime"))
    per_second = parse_number(results.get("train_steps_per_second"))
    builder = SampleBuilder()
    notes = []
    if runtime and per_second and math.isfinite(runtime * per_second) and 0 < runtime * per_second < 1e15:
        steps = round(runtime * per_second)
        builder.add(1.0 / per_second, covers=max(1, steps))
        notes.append(f"whole-run: 1 / train_steps_per_second ({per_second:g}, rounded to 3 "
                     f"decimals by the Trainer, so the step time is approximate); about {steps} "
                     f"steps in {runtime:g} s")
    else:
        notes.append(no_steps_note("train_runtime without train_steps_per_second"))
    return Parsed(format="hf-trainer", variant=variant, samples=builder.arrays(),
                  aggregation="whole-run", notes=notes)
