"""PyTorch profiler (Kineto) Chrome traces, one file per rank.

- step time: ``ProfilerStep#N`` CPU annotations (``ts``/``dur`` in microseconds, integer or
  float); ROCm traces repeat the step as a GPU annotation (``gpu_user_annotation``), which is
  not counted again. A step with no other CPU event inside it (the profiler stopped) is dropped.
- rank and GPU count from ``distributedInfo`` (``rank``, ``world_size``), else the rank from a
  ``rank-N`` / ``rankN`` file name.
- collectives: NCCL/RCCL kernels (time, and message bytes when the trace records
  ``In msg nelems`` and ``dtype``) and ``nccl:*`` CPU annotations with input sizes.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from collections import defaultdict
from typing import Any

import numpy as np

from procure.measure.parsers.common import no_steps_note
from procure.measure.samples import Parsed, SampleBuilder

_STEP = re.compile(r"^ProfilerStep#(\d{1,18})$")
_RANK_IN_NAME = re.compile(r"rank[-_]?(\d{1,9})", re.IGNORECASE)
_KERNEL = re.compile(r"^(?:nccl|rccl)(?:Dev)?Kernel_([A-Za-z]+)", re.IGNORECASE)
_WORK_CATS = {"cpu_op", "cuda_runtime", "cuda_driver", "user_annotation", "python_function"}
_DTYPE_BYTES = {"float": 4, "float32": 4, "half": 2, "float16": 2, "bfloat16": 2, "double": 8,
                "float64": 8, "int8": 1, "uint8": 1, "char": 1, "int32": 4, "int": 4,
                "int64": 8, "long": 8, "uint64": 8, "bool": 1, "float8_e4m3fn": 1}
_COLLECTIVE_PREFIXES = (("allreduce", "all_reduce"), ("allgather", "all_gather"),
                        ("reducescatter", "reduce_scatter"), ("alltoall", "all_to_all"),
                        ("sendrecv", "send_recv"), ("broadcast", "broadcast"))
MAX_RANK = 2**31 - 1
MAX_BYTES = 2**62          # a message size beyond this is a corrupt field, not a message
_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class _Trace:
    """What the parser keeps of a trace, event by event: never the events themselves, so a trace
    costs a few bytes per event (a whole-file ``json.loads`` costs ~1 KB of objects per event)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.spans: dict[int, tuple[float, float]] = {}
        self.gpu_only: dict[int, tuple[float, float]] = {}
        self.work_starts = array("d")
        self.collectives: dict[str, dict[str, Any]] = defaultdict(lambda: {
            "kernels": 0, "kernel_time_s": 0.0, "calls": 0, "kernel_bytes": 0, "call_bytes": 0})

    def add(self, e: Any) -> None:
        if not isinstance(e, dict):
            return
        name = e.get("name", "")
        name = name if isinstance(name, str) else str(name)[:200]
        cat = e.get("cat")
        cat = cat if isinstance(cat, str) else ""
        m = _STEP.match(name)
        if m:
            self._step(e, m, cat)
        elif cat in _WORK_CATS:
            ts = _number(e.get("ts"))
            if ts is not None:
                self.work_starts.append(ts)
        args = e.get("args")
        self._collective(e, name, cat, args if isinstance(args, dict) else {})

    def _step(self, e: dict[str, Any], m: re.Match[str], cat: str) -> None:
        ts, dur = _number(e.get("ts")), _number(e.get("dur"))
        if ts is None or dur is None or e.get("ph", "X") != "X":
            return
        target = self.gpu_only if "gpu" in cat else self.spans
        step = int(m.group(1))
        if dur > target.get(step, (0.0, -1.0))[1]:
            target[step] = (ts, dur)

    def _collective(self, e: dict[str, Any], name: str, cat: str, args: dict[str, Any]) -> None:
        if cat == "kernel":
            m = _KERNEL.match(name)
            if not m:
                return
            label = args.get("Collective name")
            entry = self.collectives[_canonical(label if isinstance(label, str) and label else m.group(1))]
            entry["kernels"] += 1
            entry["kernel_time_s"] += (_number(e.get("dur")) or 0.0) / 1e6
            entry["kernel_bytes"] += _kernel_bytes(args)
        elif cat in ("user_annotation", "cpu_op") and name.startswith(("nccl:", "rccl:")):
            entry = self.collectives[_canonical(name.split(":", 1)[1])]
            entry["calls"] += 1
            entry["call_bytes"] += _call_bytes(args)


def parse(text: str, name: str = "") -> Parsed:
    trace = _Trace()
    try:
        info = _stream(text, trace)
    except ValueError as exc:
        return Parsed(format="kineto", notes=[f"not valid JSON: {str(exc)[:200]}"])
    if info is None:
        return Parsed(format="kineto", notes=[no_steps_note("no traceEvents list")])
    rank, gpus = _rank_and_world(info, name)
    builder, notes = _steps(trace, rank)
    parsed = Parsed(format="kineto", samples=builder.arrays(), gpus=gpus, notes=notes,
                    collectives={k: _entry(v) for k, v in sorted(trace.collectives.items())} or None)
    parsed.info["rank"] = rank
    parsed.info["world_size"] = gpus
    return parsed


def _stream(text: str, trace: _Trace) -> Any:
    """Feed every event of the trace to ``trace``; return ``distributedInfo`` (``{}`` when absent),
    or None when there is no event list. Raises ValueError for text that is not JSON."""
    pos = _skip(text, 0)
    if text.startswith("[", pos):
        end = _events(text, pos, trace)
        _end_of_document(text, end)
        return {}
    if not text.startswith("{", pos):
        _DECODER.raw_decode(text, pos)          # a scalar document: no events either way
        return None
    info: Any = {}
    found = False
    pos = _skip(text, pos + 1)
    if text.startswith("}", pos):
        _end_of_document(text, pos + 1)
        return None
    while True:
        key, pos = _DECODER.raw_decode(text, pos)
        if not isinstance(key, str):
            raise ValueError(f"an object key must be a string (char {pos})")
        pos = _expect(text, pos, ":")
        if key == "traceEvents" and text.startswith("[", pos):
            trace.reset()                         # a repeated key: the last one wins, as in json.loads
            pos, found = _events(text, pos, trace), True
        else:
            value, pos = _DECODER.raw_decode(text, pos)
            if key == "traceEvents":
                found = False                     # not a list: no events
            elif key == "distributedInfo":
                info = value
        pos = _skip(text, pos)
        if text.startswith("}", pos):
            _end_of_document(text, pos + 1)
            return info if found else None
        pos = _expect(text, pos, ",")


def _events(text: str, pos: int, trace: _Trace) -> int:
    """Decode the array at ``pos`` one element at a time; return the position after it."""
    pos = _skip(text, pos + 1)
    if text.startswith("]", pos):
        return pos + 1
    while True:
        event, pos = _DECODER.raw_decode(text, pos)
        trace.add(event)
        pos = _skip(text, pos)
        if text.startswith("]", pos):
            return pos + 1
        pos = _expect(text, pos, ",")


def _skip(text: str, pos: int) -> int:
    m = _SPACE.match(text, pos)   # always matches: the pattern accepts no space at all
    return m.end() if m else pos


def _expect(text: str, pos: int, char: str) -> int:
    pos = _skip(text, pos)
    if not text.startswith(char, pos):
        raise ValueError(f"expected {char!r} at char {pos}")
    return _skip(text, pos + 1)


def _end_of_document(text: str, pos: int) -> None:
    if _skip(text, pos) != len(text):
        raise ValueError(f"extra data after the document at char {pos}")


def _rank_and_world(info: Any, name: str) -> tuple[int | None, int | None]:
    rank = world = None
    if isinstance(info, dict):
        rank = _whole(info.get("rank"), 0)
        world = _whole(info.get("world_size"), 1)
    if rank is None:
        m = _RANK_IN_NAME.search(name.rsplit("/", 1)[-1])
        rank = int(m.group(1)) if m else None
    return rank, world


def _whole(value: Any, low: int) -> int | None:
    """An integer field (rank, world size) within [low, 2**31), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and low <= value <= MAX_RANK else None


def _number(value: Any) -> float | None:
    """A finite float from a JSON number (integers of any size, 10**29 included), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _steps(trace: _Trace, rank: int | None) -> tuple[SampleBuilder, list[str]]:
    spans, gpu_only = trace.spans, trace.gpu_only
    notes: list[str] = []
    if not spans and gpu_only:
        spans = gpu_only
        notes.append("only GPU-side ProfilerStep annotations: step time is the GPU span")
    elif gpu_only:
        notes.append("ProfilerStep annotations on both CPU and GPU: the CPU ones are counted")
    empty = _empty_steps(np.frombuffer(trace.work_starts, dtype=np.float64), spans)
    builder = SampleBuilder()
    for step in sorted(spans):
        if step not in empty:
            builder.add(spans[step][1] / 1e6, step=step, rank=rank)
    for step in sorted(empty):
        notes.append(f"ProfilerStep#{step} ({spans[step][1] / 1e3:.3f} ms) holds no other event: "
                     "the profiler stopped inside it; dropped")
    if not spans:
        notes.append(no_steps_note("no ProfilerStep#N annotations"))
    return builder, notes


def _empty_steps(starts: np.ndarray, spans: dict[int, tuple[float, float]]) -> set[int]:
    """Steps with no other CPU event inside (a trailing step cut by the profiler)."""
    starts = np.sort(starts)
    empty = set()
    for step, (ts, dur) in spans.items():
        lo, hi = np.searchsorted(starts, [ts, ts + dur], side="left")
        if hi <= lo:
            empty.add(step)
    return empty if len(empty) < len(spans) else set()


def _entry(raw: dict[str, Any]) -> dict[str, Any]:
    size = raw["kernel_bytes"] or raw["call_bytes"] or None
    return {"kernels": raw["kernels"], "kernel_time_s": raw["kernel_time_s"],
            "calls": raw["calls"], "bytes": size}


def _canonical(name: str) -> str:
    key = name.lower().replace("_", "")
    for prefix, canonical in _COLLECTIVE_PREFIXES:
        if key.startswith(prefix):
            return canonical
    return name.lower().strip("_")


def _kernel_bytes(args: dict[str, Any]) -> int:
    elems = _number(args.get("In msg nelems"))
    dtype = args.get("dtype", "")
    size = _DTYPE_BYTES.get(dtype.lower()) if isinstance(dtype, str) else None
    if not elems or not size or not 0 < elems * size < MAX_BYTES:
        return 0
    return int(elems * size)


def _call_bytes(args: dict[str, Any]) -> int:
    dims, types = args.get("Input Dims"), args.get("Input type")
    if not isinstance(dims, list) or not isinstance(types, list):
        return 0
    total = 0
    for shape, dtype in zip(dims, types):
        size = _DTYPE_BYTES.get(dtype.lower()) if isinstance(dtype, str) else None
        if size and isinstance(shape, list) and shape and \
                all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < MAX_BYTES for d in shape):
            total += math.prod(shape) * size
    return total if total < MAX_BYTES else 0
