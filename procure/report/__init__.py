"""Reports: every output is a pure function of the ``procure.quote/v2`` result document.

``render`` checks the targets, renders every requested format to bytes, and only then writes
them atomically; ``render_terminal`` prints the ranked table. Heavy libraries (jinja2,
weasyprint, openpyxl, rich) are imported inside the functions that use them, so importing
this package stays cheap.
"""

from __future__ import annotations

import re
from pathlib import Path

from typing import TYPE_CHECKING, Any

from procure.errors import input_error

if TYPE_CHECKING:
    from procure.document import QuoteDocument

FORMATS = ("pdf", "xlsx", "json", "html")
LANGS = ("en", "zh-TW")
_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def render(doc: QuoteDocument, formats: list[str], out_dir: Path, slug: str, *, templates_dir: Path | None = None,
           lang: str = "en", page_size: str = "A4", force: bool = False,
           attachments: list[tuple[str, bytes]] | tuple = ()) -> list[Path]:
    """Write ``<out_dir>/<slug>.<format>`` for each format; return the paths written."""
    from procure.report.writer import check_targets, write_all

    formats = _check_options(formats, slug, lang, page_size, templates_dir)
    paths = {fmt: Path(out_dir) / f"{slug}.{fmt}" for fmt in formats}
    check_targets(list(paths.values()), force)
    rendered = render_bytes(doc, formats, templates_dir=templates_dir, lang=lang, page_size=page_size,
                            attachments=attachments)
    return write_all([(paths[fmt], rendered[fmt]) for fmt in formats])


def render_bytes(document: QuoteDocument, formats: list[str], *, templates_dir: Path | None = None,
                 lang: str = "en", page_size: str = "A4",
                 attachments: list[tuple[str, bytes]] | tuple = ()) -> dict[str, bytes]:
    """Every requested format as bytes, nothing written (the PDF is made from the HTML).

    Renderers read the document's plain data (the JSON form), so each is a pure function of it."""
    doc = document.to_data()
    out: dict[str, bytes] = {}
    html = None
    if "html" in formats or "pdf" in formats:
        html = _html(doc, lang, page_size, templates_dir, [name for name, _ in attachments])
    for fmt in formats:
        if fmt == "json":
            from procure.jsontext import to_json_bytes
            out[fmt] = to_json_bytes(doc)
        elif fmt == "html":
            out[fmt] = html.encode("utf-8")
        elif fmt == "pdf":
            out[fmt] = _pdf(html, doc, templates_dir, attachments)
        elif fmt == "xlsx":
            from procure.report.xlsx_report import render_xlsx
            out[fmt] = render_xlsx(doc)
    return out


def _html(doc: dict[str, Any], lang: str, page_size: str, templates_dir: Path | None, attached: list[str]) -> str:
    from procure.report.document import build_view
    from procure.report.html_report import render_html

    return render_html(build_view(doc, lang, page_size, attached), templates_dir)


def _pdf(html: str, doc: dict[str, Any], templates_dir: Path | None, attachments) -> bytes:
    from procure.report.pdf_report import render_pdf
    from procure.resources import templates_dir as shipped

    return render_pdf(html, base_dir=Path(templates_dir) if templates_dir else shipped(),
                      as_of=str(doc["as_of"]), attachments=list(attachments))


def render_terminal(doc: dict[str, Any], console, *, lang: str = "en") -> None:
    """The ranked table and the flags explained, printed on a rich Console."""
    from procure.report.text_report import print_terminal

    print_terminal(doc, console, lang)


def _check_options(formats, slug: str, lang: str, page_size: str, templates_dir) -> list[str]:
    formats = list(dict.fromkeys(formats))
    problems = [f"unknown format {f!r}; use one of {', '.join(FORMATS)}" for f in formats if f not in FORMATS]
    if not formats:
        problems.append("no output format requested")
    if not _SLUG.match(slug or ""):
        problems.append(f"report name {slug!r} must be letters, digits, '.', '_' or '-'")
    if lang not in LANGS:
        problems.append(f"unsupported language {lang!r}; use one of {', '.join(LANGS)}")
    if str(page_size).lower() not in ("a4", "letter"):
        problems.append(f"unsupported page size {page_size!r}; use A4 or Letter")
    if templates_dir is not None and not Path(templates_dir).is_dir():
        problems.append(f"template folder {templates_dir} does not exist")
    if problems:
        raise input_error("<options>", "bad-option", "; ".join(problems))
    return formats
