"""One parser per log family; each takes the file's text and name and returns a Parsed.

Which parser reads which format is declared once, in procure.measure.formats.LOG_FORMATS.
"""

from __future__ import annotations

from typing import Any, Callable

from procure.measure.samples import Parsed

TextParser = Callable[[str, str], Parsed]


def __getattr__(name: str) -> Any:
    """``TEXT_PARSERS`` (every text format's parser) on demand: importing one parser module loads
    this package, which must not import the other ten (an ingest resolves only the one it reads,
    through ``LogFormat.parse_function``)."""
    if name != "TEXT_PARSERS":
        raise AttributeError(f"module 'procure.measure.parsers' has no attribute {name!r}")
    from procure.measure.formats import LOG_FORMATS

    return {f.name: f.parse_function() for f in LOG_FORMATS if f.parser is not None}
