"""Measured step times from training logs, profiler traces and per-rank tables.

Pure core except ``readers`` (the only module that opens files). See docs/log-formats.md for
the formats, the warm-up and outlier rules and the JSON schema ``procure.ingest/v1``.

``FORMATS``, ``detect_format`` and ``LogError`` import nothing heavy; ``ingest`` and the result
classes load numpy on first use, so importing this package keeps ``procure --help`` fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from procure.measure.detect import FORMATS, detect_format
from procure.measure.errors import LogError

if TYPE_CHECKING:
    from procure.measure.collect import ingest
    from procure.measure.readers import Limits
    from procure.measure.result import IngestResult
    from procure.measure.summarise import SourceSummary

__all__ = ["FORMATS", "IngestResult", "Limits", "LogError", "SourceSummary", "detect_format",
           "ingest"]

_LAZY = {
    "ingest": ("procure.measure.collect", "ingest"),
    "IngestResult": ("procure.measure.result", "IngestResult"),
    "SourceSummary": ("procure.measure.summarise", "SourceSummary"),
    "Limits": ("procure.measure.readers", "Limits"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        module, attribute = _LAZY[name]
        return getattr(import_module(module), attribute)
    raise AttributeError(f"module 'procure.measure' has no attribute {name!r}")
