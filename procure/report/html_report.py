"""The HTML report: the view model rendered by Jinja2 (sandboxed, autoescaped).

The same sandboxed environment renders the shipped templates and a user's ``templates_dir``
(which may override any file and falls back to the shipped ones). CSS and SVG are inline, so
the file stands alone; the PDF is made from exactly this HTML.
"""

from __future__ import annotations

from pathlib import Path

from procure.resources import templates_dir as shipped_templates_dir

ENTRY_TEMPLATE = "report.html.j2"
PAGE_SIZES = {"a4": "A4", "letter": "letter"}


def page_size_css(page_size: str) -> str:
    try:
        return PAGE_SIZES[page_size.lower()]
    except KeyError:
        raise ValueError(f"unsupported page size {page_size!r}; use A4 or Letter") from None


def make_environment(templates_dir: Path | None = None):
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    folders = [str(Path(templates_dir))] if templates_dir else []
    folders.append(str(shipped_templates_dir()))
    return SandboxedEnvironment(
        loader=jinja2.FileSystemLoader(folders),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "html.j2", "j2"),
                                            default_for_string=True, default=False),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def _css_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def page_css(view: dict) -> str:
    """@page size and the localised "Page n of m" footer, built from the message catalog."""
    label = view["t"]["report.page"]
    pieces = []
    for chunk in label.replace("{pages}", "\0pages\0").replace("{page}", "\0page\0").split("\0"):
        if chunk in ("page", "pages"):
            pieces.append(f"counter({chunk})")
        elif chunk:
            pieces.append(_css_string(chunk))
    size = page_size_css(view.get("page_size", "A4"))
    return (f"@page {{ size: {size}; @bottom-center {{ content: {' '.join(pieces)}; "
            f"font-size: 7.5pt; color: #666; }} }}")


def render_html(view: dict, templates_dir: Path | None = None) -> str:
    env = make_environment(templates_dir)
    template = env.get_template(ENTRY_TEMPLATE)
    return template.render(**view, page_css=page_css(view))
