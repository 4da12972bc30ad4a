"""The HTML report: the view model rendered by Jinja2 (sandboxed, autoescaped).

The same sandboxed environment renders the shipped templates and a user's ``templates_dir``
(which may override any file and falls back to the shipped ones). CSS and SVG are inline, so
the file stands alone; the PDF is made from exactly this HTML.

A user's template folder is untrusted input, held to the same rules as every other file:

- templates are read only from inside their folder: a symbolic link that leads out of it
  (to ``/etc/passwd``) is refused, as are pipes, devices and files over ``MAX_TEMPLATE_BYTES``;
- every mistake in a user's template (syntax, an undefined name, the sandbox's SecurityError,
  a division by zero, endless recursion) is an exit-1 diagnostic at the template's file:line;
- rendering has a time budget that scales with the document (``render_budget_s``), a cap on
  the output's size and on the memory it may take, and sequence/power operators are bounded.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from procure.errors import Diagnostic, InputError
from procure.resources import templates_dir as shipped_templates_dir

ENTRY_TEMPLATE = "report.html.j2"
PAGE_SIZES = {"a4": "A4", "letter": "letter"}
MAX_TEMPLATE_BYTES = 1024 * 1024
MAX_OUTPUT_CHARS = 256 * 1024 * 1024
MAX_SEQUENCE_ITEMS = 10_000_000          # a string or list a template builds with * or +
MAX_POWER_EXPONENT = 10_000
MEMORY_HEADROOM_BYTES = 512 * 1024 ** 2  # address space a user's template may add while rendering
_GENERATOR = '<meta name="generator" content="procure">'


class RenderTimeout(Exception):
    """A user's template ran past its time budget."""


def page_size_css(page_size: str) -> str:
    try:
        return PAGE_SIZES[page_size.lower()]
    except KeyError:
        raise ValueError(f"unsupported page size {page_size!r}; use A4 or Letter") from None


def render_budget_s(view: dict[str, Any]) -> float:
    """Seconds a user's template may take: generous for the document's size, never endless."""
    return 10.0 + 0.03 * len(view.get("bids") or ())


def make_environment(templates_dir: Path | None = None) -> Any:
    import jinja2

    folders = [str(Path(templates_dir))] if templates_dir else []
    folders.append(str(shipped_templates_dir()))
    return _environment_class()(
        loader=_confined_loader_class()(folders),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "html.j2", "j2"),
                                            default_for_string=True, default=False),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def _environment_class() -> type:
    from jinja2.exceptions import SecurityError
    from jinja2.sandbox import SandboxedEnvironment

    class BoundedSandbox(SandboxedEnvironment):
        """The sandbox, plus bounds on the operators that build huge values in one step."""

        intercepted_binops = frozenset({"*", "**", "+"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "**" and isinstance(right, (int, float)) and abs(right) > MAX_POWER_EXPONENT:
                raise SecurityError(f"exponent {right!r} is too large for a template")
            if operator == "*" and _sized(left, right) > MAX_SEQUENCE_ITEMS:
                raise SecurityError("a template may not build a sequence of more than "
                                    f"{MAX_SEQUENCE_ITEMS:,} items")
            if operator == "+" and _length(left) + _length(right) > MAX_SEQUENCE_ITEMS:
                raise SecurityError("a template may not build a sequence of more than "
                                    f"{MAX_SEQUENCE_ITEMS:,} items")
            return super().call_binop(context, operator, left, right)

    return BoundedSandbox


def _length(value: object) -> int:
    return len(value) if isinstance(value, (str, bytes, list, tuple)) else 0


def _sized(left: object, right: object) -> int:
    for seq, count in ((left, right), (right, left)):
        if isinstance(seq, (str, bytes, list, tuple)) and isinstance(count, int):
            return len(seq) * max(count, 0)
    return 0


def _confined_loader_class() -> type:
    import jinja2
    from jinja2.loaders import split_template_path

    from procure.sources.files import NotRegular, hard_link_problem, open_regular, read_fd_limited, within

    class ConfinedLoader(jinja2.BaseLoader):
        """Like FileSystemLoader, but a template's real path must lie inside the folder it is
        found in (symbolic links resolved), and only regular files under a size limit are read."""

        def __init__(self, folders: list[str]):
            self.folders = [os.path.realpath(f) for f in folders]

        def get_source(self, environment: Any, template: str) -> tuple[str, str, Callable[[], bool]]:
            pieces = split_template_path(template)   # refuses '..'
            for folder in self.folders:
                candidate = os.path.join(folder, *pieces)
                if not os.path.lexists(candidate):
                    continue
                real = os.path.realpath(candidate)
                if not within(real, [folder]):
                    raise TemplateOutside(candidate, real)
                try:
                    fd = open_regular(real)
                except NotRegular as exc:
                    raise TemplateUnreadable(candidate, exc.strerror or "not a regular file") from None
                try:
                    linked = hard_link_problem(os.fstat(fd))   # checked on the open file, before reading
                    if linked:
                        raise TemplateUnreadable(candidate, linked)
                    data = read_fd_limited(fd, MAX_TEMPLATE_BYTES)
                    mtime = os.fstat(fd).st_mtime_ns
                finally:
                    os.close(fd)
                if len(data) > MAX_TEMPLATE_BYTES:
                    raise TemplateUnreadable(candidate, f"larger than {MAX_TEMPLATE_BYTES // 1024} KiB")
                try:
                    source = data.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise TemplateUnreadable(candidate, f"not UTF-8 (byte 0x{data[exc.start]:02x} at "
                                                        f"offset {exc.start})") from None
                return source, real, lambda real=real, mtime=mtime: _mtime(real) == mtime
            raise jinja2.TemplateNotFound(template)

        def list_templates(self) -> list[str]:
            return []

    return ConfinedLoader


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


class TemplateOutside(Exception):
    def __init__(self, path: str, real: str):
        super().__init__(f"{path} is a link to {real}, outside the template folder; templates are "
                         "read only from inside their folder")
        self.path = path


class TemplateUnreadable(Exception):
    def __init__(self, path: str, why: str):
        super().__init__(f"{path} cannot be used as a template: {why}")
        self.path = path


def _css_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def page_css(view: dict[str, Any]) -> str:
    """@page size and the localised "Page n of m" footer, built from the message catalog."""
    label = view["t"]["report.page"]
    pieces = []
    for chunk in label.replace("{pages}", "\0pages\0").replace("{page}", "\0page\0").split("\0"):
        if chunk in ("page", "pages"):
            pieces.append(f"counter({chunk})")
        elif chunk:
            pieces.append(_css_string(chunk))
    size = page_size_css(view.get("page_size", "A4"))
    css = (f"@page {{ size: {size}; @bottom-center {{ content: {' '.join(pieces)}; "
           f"font-size: 7.5pt; color: #666; }} }}")
    if view.get("large"):        # a large report's ranking runs on landscape pages (report.bid_pages)
        css += f" @page wide {{ size: {size} landscape; }}"
    return css


def render_html(view: dict[str, Any], templates_dir: Path | None = None) -> str:
    """The report's HTML. With a user's ``templates_dir`` every template mistake is an InputError
    at its file:line, and the render runs under a time budget and memory and output caps."""
    env = make_environment(templates_dir)
    if templates_dir is None:   # the shipped templates: a failure here is procure's bug, not the user's
        return _fingerprinted(str(env.get_template(ENTRY_TEMPLATE).render(**view, page_css=page_css(view))))
    budget = render_budget_s(view)
    try:
        with _time_budget(budget), _memory_cap(MEMORY_HEADROOM_BYTES):
            template = env.get_template(ENTRY_TEMPLATE)
            return _fingerprinted(_bounded_render(template, dict(view, page_css=page_css(view)), budget))
    except RenderTimeout:
        raise _template_error(None, templates_dir, "bad-template",
                              f"rendering took longer than its {budget:.0f} s budget (an endless loop?)") from None
    except MemoryError:
        raise _template_error(None, templates_dir, "bad-template",
                              "rendering needed more memory than a report may take") from None
    except (TemplateOutside, TemplateUnreadable) as exc:
        raise InputError(Diagnostic(exc.path, 0, 0, "bad-template", str(exc))) from None
    except Exception as exc:   # noqa: BLE001 - every mistake a user's template can make
        raise _template_error(exc, templates_dir, "bad-template", _describe(exc)) from None


def _fingerprinted(html: str) -> str:
    """procure's generator mark (the fingerprint ``writer.is_own_report`` looks for, and the PDF's
    /Creator), added when a user's template left it out."""
    if re.search(r'<meta\s+name="generator"', html[:65536], re.IGNORECASE):
        return html
    head = re.search(r"<head[^>]*>", html[:65536], re.IGNORECASE)
    at = head.end() if head else 0
    return html[:at] + _GENERATOR + html[at:]


def _bounded_render(template: Any, context: dict[str, Any], budget_s: float) -> str:
    """Render chunk by chunk: the output's size is capped and the clock checked as it grows."""
    deadline = time.monotonic() + budget_s
    parts: list[str] = []
    size = 0
    for chunk in template.generate(**context):
        parts.append(chunk)
        size += len(chunk)
        if size > MAX_OUTPUT_CHARS:
            raise MemoryError
        if time.monotonic() > deadline:
            raise RenderTimeout
    return "".join(parts)


def _describe(exc: BaseException) -> str:
    from jinja2 import exceptions as jex

    if isinstance(exc, jex.SecurityError):
        return f"the sandbox refused it: {_short(exc)}"
    if isinstance(exc, jex.TemplateSyntaxError):
        return f"template syntax: {_short(exc)}"
    if isinstance(exc, jex.TemplateNotFound):
        return f"no template named {_short(exc)}"
    if isinstance(exc, jex.UndefinedError):
        return f"undefined: {_short(exc)}"
    if isinstance(exc, RecursionError):
        return "the template recurses without end (a macro or include calling itself)"
    return f"{type(exc).__name__}: {_short(exc)}"


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:300] + "..."


def _template_error(exc: BaseException | None, templates_dir: Path, code: str, message: str) -> InputError:
    source, line = str(templates_dir), 0
    if exc is not None:
        source, line = _where(exc, source)
    return InputError(Diagnostic(source, line, 1 if line else 0, code, message))


def _where(exc: BaseException, default: str) -> tuple[str, int]:
    """The template file and line an error came from (Jinja maps its frames to templates)."""
    filename, lineno = getattr(exc, "filename", None), getattr(exc, "lineno", None)
    if filename and lineno:
        return filename, int(lineno)
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename.endswith((".j2", ".html", ".css", ".svg")) or "/templates/" in frame.filename:
            return frame.filename, frame.lineno or 0
    return default, 0


@contextmanager
def _time_budget(seconds: float) -> Iterator[None]:
    """RenderTimeout after ``seconds``: an interval timer in the main thread (no cost while
    rendering), a trace function elsewhere (Python's signals reach only the main thread)."""
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        def expire(_signum: int, _frame: object) -> None:
            raise RenderTimeout

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        return
    deadline = time.monotonic() + seconds

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if time.monotonic() > deadline:
            raise RenderTimeout
        return tracer

    previous_trace = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(previous_trace)


@contextmanager
def _memory_cap(headroom: int) -> Iterator[None]:
    """A soft address-space limit of what the process uses now plus ``headroom`` while a user's
    template renders, so a template that builds a huge value gets MemoryError, not the machine."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/statm", "rb") as handle:
            used = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (ImportError, OSError, ValueError, AttributeError):
        yield
        return
    cap = used + headroom
    if soft != resource.RLIM_INFINITY and soft <= cap or hard != resource.RLIM_INFINITY and hard < cap:
        yield
        return
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
