"""Budgets for the PDF layout: what WeasyPrint is given, and what it may take.

The Jinja sandbox bounds the *rendering* of a user's template; the layout of the HTML it makes
is a second stage with its own costs (a 3,000 x 30 table or a ``1e30px`` width runs for minutes;
3,000 nested divs exhaust Python's stack). Three guards, cheapest first:

- ``check_fonts``: fontconfig (through the library WeasyPrint itself loads) must find at least
  one font; with none, Pango hands WeasyPrint a NULL font and the process segfaults.
- ``check_layout_bounds``: a static pass over a user template's HTML (stdlib parser) that
  refuses more elements, deeper nesting or longer CSS lengths than any report needs.
- ``layout_in_child``: a user template's layout runs in a forked child with an address-space
  limit and a wall-clock timeout; a crash, a timeout or running out of memory becomes an
  InputError naming the template folder and the limit.

The shipped templates are procure's own and are laid out in process (no fork): they pass the
font check only.
"""

from __future__ import annotations

import os
import re
import select
import signal
import stat
import struct
import time
from collections.abc import Callable
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

from procure.errors import InputError, input_error

MAX_ELEMENTS_BASE = 30_000          # elements in a user template's HTML, plus MAX_ELEMENTS_PER_BID per bid
MAX_ELEMENTS_PER_BID = 400
MAX_NESTING_DEPTH = 100             # open elements inside each other (WeasyPrint recurses per level)
MAX_CSS_LENGTH = 100_000            # |value| of any CSS length or percentage (an A4 page is ~800px)
LAYOUT_BUDGET_BASE_S = 45.0         # wall clock of a user template's PDF layout (a loaded 2-core machine), plus per bid
LAYOUT_BUDGET_PER_BID_S = 0.1
LAYOUT_MEMORY_HEADROOM_BYTES = 1024 ** 3   # address space the layout child may add to what it inherits

VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
                  "source", "track", "wbr"})
# a number with a CSS length unit or a percentage, as written in style sheets and style attributes
_CSS_LENGTH = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)\s*"
                         r"(px|pt|pc|cm|mm|q|in|em|rem|ex|ch|vw|vh|vmin|vmax|%)(?![a-z])", re.IGNORECASE)
_LENGTH_ATTRS = frozenset({"width", "height", "colspan", "rowspan", "span", "size", "cellpadding", "cellspacing",
                           "border"})
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?", re.IGNORECASE)


class LayoutRefused(Exception):
    """The HTML exceeds one of the static layout bounds; the message names the limit."""


def max_elements(bids: int) -> int:
    return MAX_ELEMENTS_BASE + MAX_ELEMENTS_PER_BID * max(bids, 0)


def layout_budget_s(bids: int) -> float:
    return LAYOUT_BUDGET_BASE_S + LAYOUT_BUDGET_PER_BID_S * max(bids, 0)


# --- fonts -------------------------------------------------------------------------------------

def fonts_found() -> int | None:
    """How many fonts fontconfig finds under the current configuration (FONTCONFIG_FILE and
    FONTCONFIG_PATH included); None when fontconfig cannot be asked (then layout is left to try)."""
    return _fonts_found(os.environ.get("FONTCONFIG_FILE"), os.environ.get("FONTCONFIG_PATH"),
                        os.environ.get("FONTCONFIG_SYSROOT"))


@lru_cache(maxsize=8)
def _fonts_found(_file: str | None, _path: str | None, _sysroot: str | None) -> int | None:
    import warnings

    try:
        with warnings.catch_warnings():   # WeasyPrint's own "no fonts" warning: check_fonts says it better
            warnings.filterwarnings("ignore", message="No fonts configured", category=UserWarning)
            from weasyprint.text.ffi import ffi, fontconfig
    except (ImportError, OSError):
        return None
    config = fontconfig.FcInitLoadConfigAndFonts()
    if config == ffi.NULL:
        return 0
    try:
        fonts = fontconfig.FcConfigGetFonts(config, fontconfig.FcSetSystem)
        return 0 if fonts == ffi.NULL else int(fonts.nfont)
    finally:
        fontconfig.FcConfigDestroy(config)


def check_fonts(counter: Callable[[], int | None] = fonts_found) -> None:
    """An InputError when fontconfig finds no font at all (the PDF step would crash)."""
    if counter() == 0:
        hint = (f" (FONTCONFIG_FILE is {os.environ['FONTCONFIG_FILE']})" if os.environ.get("FONTCONFIG_FILE")
                else "")
        raise input_error("<fonts>", "no-fonts",
                          f"no usable font is installed: fontconfig finds none{hint}, and a PDF cannot be laid "
                          "out without one; install a font package (Debian/Ubuntu: apt-get install "
                          "fonts-dejavu-core) or point FONTCONFIG_FILE at a configuration that lists a font "
                          "folder, or leave pdf out of --format")


# --- static bounds -----------------------------------------------------------------------------

class _Counter(HTMLParser):
    def __init__(self, limit_elements: int):
        super().__init__(convert_charrefs=True)
        self.limit_elements = limit_elements
        self.elements = 0
        self.stack: list[str] = []
        self.deepest = 0
        self.in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements += 1
        if self.elements > self.limit_elements:
            raise LayoutRefused(f"it has more than {self.limit_elements:,} elements, the most a report's "
                                "layout may take")
        for name, value in attrs:
            if value is None:
                continue
            if name == "style":
                _check_css(value)
            elif name in _LENGTH_ATTRS:
                _check_attr_number(name, value)
        if tag in VOID:
            return
        self.stack.append(tag)
        self.deepest = max(self.deepest, len(self.stack))
        if len(self.stack) > MAX_NESTING_DEPTH:
            raise LayoutRefused(f"its elements nest more than {MAX_NESTING_DEPTH} deep, the most a report's "
                                "layout may take")
        self.in_style = tag == "style"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID and self.stack and self.stack[-1] == tag:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if tag in self.stack:        # close it and whatever was left open inside it (as browsers do)
            while self.stack and self.stack.pop() != tag:
                pass
        self.in_style = False

    def handle_data(self, data: str) -> None:
        if self.in_style or (self.stack and self.stack[-1] == "style"):
            _check_css(data)


def _check_css(text: str) -> None:
    for match in _CSS_LENGTH.finditer(text):
        try:
            value = abs(float(match.group(1)))
        except (OverflowError, ValueError):
            value = float("inf")
        if value > MAX_CSS_LENGTH:
            raise LayoutRefused(f"the CSS length {match.group(0)[:40]} is larger than {MAX_CSS_LENGTH:,}, the "
                                "largest a report's layout accepts")


def _check_attr_number(name: str, value: str) -> None:
    match = _NUMBER.match(value.strip())
    if match is None:
        return
    try:
        number = abs(float(match.group(0)))
    except (OverflowError, ValueError):
        number = float("inf")
    if number > MAX_CSS_LENGTH:
        raise LayoutRefused(f"the attribute {name}=\"{value[:40]}\" is larger than {MAX_CSS_LENGTH:,}, the "
                            "largest a report's layout accepts")


def check_layout_bounds(html: str, *, bids: int = 0) -> None:
    """LayoutRefused when ``html`` has too many elements, nests too deep or states an absurd CSS
    length (linear in the HTML's size; no layout is done)."""
    counter = _Counter(max_elements(bids))
    counter.feed(html)
    counter.close()


MAX_CSS_FILES = 1000                # style sheets of a template folder the static pass reads
MAX_CSS_FILE_BYTES = 1024 * 1024


def check_template_css(folder: Path) -> None:
    """LayoutRefused when a style sheet in a user's template folder (which its HTML may link or
    @import) states an absurd CSS length. Only regular files inside the folder are read, as the
    layout's fetcher would; links are not followed."""
    seen = 0
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            if not name.lower().endswith(".css"):
                continue
            seen += 1
            if seen > MAX_CSS_FILES:
                raise LayoutRefused(f"it has more than {MAX_CSS_FILES:,} style sheets")
            path = Path(root) / name
            try:
                info = path.lstat()
                if not stat.S_ISREG(info.st_mode):
                    continue
                if info.st_size > MAX_CSS_FILE_BYTES:
                    raise LayoutRefused(f"the style sheet {name} is larger than {MAX_CSS_FILE_BYTES // 1024} KiB")
                text = path.read_bytes().decode("utf-8", "replace")
            except OSError:
                continue
            try:
                _check_css(text)
            except LayoutRefused as exc:
                raise LayoutRefused(f"in {path.relative_to(folder)}: {exc}") from None


# --- the layout child --------------------------------------------------------------------------

class LayoutFailed(Exception):
    """The layout child ran out of time or memory, crashed, or raised; the message says which."""


def layout_in_child(layout: Callable[[], bytes], *, budget_s: float,
                    headroom_bytes: int = LAYOUT_MEMORY_HEADROOM_BYTES) -> bytes:
    """``layout()`` in a forked child under an address-space limit (what the parent uses now plus
    ``headroom_bytes``) and a ``budget_s`` wall clock; its bytes, or LayoutFailed. Where fork is
    not available the layout runs in process (the static checks still apply)."""
    if not hasattr(os, "fork"):
        return layout()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:                                        # the child: never returns
        os.close(read_fd)
        _child(layout, write_fd, headroom_bytes, budget_s)
    os.close(write_fd)
    try:
        data = _read_all(read_fd, time.monotonic() + budget_s)
    except TimeoutError:
        _kill(pid)
        raise LayoutFailed(f"the PDF layout took longer than its {budget_s:.0f} s budget") from None
    finally:
        os.close(read_fd)
    status = _reap(pid)
    if len(data) >= 5:
        kind, size = data[0], struct.unpack(">I", data[1:5])[0]
        body = data[5:5 + size]
        if len(body) == size:
            if kind == 0:
                return body
            raise LayoutFailed(body.decode("utf-8", "replace"))
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name if os.WTERMSIG(status) in signal.valid_signals() else "?"
        raise LayoutFailed(f"the PDF layout crashed (signal {os.WTERMSIG(status)}, {name})")
    raise LayoutFailed("the PDF layout ended without a result (out of memory?)")


def _child(layout: Callable[[], bytes], write_fd: int, headroom_bytes: int, budget_s: float) -> None:
    import faulthandler

    code = 0
    try:
        faulthandler.disable()           # a crash here is reported by the parent, in the reader's words
        for signum in (signal.SIGINT, signal.SIGTERM):   # the parent's handlers (cleanup) are not ours
            signal.signal(signum, signal.SIG_DFL)
        _limit_memory(headroom_bytes)
        _limit_cpu(budget_s)
        try:
            payload, kind = layout(), 0
        except MemoryError:
            payload, kind = b"the PDF layout needed more memory than a report may take", 1
        except RecursionError:
            payload, kind = b"the PDF layout recursed too deep (elements nested too deep)", 1
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the parent as text
            text = " ".join(f"{type(exc).__name__}: {exc}".split())[:500]
            payload, kind = text.encode("utf-8", "replace"), 1
        message = bytes([kind]) + struct.pack(">I", len(payload)) + payload
        view = memoryview(message)
        while view:
            written = os.write(write_fd, view)
            view = view[written:]
    except BaseException:  # noqa: BLE001 - the child must end here, whatever happened
        code = 1
    finally:
        os._exit(code)


def _limit_memory(headroom_bytes: int) -> None:
    try:
        import resource

        with open("/proc/self/statm", "rb") as handle:
            used = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError, AttributeError):
        return
    cap = used + headroom_bytes
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft == resource.RLIM_INFINITY or soft > cap:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _limit_cpu(budget_s: float) -> None:
    """A CPU-time limit a little past the wall clock: a child whose parent died (and so cannot kill
    it) still ends, and with it its share of the output folder's lock."""
    try:
        import resource

        seconds = int(budget_s) + 5
        soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if hard != resource.RLIM_INFINITY:
            seconds = min(seconds, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, hard))
    except (ImportError, OSError, ValueError, AttributeError):
        return


def _read_all(fd: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if not ready:
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _reap(pid)


def _reap(pid: int) -> int:
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue
        except ChildProcessError:
            return 0


def guarded_error(templates_dir: Path, exc: Exception) -> InputError:
    """The exit-1 diagnostic for a user template's layout that broke a bound."""
    return input_error(str(templates_dir), "bad-template",
                       f"the PDF of this template cannot be laid out: {exc}; simplify the template "
                       "(fewer or shallower elements, smaller CSS lengths) or leave pdf out of --format")
