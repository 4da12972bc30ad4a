"""Where a value sits in a JSON text: the line and column of the value at a path such as
``("bids", 0, "step_time_s")``, so a problem in a saved document is reported as ``file:line:col``
like a problem in YAML. Only called for errors; linear in the text, regex-driven (no parse tree).
"""

from __future__ import annotations

import json
import re

_WS = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(r"[^\s,\]}]+")
_STRUCTURE = re.compile(r'["{}\[\]]')


def json_position(text: str, path: tuple[int | str, ...]) -> tuple[int, int]:
    """(line, column), both from 1, of the value at ``path``, or of the deepest container on the
    way that exists (a missing key points at the object that lacks it)."""
    offset = _skip_ws(text, 0)
    try:
        for part in path:
            child = _child(text, offset, part)
            if child is None:
                break
            offset = child
    except (IndexError, AttributeError, ValueError):   # a text the parser refused: best effort
        pass
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _skip_ws(text: str, i: int) -> int:
    match = _WS.match(text, i)
    return match.end() if match else i


def _child(text: str, i: int, part: int | str) -> int | None:
    if text[i] == "{" and isinstance(part, str):
        return _member(text, i, part)
    if text[i] == "[" and isinstance(part, int):
        return _element(text, i, part)
    return None


def _member(text: str, i: int, key: str) -> int | None:
    j = _skip_ws(text, i + 1)
    while text[j] != "}":
        match = _STRING.match(text, j)
        if match is None:
            return None
        j = _skip_ws(text, match.end())
        j = _skip_ws(text, j + 1)          # past ':'
        if json.loads(match.group()) == key:
            return j
        j = _after_comma(text, _skip_value(text, j))
    return None


def _element(text: str, i: int, index: int) -> int | None:
    j, n = _skip_ws(text, i + 1), 0
    while text[j] != "]":
        if n == index:
            return j
        j, n = _after_comma(text, _skip_value(text, j)), n + 1
    return None


def _after_comma(text: str, j: int) -> int:
    j = _skip_ws(text, j)
    return _skip_ws(text, j + 1) if text[j] == "," else j


def _skip_value(text: str, i: int) -> int:
    """The offset just past the value that starts at ``i``."""
    if text[i] == '"':
        match = _STRING.match(text, i)
        if match is None:
            raise ValueError("unterminated string")
        return match.end()
    if text[i] not in "{[":
        scalar = _SCALAR.match(text, i)
        return scalar.end() if scalar else i + 1
    depth, j = 0, i
    while True:
        match = _STRUCTURE.search(text, j)
        if match is None:
            raise ValueError("unterminated container")
        char = match.group()
        if char == '"':
            string = _STRING.match(text, match.start())
            if string is None:
                raise ValueError("unterminated string")
            j = string.end()
            continue
        depth += 1 if char in "{[" else -1
        j = match.end()
        if depth == 0:
            return j
