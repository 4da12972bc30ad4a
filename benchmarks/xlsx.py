"""XLSX write time of the example workbook and its ratio to the library floor.

The floor is XlsxWriter writing the very same workbook (text, numbers, formulas with their stored
values, formats, names, charts, filters, drop-downs, print setup) from a flat list prepared
beforehand: what any renderer would pay for this file. The ratio is what procure adds (building the chain, evaluating every
formula, checking it against the document). Issue 16 asks for at most 1.5x.

Prints medians of N runs; never asserts. Run: python benchmarks/xlsx.py [--runs 9] [--cluster X]
"""

from __future__ import annotations

import argparse
import io
import statistics
import time
from pathlib import Path
from typing import Any, Callable

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cluster.yaml"


def timed(fn: Callable[[], object], runs: int, clock: Callable[[], float] = time.process_time) -> float:
    """Median seconds of ``runs`` calls; CPU time by default, so other processes do not skew a ratio."""
    samples = []
    for _ in range(runs):
        start = clock()
        fn()
        samples.append(clock() - start)
    return statistics.median(samples)


def flatten(book: Any) -> list[tuple]:
    """The book as plain write operations (formula text and stored values computed once, here)."""
    from procure.report.xlsx_cells import _cached
    from procure.report.xlsx_formula import Expr

    ops = []
    for sheet in book.sheets:
        cells = []
        for (row, col), cell in sheet.cells.items():
            content = cell.content
            if isinstance(content, Expr):
                cells.append(("f", row, col, "=" + content.text(sheet.name), cell.style.props(),
                              _cached(book.value(sheet.name, row, col))))
            elif isinstance(content, str):
                cells.append(("s", row, col, content, cell.style.props(), None))
            elif content is None:
                cells.append(("b", row, col, None, cell.style.props(), None))
            else:
                cells.append(("n", row, col, float(content), cell.style.props(), None))
        ops.append((sheet, cells))
    return ops


def floor_write(ops: list[tuple], names: dict, stamp) -> bytes:
    import xlsxwriter

    from procure.report.xlsx_cells import _chart

    out = io.BytesIO()
    wb = xlsxwriter.Workbook(out, {"in_memory": True, "strings_to_numbers": False, "strings_to_formulas": False,
                                   "strings_to_urls": False})
    wb.set_properties({"created": stamp})
    formats: dict = {}
    for sheet, cells in ops:
        ws = wb.add_worksheet(sheet.name)
        for kind, row, col, value, props, cached in cells:
            key = tuple(sorted(props.items()))
            fmt = formats.get(key) or formats.setdefault(key, wb.add_format(props))
            if kind == "f":
                ws.write_formula(row, col, value, fmt, cached)
            elif kind == "s":
                ws.write_string(row, col, value, fmt)
            elif kind == "b":
                ws.write_blank(row, col, None, fmt)
            else:
                ws.write_number(row, col, value, fmt)
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
    for name, (sheet_name, row, col) in names.items():
        wb.define_name(name, f"='{sheet_name}'!${xlsxwriter.utility.xl_col_to_name(col)}${row + 1}")
    wb.close()
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--cluster", type=Path, default=EXAMPLE)
    args = parser.parse_args()

    from procure import api
    from procure.report.xlsx_report import _stamp, build_book, counts, render_xlsx

    doc = api.quote_document(args.cluster)
    render_xlsx(doc)                                   # warm imports once
    book, result = build_book(doc)
    ops, stamp = flatten(book), _stamp(doc.as_of).replace(tzinfo=None)
    size = len(render_xlsx(doc))
    write_s = timed(lambda: render_xlsx(doc), args.runs)
    wall_s = timed(lambda: render_xlsx(doc), args.runs, time.perf_counter)
    build_s = timed(lambda: build_book(doc), args.runs)
    floor_s = timed(lambda: floor_write(ops, book.names, stamp), args.runs)
    c = counts(book)
    print(f"workbook: {size:,} bytes, {sum(len(s.cells) for s in book.sheets):,} cells, {c['formulas']} formulas, "
          f"{c['inputs']} named inputs, {c['names']} names; check: {result.checked} figures, "
          f"{len(result.mismatches)} differ")
    print(f"render_xlsx (build + evaluate + check + write): {write_s * 1000:8.1f} ms CPU (median of {args.runs}); "
          f"{wall_s * 1000:.1f} ms wall")
    print(f"  of which build, evaluate, check:               {build_s * 1000:8.1f} ms CPU")
    print(f"library floor (XlsxWriter, same cells):         {floor_s * 1000:8.1f} ms CPU")
    print(f"ratio to the floor:                             {write_s / floor_s:8.2f}x (issue 16: at most 1.5x)")


if __name__ == "__main__":
    main()
