"""Format detection from a file name and its first bytes (order matters: most specific first)."""

from __future__ import annotations

import re
from typing import Iterator

FORMATS: tuple[str, ...] = (
    "mlperf", "mlperf-system", "megatron", "nemo", "torchtitan", "deepspeed", "hf-trainer",
    "ms-swift", "maxtext", "nanochat", "internevo", "kineto", "nccl-tests", "rank-table",
    "straggler-meta",
)

TABLE_FORMATS = ("rank-table",)

_RULES: tuple[tuple[str, re.Pattern[bytes]], ...] = (
    ("kineto", re.compile(rb'"traceEvents"\s*:')),
    ("mlperf", re.compile(rb":::MLLOG")),
    ("mlperf-system", re.compile(rb'"accelerators_per_node"\s*:')),
    ("ms-swift", re.compile(rb"""['"]global_step/max_steps['"]|['"]train_speed\(iter/s\)['"]""")),
    ("hf-trainer", re.compile(rb'"current_steps"\s*:|"log_history"\s*:|"train_runtime"\s*:'
                              rb"|'train_runtime':")),
    ("nccl-tests", re.compile(rb"#\s+size\s+count\s+type|# Avg bus bandwidth")),
    ("torchtitan", re.compile(rb"\[titan\]|\bstep:\s*\d+\s+loss:\s*[-\d.]+.*\b(?:tps|wps):")),
    ("megatron", re.compile(rb"elapsed time per iteration|elapsed_time_per_iteration_ms=")),
    ("nemo", re.compile(rb"train_step_timing in s|Training epoch \d+, iteration \d+")),
    ("maxtext", re.compile(rb"completed step: \d+, seconds:")),
    ("nanochat", re.compile(rb"step\s+\d+(?:/\d+)?\b[^\n]*\|\s*dt:\s*[\d.]+\s*m?s"
                            rb"|(?m:^iter \d+: loss [-\d.]+, time [\d.]+m?s)"
                            rb"|step\s+\d+/\d+\s*\|\s*train loss")),
    ("internevo", re.compile(rb"tgs \(tokens/gpu/second\)=|record_current_batch_training_metrics")),
    ("deepspeed", re.compile(rb"RunningAvgSamplesPerSec|CurrSamplesPerSec|"
                             rb"time \(ms\) \| fwd_microstep:|time \(ms\) \| fwd:")),
    ("nemo", re.compile(rb"reduced_train_loss=|train_step_timing")),
    ("megatron", re.compile(rb"-+ arguments -+|using world size: \d+")),
)

# Words each rule needs (found at memchr speed): past the first MiB, a rule's pattern is tried only
# on the lines around these, so detecting a 200 MB log costs one pass, not fifteen regex scans.
_LITERALS: dict[str, tuple[bytes, ...]] = {
    "kineto": (b"traceEvents",), "mlperf": (b":::MLLOG",), "mlperf-system": (b"accelerators_per_node",),
    "ms-swift": (b"global_step/max_steps", b"train_speed(iter/s)"),
    "hf-trainer": (b"current_steps", b"log_history", b"train_runtime"),
    "nccl-tests": (b"size", b"Avg bus bandwidth"), "torchtitan": (b"[titan]", b"loss:"),
    "megatron": (b"elapsed time per iteration", b"elapsed_time_per_iteration_ms=", b"arguments", b"using world size"),
    "nemo": (b"train_step_timing", b"Training epoch", b"reduced_train_loss="),
    "maxtext": (b"completed step:",), "nanochat": (b"dt:", b"iter ", b"train loss"),
    "internevo": (b"tgs (tokens/gpu/second)=", b"record_current_batch_training_metrics"),
    "deepspeed": (b"SamplesPerSec", b"time (ms) | fwd"),
}
MAX_OCCURRENCES = 200      # lines tried per word: a word that is everywhere but never matches stops here
MAX_LINE_BYTES = 1 << 16


def detect_in_body(name: str, data: bytes) -> str | None:
    """``detect_format`` for a whole file, in time linear in its size (see ``_LITERALS``)."""
    lower = name.lower()
    if lower.endswith(NOT_LOGS):
        return None
    for fmt, pattern in _RULES:
        for word in _LITERALS[fmt]:
            if any(pattern.search(line) for line in _lines_with(data, word)):
                return fmt
    return None


def _lines_with(data: bytes, word: bytes) -> Iterator[bytes]:
    at = data.find(word)
    for _ in range(MAX_OCCURRENCES):
        if at < 0:
            return
        start = max(data.rfind(b"\n", max(0, at - MAX_LINE_BYTES), at) + 1, at - MAX_LINE_BYTES)
        end = data.find(b"\n", at, at + MAX_LINE_BYTES)
        end = at + MAX_LINE_BYTES if end < 0 else end
        yield data[start:end + 1]
        at = data.find(word, end)


_META = re.compile(rb"^\s*world_size:\s*\d+", re.MULTILINE)
_META_PARALLEL = re.compile(rb"^\s*(?:pp|dp|tp)_size:\s*\d+", re.MULTILINE)
_CSV_HEADER = re.compile(rb"\A[^\n]*\bstep\b[^\n]*\brank\b|\A[^\n]*\brank\b[^\n]*\bstep\b",
                         re.IGNORECASE)


NOT_LOGS = (".md", ".rst", ".html", ".htm", ".pdf", ".png", ".jpg", ".jpeg", ".gif", ".svg",
            ".py", ".sh", ".ipynb", ".zip", ".tar", ".tgz", ".xlsx", ".docx")


def detect_format(name: str, head: bytes) -> str | None:
    """The format of a file from its name and first bytes, or None when nothing matches.

    Documents and code (README.md, scripts) are never logs, even when they quote log lines.
    """
    lower = name.lower()
    if lower.endswith(NOT_LOGS):
        return None
    if head.startswith(b"PAR1") or lower.endswith((".parquet", ".pq")):
        return "rank-table"
    if lower.endswith((".csv", ".tsv", ".csv.gz")) and _CSV_HEADER.search(head[:4096]):
        return "rank-table"
    if lower.endswith((".yaml", ".yml")) and _META.search(head) and _META_PARALLEL.search(head):
        return "straggler-meta"
    for fmt, pattern in _RULES:
        if pattern.search(head):
            return fmt
    return None
