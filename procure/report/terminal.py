"""The terminal layer: tables and lines that never hide a figure or an id, at any width.

Every command prints through these helpers, so three rules hold everywhere:

- text that came from an input (a title, a vendor, a file name, a log line) is ``clean``-ed of
  escape sequences and control characters and printed as a rich ``Text``, never parsed as markup;
- a figure or an id is never cut, wrapped or shortened with "...": a table gets the width its
  figures need and wraps only its free-text columns; when even that does not fit the console,
  it switches to a long layout, one block per row with a "label: value" line per column;
- every line printed fits the console width: the long layout breaks between values, and a single
  value wider than the whole console gets a line of its own, printed whole (the terminal wraps it
  on screen; no newline is put inside it, so it copies back intact).

Widths are measured in terminal cells (a CJK character takes two).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, Sequence, Union

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), and two-character escapes
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?|\x9b[0-?]*[ -/]*[@-~]")
# C0 and C1 controls, DEL, and the bidirectional overrides that reorder what a terminal shows
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SPACES = re.compile("[\t\n\r\v\f]")


def clean(value: object) -> str:
    """``value`` as text safe for a terminal: escape sequences and control characters removed
    (tabs and line breaks become spaces); rich markup is left as literal text."""
    text = _ESCAPES.sub("", str(value))
    return _CONTROLS.sub("", _SPACES.sub(" ", text))


def clean_lines(value: object) -> str:
    """Like ``clean`` but keeps line breaks (a multi-line message, one problem per line)."""
    return "\n".join(clean(line) for line in str(value).splitlines())


_GAP = "  "      # the right padding of one column and the blank divider of the SIMPLE_HEAD box
_RULE = "\u2500"   # the rule under the header

Cell = Union[str, Any]   # a str, or a rich Text already built from cleaned parts


@dataclass(frozen=True)
class Column:
    header: str
    justify: Literal["left", "right"] = "right"
    wrap: bool = False    # free text may wrap at spaces; figures and ids (wrap=False) never do


def text(*parts: Any) -> Any:
    """A rich Text from (string, style) pairs or plain strings, each cleaned; never parsed as markup."""
    from rich.text import Text

    out = Text()
    for part in parts:
        if isinstance(part, Text):
            out.append_text(part)
        elif isinstance(part, tuple):
            out.append(clean(part[0]), style=part[1])
        else:
            out.append(clean(part))
    return out


def _as_text(cell: Cell) -> Any:
    from rich.text import Text

    return cell.copy() if isinstance(cell, Text) else Text(clean(cell))


def _cell_len(value: str) -> int:
    from rich.cells import cell_len

    return cell_len(value)


def _longest_word(value: str) -> int:
    return max((_cell_len(w) for w in value.split()), default=0)


def _widest_line(value: str) -> int:
    return max((_cell_len(line) for line in value.splitlines()), default=0)


def emit(console: Any, renderable: Any, **options: Any) -> None:
    """Print ``renderable``; into a pipe or a file without the trailing blanks rich pads lines with."""
    if console.is_terminal or console.record:
        console.print(renderable, **options)
        return
    with console.capture() as captured:
        console.print(renderable, **options)
    _write_lines(console, captured.get().split("\n"))


def _write_lines(console: Any, lines: list[str]) -> None:
    """``lines`` joined by line breaks; a pipe or a file gets them without the trailing blanks rich
    pads lines with, a terminal as laid out."""
    if not console.is_terminal:
        lines = [line.rstrip() for line in lines]
    console.file.write("\n".join(lines))
    console.file.flush()


# A figure and the unit after it ("3.53 s", "90 days", "4,096 GPUs") break as one word, so a line
# never ends on a number whose unit starts the next; anything else breaks at spaces. Compiled on
# first use (re's cache), not at import.
_UNITS = r"(?:s|ms|h|days?|GiB|GB|TB|%|GPUs?|nodes?|steps?|tokens)"
_TOKENS = r"(?:[-+$]?\d[\d.,]*\s" + _UNITS + r"[,;:.)]*(?=\s|$)|\S+)\s*"


def _is_wide(ch: str) -> bool:
    from rich.cells import cell_len

    return cell_len(ch) > 1


def _break_points(plain: str, width: int) -> list[int]:
    """Offsets where a line of prose breaks to fit ``width`` cells: at spaces, and between wide (CJK)
    characters, which a line may break between; a word of narrow characters (an id, a path, a
    figure) is never broken: when wider than ``width`` it gets a line of its own, whole."""
    pieces: list[tuple[int, str]] = []
    for match in re.finditer(_TOKENS, plain):
        token, start = match.group(), match.start()
        if any(_is_wide(ch) for ch in token):
            run = ""
            for i, ch in enumerate(token):
                run += ch
                if _is_wide(ch) or i == len(token) - 1:
                    pieces.append((start + i + 1 - len(run), run))
                    run = ""
        else:
            pieces.append((start, token))
    breaks, used = [], 0
    for start, token in pieces:
        size = _cell_len(token.rstrip())
        if used and used + size > width:
            breaks.append(start)
            used = 0
        used += _cell_len(token)
    return breaks


def print_line(console: Any, *parts: Any, indent: int = 0) -> None:
    """Prose (a note, a reason), cleaned, no markup, wrapped to the console with a hanging indent
    and never breaking an id, a path or a figure."""
    from rich.text import Text

    body = text(*parts)
    width = max(console.width - indent, 1)
    for line in body.divide(_break_points(body.plain, width)):
        line.rstrip()
        emit(console, Text(" " * indent) + line, soft_wrap=True)


def print_pairs(console: Any, pairs: Sequence[tuple[str, str]], *, indent: int = 2, head: Any = None) -> None:
    """``label value`` pairs on as few lines as fit, breaking only between pairs."""
    width = max(console.width - indent, 1)
    lines: list[str] = []
    current = ""
    for label, value in pairs:
        piece = clean(f"{label} {value}".strip())
        if current and _cell_len(current + "   " + piece) > width:
            lines.append(current)
            current = ""
        current = f"{current}   {piece}" if current else piece
    if current:
        lines.append(current)
    if head is not None:
        print_line(console, head)
    for line in lines:
        console.print(text(" " * indent + line), soft_wrap=True)


def _plan_widths(columns: Sequence[Column], cells: list[list[Any]], available: int) -> list[int] | None:
    """Column widths that show every figure whole within ``available`` cells, or None if none do."""
    natural, minimum = [], []
    for i, col in enumerate(columns):
        values = [row[i].plain for row in cells]
        widest = max([_widest_line(v) for v in values] + [1])
        header_word = _longest_word(col.header)
        natural.append(max(widest, _widest_line(col.header)))
        if col.wrap:
            minimum.append(max([_longest_word(v) for v in values] + [header_word, min(widest, 8)]))
        else:
            minimum.append(max(widest, header_word))
    if sum(natural) <= available:
        return natural
    if sum(minimum) > available:
        return None
    widths = list(minimum)
    spare = available - sum(minimum)
    # give the spare cells to the columns that wrap, widest need first, so fewer lines wrap
    for i in sorted(range(len(columns)), key=lambda i: natural[i] - minimum[i], reverse=True):
        extra = min(spare, natural[i] - minimum[i])
        widths[i] += extra
        spare -= extra
    return widths


def _table(columns: Sequence[Column], widths: list[int] | None, title: Any) -> Any:
    from rich import box
    from rich.table import Table

    table = Table(title=title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD,
                  show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True)
    for i, col in enumerate(columns):
        table.add_column(col.header, justify=col.justify, no_wrap=False, overflow="fold",
                         width=widths[i] if widths else None)
    return table


def _overhead(columns: Sequence[Column]) -> int:
    """Cells the table spends between its columns: no edges, one padding cell and the blank divider
    of the SIMPLE_HEAD box (a test measures rich's own table against it)."""
    return len(_GAP) * (len(columns) - 1)


def print_table(console: Any, columns: Sequence[Column], rows: Sequence[Sequence[Cell]], *, title: Any = None,
                key: Sequence[int] = (0,)) -> None:
    """A table when the figures fit the console width, else one block per row (the long layout).

    ``key``: the columns that name a row; they head each block of the long layout."""
    cells = [[_as_text(c) for c in row] for row in rows]
    title_text = text(title) if title is not None else None
    widths = _plan_widths(columns, cells, console.width - _overhead(columns))
    if widths is None:
        print_stacked(console, columns, cells, title=title_text, key=key)
        return
    if title_text is not None:   # above the table, not in it: a long title wraps at spaces, never cut
        print_line(console, title_text)
    if _shows_no_styles(console):
        _write_lines(console, _plain_table(console, columns, widths, cells) + [""])
        return
    table = _table(columns, widths, None)
    for row in cells:
        for col, cell in zip(columns, row):
            if not col.wrap:
                cell.no_wrap = True
        table.add_row(*row)
    emit(console, table)


def _shows_no_styles(console: Any) -> bool:
    """A console without colour (a pipe, a file) shows no styles: its tables are laid out here as
    plain lines, the characters rich's table prints (a test holds the two equal), in a fraction of
    the time: rich measures and renders every cell of the 135-row catalog in ~45 ms."""
    return console.color_system is None and not console.record


def _cell_lines(console: Any, cell: Any, width: int, justify: str, no_wrap: bool) -> list[str]:
    """A cell's lines, each exactly ``width`` cells wide, wrapped as rich wraps it."""
    plain = cell.plain
    if "\n" not in plain:
        room = width - _cell_len(plain)
        if room >= 0:
            return [" " * room + plain if justify == "right" else plain + " " * room]
    lines = cell.wrap(console, width, justify=justify, overflow="fold", no_wrap=no_wrap)
    return [line.plain + " " * (width - line.cell_len) for line in lines]


def _plain_row(parts: list[list[str]], widths: list[int], bottom: bool) -> list[str]:
    """One table row's lines: its cells side by side, the shorter ones padded with blank lines
    (below them; above them for the header, whose labels sit on its last line)."""
    height = max(len(p) for p in parts)
    padded = []
    for lines, width in zip(parts, widths):
        blank = [" " * width] * (height - len(lines))
        padded.append(blank + lines if bottom else lines + blank)
    return [_GAP.join(line) for line in zip(*padded)]


def _plain_table(console: Any, columns: Sequence[Column], widths: list[int], cells: list[list[Any]]) -> list[str]:
    from rich.text import Text

    header = [_cell_lines(console, Text(col.header), w, col.justify, False) for col, w in zip(columns, widths)]
    lines = _plain_row(header, widths, bottom=True)
    lines.append(_RULE * (sum(widths) + _overhead(columns)))
    for row in cells:
        parts = [_cell_lines(console, cell, w, col.justify, not col.wrap) for col, w, cell in zip(columns, widths, row)]
        lines.extend(_plain_row(parts, widths, bottom=False))
    return lines


def print_stacked(console: Any, columns: Sequence[Column], cells: list[list[Any]], *, title: Any = None,
                  key: Sequence[int] = (0,)) -> None:
    """The long layout: each row's key columns on one line, then ``header: value`` per column."""
    from rich.text import Text

    if title is not None:
        print_line(console, title)
    width = max(console.width, 1)
    for row in cells:
        head = Text("  ").join(row[i] for i in key if row[i].plain)
        head.stylize("bold")
        if head.plain:
            console.print(head, soft_wrap=True)
        for i, (col, cell) in enumerate(zip(columns, row)):
            if i in key or not cell.plain:
                continue
            label = clean(" ".join(col.header.split()))
            _print_field(console, label, cell, width)


def _print_field(console: Any, label: str, cell: Any, width: int) -> None:
    from rich.text import Text

    value = Text(" ").join(Text(line) for line in cell.plain.splitlines()) if "\n" in cell.plain else cell
    one_line = Text.assemble(("  " + label + ": ", "dim"), value)
    if one_line.cell_len <= width:
        console.print(one_line, soft_wrap=True)
        return
    console.print(Text("  " + label + ":", style="dim"), soft_wrap=True)
    if value.cell_len + 4 <= width:
        console.print(Text.assemble("    ", value), soft_wrap=True)
    elif " " in value.plain.strip():   # free text: wrapped at spaces, no word cut
        print_line(console, value, indent=4)
    else:                               # one value wider than the console: whole, on a line of its own
        console.print(value, soft_wrap=True)
