"""How a quote is rendered: one frozen set of options, checked once where a command starts.

Every problem is reported at once (a format unknown and a language unsupported are two
diagnostics of one error), each with the option it came from and a suggestion where one exists.
The slug is checked where it is made (``render``), since the API derives it from the title."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from procure.errors import Diagnostic, InputError

LANGS = ("en", "zh-TW")
FORMATS = ("pdf", "xlsx", "json", "html")   # the renderers of report/__init__.py (a test checks)
PAGE_SIZES = ("A4", "Letter")


@dataclass(frozen=True)
class RenderOptions:
    formats: tuple[str, ...]
    lang: str = "en"
    page_size: str = "A4"
    templates_dir: Path | None = None
    bid_pages: str | None = None
    force: bool = False

    @classmethod
    def checked(cls, formats: list[str] | tuple[str, ...], *, lang: str = "en", page_size: str = "A4",
                templates_dir: Path | None = None, bid_pages: str | None = None,
                force: bool = False) -> RenderOptions:
        """The options when every one is valid; InputError listing every problem otherwise."""
        from procure.report.bid_pages import parse_bid_pages
        from procure.sources.suggest import suggest

        wanted = tuple(dict.fromkeys(formats))
        problems = [("--format", "bad-format", f"unknown format {f!r}{suggest(f, FORMATS)}")
                    for f in wanted if f not in FORMATS]
        if not wanted:
            problems.append(("--format", "bad-format", f"no output format requested; give at least one of {', '.join(FORMATS)}"))
        if lang not in LANGS:
            problems.append(("--lang", "bad-option", f"unsupported language {lang!r}; use one of {', '.join(LANGS)}"))
        if str(page_size).lower() not in (p.lower() for p in PAGE_SIZES):
            problems.append(("--page-size", "bad-option", f"unsupported page size {page_size!r}; use A4 or Letter"))
        if templates_dir is not None and not Path(templates_dir).is_dir():
            problems.append(("--templates", "not-found", f"templates folder {templates_dir} does not exist"))
        try:
            parse_bid_pages(bid_pages)
        except ValueError as exc:
            problems.append(("--bid-pages", "bad-option", str(exc)))
        if problems:
            raise InputError([Diagnostic(where, 0, 0, code, message) for where, code, message in problems])
        return cls(wanted, lang, page_size, None if templates_dir is None else Path(templates_dir),
                   bid_pages, force)
