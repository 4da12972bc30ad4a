"""Layer 7: the typed, versioned result document (``procure.quote/v2``) and its JSON Schema.

Every output format is a pure function of a QuoteDocument. Saved documents are read back
through ``load_quote``: older versions are upgraded, then validated against the schema, so a
mutated or foreign file is a diagnostic, never a crash.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from procure.document.quote import SCHEMA, QuoteDocument
from procure.document.upgrade import upgrade
from procure.errors import Diagnostic, InputError
from procure.jsonpos import json_position
from procure.jsontext import parse_json

__all__ = ["SCHEMA", "QuoteDocument", "json_schema", "load_quote", "validate_quote"]
KNOWN_SCHEMAS = ("procure.quote/v1", SCHEMA)


def _where(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "document"


def _said(error: ErrorDetails) -> str:
    if error["type"] in ("missing", "extra_forbidden"):
        return "required field is missing" if error["type"] == "missing" else "unknown field"
    return f"{error['msg']} (got {str(error.get('input'))[:60]!r})"


def validate_quote(data: Any, source: str, text: str | bytes | None = None) -> QuoteDocument:
    """A QuoteDocument from parsed JSON data (any known version), or one InputError listing every
    problem with its path in the document (and its line:col when the JSON ``text`` is given; bytes
    are decoded only to place a problem)."""
    found = data.get("schema") if isinstance(data, dict) else None
    if found not in KNOWN_SCHEMAS:
        text = _decoded(text)
        line, col = json_position(text, ("schema",)) if text else (0, 0)
        raise InputError(Diagnostic(source, line, col, "bad-schema",
                                    f"expected schema {SCHEMA!r} (or procure.quote/v1), found {str(found)[:80]!r}"))
    try:
        return QuoteDocument.model_validate(upgrade(data))
    except ValidationError as exc:
        text = _decoded(text)
        problems = [Diagnostic(source, *_position(text, e), "bad-document", f"{_where(tuple(e['loc']))}: {_said(e)}")
                    for e in exc.errors()[:50]]
        raise InputError(problems) from None


def _decoded(text: str | bytes | None) -> str | None:
    return text.decode("utf-8-sig", errors="replace") if isinstance(text, bytes) else text


def _position(text: str | None, error: ErrorDetails) -> tuple[int, int]:
    """Where the error is in the saved text; a v1 document is validated after its upgrade, so
    its paths may not exist in the text (the nearest container that does is named)."""
    return json_position(text, tuple(error["loc"])) if text else (0, 0)


def load_quote(data: bytes, source: str) -> QuoteDocument:
    """Parse and validate a saved result document."""
    return validate_quote(parse_json(data, source), source, data)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of procure.quote/v2 (docs/quote.schema.json is generated from it)."""
    schema = QuoteDocument.model_json_schema(by_alias=True, mode="serialization")
    schema["$id"] = "https://procure.dev/schemas/procure.quote.v2.json"
    return schema
