"""Sweep reports: every output is a pure function of the ``procure.sweep/v1`` document.

JSON (the document), Parquet (every point, flat, for machines), XLSX (every point, filterable,
with the ask, the frontier and the best points), HTML and PDF (the ask, a frontier chart per
workload, the frontier and best-point tables, the inputs); the PDF is made from the HTML.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from procure.errors import input_error

if TYPE_CHECKING:
    from rich.console import Console

    from procure.sweep.document import SweepDocument

Render = Callable[["SweepDocument", str, "Path | None"], bytes]


def _json(doc: SweepDocument, page_size: str, templates_dir: Path | None) -> bytes:
    from procure.jsontext import to_json_bytes

    return to_json_bytes(doc.to_data())


def _parquet(doc: SweepDocument, page_size: str, templates_dir: Path | None) -> bytes:
    from procure.sweep.columns import COLUMNS, flat_point, parquet_bytes

    return parquet_bytes([flat_point(p) for p in doc.points], COLUMNS)


def _xlsx(doc: SweepDocument, page_size: str, templates_dir: Path | None) -> bytes:
    from procure.report.sweep.xlsx import render_sweep_xlsx

    return render_sweep_xlsx(doc)


def sweep_html(doc: SweepDocument, page_size: str = "A4", templates_dir: Path | None = None) -> str:
    from procure.report.html_report import make_environment
    from procure.report.sweep.view import build_view

    template = make_environment(templates_dir).get_template("sweep/report.html.j2")
    html: str = template.render(**build_view(doc, page_size))
    return html


def _html(doc: SweepDocument, page_size: str, templates_dir: Path | None) -> bytes:
    return sweep_html(doc, page_size, templates_dir).encode("utf-8")


def _pdf(doc: SweepDocument, page_size: str, templates_dir: Path | None) -> bytes:
    from procure.report.pdf_report import render_report_pdf
    from procure.resources import templates_dir as shipped

    return render_report_pdf(sweep_html(doc, page_size, templates_dir), templates_dir=templates_dir,
                             shipped_dir=shipped(), as_of=str(doc.as_of), bids=0)


RENDERERS: dict[str, Render] = {"json": _json, "parquet": _parquet, "xlsx": _xlsx, "html": _html, "pdf": _pdf}
FORMATS = tuple(RENDERERS)


def check_formats(formats: list[str]) -> list[str]:
    formats = list(dict.fromkeys(formats))
    unknown = [f for f in formats if f not in RENDERERS]
    if unknown:
        from procure.sources.suggest import suggest

        raise input_error("--write", "bad-format", "; ".join(
            f"unknown format {f!r}{suggest(f, FORMATS)}; use {', '.join(FORMATS)}" for f in unknown))
    return formats


def render_sweep_bytes(document: SweepDocument, formats: list[str], *, page_size: str = "A4",
                       templates_dir: Path | None = None) -> dict[str, bytes]:
    return {fmt: RENDERERS[fmt](document, page_size, templates_dir) for fmt in check_formats(formats)}


def sweep_targets(out_dir: Path, slug: str, formats: list[str]) -> list[Path]:
    return [Path(out_dir) / f"{slug}.{fmt}" for fmt in formats]


def render_sweep(document: SweepDocument, formats: list[str], out_dir: Path, slug: str, *,
                 page_size: str = "A4", templates_dir: Path | None = None, force: bool = True) -> list[Path]:
    """Write ``<out_dir>/<slug>.<format>`` for each format (atomically); return the paths."""
    from procure.report.writer import check_targets, write_all

    formats = check_formats(formats)
    paths = sweep_targets(out_dir, slug, formats)
    check_targets(paths, force)
    rendered = render_sweep_bytes(document, formats, page_size=page_size, templates_dir=templates_dir)
    return write_all(list(zip(paths, (rendered[f] for f in formats))))


def print_sweep_terminal(doc: SweepDocument, console: Console) -> None:
    from procure.report.sweep.text import print_sweep

    print_sweep(doc, console)
