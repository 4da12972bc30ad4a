"""The PDF layout's budgets (report.pdf_guard): no fonts, hostile user templates that the Jinja
sandbox renders quickly but whose layout would run for minutes, recurse past Python's stack or
crash, and the capped child process that is the backstop. Each ends in exit 1 with a message
naming the template folder (or the fonts) and the limit; nothing is written, no lock is left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from procure.cli import main
from procure.errors import InputError
from procure.report import pdf_guard
from procure.report.pdf_guard import LayoutFailed, LayoutRefused, check_layout_bounds, layout_in_child

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "tests" / "fixtures" / "quote_sample.json"
EXAMPLE = REPO / "tests" / "cases" / "example" / "expected" / "result.json"
NO_FONTS_CONF = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><cachedir>{cache}</cachedir></fontconfig>
"""


def _template(folder: Path, html: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.html.j2").write_text(html, encoding="utf-8")
    return folder


HOSTILE = {
    "table-3000x30": "<html><body><table>" + ("<tr>" + "<td>x</td>" * 30 + "</tr>") * 3000 + "</table></body></html>",
    "css-1e30px": "<html><head><style>div { width: 1e30px }</style></head><body><div>x</div></body></html>",
    "style-attr": '<html><body><p style="margin-left: -99999999pt">x</p></body></html>',
    "colspan": '<html><body><table><tr><td colspan="100000000">x</td></tr></table></body></html>',
    "nested-3000": "<html><body>" + "<div>" * 3000 + "x" + "</div>" * 3000 + "</body></html>",
}
LIMIT = {"table-3000x30": "elements", "css-1e30px": "1e30px", "style-attr": "-99999999pt",
         "colspan": "colspan", "nested-3000": "nest more than"}


# --- static bounds -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_static_bounds_refuse_each_hostile_shape(name):
    with pytest.raises(LayoutRefused, match=LIMIT[name].replace("+", r"\+")):
        check_layout_bounds(HOSTILE[name], bids=5)


def test_static_bounds_accept_the_shipped_reports():
    pytest.importorskip("jinja2")
    from procure.document import load_quote
    from procure.report import RenderContext

    for path in (EXAMPLE, SAMPLE):
        doc = load_quote(path.read_bytes(), "x")
        check_layout_bounds(RenderContext(doc).html, bids=len(doc.bids))


def test_static_bounds_scale_with_bids_and_close_unclosed_tags():
    many = "<p>" * 40_000            # unclosed tags count as open: refused for their depth
    with pytest.raises(LayoutRefused):
        check_layout_bounds(many, bids=0)
    rows = "<table>" + "<tr><td>x</td></tr>" * 16_000 + "</table>"
    with pytest.raises(LayoutRefused, match="elements"):
        check_layout_bounds(rows, bids=0)
    check_layout_bounds(rows, bids=100)                  # 30,000 + 400 per bid
    check_layout_bounds("<div>" * 99 + "</div>" * 99)    # just inside the depth bound
    check_layout_bounds('<img src="x.png" width="800"><br><br/>' * 1000)   # void elements do not nest


def test_static_bounds_accept_ordinary_css():
    check_layout_bounds("<style>@page { size: A4; margin: 20mm 14mm } td { width: 12.5% ; font-size: 7.5pt }"
                        " .x { margin: -3px; line-height: 1.2em }</style><p style='width: 99999px'>x</p>")


# --- fonts -------------------------------------------------------------------------------------

def test_no_fonts_is_an_input_error():
    with pytest.raises(InputError) as caught:
        pdf_guard.check_fonts(lambda: 0)
    assert "no usable font" in str(caught.value) and "[no-fonts]" in str(caught.value)
    pdf_guard.check_fonts(lambda: 3)
    pdf_guard.check_fonts(lambda: None)     # fontconfig cannot be asked: leave it to the layout


def test_fontconfig_counts_fonts_under_the_environment(tmp_path, monkeypatch):
    pytest.importorskip("weasyprint")
    conf = tmp_path / "fonts.conf"
    conf.write_text(NO_FONTS_CONF.format(cache=tmp_path / "cache"), encoding="utf-8")
    monkeypatch.setenv("FONTCONFIG_FILE", str(conf))
    assert pdf_guard.fonts_found() == 0


def test_pdf_without_fonts_is_exit_1_not_a_segfault_and_no_lock_left(tmp_path):
    """Before the guard: Pango returned a NULL font, the process died of SIGSEGV (exit -11/139)
    and left .procure.lock behind."""
    pytest.importorskip("weasyprint")
    conf = tmp_path / "fonts.conf"
    conf.write_text(NO_FONTS_CONF.format(cache=tmp_path / "cache"), encoding="utf-8")
    out = tmp_path / "reports"
    out.mkdir()
    (out / "notes.md").write_text("mine\n", encoding="utf-8")
    env = dict(os.environ, FONTCONFIG_FILE=str(conf), PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "procure.cli", "render", str(SAMPLE), "-o", str(out),
                           "--format", "pdf"], capture_output=True, text=True, env=env, timeout=240, check=False)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "error[no-fonts]" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.md"]


# --- user templates through the CLI ------------------------------------------------------------

@pytest.mark.parametrize("name", ["table-3000x30", "css-1e30px", "nested-3000"])
def test_hostile_template_layout_is_exit_1_naming_template_and_limit(tmp_path, name):
    """Before the guard: the table and the CSS length ran past 120 s of layout; the nesting ended
    in RecursionError (exit 3)."""
    pytest.importorskip("weasyprint")
    folder = _template(tmp_path / "tpl", HOSTILE[name])
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.md").write_text("mine\n", encoding="utf-8")
    started = time.monotonic()
    result = CliRunner().invoke(main, ["render", str(SAMPLE), "-o", str(out), "--format", "pdf,html",
                                       "--templates", str(folder)])
    assert result.exit_code == 1, result.output
    assert time.monotonic() - started < 60
    text = result.output
    assert str(folder) in text and "error[bad-template]" in text and LIMIT[name] in text
    assert "Traceback" not in text
    assert sorted(p.name for p in out.iterdir()) == ["notes.md"]


# --- the child process -------------------------------------------------------------------------

def test_child_returns_the_layouts_bytes():
    assert layout_in_child(lambda: b"%PDF-1.7 " + b"x" * 3_000_000, budget_s=60) == b"%PDF-1.7 " + b"x" * 3_000_000


def test_child_past_its_budget_is_killed():
    started = time.monotonic()
    with pytest.raises(LayoutFailed, match="longer than its 1 s budget"):
        layout_in_child(lambda: (time.sleep(30), b"")[1], budget_s=1)
    assert time.monotonic() - started < 20


def test_child_out_of_memory_is_a_failure_not_the_machine():
    def hog() -> bytes:
        return bytes(bytearray(4 * 1024 ** 3))

    with pytest.raises(LayoutFailed, match="memory"):
        layout_in_child(hog, budget_s=60, headroom_bytes=256 * 1024 ** 2)


def test_child_crash_is_a_failure_naming_the_signal():
    def crash() -> bytes:
        os.kill(os.getpid(), signal.SIGSEGV)
        return b""

    with pytest.raises(LayoutFailed, match="crashed.*SIGSEGV"):
        layout_in_child(crash, budget_s=60)


def test_child_exceptions_come_back_as_text():
    def recurse(n: int = 0) -> bytes:
        return recurse(n + 1)

    with pytest.raises(LayoutFailed, match="recursed too deep"):
        layout_in_child(recurse, budget_s=60)
    with pytest.raises(LayoutFailed, match="ValueError: bad"):
        layout_in_child(lambda: (_ for _ in ()).throw(ValueError("bad")), budget_s=60)


def test_child_has_a_cpu_limit_and_none_of_the_parents_signal_handlers():
    """A child whose parent died cannot be killed by it: its CPU limit ends it (and its share of the
    output folder's lock); the parent's SIGTERM cleanup handler must not run in the child."""
    import resource

    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        seen = layout_in_child(lambda: f"{resource.getrlimit(resource.RLIMIT_CPU)[0]} "
                                       f"{signal.getsignal(signal.SIGTERM) is signal.SIG_DFL}".encode(), budget_s=7)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert seen == b"12 True"


def test_a_linked_style_sheet_with_an_absurd_length_is_refused_before_layout(tmp_path):
    """Before: the HTML was clean, the linked sheet's 1e30px ran the layout past its 45 s budget
    (the child's wall clock ended it); now the static pass names the sheet at once."""
    folder = _template(tmp_path / "tpl", '<html><head><link rel="stylesheet" href="css/big.css"></head>'
                                         "<body><div>x</div></body></html>")
    (folder / "css").mkdir()
    (folder / "css" / "big.css").write_text("div { width: 1e30px; padding: 1e29px }", encoding="utf-8")
    (folder / "ok.css").write_text("p { margin: 3mm }", encoding="utf-8")
    with pytest.raises(LayoutRefused, match=r"css/big.css.*1e30px"):
        pdf_guard.check_template_css(folder)
    (folder / "css" / "big.css").write_text("div { width: 10px }", encoding="utf-8")
    pdf_guard.check_template_css(folder)


def test_a_style_sheet_link_out_of_the_folder_is_not_read(tmp_path):
    outside = tmp_path / "outside.css"
    outside.write_text("div { width: 1e30px }", encoding="utf-8")
    folder = _template(tmp_path / "tpl", "<p>x</p>")
    os.symlink(outside, folder / "linked.css")
    pdf_guard.check_template_css(folder)     # not followed (the fetcher refuses it too)
