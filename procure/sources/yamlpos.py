"""A YAML reader that keeps the line and column of every node.

Built on PyYAML's composer (C-accelerated where available): the node tree carries marks, and we
convert it to plain Python data ourselves so that we can
- record ``positions[path] = (line, col)`` for every key and value (1-based),
- reject duplicate keys at the duplicate's line,
- bound alias expansion (an alias bomb is refused, not expanded),
- refuse files over a size limit and absurdly deep nesting,
- accept numbers YAML 1.1 reads as strings (``15e12``) and keep the exact text of decimals
  (``Number``) so money never passes through binary floats.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Protocol, Union, cast

import yaml

from procure.errors import Diagnostic, InputError
from procure.sources.files import MAX_INPUT_BYTES, decode_utf8, read_bytes_limited
MAX_NODES = 200_000          # expanded nodes; an alias bomb blows past this at once
MAX_DEPTH = 64
MAX_NUMBER_DIGITS = 64
MAX_NUMBER_CHARS = 100       # a number's text, underscores and base-60 colons included

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_NUMBER = re.compile(r"^[-+]?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][-+]?\d+)?$")
_INT = re.compile(r"^[-+]?\d[\d_]*$")

# A path into the data: keys and list indexes, e.g. ('bids', 0, 'gpus'); positions also file each
# key itself under ('<key>',) + path.
YamlPath = tuple[Union[str, int], ...]
# What a document converts to. DecimalText is a float and a datetime a date; None for `~`, for a
# refused number and for an empty document.
YamlScalar = Union[str, int, float, bool, date, None]
YamlValue = Union[YamlScalar, list["YamlValue"], dict[str, "YamlValue"]]


class _Mark(Protocol):
    line: int     # 0-based
    column: int   # 0-based


class _Node(Protocol):
    """What the converter reads of a PyYAML node (PyYAML ships no type stubs)."""

    tag: str
    value: Any    # a scalar's text, a sequence's nodes, or a mapping's (key, value) node pairs
    start_mark: _Mark


class _ScalarNode(_Node, Protocol):
    value: str
    style: str | None   # None when plain (unquoted): only plain text may be read as a number


class DecimalText(float):
    """A float that remembers the exact text it was written as (for Decimal money fields)."""

    text: str

    def __new__(cls, text: str) -> DecimalText:
        obj = super().__new__(cls, float(text.replace("_", "")))
        obj.text = text.replace("_", "")
        return obj


@dataclass
class YamlDocument:
    source: str
    data: object
    positions: dict[YamlPath, tuple[int, int]] = field(default_factory=dict)

    def position(self, path: YamlPath) -> tuple[int, int]:
        """The position of ``path``, or of its nearest ancestor that has one."""
        path = tuple(path)
        while path:
            if path in self.positions:
                return self.positions[path]
            path = path[:-1]
        return self.positions.get((), (1, 1))

    def key_position(self, path: YamlPath) -> tuple[int, int]:
        """The position of the key ``path[-1]`` itself (for unknown or duplicate keys)."""
        return self.positions.get(("<key>",) + tuple(path), self.position(path))

    def diagnostic(self, path: YamlPath, code: str, message: str, *, at_key: bool = False) -> Diagnostic:
        line, col = self.key_position(path) if at_key else self.position(path)
        return Diagnostic(self.source, line, col, code, message)


def _children(node: _Node) -> list[_Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


class _Converter:
    def __init__(self, source: str):
        self.source = source
        self.positions: dict[YamlPath, tuple[int, int]] = {}
        self.diagnostics: list[Diagnostic] = []
        self.visited = 0
        self.collections: set[int] = set()
        self.aliased = False

    def check_expansion(self, root: _Node) -> None:
        """Refuse an alias bomb before expanding it: each node's expanded size, memoised by node
        (an alias is the same node object), so the cost is the document's size, not the bomb's."""
        sizes: dict[int, int] = {}
        open_nodes: set[int] = set()      # expanding now: meeting one again is an alias to itself
        stack: list[tuple[_Node, bool]] = [(root, False)]
        while stack:
            node, children_done = stack.pop()
            if id(node) in sizes:
                continue
            children = _children(node)
            if not children_done and children:
                if id(node) in open_nodes:
                    mark = node.start_mark
                    raise InputError(Diagnostic(self.source, mark.line + 1, mark.column + 1, "too-deep",
                                                "an alias refers to the node that contains it (endless nesting)"))
                open_nodes.add(id(node))
                stack.append((node, True))
                stack.extend((child, False) for child in children if id(child) not in sizes)
                continue
            open_nodes.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes.get(id(child), 1) for child in children)
            if sizes[id(node)] > MAX_NODES:
                self.aliased = True
                mark = node.start_mark
                raise InputError(Diagnostic(self.source, mark.line + 1, mark.column + 1, "too-large",
                                            self._too_many_nodes()))

    def _too_many_nodes(self) -> str:
        if self.aliased:
            return (f"the document's aliases (*name) expand it to more than {MAX_NODES:,} values; "
                    "refusing to expand it (an alias bomb)")
        return f"the document holds more than {MAX_NODES:,} values; the limit is {MAX_NODES:,}"

    def _diag(self, node: _Node, code: str, message: str) -> None:
        mark = node.start_mark
        self.diagnostics.append(Diagnostic(self.source, mark.line + 1, mark.column + 1, code, message))

    def convert(self, node: _Node, path: YamlPath, depth: int = 0) -> YamlValue:
        self.visited += 1
        if isinstance(node, yaml.CollectionNode):   # an alias is the same node object met again
            self.aliased = self.aliased or id(node) in self.collections
            self.collections.add(id(node))
        if self.visited > MAX_NODES:
            raise InputError(Diagnostic(self.source, node.start_mark.line + 1, node.start_mark.column + 1,
                                        "too-large", self._too_many_nodes()))
        if depth > MAX_DEPTH:
            raise InputError(Diagnostic(self.source, node.start_mark.line + 1, node.start_mark.column + 1,
                                        "too-deep", f"nesting deeper than {MAX_DEPTH} levels"))
        self.positions.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path, depth)
        if isinstance(node, yaml.SequenceNode):
            return [self.convert(item, path + (i,), depth + 1) for i, item in enumerate(node.value)]
        return self._scalar(cast(_ScalarNode, node))   # the composer makes no fourth kind of node

    def _mapping(self, node: _Node, path: YamlPath, depth: int) -> dict[str, YamlValue]:
        result: dict[str, YamlValue] = {}
        merges: list[YamlValue] = []
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                merged = self.convert(value_node, path, depth + 1)
                merges.extend(merged if isinstance(merged, list) else [merged])
                continue
            key = self._scalar(key_node) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, (str, int, float, bool)) or key is None:
                self._diag(key_node, "bad-key", "mapping keys must be plain scalars")
                continue
            key = str(key) if not isinstance(key, str) else key
            if key in result:
                first = self.positions.get(("<key>",) + path + (key,), (0, 0))
                self._diag(key_node, "duplicate-key",
                           f"duplicate key {key!r} (first defined at line {first[0]})")
                continue
            self.positions[("<key>",) + path + (key,)] = (key_node.start_mark.line + 1,
                                                           key_node.start_mark.column + 1)
            result[key] = self.convert(value_node, path + (key,), depth + 1)
        for part in merges:   # `<<: *base` fills only the keys the mapping does not set itself
            if isinstance(part, dict):
                for k, v in part.items():
                    result.setdefault(k, v)
        return result

    def _scalar(self, node: _ScalarNode) -> YamlScalar:
        value = node.value
        if node.tag == "tag:yaml.org,2002:str" and not node.style and _NUMBER.match(value):
            return self._number(node, value)
        if node.tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float"):
            if _NUMBER.match(value):
                return self._number(node, value)
            return self._yaml11_number(node)
        if node.tag == "tag:yaml.org,2002:bool":
            return value.lower() in ("true", "yes", "on", "y")
        if node.tag == "tag:yaml.org,2002:null":
            return None
        if node.tag == "tag:yaml.org,2002:timestamp":
            try:
                stamp: date = _Loader.construct_yaml_timestamp(_Loader(""), node)   # a date or a datetime
                return stamp
            except (ValueError, OverflowError, TypeError):
                return value   # e.g. 2026-02-30 or a +99:00 offset: the schema reports it as a bad date
        return value

    def _yaml11_number(self, node: _ScalarNode) -> int | float | str | None:
        """0x1F, 0b101, 1:30, .inf: YAML 1.1 spellings, converted by PyYAML, bounded like the rest."""
        if len(node.value) > MAX_NUMBER_CHARS:
            # refused before converting: PyYAML's base-60 (1:59:59:...) conversion is quadratic
            self._diag(node, "bad-number", f"number of {len(node.value):,} characters is too long "
                                           f"(at most {MAX_NUMBER_CHARS})")
            return None
        construct = (_Loader.construct_yaml_int if node.tag.endswith(":int") else _Loader.construct_yaml_float)
        try:
            number: int | float = construct(_Loader(""), node)
        except (ValueError, TypeError, OverflowError):
            return node.value
        if isinstance(number, int) and abs(number) > 10**MAX_NUMBER_DIGITS:
            self._diag(node, "bad-number", f"number {node.value[:40]!r} is too large")
            return None
        return number

    def _number(self, node: _ScalarNode, text: str) -> int | DecimalText | None:
        digits = sum(ch.isdigit() for ch in text)
        if digits > MAX_NUMBER_DIGITS:
            self._diag(node, "bad-number", f"number with {digits} digits is too large")
            return None
        if _INT.match(text):
            return int(text.replace("_", ""))
        try:
            exponent = int(text.lower().split("e")[1]) if "e" in text.lower() else 0
        except ValueError:
            exponent = 0
        if exponent > 300 or exponent < -400:
            self._diag(node, "bad-number", f"number {text!r} is out of range")
            return None
        return DecimalText(text)


def _count_events(text: str, source: str) -> None:
    """Refuse a document of more than MAX_NODES values before composing it: the composer builds
    every node (a few hundred bytes each, with its marks) before the converter could count them,
    so a 10 MB list of 2.5 million items would cost a minute and gigabytes. Events stream."""
    count = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent, yaml.AliasEvent)):
            count += 1
            if count > MAX_NODES:
                mark = event.start_mark
                raise InputError(Diagnostic(source, mark.line + 1, mark.column + 1, "too-large",
                                            f"the document holds more than {MAX_NODES:,} values; "
                                            f"the limit is {MAX_NODES:,}"))


def parse_yaml_text(text: str, source: str) -> YamlDocument:
    """Parse one YAML document; raise InputError with every problem found."""
    try:
        _count_events(text, source)
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        message = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        raise InputError(Diagnostic(source, line, col, "yaml-syntax", message or "invalid YAML")) from None
    except yaml.YAMLError as exc:
        raise InputError(Diagnostic(source, 1, 1, "yaml-syntax", str(exc).splitlines()[0])) from None
    if node is None:
        return YamlDocument(source, None, {(): (1, 1)})
    converter = _Converter(source)
    converter.check_expansion(node)
    data = converter.convert(node, ())
    if converter.diagnostics:
        raise InputError(converter.diagnostics)
    return YamlDocument(source, data, converter.positions)


def read_yaml(path: Path | str, source: str | None = None, limit: int = MAX_INPUT_BYTES) -> YamlDocument:
    path = Path(path)
    source = source or str(path)
    return parse_yaml_text(decode_utf8(read_bytes_limited(path, source, limit), source), source)


def plain(value: YamlValue) -> YamlValue:
    """Strip DecimalText to float (for callers that want plain data, e.g. the backtest)."""
    if isinstance(value, DecimalText):
        return float(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
