"""SVG charts built as plain strings: no matplotlib, no fonts or files fetched.

Charts draw geometry from the document's numbers and print only text handed to them
(labels and already formatted values) or produced by the ``fmt`` callable they are given
(tick labels), so number formatting stays in ``formatting``. Every piece of text is
XML-escaped here: a vendor name is data, never markup.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from typing import Callable, Sequence
from xml.sax.saxutils import escape

Fmt = Callable[[float], str]
FONT = "DejaVu Sans, Noto Sans CJK TC, sans-serif"
PALETTE = ("#2f6db5", "#e07b24", "#3a9a5b", "#c8423b", "#8a63b8", "#8c6d4f", "#d16ba5",
           "#7f7f7f", "#b5b82f", "#2bb5c4", "#1f3f66", "#f2b134")
INK, GRID, MUTED = "#222222", "#d9d9d9", "#666666"


@dataclass(frozen=True)
class BarRow:
    label: str
    value: float | None
    value_text: str
    lo: float | None = None          # whisker ends (P10, P90); None draws no whisker
    hi: float | None = None
    highlight: bool = False


# ---------------------------------------------------------------- primitives

def _n(v: float) -> str:
    """A coordinate with one decimal, no trailing zeros: stable text for equal input."""
    text = f"{v:.1f}"
    return text[:-2] if text.endswith(".0") else text


def text_width(s: str, size: float) -> float:
    """Rough advance width: wide (CJK) characters count double."""
    units = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)
    return units * size * 0.58


def _text(x: float, y: float, s: str, *, anchor: str = "start", size: float = 11,
          fill: str = INK, weight: str = "normal") -> str:
    return (f'<text x="{_n(x)}" y="{_n(y)}" font-size="{_n(size)}" text-anchor="{anchor}" '
            f'fill="{fill}" font-weight="{weight}">{escape(s)}</text>')


def _rect(x: float, y: float, w: float, h: float, fill: str, extra: str = "") -> str:
    return f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(max(w, 0))}" height="{_n(max(h, 0))}" fill="{fill}"{extra}/>'


def _line(x1: float, y1: float, x2: float, y2: float, stroke: str = INK, width: float = 1,
          dash: str = "") -> str:
    d = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" stroke="{stroke}" '
            f'stroke-width="{_n(width)}"{d}/>')


def _svg(width: float, height: float, body: list[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {_n(width)} {_n(height)}" '
            f'width="{_n(width)}" height="{_n(height)}" font-family="{FONT}" role="img" '
            f'aria-label="{escape(title, {chr(34): "&quot;"})}"><title>{escape(title)}</title>'
            + "".join(body) + "</svg>")


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (1, 2, 2.5 or 5 times a power of ten apart)."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    start = math.floor(lo / step + 1e-9) * step
    ticks, v = [], start
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 12))
        v += step
    if ticks[-1] < hi:
        ticks.append(round(v, 12))
    return ticks


def _x_axis(ticks: list[float], x0: float, scale: Callable[[float], float], y_top: float,
            y_bottom: float, fmt: Fmt) -> list[str]:
    out = []
    for t in ticks:
        x = scale(t)
        out.append(_line(x, y_top, x, y_bottom, GRID, 0.6))
        out.append(_text(x, y_bottom + 12, fmt(t), anchor="middle", size=9, fill=MUTED))
    out.append(_line(x0, y_bottom, scale(ticks[-1]), y_bottom, MUTED, 0.8))
    return out


def legend(items: Sequence[tuple[str, str]], x: float, y: float, width: float,
           size: float = 9.5) -> tuple[list[str], float]:
    """Colour swatches with labels, wrapped to ``width``; returns (svg parts, height used)."""
    out, cx, cy, row_h = [], x, y, size + 6
    for label, colour in items:
        w = 14 + text_width(label, size) + 12
        if cx + w > x + width and cx > x:
            cx, cy = x, cy + row_h
        out.append(_rect(cx, cy, 10, 10, colour))
        out.append(_text(cx + 14, cy + 9, label, size=size))
        cx += w
    return out, cy - y + row_h


# ---------------------------------------------------------------- charts

def hbars(rows: Sequence[BarRow], fmt: Fmt, *, title: str, width: float = 640,
          reference: tuple[str, float] | None = None, colour: str = PALETTE[0]) -> str:
    """Horizontal bars with optional P10–P90 whiskers and a reference line (a deadline)."""
    row_h, top = 22, 8
    # a highlighted (bold) label is about 15% wider than the estimate for the regular face
    label_w = min(200, max([text_width(r.label, 10) * (1.15 if r.highlight else 1.0) for r in rows] + [40]) + 10)
    value_w = max([text_width(r.value_text, 9.5) for r in rows] + [30]) + 12
    x0, x1 = label_w, width - value_w
    tops = [v for r in rows for v in (r.value, r.hi) if v is not None]
    if reference:
        tops.append(reference[1])
    ticks = nice_ticks(0.0, max(tops) if tops else 1.0)
    scale: Callable[[float], float] = lambda v: x0 + (x1 - x0) * (v / ticks[-1] if ticks[-1] else 0)  # noqa: E731
    y_bottom = top + row_h * len(rows) + 4
    body = _x_axis(ticks, x0, scale, top, y_bottom, fmt)
    for i, row in enumerate(rows):
        y = top + i * row_h
        weight = "bold" if row.highlight else "normal"
        body.append(_text(x0 - 6, y + 15, row.label, anchor="end", size=10, weight=weight))
        if row.value is None:
            body.append(_text(x0 + 4, y + 15, row.value_text, size=9.5, fill=MUTED))
            continue
        body.append(_rect(x0, y + 4, scale(row.value) - x0, row_h - 8, colour,
                          ' stroke="#111" stroke-width="1.2"' if row.highlight else ""))
        body.extend(_whisker(row, scale, y + row_h / 2))
        end = max(scale(row.value), scale(row.hi) if row.hi is not None else 0)
        body.append(_text(end + 5, y + 15, row.value_text, size=9.5))
    if reference:
        xr = scale(reference[1])
        body.append(_line(xr, top - 4, xr, y_bottom, PALETTE[3], 1.2, "4 3"))
        body.append(_text(xr, y_bottom + 24, reference[0], anchor="middle", size=9, fill=PALETTE[3]))
    height = y_bottom + (30 if reference else 18)
    return _svg(width, height, body, title)


def _whisker(row: BarRow, scale: Callable[[float], float], yc: float) -> list[str]:
    if row.lo is None or row.hi is None:
        return []
    a, b = scale(row.lo), scale(row.hi)
    return [_line(a, yc, b, yc, INK, 1), _line(a, yc - 4, a, yc + 4, INK, 1), _line(b, yc - 4, b, yc + 4, INK, 1)]


def stacked_bar(segments: Sequence[tuple[str, float | None]], fmt: Fmt, *, title: str,
                width: float = 640, marker: tuple[str, float] | None = None,
                colours: Sequence[str] = PALETTE) -> str:
    """One horizontal bar of parts (step-time terms, memory, cost lines) with a legend."""
    parts = [(label, value, colours[i % len(colours)]) for i, (label, value) in enumerate(segments)
             if value is not None and value > 0]
    total = sum(v for _, v, _ in parts)
    ticks = nice_ticks(0.0, max(total, marker[1] if marker else 0.0) or 1.0)
    x0, x1, bar_y, bar_h = 10, width - 20, 24, 26
    scale: Callable[[float], float] = lambda v: x0 + (x1 - x0) * v / ticks[-1]  # noqa: E731
    body = _x_axis(ticks, x0, scale, bar_y - 6, bar_y + bar_h + 6, fmt)
    x: float = x0
    for _, value, colour in parts:
        w = scale(value) - x0
        body.append(_rect(x, bar_y, w, bar_h, colour, ' stroke="#ffffff" stroke-width="0.6"'))
        x += w
    if marker:
        xm = scale(marker[1])
        body.append(_line(xm, bar_y - 10, xm, bar_y + bar_h + 6, INK, 1.6, "3 2"))
        body.append(_text(min(xm, x1 - 4), bar_y - 11, marker[0], anchor="end" if xm > x1 - 60 else "middle", size=9))
    items, used = legend([(label, colour) for label, _, colour in parts], x0, bar_y + bar_h + 26, x1 - x0)
    body.extend(items)
    return _svg(width, bar_y + bar_h + 26 + used + 4, body, title)


def tornado(rows: Sequence[tuple[str, float | None, float | None, str, str]], base: float,
            fmt: Fmt, *, title: str, base_label: str, width: float = 640) -> str:
    """For each factor a bar from the base to its low case and one to its high case, each case's
    text beyond its bar's end; two cases on the same side of the base (a delivery slip of 30 and
    60 days, say) share one text at the outer end. The margins are sized to the texts, so no text
    runs into the factor names or off the chart."""
    row_h, top = 24, 18
    label_w = min(240, max([text_width(r[0], 10) for r in rows] + [40]) + 12)
    placed = [_tornado_texts(low, high, lt, ht, base) for _, low, high, lt, ht in rows]
    left_w = max([text_width(t, 9) for left, _ in placed for t in left] + [30]) + 10
    right_w = max([text_width(t, 9) for _, right in placed for t in right] + [30]) + 10
    x0, x1 = label_w + left_w, max(label_w + left_w + 120, width - right_w)
    values = [v for r in rows for v in (r[1], r[2]) if v is not None] + [base]
    span = max(abs(v - base) for v in values) or abs(base) * 0.1 or 1.0
    lo, hi = base - span * 1.05, base + span * 1.05
    scale: Callable[[float], float] = lambda v: x0 + (x1 - x0) * (v - lo) / (hi - lo)  # noqa: E731
    y_bottom = top + row_h * len(rows) + 4
    ticks = [t for t in nice_ticks(lo, hi, 6) if lo <= t <= hi]
    body = []
    for t in ticks:
        body.append(_line(scale(t), top, scale(t), y_bottom, GRID, 0.6))
        body.append(_text(scale(t), y_bottom + 12, fmt(t), anchor="middle", size=9, fill=MUTED))
    xb = scale(base)
    for i, ((label, low, high, _lt, _ht), (left, right)) in enumerate(zip(rows, placed)):
        y = top + i * row_h
        body.append(_text(label_w, y + 16, label, anchor="end", size=10))
        for value, colour in sorted(((v, c) for v, c in ((low, PALETTE[2]), (high, PALETTE[3])) if v is not None),
                                    key=lambda vc: -abs(vc[0] - base)):     # the longer bar first
            a, b = sorted((xb, scale(value)))
            body.append(_rect(a, y + 5, b - a, 14, colour))
        ends = [scale(v) for v in (low, high) if v is not None] + [xb]
        if left:
            body.append(_text(min(ends) - 4, y + 16, " · ".join(left), anchor="end", size=9))
        if right:
            body.append(_text(max(ends) + 4, y + 16, " · ".join(right), size=9))
    body.append(_line(xb, top - 6, xb, y_bottom, INK, 1.2))
    body.append(_text(xb, top - 8, base_label, anchor="middle", size=9))
    return _svg(width, y_bottom + 20, body, title)


def _tornado_texts(low: float | None, high: float | None, low_text: str, high_text: str,
                   base: float) -> tuple[list[str], list[str]]:
    """The texts left and right of the base: each case on its own side; two on one side joined."""
    left: list[str] = []
    right: list[str] = []
    for value, text in ((low, low_text), (high, high_text)):
        if value is not None and text:
            (right if value >= base else left).append(text)
    return left, right


def line_chart(points: Sequence[tuple[float, float]], x_fmt: Fmt, y_fmt: Fmt, *, title: str,
               x_label: str, y_label: str, width: float = 640, height: float = 200,
               y_floor: float | None = None) -> str:
    """A line over a log2 x axis (GPU counts double) with labelled points."""
    pts = sorted(p for p in points if p[0] and p[0] > 0 and p[1] is not None)
    x0, x1, y0, y1 = 58, width - 20, height - 34, 14
    if not pts:
        return _svg(width, height, [_text(width / 2, height / 2, "—", anchor="middle")], title)
    lx = [math.log2(p[0]) for p in pts]
    span_x = (max(lx) - min(lx)) or 1.0
    ys = [p[1] for p in pts]
    top = max(max(ys), y_floor) if y_floor is not None else max(ys) * 1.05
    ticks = nice_ticks(min(0.0, min(ys)), top if top > 0 else 1.0, 4)
    sx: Callable[[float], float] = lambda v: x0 + (x1 - x0) * (math.log2(v) - min(lx)) / span_x  # noqa: E731
    sy: Callable[[float], float] = lambda v: y0 - (y0 - y1) * (v - ticks[0]) / (ticks[-1] - ticks[0])  # noqa: E731
    body = []
    for t in ticks:
        body.append(_line(x0, sy(t), x1, sy(t), GRID, 0.6))
        body.append(_text(x0 - 6, sy(t) + 3, y_fmt(t), anchor="end", size=9, fill=MUTED))
    path = " ".join(f"{_n(sx(x))},{_n(sy(y))}" for x, y in pts)
    body.append(f'<polyline points="{path}" fill="none" stroke="{PALETTE[0]}" stroke-width="2"/>')
    for x, y in pts:
        body.append(f'<circle cx="{_n(sx(x))}" cy="{_n(sy(y))}" r="3" fill="{PALETTE[0]}"/>')
        body.append(_text(sx(x), y0 + 13, x_fmt(x), anchor="middle", size=9, fill=MUTED))
    body.append(_text((x0 + x1) / 2, height - 4, x_label, anchor="middle", size=9.5))
    body.append(f'<text x="12" y="{_n((y0 + y1) / 2)}" font-size="9.5" text-anchor="middle" fill="{INK}" '
                f'transform="rotate(-90 12 {_n((y0 + y1) / 2)})">{escape(y_label)}</text>')
    return _svg(width, height, body, title)


TAIL_SHARE = 0.01      # at most this share of the steps may sit in a tail drawn past an axis break
TAIL_GAP_BINS = 3      # ... and only when at least this many empty bins separate it from the bulk


def tail_split(counts: Sequence[int]) -> tuple[int, int] | None:
    """Where a histogram's bulk ends when a few outliers sit far to its right: (the edge index where
    the bulk ends, one empty bin after its last bar; the index of the tail's first bin), or None.
    One 6.4 s step among 300 near 3.4 s would otherwise squash the bulk into three bars at the left."""
    total = sum(counts)
    if total <= 0:
        return None
    last_bulk, cum = 0, 0
    for i, c in enumerate(counts):
        cum += c
        if cum >= total * (1 - TAIL_SHARE):
            last_bulk = i
            break
    nxt = next((j for j in range(last_bulk + 1, len(counts)) if counts[j]), None)
    if nxt is None or nxt - last_bulk - 1 < TAIL_GAP_BINS:
        return None
    return last_bulk + 2, nxt


def _piecewise(edges: Sequence[float], split: tuple[int, int] | None, x0: float,
               x1: float) -> Callable[[float], float]:
    """x of a value: linear over the whole range, or with the empty stretch before the tail squeezed
    into a narrow break (bulk on 84% of the width, tail on 10%)."""
    lo, hi = edges[0], edges[-1]
    if split is None:
        return lambda v: x0 + (x1 - x0) * (v - lo) / ((hi - lo) or 1.0)
    bulk_hi, tail_lo = edges[split[0]], edges[split[1]]
    xa, xb = x0 + (x1 - x0) * 0.84, x0 + (x1 - x0) * 0.90

    def sx(v: float) -> float:
        if v <= bulk_hi:
            return x0 + (xa - x0) * (v - lo) / ((bulk_hi - lo) or 1.0)
        if v >= tail_lo:
            return xb + (x1 - xb) * (v - tail_lo) / ((hi - tail_lo) or 1.0)
        return xa + (xb - xa) * (v - bulk_hi) / ((tail_lo - bulk_hi) or 1.0)

    return sx


def histogram(edges: Sequence[float], counts: Sequence[int], x_fmt: Fmt, *, title: str,
              markers: Sequence[tuple[str, float | None]] = (), cdf_label: str = "CDF",
              count_label: str = "", width: float = 640, height: float = 210) -> str:
    """Counts per bin as bars, the cumulative share as a line (right axis), markers (P50, P99).

    The x axis is labelled at both ends (the fastest and the slowest step); a far tail of a few
    outliers is drawn after an axis break, so the bulk keeps the width it needs."""
    x0, x1, y0, y1 = 46, width - 46, height - 30, 22
    lo, hi = edges[0], edges[-1]
    peak = max(counts) if counts else 1
    total = sum(counts) or 1
    split = tail_split(counts)
    sx = _piecewise(edges, split, x0, x1)
    ticks_y = nice_ticks(0, peak, 4)

    def sy(count: float) -> float:
        return y0 - (y0 - y1) * count / ticks_y[-1]

    body = []
    for t in ticks_y:
        body.append(_line(x0, sy(t), x1, sy(t), GRID, 0.6))
        body.append(_text(x0 - 5, sy(t) + 3, f"{t:g}", anchor="end", size=9, fill=MUTED))
    for a, b, c in zip(edges, edges[1:], counts):
        if c:
            body.append(_rect(sx(a) + 0.5, sy(c), max(sx(b) - sx(a) - 1, 1.0), y0 - sy(c), "#9dbbe0"))
    cum, pts = 0, [f"{_n(sx(lo))},{_n(y0)}"]
    for b, c in zip(edges[1:], counts):
        cum += c
        pts.append(f"{_n(sx(b))},{_n(y0 - (y0 - y1) * cum / total)}")
    body.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{PALETTE[1]}" stroke-width="1.8"/>')
    for share in (0, 0.5, 1.0):
        body.append(_text(x1 + 5, y0 - (y0 - y1) * share + 3, f"{share * 100:.0f}%", size=9, fill=PALETTE[1]))
    body.extend(_histogram_x_labels(edges, split, sx, y0, x_fmt))
    for i, (label, value) in enumerate(markers):
        if value is not None and lo <= value <= hi:
            body.append(_line(sx(value), y1 - 8, sx(value), y0, PALETTE[3], 1.2, "4 2"))
            body.append(_text(sx(value) + 3, y1 - 10 + 10 * (i % 2), label, size=9, fill=PALETTE[3]))
    body.append(_text(x1 + 5, y1 - 10, cdf_label, size=9, fill=PALETTE[1]))
    if count_label:
        body.append(_text(x0 - 5, y1 - 10, count_label, anchor="end", size=9, fill=MUTED))
    return _svg(width, height, body, title)


def _histogram_x_labels(edges: Sequence[float], split: tuple[int, int] | None, sx: Callable[[float], float],
                        y0: float, x_fmt: Fmt) -> list[str]:
    """Both ends labelled; round ticks in between where they do not crowd an end label; an axis
    break (two slashes) before a far tail, whose first edge is labelled too."""
    lo, hi = edges[0], edges[-1]
    ends = [lo, hi] + ([edges[split[1]]] if split is not None and edges[split[1]] < hi else [])
    out = [_text(sx(v), y0 + 12, x_fmt(v), anchor="middle", size=9, fill=MUTED) for v in ends]
    bulk_hi = edges[split[0]] if split is not None else hi
    for t in nice_ticks(lo, bulk_hi, 6):
        if lo <= t <= bulk_hi and all(abs(sx(t) - sx(e)) > 48 for e in ends):
            out.append(_text(sx(t), y0 + 12, x_fmt(t), anchor="middle", size=9, fill=MUTED))
    if split is not None:
        xm = (sx(edges[split[0]]) + sx(edges[split[1]])) / 2
        for dx in (-3.0, 3.0):
            out.append(_line(xm + dx - 3, y0 + 4, xm + dx + 3, y0 - 4, INK, 1))
    return out
