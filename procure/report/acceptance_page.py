"""The acceptance protocol as a PDF page: the shipped template ``acceptance.html.j2`` rendered by
the report's sandboxed Jinja environment and WeasyPrint (the same path as the quote's PDF)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from procure.report.messages import Messages

if TYPE_CHECKING:
    from procure.acceptance.spec import AcceptanceSpec

TEMPLATE = "acceptance.html.j2"


def acceptance_view(spec: AcceptanceSpec, file_name: str, lang: str = "en", page_size: str = "A4") -> dict[str, Any]:
    from procure.measure.formats import LOG_FORMATS
    from procure.report.document import HTML_LANG

    summaries = {f.name: f.summary for f in LOG_FORMATS}
    evidence = [{"name": name, "summary": summaries.get(name, "")} for name in spec.evidence_formats]
    return {"t": Messages(lang).table, "lang": lang, "html_lang": HTML_LANG.get(lang, lang),
            "page_size": page_size, "spec": spec, "evidence": evidence, "file_name": file_name}


def render_acceptance_html(spec: AcceptanceSpec, file_name: str, lang: str = "en", page_size: str = "A4") -> str:
    from procure.report.html_report import make_environment, page_css

    view = acceptance_view(spec, file_name, lang, page_size)
    template = make_environment().get_template(TEMPLATE)
    return str(template.render(**view, page_css=page_css(view)))


def render_acceptance_pdf(spec: AcceptanceSpec, file_name: str, lang: str = "en", page_size: str = "A4") -> bytes:
    """One PDF page (or two) for the spec written as ``file_name``; equal specs give equal PDFs."""
    from procure.report.pdf_guard import check_fonts
    from procure.report.pdf_report import render_pdf
    from procure.resources import templates_dir

    html = render_acceptance_html(spec, file_name, lang, page_size)
    check_fonts()          # no usable font: exit 1, not a crash in the layout
    return render_pdf(html, base_dir=templates_dir(), as_of=spec.as_of)
