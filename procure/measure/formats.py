"""Every log format procure reads, in one table: its name, what it is, how it is recognised and
which parser reads it. Adding a format is one entry here plus its parser module (see CONTRIBUTING.md).

This module imports nothing heavy: `procure --help`, `ingest --list-formats` and detection read it
without loading any parser (a parser is named as ``module:function`` and imported on first use).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from importlib import import_module
from typing import Any, Callable


@dataclass(frozen=True)
class Signature:
    """A pattern that marks a format, tried in ``order`` (lowest first; the most specific patterns
    come first). ``words`` are literals every match contains on its line: past the first MiB of a
    file, the pattern is tried only on lines holding one of them (memchr speed, one pass)."""

    order: int
    source: bytes
    words: tuple[bytes, ...]

    @cached_property
    def pattern(self) -> re.Pattern[bytes]:
        """Compiled on first use and kept: reading a Parquet table, which is told by its magic
        bytes, compiles none of the log patterns."""
        return re.compile(self.source)


@dataclass(frozen=True)
class LogFormat:
    name: str
    summary: str                      # what `procure ingest --list-formats` prints
    parser: str | None                # "module:function" taking (text, source name); None: read as a table
    signatures: tuple[Signature, ...] = ()
    json: bool = False                # JSON-shaped: the parse budget also counts objects and arrays
    table: bool = False               # a per-rank table (CSV, Parquet), read column-wise

    def parse_function(self) -> Callable[[str, str], Any]:
        if self.parser is None:
            raise ValueError(f"{self.name} is a table format; it has no text parser")
        module, function = self.parser.split(":")
        parse: Callable[[str, str], Any] = getattr(import_module(module), function)
        return parse


def _sig(order: int, pattern: bytes, *words: bytes) -> Signature:
    return Signature(order, pattern, words)


P = "procure.measure.parsers."
LOG_FORMATS: tuple[LogFormat, ...] = (
    LogFormat("mlperf", "MLPerf Training result logs (:::MLLOG lines)", P + "mlperf:parse",
              (_sig(2, rb":::MLLOG", b":::MLLOG"),)),
    LogFormat("mlperf-system", "MLPerf system description JSON (GPUs, accelerator)", P + "mlperf:parse_system",
              (_sig(3, rb'"accelerators_per_node"\s*:', b"accelerators_per_node"),), json=True),
    LogFormat("megatron", "Megatron-LM, Megatron-DeepSpeed, GPT-NeoX and other forks", P + "megatron:parse",
              (_sig(8, rb"elapsed time per iteration|elapsed_time_per_iteration_ms=",
                    b"elapsed time per iteration", b"elapsed_time_per_iteration_ms="),
               _sig(15, rb"-+ arguments -+|using world size: \d+", b"arguments", b"using world size"))),
    LogFormat("nemo", "NeMo 1 and NeMo 2 (train_step_timing, progress bars)", P + "nemo:parse",
              (_sig(9, rb"train_step_timing in s|Training epoch \d+, iteration \d+",
                    b"train_step_timing", b"Training epoch"),
               _sig(14, rb"reduced_train_loss=|train_step_timing", b"reduced_train_loss=", b"train_step_timing"))),
    LogFormat("torchtitan", "torchtitan ([titan] step lines)", P + "torchtitan:parse",
              (_sig(7, rb"\[titan\]|\bstep:\s*\d+\s+loss:\s*[-\d.]+.*\b(?:tps|wps):", b"[titan]", b"loss:"),)),
    LogFormat("deepspeed", "DeepSpeed (SamplesPerSec, fwd/bwd timers)", P + "deepspeed:parse",
              (_sig(13, rb"RunningAvgSamplesPerSec|CurrSamplesPerSec|time \(ms\) \| fwd_microstep:"
                        rb"|time \(ms\) \| fwd:", b"SamplesPerSec", b"time (ms) | fwd"),)),
    LogFormat("hf-trainer", "Hugging Face Trainer and LLaMA-Factory (trainer_state.json, train_results.json, logs)",
              P + "hf:parse",
              (_sig(5, rb'"current_steps"\s*:|"log_history"\s*:|"train_runtime"\s*:|\'train_runtime\':',
                    b"current_steps", b"log_history", b"train_runtime"),), json=True),
    LogFormat("ms-swift", "ms-swift training logs", P + "swift:parse",
              (_sig(4, rb"""['"]global_step/max_steps['"]|['"]train_speed\(iter/s\)['"]""",
                    b"global_step/max_steps", b"train_speed(iter/s)"),), json=True),
    LogFormat("maxtext", "MaxText (completed step lines)", P + "simple:parse_maxtext",
              (_sig(10, rb"completed step: \d+, seconds:", b"completed step:"),)),
    LogFormat("nanochat", "nanochat and nanoGPT (dt per step)", P + "simple:parse_nanochat",
              (_sig(11, rb"step\s+\d+(?:/\d+)?\b[^\n]*\|\s*dt:\s*[\d.]+\s*m?s"
                        rb"|(?m:^iter \d+: loss [-\d.]+, time [\d.]+m?s)"
                        rb"|step\s+\d+/\d+\s*\|\s*train loss", b"dt:", b"iter ", b"train loss"),)),
    LogFormat("internevo", "InternEvo (tgs, record_current_batch_training_metrics)", P + "simple:parse_internevo",
              (_sig(12, rb"tgs \(tokens/gpu/second\)=|record_current_batch_training_metrics",
                    b"tgs (tokens/gpu/second)=", b"record_current_batch_training_metrics"),)),
    LogFormat("kineto", "PyTorch profiler / Kineto traces (JSON, .json.gz)", P + "kineto:parse",
              (_sig(1, rb'"traceEvents"\s*:', b"traceEvents"),), json=True),
    LogFormat("nccl-tests", "nccl-tests output (bus bandwidth, no step times)", P + "nccl_tests:parse",
              (_sig(6, rb"#\s+size\s+count\s+type|# Avg bus bandwidth", b"size", b"Avg bus bandwidth"),)),
    LogFormat("rank-table", "per-rank step tables (CSV or Parquet: step, rank, duration / spans / op trace)",
              None, table=True),
    LogFormat("straggler-meta", "per-rank straggler metadata (YAML beside a rank table)", P + "meta:parse"),
)
del P

BY_NAME: dict[str, LogFormat] = {f.name: f for f in LOG_FORMATS}
FORMATS: tuple[str, ...] = tuple(BY_NAME)
TABLE_FORMATS: tuple[str, ...] = tuple(f.name for f in LOG_FORMATS if f.table)
JSON_FORMATS: tuple[str, ...] = tuple(f.name for f in LOG_FORMATS if f.json)
# (format, signature) in the order detection tries them
SIGNATURES: tuple[tuple[str, Signature], ...] = tuple(sorted(
    ((f.name, s) for f in LOG_FORMATS for s in f.signatures), key=lambda item: item[1].order))
