"""The workbook as plain data (sheets of cells, names, charts) and the one function that writes it
with XlsxWriter (imported lazily, here only).

Builders put cells into a ``Book``; a formula cell holds an expression tree. Before writing, the
book evaluates every formula so each is stored with its value (readers that do not recalculate,
such as pandas or a mail previewer, see numbers). Text stays text, never a formula; control
characters are dropped; widths follow the longest shown value; the same book gives the same
bytes (XlsxWriter's in-memory zip has fixed entry dates, and the document date is ``as_of``).
"""

from __future__ import annotations

import io
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from decimal import Decimal
from typing import Any, NamedTuple, Union

from procure.money import D
from procure.report.xlsx_formula import Expr, Range, Scalar, XlError

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
CURRENCY_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "TWD": "NT$", "CNY": "CN¥"}
ZERO_DECIMAL_CURRENCIES = {"JPY"}
FMT = {"int": "#,##0", "num2": "#,##0.00", "num3": "#,##0.000", "num4": "#,##0.0000", "days": "#,##0.0",
       "pct": "0.0%", "pct2": "0.00%", "sci": "0.000E+00", "text": "@", "general": "General"}
HEADER_FILL = "1F3F66"
INPUT_FILL = "FFF4CC"      # pale yellow: an input finance may change
WHATIF_FILL = "E2EFDA"     # pale green: a what-if cell of the scenario column, blank = as quoted
SECTION_FILL = "D9E1F2"    # pale blue: a section title
NOTE_COLOR = "595959"

Content = Union[Scalar, int, float, Expr]


class Style(NamedTuple):
    """How a cell looks (a tuple: cheap to hash, and equal styles share one format)."""

    num_format: str = "General"
    bold: bool = False
    italic: bool = False
    fill: str | None = None
    font_color: str | None = None
    wrap: bool = False
    quote_prefix: bool = False
    top: bool = False
    fit: bool = True             # False: the text may overflow; it does not widen its column

    def props(self) -> dict[str, Any]:
        out: dict[str, Any] = {"num_format": self.num_format, "font_name": "Calibri", "font_size": 11}
        if self.bold:
            out["bold"] = True
        if self.italic:
            out["italic"] = True
        if self.fill:
            out.update(pattern=1, bg_color="#" + self.fill)
        if self.font_color:
            out["font_color"] = "#" + self.font_color
        if self.wrap:
            out["text_wrap"] = True
        if self.quote_prefix:
            out["quote_prefix"] = True
        if self.top:
            out["valign"] = "top"
        return out


PLAIN = Style()
HEADER = Style(bold=True, font_color="FFFFFF", fill=HEADER_FILL, wrap=True, top=True)
SECTION = Style(bold=True, fill=SECTION_FILL)
NOTE = Style(italic=True, font_color=NOTE_COLOR)


@lru_cache(maxsize=512)
def style(num_format: str = "General", *, bold: bool = False, fill: str | None = None) -> Style:
    return Style(num_format=num_format, bold=bold, fill=fill)


@lru_cache(maxsize=256)
def money_format(currency: str, decimals: int = 2, optional: int = 0) -> str:
    """A number format showing ``currency``: its symbol where it has a common one, else its code;
    ``optional`` more decimals appear only when the figure has them."""
    if currency in ZERO_DECIMAL_CURRENCIES and decimals == 2:
        decimals = 0
    digits = "#,##0" + ("." + "0" * decimals + "#" * optional if decimals or optional else "")
    symbol = CURRENCY_SYMBOLS.get(currency)
    if symbol:
        return f'"{symbol}"{digits}'
    return f'{digits} "{clean_text(currency).replace(chr(34), "")}"'


_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")     # Unicode category Cc, newline kept


def clean_text(value: object) -> str:
    """Drop control characters (spreadsheets refuse most, and they hide content); keep newlines."""
    return _CONTROL.sub("", str(value))


@dataclass
class Cell:
    content: Content
    style: Style


@dataclass(frozen=True)
class Series:
    name: str
    values: Range
    categories: Range
    line: bool = False          # drawn as a line over the bars (a deadline, a target)
    color: str | None = None


@dataclass
class Chart:
    kind: str                    # "bar" (horizontal) or "column"
    title: str
    series: list[Series]
    row: int
    col: int
    stacked: bool = False
    value_axis: str = ""
    number_format: str = "General"
    size: tuple[int, int] = (640, 320)


@dataclass
class Sheet:
    name: str
    cells: dict[tuple[int, int], Cell] = field(default_factory=dict)
    freeze: tuple[int, int] | None = None
    autofilter: tuple[int, int, int, int] | None = None
    charts: list[Chart] = field(default_factory=list)
    choices: dict[tuple[int, int], list[str]] = field(default_factory=dict)   # in-cell drop-down lists
    widths: dict[int, float] = field(default_factory=dict)
    heights: dict[int, float] = field(default_factory=dict)
    max_width: int = 60
    landscape: bool = True
    shown: dict[int, int] = field(default_factory=dict)          # widest value per column, formulas aside
    formula_cells: list[tuple[int, int]] = field(default_factory=list)
    numbers: dict[tuple[int, str], int | float | Decimal] = field(default_factory=dict)

    def put(self, row: int, col: int, content: Content, cell_style: Style = PLAIN) -> None:
        self.cells[(row, col)] = cell = Cell(content, cell_style)
        if isinstance(content, str):
            cell.content = content = _CONTROL.sub("", content)
            if content.startswith(FORMULA_START) and not cell_style.quote_prefix:
                cell.style = cell_style = cell_style._replace(quote_prefix=True)
            if not cell_style.fit:
                return
            size = (_text_width(content) if "\n" not in content and not cell_style.wrap
                    else _shown_width(content, cell_style))
        elif isinstance(content, Expr):
            self.formula_cells.append((row, col))
            return
        elif not cell_style.fit:
            return
        elif isinstance(content, (int, float, Decimal)) and not isinstance(content, bool):
            # numbers: the widest per column and format is formatted once, when widths are fitted
            key = (col, cell_style.num_format)
            number: int | float | Decimal = content
            widest = self.numbers.get(key)
            if widest is None or abs(float(number)) > abs(float(widest)) or (number < 0 <= widest):
                self.numbers[key] = number
            return
        else:                       # widths are measured as cells arrive: one pass, not two
            size = _shown_width(content, cell_style)
        if size > self.shown.get(col, 0):
            self.shown[col] = size

    def header(self, row: int, labels: list[str], first_col: int = 0) -> None:
        for col, label in enumerate(labels, start=first_col):
            self.put(row, col, label, HEADER)

    @property
    def last_row(self) -> int:
        return max((r for r, _ in self.cells), default=0)


class Book:
    """Sheets, defined names and a lazy, memoised evaluator of every formula cell."""

    def __init__(self) -> None:
        self.sheets: list[Sheet] = []
        self.names: dict[str, tuple[str, int, int]] = {}
        self._folded: set[str] = set()
        self._by_name: dict[str, Sheet] = {}
        self._values = CellValues()
        self._busy: set[tuple[str, int, int]] = set()

    def sheet(self, name: str) -> Sheet:
        new = Sheet(name)
        self.sheets.append(new)
        self._by_name[name] = new
        return new

    def define(self, name: str, sheet: str, row: int, col: int) -> None:
        if name.lower() in self._folded:                  # names are case-insensitive
            raise ValueError(f"defined name {name!r} used twice")
        self._folded.add(name.lower())
        self.names[name] = (sheet, row, col)

    # --- evaluation (the Resolver the expressions ask) ------------------------------------
    def name_value(self, name: str) -> Scalar:
        if name not in self.names:
            raise XlError("#NAME?")
        sheet, row, col = self.names[name]
        return self.cell_value(sheet, row, col)

    def cell_value(self, sheet: str, row: int, col: int) -> Scalar:
        value = self.evaluate(sheet, row, col)
        if isinstance(value, XlError):
            raise value
        return value

    def evaluate(self, sheet: str, row: int, col: int) -> Scalar | XlError:
        key = (sheet, row, col)
        if key in self._values:
            return self._values[key]
        cell = self._by_name[sheet].cells.get((row, col))
        if cell is None:
            return None
        if key in self._busy:
            raise ValueError(f"circular reference at {sheet}!{row + 1},{col + 1}")
        self._busy.add(key)
        try:
            value: Scalar | XlError = _evaluate(cell.content, self)
        except XlError as error:
            value = error
        finally:
            self._busy.discard(key)
        self._values[key] = value
        return value

    def value(self, sheet: str, row: int, col: int) -> Scalar | XlError:
        """The value a reader sees in a cell (a formula's cached value)."""
        return self.evaluate(sheet, row, col)

    def range_numbers(self, rng: Range, ordered: bool = False) -> list[Decimal]:
        """The numeric cells of a range (sorted when ``ordered``), read once like every cell value."""
        key = (rng.sheet, rng.first_row, rng.first_col, rng.last_row, rng.last_col, ordered)
        ranges = self._values.ranges
        if key not in ranges:
            values = [v for v in rng.values(self) if isinstance(v, Decimal)]
            ranges[key] = sorted(values) if ordered else values
        return ranges[key]


class CellValues(dict[tuple[str, int, int], "Scalar | XlError"]):
    """Evaluated cells, and the numbers of the ranges read from them: cleared together, so a
    recalculation (after an input cell changes) never reads a stale range."""

    def __init__(self) -> None:
        super().__init__()
        self.ranges: dict[tuple[str, int, int, int, int, bool], list[Decimal]] = {}

    def clear(self) -> None:
        super().clear()
        self.ranges.clear()


def _evaluate(content: Content, book: Book) -> Scalar:
    if isinstance(content, Expr):
        return content.value(book)
    if isinstance(content, (bool, str)) or content is None:
        return content
    return D(content)


# --- widths ----------------------------------------------------------------------------------

def fit_columns(book: Book, sheet: Sheet, minimum: int = 8) -> None:
    """Width from the longest value each column shows (wide characters count double)."""
    widths = dict(sheet.shown)
    for (col, num_format), value in sheet.numbers.items():
        size = len(_shown_number(value, num_format))
        if size > widths.get(col, 0):
            widths[col] = size
    for row, col in sheet.formula_cells:
        cell = sheet.cells[(row, col)]
        if cell.style.fit and isinstance(cell.content, Expr):
            size = _shown_width(book.value(sheet.name, row, col), cell.style)
            if size > widths.get(col, 0):
                widths[col] = size
    for col, width in widths.items():
        sheet.widths.setdefault(col, max(minimum, min(sheet.max_width, width + 2)))
    wrap_rows(sheet)


def wrap_rows(sheet: Sheet, line_points: float = 15.0) -> None:
    """Rows of wrapped text get the height their longest cell needs (spreadsheets do not always)."""
    for (row, col), cell in sheet.cells.items():
        if not cell.style.wrap or not isinstance(cell.content, str):
            continue
        width = max(1.0, sheet.widths.get(col, 8.43) - 1)
        lines = sum(max(1, -(-_wrapped_width(part, width) // int(width))) for part in cell.content.split("\n"))
        sheet.heights[row] = max(sheet.heights.get(row, line_points), line_points * lines)


def _wrapped_width(text: str, width: float) -> int:
    """Characters a wrapped line takes, words kept whole (a rough, safe estimate)."""
    used, lines = 0, 0
    for word in text.split():
        size = _text_width(word) + 1
        if used and used + size > width:
            lines, used = lines + 1, 0
        used += size
    return int(lines * width) + used


def _shown_width(value: Scalar | XlError | int | float, cell_style: Style) -> int:
    if isinstance(value, XlError):
        return len(value.code)
    if value is None or isinstance(value, bool):
        return 5
    if isinstance(value, str):
        if cell_style.wrap:                      # a header wraps: its longest word decides
            return max((_text_width(w) for w in value.split()), default=0)
        return max((_text_width(line) for line in value.split("\n")), default=0)
    return len(_shown_number(value, cell_style.num_format))


def _shown_number(value: int | float | Decimal, num_format: str) -> str:
    decimals, grouped, percent, scientific, general, literal = _format_spec(num_format)
    if general:
        return f"{float(value):.10g}"
    if percent:
        value *= 100
    if scientific:
        return f"{value:.{decimals}E}"
    text = f"{value:,.{decimals}f}" if grouped else f"{value:.{decimals}f}"
    return text + literal


@lru_cache(maxsize=256)
def _format_spec(num_format: str) -> tuple[int, bool, bool, bool, bool, str]:
    """What a number format shows: decimals, grouping, percent, scientific, general, literal text."""
    fmt = num_format.split(";")[0]
    digits = fmt.split(".")[1] if "." in fmt else ""
    literal = "".join(part for i, part in enumerate(fmt.split('"')) if i % 2 == 1)
    return (sum(1 for c in digits if c in "0#"), "," in fmt, "%" in fmt, "E+" in fmt, fmt.startswith("General"),
            literal + ("%" if "%" in fmt else ""))


def _text_width(text: str) -> int:
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


# --- writing -----------------------------------------------------------------------------------

def write_xlsx(book: Book, *, title: str, stamp: datetime) -> bytes:
    """The book as .xlsx bytes: every formula with its value, names, charts, print setup."""
    import xlsxwriter

    out = io.BytesIO()
    wb = xlsxwriter.Workbook(out, {"in_memory": True, "strings_to_numbers": False,
                                   "strings_to_formulas": False, "strings_to_urls": False})
    wb.set_properties({"title": title[:250], "author": "procure", "created": stamp.replace(tzinfo=None)})
    formats: dict[Style, Any] = {}
    for sheet in book.sheets:
        _write_sheet(wb, wb.add_worksheet(sheet.name, worksheet_class=plain_formula_worksheet()), sheet, book,
                     formats)
    for name, (sheet_name, row, col) in book.names.items():
        wb.define_name(name, f"={_quoted(sheet_name)}!${_col(col)}${row + 1}")
    wb.close()
    return out.getvalue()


_FUNCTION_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\(")


@lru_cache(maxsize=1)
def plain_formula_worksheet() -> type:
    """XlsxWriter's Worksheet without its per-formula rewrite of future and dynamic-array
    function names (about 30 regular expressions on every formula: a third of a 1,000-bid
    workbook's time) for a formula that calls only functions the rewrite leaves unchanged, which
    is every formula procure writes; any other formula takes XlsxWriter's own way."""
    from xlsxwriter.worksheet import Worksheet

    from procure.report.xlsx_formula import FUNCTIONS

    probe = Worksheet()
    plain = frozenset(name for name in FUNCTIONS if probe._prepare_formula(f"={name}(1)", True) == f"{name}(1)")

    class PlainFormulaWorksheet(Worksheet):  # type: ignore[misc]
        def _prepare_formula(self, formula: str, expand_future_functions: bool = False) -> str:
            body = formula[1:] if formula.startswith("=") else formula
            if body.endswith("}") or formula.startswith("{") or "_xlfn." in body \
                    or not all(name in plain for name in _FUNCTION_CALL.findall(body)):
                return str(super()._prepare_formula(formula, expand_future_functions))
            return body

    return PlainFormulaWorksheet


def _quoted(sheet: str) -> str:
    return "'" + sheet.replace("'", "''") + "'"


def _col(col: int) -> str:
    from procure.report.xlsx_formula import column_letter

    return column_letter(col)


def _write_sheet(wb: Any, ws: Any, sheet: Sheet, book: Book, formats: dict[Style, Any]) -> None:
    last_style, fmt = None, None
    for (row, col), cell in sheet.cells.items():
        if cell.style is not last_style:          # neighbours mostly share a style: skip the lookup
            last_style = cell.style
            fmt = formats.get(cell.style)
            if fmt is None:
                fmt = formats[cell.style] = wb.add_format(cell.style.props())
        content = cell.content
        if isinstance(content, Expr):
            ws.write_formula(row, col, "=" + content.text(sheet.name), fmt,
                             _cached(book.value(sheet.name, row, col)))
        elif isinstance(content, str):
            ws.write_string(row, col, content, fmt)
        elif isinstance(content, bool):
            ws.write_boolean(row, col, content, fmt)
        elif content is None:
            ws.write_blank(row, col, None, fmt)
        else:
            ws.write_number(row, col, content if isinstance(content, int) else float(content), fmt)
    for col, width in sheet.widths.items():
        ws.set_column(col, col, width)
    for row, height in sheet.heights.items():
        ws.set_row(row, height)
    if sheet.freeze:
        ws.freeze_panes(*sheet.freeze)
    if sheet.autofilter:
        ws.autofilter(*sheet.autofilter)
    for (row, col), options in sheet.choices.items():
        ws.data_validation(row, col, row, col, {"validate": "list", "source": options})
    for chart in sheet.charts:
        ws.insert_chart(chart.row, chart.col, _chart(wb, chart), {"object_position": 3})
    if sheet.landscape:
        ws.set_landscape()
    ws.fit_to_pages(1, 0)
    if sheet.freeze and sheet.freeze[0]:
        ws.repeat_rows(0, sheet.freeze[0] - 1)


def _cached(value: Scalar | XlError) -> Any:
    if isinstance(value, XlError):
        return value.code
    if isinstance(value, Decimal):
        if value == value.to_integral_value() and abs(value) < 2**53:
            return int(value)
        return float(value)
    return "" if value is None else value


def _range(r: Range) -> list[Any]:
    return [r.sheet, r.first_row, r.first_col, r.last_row, r.last_col]


def _chart(wb: Any, spec: Chart) -> Any:
    chart = wb.add_chart({"type": spec.kind, **({"subtype": "stacked"} if spec.stacked else {})})
    lines = None
    for s in spec.series:
        options: dict[str, Any] = {"name": s.name, "values": _range(s.values), "categories": _range(s.categories)}
        if s.color:
            key = "line" if s.line else "fill"
            options[key] = {"color": "#" + s.color} if not s.line else {"color": "#" + s.color, "dash_type": "dash",
                                                                        "width": 2}
        if s.line:
            lines = lines or wb.add_chart({"type": "line"})
            lines.add_series({**options, "marker": {"type": "none"}})
        else:
            chart.add_series({**options, "gap": 60})
    if lines is not None:
        chart.combine(lines)
    chart.set_title({"name": spec.title, "name_font": {"size": 12}})
    value_axis = {"num_format": spec.number_format, "major_gridlines": {"visible": True,
                                                                       "line": {"color": "#D9D9D9"}}}
    if spec.value_axis:
        value_axis["name"] = spec.value_axis
    if spec.kind == "bar":
        chart.set_x_axis(value_axis)
        chart.set_y_axis({"reverse": True})          # first bid on top, as in the table
    else:
        chart.set_y_axis(value_axis)
    chart.set_legend({"position": "bottom"} if len(spec.series) > 1 else {"none": True})
    chart.set_size({"width": spec.size[0], "height": spec.size[1]})
    return chart
