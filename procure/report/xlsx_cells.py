"""Cell-level rules of the workbook: text stays text, number formats, tables, charts, names,
widths, and a byte-stable zip (fixed timestamps and entry order) so equal documents give equal
files. The one module that imports openpyxl (lazily)."""

from __future__ import annotations

import io
import re
import unicodedata
import zipfile
from datetime import datetime
from decimal import Decimal

ZIP_DATE = (2000, 1, 1, 0, 0, 0)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
CURRENCY_FORMATS = {"USD": '"$"#,##0.00', "EUR": '"€"#,##0.00', "GBP": '"£"#,##0.00'}
FMT = {"int": "#,##0", "num2": "#,##0.00", "num3": "0.000", "num4": "#,##0.0000", "days": "#,##0.0",
       "pct": "0.0%", "sci": "0.00E+00", "text": "@"}
INPUT_FILL = "FFF4CC"      # pale yellow: a cell finance may change
HEADER_FILL = "1F3F66"


def clean_text(value: str) -> str:
    """Drop control characters (Excel refuses most, and they hide content); keep newlines."""
    return "".join(c for c in str(value) if c == "\n" or unicodedata.category(c) != "Cc")


def money_format(currency: str, decimals: int = 2) -> str:
    base = CURRENCY_FORMATS.get(currency)
    zeros = "0" * decimals
    if base:
        return base.replace("0.00", f"0.{zeros}")
    return f'#,##0.{zeros} "{clean_text(currency).replace(chr(34), "")}"'


def put(ws, row: int, col: int, value, fmt: str | None = None, *, bold: bool = False, fill: str | None = None):
    """Write one cell. Strings are always text (never formulas); None stays empty."""
    from openpyxl.styles import Font, PatternFill

    cell = ws.cell(row=row, column=col)
    if isinstance(value, str):
        text = clean_text(value)
        cell.value = text
        cell.data_type = "s"
        if text.startswith(FORMULA_START):
            cell.quotePrefix = True
    elif isinstance(value, bool):
        cell.value = value
    elif value is not None:
        cell.value = _number(value)
    if fmt:
        cell.number_format = fmt
    if bold:
        cell.font = Font(bold=True)
    if fill:
        cell.fill = PatternFill("solid", start_color=fill, end_color=fill)
    return cell


def put_formula(ws, row: int, col: int, formula: str, fmt: str | None = None, *, bold: bool = False):
    """Write a formula we built (only names, cell references and numbers; never user text)."""
    from openpyxl.styles import Font

    cell = ws.cell(row=row, column=col)
    cell.value = formula if formula.startswith("=") else "=" + formula
    if fmt:
        cell.number_format = fmt
    if bold:
        cell.font = Font(bold=True)
    return cell


def _number(value):
    if isinstance(value, (int, Decimal)):
        return value
    return float(value)


def header(ws, row: int, labels: list[str]) -> None:
    from openpyxl.styles import Alignment, Font, PatternFill

    for col, label in enumerate(labels, start=1):
        cell = put(ws, row, col, label)
        cell.font = Font(bold=True, color="FFFFFF")
        cell.fill = PatternFill("solid", start_color=HEADER_FILL, end_color=HEADER_FILL)
        cell.alignment = Alignment(wrap_text=True, vertical="top")


def add_table(ws, name: str, first_row: int, last_row: int, n_cols: int) -> None:
    """An Excel table over a header row and its data (at least one data row)."""
    from openpyxl.utils import get_column_letter
    from openpyxl.worksheet.table import Table, TableStyleInfo

    last_row = max(last_row, first_row + 1)
    table = Table(displayName=name, ref=f"A{first_row}:{get_column_letter(n_cols)}{last_row}")
    table.tableStyleInfo = TableStyleInfo(name="TableStyleLight9", showRowStripes=True)
    ws.add_table(table)


def new_workbook():
    from openpyxl import Workbook

    return Workbook()


def column_letter(col: int) -> str:
    from openpyxl.utils import get_column_letter

    return get_column_letter(col)


def define_name(wb, name: str, ref: str) -> None:
    from openpyxl.workbook.defined_name import DefinedName

    wb.defined_names[name] = DefinedName(name, attr_text=ref)


def bar_chart(ws, *, title: str, data_cols: tuple[int, int], last_row: int, anchor: str,
              stacked: bool = False, size: tuple[float, float] = (7.5, 16), legend: bool = True) -> None:
    """A native horizontal bar chart of columns ``data_cols`` (header in row 1), bids in column A/B."""
    from openpyxl.chart import BarChart, Reference

    chart = BarChart()
    chart.type = "bar"
    if stacked:
        chart.grouping, chart.overlap = "stacked", 100
    chart.title = title
    chart.add_data(Reference(ws, min_col=data_cols[0], max_col=data_cols[1], min_row=1, max_row=last_row),
                   titles_from_data=True)
    category_col = 2 if ws.title == "Summary" else 1
    chart.set_categories(Reference(ws, min_col=category_col, min_row=2, max_row=last_row))
    if not legend:
        chart.legend = None
    chart.height, chart.width = size
    ws.add_chart(chart, anchor)


def fit_columns(ws, minimum: int = 8, maximum: int = 60) -> None:
    """Width from the longest text in each column (wide characters count double)."""
    from openpyxl.utils import get_column_letter

    widths: dict[int, int] = {}
    for row in ws.iter_rows():
        for cell in row:
            if cell.value is None:
                continue
            text = str(cell.value)
            size = 12 if text.startswith("=") and cell.data_type == "f" else _text_width(text)
            widths[cell.column] = max(widths.get(cell.column, 0), size)
    for col, width in sorted(widths.items()):
        ws.column_dimensions[get_column_letter(col)].width = max(minimum, min(maximum, width + 2))
    # printing: landscape, one page wide, header row repeated
    ws.page_setup.orientation = "landscape"
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.page_setup.fitToWidth, ws.page_setup.fitToHeight = 1, 0
    ws.print_title_rows = "1:1"


def _text_width(text: str) -> int:
    longest = max(text.split("\n"), key=len)
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in longest)


_MODIFIED = re.compile(rb"<dcterms:modified([^>]*)>[^<]*</dcterms:modified>")
_CREATED = re.compile(rb"<dcterms:created([^>]*)>[^<]*</dcterms:created>")


def stable_zip(data: bytes, stamp: datetime) -> bytes:
    """Rewrite an .xlsx with fixed entry dates, sorted entries and document dates from ``stamp``."""
    iso = stamp.strftime("%Y-%m-%dT%H:%M:%SZ").encode()
    source = zipfile.ZipFile(io.BytesIO(data))
    names = sorted(source.namelist(), key=lambda n: (n != "[Content_Types].xml", n))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as target:
        for name in names:
            content = source.read(name)
            if name == "docProps/core.xml":
                content = _MODIFIED.sub(rb"<dcterms:modified\1>" + iso + rb"</dcterms:modified>", content)
                content = _CREATED.sub(rb"<dcterms:created\1>" + iso + rb"</dcterms:created>", content)
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o600 << 16
            target.writestr(info, content)
    return out.getvalue()
