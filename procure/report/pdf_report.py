"""The PDF report: WeasyPrint renders the HTML report's own HTML.

Nothing is fetched from the network or the file system except files under the template
folder and ``data:`` URLs: a vendor name is escaped text, and even a template that asks for
``file:///etc/hostname`` or ``http://…`` is refused by ``SafeFetcher``. Dates come from the
document's ``as_of`` (never the clock), so equal documents give equal PDFs.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlparse


class FetchRefused(ValueError):
    """A URL outside the template folder or not a data: URL."""


class Fetcher(Protocol):
    """A WeasyPrint URL fetcher that records what the document asked for."""

    root: Path
    requested: list[str]

    def fetch(self, url: str, headers: Mapping[str, str] | None = None) -> Any: ...


def safe_fetcher_class() -> Callable[[Path], Fetcher]:
    import weasyprint

    # weasyprint ships no type information, so its URLFetcher is Any to mypy
    class SafeFetcher(weasyprint.URLFetcher):  # type: ignore[misc]
        """Serves data: URLs and files under ``root``; refuses everything else."""

        def __init__(self, root: Path, **kwargs: Any):
            super().__init__(allowed_protocols=("data", "file"), **kwargs)
            self.root = Path(root).resolve()
            self.requested: list[str] = []

        def fetch(self, url: str, headers: Mapping[str, str] | None = None) -> Any:
            self.requested.append(url)
            scheme = url.split(":", 1)[0].lower()
            if scheme == "data":
                return super().fetch(url, headers)
            if scheme == "file" and self._inside_root(url):
                return super().fetch(url, headers)
            raise FetchRefused(f"procure fetches nothing outside the template folder: {url[:200]}")

        def _inside_root(self, url: str) -> bool:
            parsed = urlparse(url)
            if parsed.netloc not in ("", "localhost"):
                return False
            path = Path(unquote(parsed.path)).resolve()
            return path == self.root or self.root in path.parents

    return SafeFetcher


def as_of_datetime(as_of: str) -> datetime:
    day = date.fromisoformat(str(as_of)[:10])
    return datetime(day.year, day.month, day.day, tzinfo=timezone.utc)


def render_pdf(html: str, *, base_dir: Path, as_of: str,
               attachments: Sequence[tuple[str, bytes]] = (), fetcher: Fetcher | None = None) -> bytes:
    import weasyprint

    fetcher = fetcher or safe_fetcher_class()(base_dir)
    stamp = as_of_datetime(as_of)
    files = [weasyprint.Attachment(file_obj=io.BytesIO(data), name=Path(name).name or "input",
                                   description=str(name), created=stamp, modified=stamp,
                                   url_fetcher=fetcher)
             for name, data in attachments]
    document = weasyprint.HTML(string=html, base_url=Path(base_dir).resolve().as_uri() + "/",
                               url_fetcher=fetcher)
    # WeasyPrint logs refused fetches as warnings; they are expected and already handled.
    logger = logging.getLogger("weasyprint")
    previous = logger.level
    logger.setLevel(logging.ERROR)
    try:
        pdf: bytes = document.write_pdf(attachments=files, pdf_identifier=_identifier(html), uncompressed_pdf=False)
        return pdf
    finally:
        logger.setLevel(previous)


def render_report_pdf(html: str, *, templates_dir: Path | None, shipped_dir: Path, as_of: str, bids: int,
                      attachments: Sequence[tuple[str, bytes]] = ()) -> bytes:
    """The PDF of a report under the layout budgets (report.pdf_guard): the font check always; for
    a user's ``templates_dir`` also the static bounds and the layout in a capped child process.
    Every broken bound is an InputError (exit 1) naming the template folder and the limit."""
    from procure.report import pdf_guard

    pdf_guard.check_fonts()
    if templates_dir is None:     # procure's own templates: laid out in process, no fork
        return render_pdf(html, base_dir=shipped_dir, as_of=as_of, attachments=attachments)
    base_dir = Path(templates_dir)
    try:
        pdf_guard.check_layout_bounds(html, bids=bids)
        pdf_guard.check_template_css(base_dir)
        return pdf_guard.layout_in_child(
            lambda: render_pdf(html, base_dir=base_dir, as_of=as_of, attachments=attachments),
            budget_s=pdf_guard.layout_budget_s(bids))
    except (pdf_guard.LayoutRefused, pdf_guard.LayoutFailed) as exc:
        raise pdf_guard.guarded_error(base_dir, exc) from None


def _identifier(html: str) -> bytes:
    import hashlib

    return hashlib.md5(html.encode("utf-8")).hexdigest().encode("ascii")
