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
from pathlib import Path

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

class DecimalText(float):
    """A float that remembers the exact text it was written as (for Decimal money fields)."""

    text: str

    def __new__(cls, text: str):
        obj = super().__new__(cls, float(text.replace("_", "")))
        obj.text = text.replace("_", "")
        return obj


@dataclass
class YamlDocument:
    source: str
    data: object
    positions: dict[tuple, tuple[int, int]] = field(default_factory=dict)

    def position(self, path: tuple) -> tuple[int, int]:
        """The position of ``path``, or of its nearest ancestor that has one."""
        path = tuple(path)
        while path:
            if path in self.positions:
                return self.positions[path]
            path = path[:-1]
        return self.positions.get((), (1, 1))

    def key_position(self, path: tuple) -> tuple[int, int]:
        """The position of the key ``path[-1]`` itself (for unknown or duplicate keys)."""
        return self.positions.get(("<key>",) + tuple(path), self.position(path))

    def diagnostic(self, path: tuple, code: str, message: str, *, at_key: bool = False) -> Diagnostic:
        line, col = self.key_position(path) if at_key else self.position(path)
        return Diagnostic(self.source, line, col, code, message)


def _children(node) -> list:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


class _Converter:
    def __init__(self, source: str):
        self.source = source
        self.positions: dict[tuple, tuple[int, int]] = {}
        self.diagnostics: list[Diagnostic] = []
        self.visited = 0
        self.collections: set[int] = set()
        self.aliased = False

    def check_expansion(self, root) -> None:
        """Refuse an alias bomb before expanding it: each node's expanded size, memoised by node
        (an alias is the same node object), so the cost is the document's size, not the bomb's."""
        sizes: dict[int, int] = {}
        open_nodes: set[int] = set()      # expanding now: meeting one again is an alias to itself
        stack = [(root, False)]
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

    def _diag(self, node, code: str, message: str) -> None:
        mark = node.start_mark
        self.diagnostics.append(Diagnostic(self.source, mark.line + 1, mark.column + 1, code, message))

    def convert(self, node, path: tuple, depth: int = 0):
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
        return self._scalar(node)

    def _mapping(self, node, path: tuple, depth: int) -> dict:
        result: dict = {}
        merges: list = []
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

    def _scalar(self, node):
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
                return _Loader.construct_yaml_timestamp(_Loader(""), node)
            except (ValueError, OverflowError, TypeError):
                return value   # e.g. 2026-02-30 or a +99:00 offset: the schema reports it as a bad date
        return value

    def _yaml11_number(self, node):
        """0x1F, 0b101, 1:30, .inf: YAML 1.1 spellings, converted by PyYAML, bounded like the rest."""
        if len(node.value) > MAX_NUMBER_CHARS:
            # refused before converting: PyYAML's base-60 (1:59:59:...) conversion is quadratic
            self._diag(node, "bad-number", f"number of {len(node.value):,} characters is too long "
                                           f"(at most {MAX_NUMBER_CHARS})")
            return None
        construct = (_Loader.construct_yaml_int if node.tag.endswith(":int") else _Loader.construct_yaml_float)
        try:
            number = construct(_Loader(""), node)
        except (ValueError, TypeError, OverflowError):
            return node.value
        if isinstance(number, int) and abs(number) > 10**MAX_NUMBER_DIGITS:
            self._diag(node, "bad-number", f"number {node.value[:40]!r} is too large")
            return None
        return number

    def _number(self, node, text: str):
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


def plain(value):
    """Strip DecimalText to float (for callers that want plain data, e.g. the backtest)."""
    if isinstance(value, DecimalText):
        return float(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
