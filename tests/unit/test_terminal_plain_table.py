"""The plain-console table writer prints the same characters as rich's table, which it replaces
where no colour is shown (pipes, files, NO_COLOR): checked on generated tables of ids, figures,
prose, CJK text and multi-line cells, at widths that keep the table and widths that wrap its prose."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from procure.report import terminal
from procure.report.terminal import Column, print_table

WORD = st.text(alphabet="abcXYZ019-_.,/", min_size=1, max_size=9)
CJK = st.text(alphabet="資料中心價格", min_size=1, max_size=4)
PROSE = st.lists(st.one_of(WORD, CJK), min_size=0, max_size=6).map(" ".join)
FIGURE = st.one_of(WORD, st.integers(-10**9, 10**9).map(lambda n: f"{n:,}"))
CELL = st.one_of(FIGURE, PROSE, st.tuples(FIGURE, FIGURE).map("\n".join))
COLUMN = st.builds(Column, header=st.one_of(WORD, PROSE.filter(bool), st.just("bf16 TFLOPS")),
                   justify=st.sampled_from(["left", "right"]), wrap=st.booleans())


def printed(columns, rows, width: int, *, plain: bool, terminal_like: bool) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=terminal_like)
    with pytest.MonkeyPatch.context() as patch:
        if not plain:   # rich's own table: what the plain writer must match
            patch.setattr(terminal, "_shows_no_styles", lambda console: False)
        print_table(console, columns, rows, title="t")
    return buf.getvalue()


@settings(max_examples=150, deadline=None)
@given(st.lists(COLUMN, min_size=1, max_size=5).flatmap(
    lambda cols: st.tuples(st.just(cols), st.lists(st.lists(CELL, min_size=len(cols), max_size=len(cols)),
                                                   min_size=1, max_size=6))),
       st.integers(20, 140), st.booleans())
def test_the_plain_writer_prints_what_rich_prints(table, width, terminal_like):
    columns, rows = table
    rich_text = printed(columns, rows, width, plain=False, terminal_like=terminal_like)
    plain_text = printed(columns, rows, width, plain=True, terminal_like=terminal_like)
    assert plain_text == rich_text


def test_a_plain_console_never_lays_the_table_out_with_rich(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("rich's table used on a console without colour")

    monkeypatch.setattr(terminal, "_table", refuse)
    monkeypatch.setattr(terminal, "emit", refuse)
    buf = io.StringIO()
    console = Console(file=buf, width=80, color_system=None)
    print_table(console, [Column("id", "left"), Column("TFLOPS")], [["h100-sxm", "989.4"]])
    assert buf.getvalue().splitlines()[-1] == "h100-sxm   989.4"


@pytest.mark.parametrize("count", range(1, 9))
def test_the_space_between_columns_is_what_rich_spends(count):
    from rich.measure import Measurement

    columns = [Column("h")] * count
    console = Console(file=io.StringIO(), width=200, color_system=None)
    probe = terminal._table(columns, [1] * count, None)
    probe.add_row(*(["x"] * count))
    assert Measurement.get(console, console.options, probe).maximum - count == terminal._overhead(columns)
