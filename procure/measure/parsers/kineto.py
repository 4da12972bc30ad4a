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
import re
from collections import defaultdict
from typing import Any

import numpy as np

from procure.measure.parsers.common import no_steps_note
from procure.measure.samples import Parsed, SampleBuilder

_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)
_KERNEL = re.compile(r"^(?:nccl|rccl)(?:Dev)?Kernel_([A-Za-z]+)", re.IGNORECASE)
_WORK_CATS = {"cpu_op", "cuda_runtime", "cuda_driver", "user_annotation", "python_function"}
_DTYPE_BYTES = {"float": 4, "float32": 4, "half": 2, "float16": 2, "bfloat16": 2, "double": 8,
                "float64": 8, "int8": 1, "uint8": 1, "char": 1, "int32": 4, "int": 4,
                "int64": 8, "long": 8, "uint64": 8, "bool": 1, "float8_e4m3fn": 1}
_COLLECTIVE_PREFIXES = (("allreduce", "all_reduce"), ("allgather", "all_gather"),
                        ("reducescatter", "reduce_scatter"), ("alltoall", "all_to_all"),
                        ("sendrecv", "send_recv"), ("broadcast", "broadcast"))


def parse(text: str, name: str = "") -> Parsed:
    try:
        trace = json.loads(text)
    except ValueError as exc:
        return Parsed(format="kineto", notes=[f"not valid JSON: {exc}"])
    events = trace.get("traceEvents") if isinstance(trace, dict) else trace
    if not isinstance(events, list):
        return Parsed(format="kineto", notes=[no_steps_note("no traceEvents list")])
    events = [e for e in events if isinstance(e, dict)]
    info = trace.get("distributedInfo") if isinstance(trace, dict) else None
    rank, gpus = _rank_and_world(info, name)
    builder, notes = _steps(events, rank)
    parsed = Parsed(format="kineto", samples=builder.arrays(), gpus=gpus, notes=notes,
                    collectives=_collectives(events) or None)
    parsed.info["rank"] = rank
    parsed.info["world_size"] = gpus
    return parsed


def _rank_and_world(info: Any, name: str) -> tuple[int | None, int | None]:
    rank = world = None
    if isinstance(info, dict):
        rank = info.get("rank") if isinstance(info.get("rank"), int) else None
        world = info.get("world_size") if isinstance(info.get("world_size"), int) else None
    if rank is None:
        m = _RANK_IN_NAME.search(name.rsplit("/", 1)[-1])
        rank = int(m.group(1)) if m else None
    return rank, world if world and world > 0 else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and np.isfinite(value) else None


def _steps(events: list[dict[str, Any]], rank: int | None) -> tuple[SampleBuilder, list[str]]:
    spans: dict[int, tuple[float, float]] = {}
    gpu_only: dict[int, tuple[float, float]] = {}
    for e in events:
        m = _STEP.match(str(e.get("name", "")))
        ts, dur = _number(e.get("ts")), _number(e.get("dur"))
        if not m or ts is None or dur is None or e.get("ph", "X") != "X":
            continue
        target = gpu_only if "gpu" in str(e.get("cat", "")) else spans
        step = int(m.group(1))
        if dur > target.get(step, (0.0, -1.0))[1]:
            target[step] = (ts, dur)
    notes: list[str] = []
    if not spans and gpu_only:
        spans = gpu_only
        notes.append("only GPU-side ProfilerStep annotations: step time is the GPU span")
    elif gpu_only:
        notes.append("ProfilerStep annotations on both CPU and GPU: the CPU ones are counted")
    empty = _empty_steps(events, spans)
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


def _empty_steps(events: list[dict[str, Any]], spans: dict[int, tuple[float, float]]) -> set[int]:
    """Steps with no other CPU event inside (a trailing step cut by the profiler)."""
    starts = np.sort(np.array([
        t for t in (_number(e.get("ts")) for e in events
                    if e.get("cat") in _WORK_CATS and not _STEP.match(str(e.get("name", ""))))
        if t is not None]))
    empty = set()
    for step, (ts, dur) in spans.items():
        lo, hi = np.searchsorted(starts, [ts, ts + dur], side="left")
        if hi <= lo:
            empty.add(step)
    return empty if len(empty) < len(spans) else set()


def _collectives(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per collective: kernels and their time, CPU calls, and bytes (kernel messages, else the
    CPU annotation's input sizes) when the trace records them."""
    out: dict[str, dict[str, Any]] = defaultdict(lambda: {"kernels": 0, "kernel_time_s": 0.0,
                                                          "calls": 0, "kernel_bytes": 0,
                                                          "call_bytes": 0})
    for e in events:
        name, cat, args = str(e.get("name", "")), e.get("cat"), e.get("args") or {}
        if cat == "kernel":
            m = _KERNEL.match(name)
            if not m:
                continue
            entry = out[_canonical(str(args.get("Collective name") or m.group(1)))]
            entry["kernels"] += 1
            entry["kernel_time_s"] += (_number(e.get("dur")) or 0.0) / 1e6
            entry["kernel_bytes"] += _kernel_bytes(args)
        elif cat in ("user_annotation", "cpu_op") and name.startswith(("nccl:", "rccl:")):
            entry = out[_canonical(name.split(":", 1)[1])]
            entry["calls"] += 1
            entry["call_bytes"] += _call_bytes(args)
    return {k: _entry(v) for k, v in sorted(out.items())}


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
    size = _DTYPE_BYTES.get(str(args.get("dtype", "")).lower())
    return int(elems * size) if elems and size else 0


def _call_bytes(args: dict[str, Any]) -> int:
    dims, types = args.get("Input Dims"), args.get("Input type")
    if not isinstance(dims, list) or not isinstance(types, list):
        return 0
    total = 0
    for shape, dtype in zip(dims, types):
        size = _DTYPE_BYTES.get(str(dtype).lower())
        if size and isinstance(shape, list) and all(isinstance(d, int) for d in shape):
            total += int(np.prod(shape, dtype=np.int64)) * size if shape else 0
    return total
