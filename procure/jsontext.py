"""Deterministic JSON: the one writer of every JSON procure emits, and its exact reader.

Deterministic means byte-identical output for equal input: keys sorted, two-space indent,
UTF-8 without escaping, a trailing newline, and every number written from its exact value
(a Decimal as its digits, a float as its shortest round-trip repr). Not-a-number is refused:
it is not JSON and would hide a bug upstream.
"""

from __future__ import annotations

import json
import math
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from procure.errors import input_error

_INDENT = "  "
# What json.dumps(text, ensure_ascii=False) returns, without building an encoder per string (a
# large document has hundreds of thousands of keys and strings).
_quoted = json.encoder.encode_basestring


def to_json_bytes(obj: Any) -> bytes:
    """Serialise ``obj`` deterministically (see module doc); raise ValueError on NaN/inf."""
    chunks: list[str] = []
    _write(obj, 0, chunks)
    chunks.append("\n")
    return "".join(chunks).encode("utf-8")


def _number(text: str) -> float | Decimal:
    """Plain decimals (money) stay exact Decimals; a lower-case exponent is how a float's repr is
    written (a Decimal writes 'E'), so it goes back to a float and the document re-saves unchanged."""
    return float(text) if "e" in text else Decimal(text)


MAX_JSON_BYTES = 200 * 1024 * 1024


def parse_json(data: bytes, source: str) -> Any:
    """Parse JSON with exact decimals (money never passes through a float); a problem is an
    InputError naming ``source``, never a traceback."""
    try:
        return json.loads(data, parse_float=_number, parse_constant=_refuse_constant)
    except RecursionError:
        raise input_error(source, "bad-json", "the JSON nests too deeply to be a procure document") from None
    except json.JSONDecodeError as exc:
        raise input_error(source, "bad-json", f"not a JSON document: {exc.msg}", exc.lineno, exc.colno) from None
    except UnicodeDecodeError as exc:
        raise input_error(source, "bad-json", f"not UTF-8 text (byte 0x{data[exc.start:exc.start + 1].hex()} "
                          f"at offset {exc.start})", 1, 1) from None
    except ValueError as exc:
        raise input_error(source, "bad-json", f"not a JSON document: {exc}", 1, 1) from None


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _write(obj: Any, depth: int, out: list[str]) -> None:
    if isinstance(obj, dict):
        _write_dict(obj, depth, out)
    elif isinstance(obj, (list, tuple)):
        _write_list(obj, depth, out)
    else:
        out.append(_scalar(obj))


def _write_dict(obj: dict[Any, Any], depth: int, out: list[str]) -> None:
    if not obj:
        out.append("{}")
        return
    for key in obj:
        if not isinstance(key, str):
            raise TypeError(f"JSON object keys must be str, not {type(key).__name__}: {key!r}")
    pad = "\n" + _INDENT * (depth + 1)
    out.append("{")
    for i, key in enumerate(sorted(obj)):
        out.append(("," if i else "") + pad + _quoted(key) + ": ")
        _write(obj[key], depth + 1, out)
    out.append("\n" + _INDENT * depth + "}")


def _write_list(obj: list[Any] | tuple[Any, ...], depth: int, out: list[str]) -> None:
    if not obj:
        out.append("[]")
        return
    pad = "\n" + _INDENT * (depth + 1)
    out.append("[")
    for i, item in enumerate(obj):
        out.append(("," if i else "") + pad)
        _write(item, depth + 1, out)
    out.append("\n" + _INDENT * depth + "]")


def _scalar(obj: Any) -> str:
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, int):
        return str(int(obj))
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise ValueError(f"{obj!r} cannot be written as JSON")
        return repr(obj)
    if isinstance(obj, Decimal):
        if not obj.is_finite():
            raise ValueError(f"Decimal {obj} cannot be written as JSON")
        return str(obj)
    if isinstance(obj, str):
        return _quoted(obj)
    if isinstance(obj, (date, datetime)):
        return json.dumps(obj.isoformat())
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable: {obj!r}")
