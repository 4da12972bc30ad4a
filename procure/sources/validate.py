"""cluster.yaml -> validated ``Cluster``; pydantic errors become ``file:line:col`` diagnostics."""

from __future__ import annotations

from dataclasses import replace

import typing
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from procure.errors import Diagnostic, InputError
from procure.sources.fields import YamlBool
from procure.sources.suggest import suggest
from procure.sources.yamlpos import YamlDocument, YamlPath

ModelT = TypeVar("ModelT", bound=BaseModel)


def _unwrap(annotation: object) -> list[type[BaseModel]]:
    """The pydantic model classes an annotation may hold (through Optional, list, Union)."""
    origin = typing.get_origin(annotation)
    if origin is None:
        return [annotation] if isinstance(annotation, type) and issubclass(annotation, BaseModel) else []
    models: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        models.extend(_unwrap(arg))
    return models


def _model_at(root: type[BaseModel], path: YamlPath) -> type[BaseModel] | None:
    model = root
    for part in path:
        if isinstance(part, int):
            continue
        field = next((f for name, f in model.model_fields.items() if (f.alias or name) == part), None)
        if field is None:
            return None
        candidates = _unwrap(field.annotation)
        if not candidates:
            return None
        model = candidates[0]
    return model


def _data_path(data: object, loc: Sequence[str | int]) -> YamlPath:
    """Keep the parts of a pydantic ``loc`` that are real keys/indexes of the data."""
    path: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
            path.append(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            path.append(part)
        elif isinstance(node, dict) and isinstance(part, str) and not part[0:1].isupper() \
                and "[" not in part and part not in ("literal", "function-after", "function-before"):
            path.append(part)   # a missing or unknown key: report it by name
            node = None
    return tuple(path)


def dotted(path: YamlPath) -> str:
    """('bids', 0, 'gpus') -> 'bids[0].gpus'."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "document"


MAX_ECHO_CHARS = 80   # a value quoted back in a message is cut here: a 1 MB string is not echoed
# what a pattern of the schemas means, for the message (the pattern itself is quoted as written)
PATTERN_WORDS = {
    r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$": "letters, digits, '.', '_' or '-', starting with a letter or digit, "
                                          "at most 64 characters",
    r"^[A-Z]{3}$": "three capital letters, e.g. USD",
}


def shown(value: object) -> str:
    """``value`` quoted as the user wrote it (repr), cut to MAX_ECHO_CHARS with its full length said."""
    text = repr(value)
    if len(text) <= MAX_ECHO_CHARS:
        return text
    size = len(value) if isinstance(value, (str, bytes, list, tuple, dict)) else None
    unit = "characters" if isinstance(value, (str, bytes)) else "items"
    return text[:MAX_ECHO_CHARS - 20] + "..." + (f" ({size:,} {unit})" if size is not None else "")


def _suggest(value: object, options: Iterable[str]) -> str:
    return suggest(value, options) if isinstance(value, str) and len(value) <= MAX_ECHO_CHARS else ""


def _message(error: ErrorDetails, path: YamlPath, root: type[BaseModel]) -> tuple[str, str, bool]:
    kind = error["type"]
    name = dotted(path)
    value = error.get("input")
    ctx: dict[str, Any] = error.get("ctx") or {}
    if kind in ("int_parsing", "float_parsing", "decimal_parsing") and isinstance(value, YamlBool):
        return "bad-type", (f"`{name}` must be a number, got {value} (YAML reads yes/no/on/off as "
                            "true/false)"), False
    if kind == "extra_forbidden":
        parent = _model_at(root, path[:-1])
        known = [f.alias or n for n, f in parent.model_fields.items()] if parent else []
        return "unknown-key", f"unknown key {shown(path[-1])}{_suggest(path[-1], known)}", True
    if kind == "missing":
        return "missing-field", f"`{name}` is required", False
    if kind in ("int_parsing", "float_parsing", "int_type", "float_type", "decimal_parsing", "decimal_type",
                "int_from_float"):
        expected = "a whole number" if kind.startswith("int") else "a number"
        return "bad-type", f"`{name}` must be {expected}, got {shown(value)}", False
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        words = {"gt": "greater than", "ge": "at least", "lt": "less than", "le": "at most"}
        bound = next((f"{words[k]} {v}" for k, v in ctx.items() if k in words), error["msg"])
        return "out-of-range", f"`{name}` must be {bound}, got {shown(value)}", False
    if kind == "literal_error":
        expected = ctx.get("expected", "")
        options = [o.strip().strip("'") for o in expected.replace(" or ", ",").split(",") if o.strip()]
        return "bad-value", f"`{name}` is {shown(value)}; expected {expected}{_suggest(value, options)}", False
    if kind in ("string_pattern_mismatch",):
        pattern = str(ctx.get("pattern", ""))
        meaning = PATTERN_WORDS.get(pattern)
        return "bad-value", (f"`{name}` {shown(value)} does not match the pattern `{pattern}`"
                             + (f" ({meaning})" if meaning else "")), False
    if kind == "value_error":
        return "invalid", f"`{name}`: {error['msg'].removeprefix('Value error, ')}", False
    return kind.replace("_", "-"), f"`{name}`: {error['msg']}", False


def diagnostics_from(exc: ValidationError, doc: YamlDocument, root: type[BaseModel]) -> list[Diagnostic]:
    found: dict[tuple[YamlPath, str], Diagnostic] = {}
    for error in exc.errors():
        loc = error["loc"]
        if any(isinstance(p, str) and p.startswith("literal[") for p in loc) and \
                isinstance(_lookup(doc.data, _data_path(doc.data, loc)), dict):
            continue   # `plan: {..}` failed the 'auto' branch: only the mapping branch's errors matter
        if error["type"] in ("model_type", "dict_type") and \
                isinstance(_lookup(doc.data, _data_path(doc.data, loc)), str):
            continue   # `plan: aut` failed the mapping branch: the literal branch says it better
        path = _data_path(doc.data, loc)
        code, message, at_key = _message(error, path, root)
        diag = doc.diagnostic(path, code, message, at_key=at_key)
        rule = getattr((error.get("ctx") or {}).get("error"), "rule", "")
        found.setdefault((path, code), replace(diag, rule=rule) if isinstance(rule, str) and rule else diag)
    if not found:   # every error was a union branch we chose to hide: report them all rather than none
        for error in exc.errors():
            path = _data_path(doc.data, error["loc"])
            code, message, at_key = _message(error, path, root)
            found.setdefault((path, code), doc.diagnostic(path, code, message, at_key=at_key))
    return list(found.values())


def _lookup(data: object, path: YamlPath) -> object:
    node: Any = data   # indexed as it comes: any miss (no such key, index, or not a container) is None
    for part in path:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def validate_document(doc: YamlDocument, model: type[ModelT]) -> ModelT:
    if not isinstance(doc.data, dict):
        raise InputError(Diagnostic(doc.source, 1, 1, "not-a-mapping",
                                    "the file must be a YAML mapping (key: value pairs)"))
    try:
        return model.model_validate(doc.data)
    except ValidationError as exc:
        raise InputError(diagnostics_from(exc, doc, model)) from None
