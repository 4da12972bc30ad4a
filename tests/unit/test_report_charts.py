"""SVG charts: well-formed, escaped, deterministic."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st

from procure.report import charts

HOSTILE = '<img src="file:///etc/hostname">&"\''
SVG_NS = "{http://www.w3.org/2000/svg}"


def _parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == SVG_NS + "svg"
    return root


def _texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(SVG_NS + "text")]


def _all_charts(label: str) -> list[str]:
    fmt = lambda v: f"{v:g}"  # noqa: E731
    return [
        charts.hbars([charts.BarRow(label, 5.0, "5.0", 4.0, 6.0, True), charts.BarRow("b", None, "n/a")], fmt,
                     title=label, reference=(label, 7.0)),
        charts.stacked_bar([(label, 1.0), ("b", 2.0), ("zero", 0.0)], fmt, title=label, marker=(label, 3.5)),
        charts.tornado([(label, 0.8, 1.2, "0.8", "1.2"), ("only high", None, 1.1, "", "1.1")], 1.0, fmt,
                       title=label, base_label=label),
        charts.line_chart([(512, 100.0), (1024, 97.0), (4096, 92.0)], fmt, fmt, title=label, x_label=label,
                          y_label=label),
        charts.histogram([5.5, 5.6, 5.7, 5.8], [3, 10, 2], fmt, title=label, markers=[(label, 5.65), ("P99", 5.78)]),
    ]


def test_every_chart_is_well_formed_svg_and_shows_hostile_text_as_text():
    for svg in _all_charts(HOSTILE):
        root = _parse(svg)
        assert "<img" not in svg
        assert HOSTILE in _texts(root) or HOSTILE == root.find(SVG_NS + "title").text
        assert not list(root.iter("img")) and not list(root.iter(SVG_NS + "image"))


def test_charts_are_deterministic():
    assert _all_charts("x") == _all_charts("x")


def test_bars_are_proportional_to_values():
    svg = charts.hbars([charts.BarRow("a", 2.0, "2"), charts.BarRow("b", 4.0, "4")], str, title="t")
    widths = [float(r.get("width")) for r in _parse(svg).iter(SVG_NS + "rect")]
    assert len(widths) == 2 and abs(widths[1] / widths[0] - 2.0) < 0.02


def test_stacked_bar_draws_one_segment_per_positive_part():
    svg = charts.stacked_bar([("a", 1.0), ("b", 0.0), ("c", 3.0), ("d", None)], str, title="t")
    segments = [r for r in _parse(svg).iter(SVG_NS + "rect") if r.get("height") == "26"]
    assert len(segments) == 2
    assert abs(float(segments[1].get("width")) / float(segments[0].get("width")) - 3.0) < 0.02


def test_histogram_cdf_ends_at_the_top():
    svg = charts.histogram([0, 1, 2], [1, 3], str, title="t")
    line = next(_parse(svg).iter(SVG_NS + "polyline"))
    last_y = float(line.get("points").split()[-1].split(",")[1])
    assert last_y == 22.0


@given(st.floats(-1e6, 1e6, allow_nan=False), st.floats(0.001, 1e6, allow_nan=False))
def test_nice_ticks_cover_the_range_with_even_steps(lo, span):
    ticks = charts.nice_ticks(lo, lo + span)
    tol = 1e-6 * (ticks[1] - ticks[0])
    assert ticks[0] <= lo + tol and ticks[-1] >= lo + span - tol
    steps = {round(b - a, 6) for a, b in zip(ticks, ticks[1:])}
    assert len(ticks) >= 2 and max(steps) - min(steps) <= 1e-6 * max(1.0, max(steps))


def test_tornado_texts_stay_clear_of_the_factor_names_and_of_each_other():
    """Two cases on one side of the base share one text; no case text runs into the factor names
    (the sensitivity page's delivery slips and long left texts overlapped before)."""
    import re

    rows = [("Price on a very long bid name", 0.55, 1.09, "−20%: $0.5389", "+20%: $1.0940"),
            ("Delivery slip on aws-p5", 0.8699, 0.8593, "+30 days: $0.8699", "+60 days: $0.8593"),
            ("Delivery slip on lambda-b200", 0.8858, 0.8909, "+30 days: $0.8858", "+60 days: $0.8909")]
    svg = charts.tornado(rows, 0.8806, lambda v: f"{v:.2f}", title="t", base_label="base")
    texts = [(float(x), anchor, s) for x, anchor, s in
             re.findall(r'<text x="([\d.]+)" y="[\d.]+" font-size="9" text-anchor="(\w+)"[^>]*>([^<]*)</text>', svg)]
    label_end = max(float(x) for x, s in re.findall(r'<text x="([\d.]+)" y="[\d.]+" font-size="10"[^>]*>([^<]*)<', svg))
    values = [t for t in texts if ":" in t[2]]
    assert any("+30 days: $0.8699 · +60 days: $0.8593" in s or "+60 days: $0.8593 · +30 days: $0.8699" in s
               or ("+30 days" in s and "+60 days" in s) for _, _, s in values)
    for x, anchor, s in values:
        if anchor == "end":
            assert x - charts.text_width(s, 9) >= label_end, s
    width = float(re.search(r'viewBox="0 0 ([\d.]+)', svg).group(1))
    assert all(x + charts.text_width(s, 9) <= width for x, anchor, s in values if anchor == "start")
