"""One parser per log family; each takes the file's text and name and returns a Parsed.

Which parser reads which format is declared once, in procure.measure.formats.LOG_FORMATS.
"""

from __future__ import annotations

from typing import Callable

from procure.measure.formats import LOG_FORMATS
from procure.measure.samples import Parsed

TextParser = Callable[[str, str], Parsed]

TEXT_PARSERS: dict[str, TextParser] = {
    f.name: f.parse_function() for f in LOG_FORMATS if f.parser is not None}
