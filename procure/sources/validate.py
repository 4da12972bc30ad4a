"""cluster.yaml -> validated ``Cluster``; pydantic errors become ``file:line:col`` diagnostics."""

from __future__ import annotations

import typing

from pydantic import BaseModel, ValidationError

from procure.errors import Diagnostic, InputError
from procure.sources.fields import YamlBool
from procure.sources.suggest import suggest
from procure.sources.yamlpos import YamlDocument


def _unwrap(annotation):
    """The pydantic model classes an annotation may hold (through Optional, list, Union)."""
    origin = typing.get_origin(annotation)
    if origin is None:
        return [annotation] if isinstance(annotation, type) and issubclass(annotation, BaseModel) else []
    models = []
    for arg in typing.get_args(annotation):
        models.extend(_unwrap(arg))
    return models


def _model_at(root: type[BaseModel], path: tuple) -> type[BaseModel] | None:
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


def _data_path(data, loc: tuple) -> tuple:
    """Keep the parts of a pydantic ``loc`` that are real keys/indexes of the data."""
    path: list = []
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


def dotted(path: tuple) -> str:
    """('bids', 0, 'gpus') -> 'bids[0].gpus'."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "document"


MAX_QUOTED_CHARS = 80


def quoted(value: object) -> str:
    """repr() of a user's value, shortened: a megabyte-long value is never echoed in full."""
    text = repr(value)
    if len(text) <= MAX_QUOTED_CHARS:
        return text
    return f"{text[:MAX_QUOTED_CHARS - 20]}...{text[-8:]} ({len(text):,} characters)"


class _Quoted:
    """A value that prints (with {!r}) as its shortened repr."""

    def __init__(self, value: object) -> None:
        self.value = value

    def __repr__(self) -> str:
        return quoted(self.value)

    def __str__(self) -> str:
        text = str(self.value)
        return text if len(text) <= MAX_QUOTED_CHARS else quoted(self.value)


def _message(error: dict, path: tuple, root: type[BaseModel], data) -> tuple[str, str, bool]:
    kind = error["type"]
    name = dotted(path)
    raw = error.get("input")
    value = _Quoted(raw)
    if kind in ("int_parsing", "float_parsing", "decimal_parsing") and isinstance(raw, YamlBool):
        return "bad-type", (f"`{name}` must be a number, got {raw} (YAML reads yes/no/on/off as "
                            "true/false)"), False
    if kind == "extra_forbidden":
        parent = _model_at(root, path[:-1])
        known = [f.alias or n for n, f in parent.model_fields.items()] if parent else []
        return "unknown-key", f"unknown key {quoted(path[-1])}{suggest(path[-1], known)}", True
    if kind == "missing":
        return "missing-field", f"`{name}` is required", False
    if kind in ("int_parsing", "float_parsing", "int_type", "float_type", "decimal_parsing", "decimal_type",
                "int_from_float"):
        expected = "a whole number" if kind.startswith("int") else "a number"
        return "bad-type", f"`{name}` must be {expected}, got {value!r}", False
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        ctx = error.get("ctx", {})
        words = {"gt": "greater than", "ge": "at least", "lt": "less than", "le": "at most"}
        bound = next((f"{words[k]} {v}" for k, v in ctx.items() if k in words), error["msg"].lower())
        return "out-of-range", f"`{name}` must be {bound}, got {value!r}", False
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        options = [o.strip().strip("'") for o in expected.replace(" or ", ",").split(",") if o.strip()]
        return "bad-value", f"`{name}` is {value!r}; expected {expected}{suggest(str(value), options)}", False
    if kind in ("string_pattern_mismatch",):
        pattern = error.get("ctx", {}).get("pattern")
        rule = f"it must match {pattern}" if pattern else error["msg"]
        return "bad-value", f"`{name}` {value!r} has the wrong form ({rule})", False
    if kind == "value_error":
        return "invalid", f"`{name}`: {error['msg'].removeprefix('Value error, ')}", False
    return kind.replace("_", "-"), f"`{name}`: {error['msg']}", False


def diagnostics_from(exc: ValidationError, doc: YamlDocument, root: type[BaseModel]) -> list[Diagnostic]:
    found: dict[tuple, Diagnostic] = {}
    for error in exc.errors():
        loc = error["loc"]
        if any(isinstance(p, str) and p.startswith("literal[") for p in loc) and \
                isinstance(_lookup(doc.data, _data_path(doc.data, loc)), dict):
            continue   # `plan: {..}` failed the 'auto' branch: only the mapping branch's errors matter
        if error["type"] in ("model_type", "dict_type") and \
                isinstance(_lookup(doc.data, _data_path(doc.data, loc)), str):
            continue   # `plan: aut` failed the mapping branch: the literal branch says it better
        path = _data_path(doc.data, loc)
        code, message, at_key = _message(error, path, root, doc.data)
        diag = doc.diagnostic(path, code, message, at_key=at_key)
        found.setdefault((path, code), diag)
    if not found:   # every error was a union branch we chose to hide: report them all rather than none
        for error in exc.errors():
            path = _data_path(doc.data, error["loc"])
            code, message, at_key = _message(error, path, root, doc.data)
            found.setdefault((path, code), doc.diagnostic(path, code, message, at_key=at_key))
    return list(found.values())


def _lookup(data, path: tuple):
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def validate_document(doc: YamlDocument, model: type[BaseModel]):
    if not isinstance(doc.data, dict):
        raise InputError(Diagnostic(doc.source, 1, 1, "not-a-mapping",
                                    "the file must be a YAML mapping (key: value pairs)"))
    try:
        return model.model_validate(doc.data)
    except ValidationError as exc:
        raise InputError(diagnostics_from(exc, doc, model)) from None
