"""Reports: every output is a pure function of the ``procure.quote/v2`` result document.

``render`` checks the targets, renders every requested format to bytes, and only then writes
them atomically; ``render_terminal`` prints the ranked table. Heavy libraries (jinja2,
weasyprint, openpyxl, rich) are imported inside the functions that use them, so importing
this package stays cheap.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from procure.errors import input_error
from procure.report.options import FORMATS as FORMAT_NAMES
from procure.report.options import LANGS as LANGS
from procure.report.options import RenderOptions

if TYPE_CHECKING:
    from rich.console import Console

    from procure.document import QuoteDocument
    from procure.report.writer import Snapshot

_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def render(doc: QuoteDocument, formats: list[str] | RenderOptions, out_dir: Path, slug: str, *,
           templates_dir: Path | None = None, lang: str = "en", page_size: str = "A4", force: bool = False,
           attachments: list[tuple[str, bytes]] | tuple[tuple[str, bytes], ...] = (),
           bid_pages: str | None = None, source: str = "") -> list[Path]:
    """Write ``<out_dir>/<slug>.<format>`` for each format; return the paths written.

    Under the output folder's lock: procure's own previous reports are replaced, other files only
    with ``force``, and all formats are committed together or not at all (report.writer). The
    folder's manifest (``.procure-manifest``) records the SHA-256 of every file written and
    ``source``, the input it came from: a report edited since is kept unless ``force``. A previous
    ``<slug>.json`` that differs from the new one is kept as ``<slug>.round-N.json`` (N counting up),
    so `procure diff` still has it.
    ``bid_pages``: all | none | top:N, the bids with a detail page in the HTML and PDF (None: all
    of a report of up to 50 bids, else the top 10; see ``report.bid_pages``).
    ``formats`` may be the options a command already checked (``RenderOptions``): then the
    keyword options are theirs and nothing is checked twice."""
    from procure.report.writer import write_recorded

    options = formats if isinstance(formats, RenderOptions) else RenderOptions.checked(
        formats, lang=lang, page_size=page_size, templates_dir=templates_dir, bid_pages=bid_pages, force=force)
    if not _SLUG.match(slug or ""):
        raise input_error("<options>", "bad-option", f"report name {slug!r} must be letters, digits, '.', '_' or '-'")
    paths = {fmt: Path(out_dir) / f"{slug}.{fmt}" for fmt in options.formats}

    def produce(before: Snapshot) -> list[tuple[Path, bytes]]:
        rendered = render_bytes(doc, list(options.formats), templates_dir=options.templates_dir, lang=options.lang,
                                page_size=options.page_size, attachments=attachments, bid_pages=options.bid_pages)
        outputs = [(paths[fmt], rendered[fmt]) for fmt in options.formats]
        if "json" in paths:
            outputs += _previous_round(paths["json"], rendered["json"], before)
        return outputs

    return write_recorded(Path(out_dir), list(paths.values()), produce, force=options.force, source=source)


_ROUND = re.compile(r"\.round-(\d{1,9})\.json$")


def _previous_round(target: Path, new: bytes, before: Snapshot) -> list[tuple[Path, bytes]]:
    """``<slug>.round-N.json`` holding the JSON this run replaces, when there is one and it differs
    (check_targets has already accepted it as procure's own, or --force)."""
    import stat

    from procure.report.writer import previous_content

    state = before.get(target)
    if state is None or not stat.S_ISREG(state[4]):
        return []
    old = previous_content(target, 1 << 30)      # as the target check read it: the file is not read twice
    if old is None or old == new:
        return []
    stem = target.name[: -len(".json")]
    taken = [int(m.group(1)) for name in os.listdir(target.parent)
             if name.startswith(stem + ".round-") and (m := _ROUND.search(name)) and name == f"{stem}{m.group(0)}"]
    return [(target.parent / f"{stem}.round-{max(taken, default=0) + 1}.json", old)]


def unique_slug(out_dir: Path, base: str, formats: list[str], source: str) -> str:
    """``base``, unless the folder's manifest says another input owns a report of that name that
    is still there: then ``base-<8 hex of the SHA-256 of the input's resolved path>``, so two
    cluster files with the same title (or file name) in different folders never overwrite each
    other. Call under the output folder's lock."""
    import hashlib

    from procure.report.writer import owner, read_manifest

    manifest = read_manifest(Path(out_dir))
    for fmt in {*formats, "json"}:
        name = f"{base}.{fmt}"
        held = owner(manifest, name)
        if held and held != source and os.path.lexists(Path(out_dir) / name):
            return f"{base}-{hashlib.sha256(source.encode('utf-8')).hexdigest()[:8]}"
    return base


@dataclass
class RenderContext:
    """What every renderer may read: the typed document and the options. The HTML is made
    once, on first use, because the PDF is rendered from exactly that HTML."""

    document: QuoteDocument
    lang: str = "en"
    page_size: str = "A4"
    templates_dir: Path | None = None
    attachments: list[tuple[str, bytes]] | tuple[tuple[str, bytes], ...] = ()
    bid_pages: str | None = None

    @cached_property
    def html(self) -> str:
        from procure.report.bid_pages import parse_bid_pages
        from procure.report.document import build_view
        from procure.report.html_report import render_html

        view = build_view(self.document, self.lang, self.page_size, [name for name, _ in self.attachments],
                          parse_bid_pages(self.bid_pages))
        return render_html(view, self.templates_dir)


def _json(ctx: RenderContext) -> bytes:
    from procure.jsontext import to_json_bytes

    return to_json_bytes(ctx.document.to_data())     # the one serialisation of the document


def _html(ctx: RenderContext) -> bytes:
    return ctx.html.encode("utf-8")


def _pdf(ctx: RenderContext) -> bytes:
    from procure.report.pdf_report import render_report_pdf
    from procure.resources import templates_dir as shipped

    return render_report_pdf(ctx.html, templates_dir=ctx.templates_dir, shipped_dir=shipped(),
                             as_of=str(ctx.document.as_of), bids=len(ctx.document.bids),
                             attachments=list(ctx.attachments))


def _xlsx(ctx: RenderContext) -> bytes:
    from procure.report.xlsx_report import render_xlsx

    return render_xlsx(ctx.document)


# The one table of output formats: name -> renderer. A new format is one function and one row.
RENDERERS: dict[str, Callable[[RenderContext], bytes]] = {"pdf": _pdf, "xlsx": _xlsx, "json": _json, "html": _html}


def render_bytes(document: QuoteDocument, formats: list[str], *, templates_dir: Path | None = None,
                 lang: str = "en", page_size: str = "A4",
                 attachments: list[tuple[str, bytes]] | tuple[tuple[str, bytes], ...] = (),
                 bid_pages: str | None = None) -> dict[str, bytes]:
    """Every requested format as bytes, nothing written (the PDF is made from the HTML).

    Renderers read the typed document, so each is a pure function of it."""
    ctx = RenderContext(document, lang, page_size, templates_dir, attachments, bid_pages)
    return {fmt: RENDERERS[fmt](ctx) for fmt in formats}


def render_terminal(doc: QuoteDocument, console: Console, *, lang: str = "en") -> None:
    """The ranked table and the flags explained, printed on a rich Console."""
    from procure.report.text_report import print_terminal

    print_terminal(doc, console, lang)


FORMATS = FORMAT_NAMES      # stated in report.options, which checks a command's options before rendering


