"""The frontier chart: every costed point of a workload on log-log axes of time to train and
cost per million tokens, the frontier as a staircase with its P10–P90 bands as whiskers.

Built from the primitives of ``procure.report.charts`` (plain SVG strings, every text escaped).
Points are coloured by accelerator; frontier points are numbered like the rows of the
frontier table next to the chart. The cost axis stops at ``FOCUS`` times the dearest frontier
point: far dearer points would squeeze the frontier into the bottom of the chart; how many are
left out is said under it (the workbook lists them all).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from procure.report.charts import GRID, INK, MUTED, PALETTE, Fmt, _line, _n, _svg, _text, legend

Scale = Callable[[float], float]
FOCUS = 5.0


@dataclass(frozen=True)
class ChartPoint:
    days: float
    cost: float                       # per million tokens
    group: int                        # colour index (accelerator)
    frontier_label: str | None = None  # "1", "2", ... on the frontier
    days_band: tuple[float, float] | None = None
    cost_band: tuple[float, float] | None = None


def log_ticks(lo: float, hi: float) -> list[float]:
    """1-2-5 ticks covering [lo, hi] on a log axis (lo, hi > 0)."""
    first = math.floor(math.log10(lo))
    ticks = [m * 10.0 ** e for e in range(first, math.ceil(math.log10(hi)) + 1) for m in (1, 2, 5)]
    inside = [float(f"{t:.6g}") for t in ticks if lo <= t <= hi]
    if len(inside) < 2:   # a range narrower than 1-2-5 steps: its two ends, to two digits
        return [float(f"{lo:.2g}"), float(f"{hi:.2g}")]
    return inside


def _bounds(values: Sequence[float]) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    if hi <= lo:
        hi = lo * 1.5
    pad = (math.log10(hi) - math.log10(lo)) * 0.04 or 0.05
    return 10 ** (math.log10(lo) - pad), 10 ** (math.log10(hi) + pad)


def _focus(points: list[ChartPoint]) -> tuple[list[ChartPoint], float | None]:
    """The points under FOCUS x the dearest frontier point (its band included), and that cap."""
    tops = [max(p.cost, p.cost_band[1] if p.cost_band else 0.0) for p in points if p.frontier_label]
    if not tops:
        return points, None
    cap = FOCUS * max(tops)
    kept = [p for p in points if p.cost <= cap]
    return kept, (cap if len(kept) < len(points) else None)


def frontier_chart(points: Sequence[ChartPoint], groups: Sequence[str], x_fmt: Fmt, y_fmt: Fmt, *,
                   title: str, x_label: str, y_label: str, frontier_label: str,
                   deadline: tuple[str, float] | None = None, width: float = 640,
                   height: float = 330, left_out: Callable[[int, float], str] | None = None) -> str:
    """``left_out(count, cap)`` phrases the note on the points above the cost axis."""
    every = [p for p in points if p.days > 0 and p.cost > 0]
    usable, cap = _focus(every)
    if not usable:
        return _svg(width, 60, [_text(width / 2, 30, "—", anchor="middle")], title)
    xs = [p.days for p in usable] + [v for p in usable if p.days_band for v in p.days_band]
    ys = [p.cost for p in usable] + [v for p in usable if p.cost_band for v in p.cost_band]
    if deadline:
        xs.append(deadline[1])
    (xlo, xhi), (ylo, yhi) = _bounds([x for x in xs if x > 0]), _bounds([y for y in ys if y > 0])
    x0, x1, y0, y1 = 62.0, width - 14, height - 74, 12.0

    def sx(v: float) -> float:
        return x0 + (x1 - x0) * (math.log10(v) - math.log10(xlo)) / (math.log10(xhi) - math.log10(xlo))

    def sy(v: float) -> float:
        return y0 - (y0 - y1) * (math.log10(v) - math.log10(ylo)) / (math.log10(yhi) - math.log10(ylo))

    body = _axes(log_ticks(xlo, xhi), log_ticks(ylo, yhi), sx, sy, (x0, x1, y0, y1), x_fmt, y_fmt)
    body += _labels(x_label, y_label, (x0, x1, y0, y1), height)
    for p in usable:
        if p.frontier_label is None:
            body.append(f'<circle cx="{_n(sx(p.days))}" cy="{_n(sy(p.cost))}" r="1.8" '
                        f'fill="{PALETTE[p.group % len(PALETTE)]}" fill-opacity="0.35"/>')
    front = sorted((p for p in usable if p.frontier_label is not None), key=lambda p: (p.days, p.cost))
    body += _staircase(front, sx, sy)
    for p in front:
        body += _frontier_point(p, sx, sy)
    if deadline:
        xd = sx(deadline[1])
        body.append(_line(xd, y1, xd, y0, PALETTE[3], 1.2, "4 3"))
        body.append(_text(xd + 3, y1 + 9, deadline[0], size=8.5, fill=PALETTE[3]))
    items = [(g, PALETTE[i % len(PALETTE)]) for i, g in enumerate(groups)] + [(frontier_label, INK)]
    legend_svg, used = legend(items, x0, height - 36, x1 - x0, size=8.5)
    body += legend_svg
    if cap is not None and left_out is not None:
        body.append(_text(x0, height - 36 + used + 10, left_out(len(every) - len(usable), cap), size=8.5,
                          fill=MUTED))
        used += 14
    return _svg(width, height - 36 + used + 2, body, title)


def _axes(xt: list[float], yt: list[float], sx: Scale, sy: Scale, box: tuple[float, float, float, float],
          x_fmt: Fmt, y_fmt: Fmt) -> list[str]:
    x0, x1, y0, y1 = box
    out: list[str] = []
    for t in xt:
        out.append(_line(sx(t), y1, sx(t), y0, GRID, 0.6))
        out.append(_text(sx(t), y0 + 12, x_fmt(t), anchor="middle", size=8.5, fill=MUTED))
    for t in yt:
        out.append(_line(x0, sy(t), x1, sy(t), GRID, 0.6))
        out.append(_text(x0 - 5, sy(t) + 3, y_fmt(t), anchor="end", size=8.5, fill=MUTED))
    out.append(_line(x0, y0, x1, y0, MUTED, 0.8))
    out.append(_line(x0, y0, x0, y1, MUTED, 0.8))
    return out


def _labels(x_label: str, y_label: str, box: tuple[float, float, float, float], height: float) -> list[str]:
    x0, x1, y0, y1 = box
    mid = (y0 + y1) / 2
    return [_text((x0 + x1) / 2, y0 + 26, x_label, anchor="middle", size=9.5),
            f'<text x="12" y="{_n(mid)}" font-size="9.5" text-anchor="middle" fill="{INK}" '
            f'transform="rotate(-90 12 {_n(mid)})">{escape(y_label)}</text>']


def _staircase(front: list[ChartPoint], sx: Scale, sy: Scale) -> list[str]:
    """The frontier as steps: cost holds until the next (faster-to-cheaper) point."""
    if len(front) < 2:
        return []
    coords = [(sx(front[0].days), sy(front[0].cost))]
    for prev, cur in zip(front, front[1:]):
        coords.append((sx(cur.days), sy(prev.cost)))
        coords.append((sx(cur.days), sy(cur.cost)))
    path = " ".join(f"{_n(x)},{_n(y)}" for x, y in coords)
    return [f'<polyline points="{path}" fill="none" stroke="{INK}" stroke-width="1.2"/>']


def _frontier_point(p: ChartPoint, sx: Scale, sy: Scale) -> list[str]:
    cx, cy = sx(p.days), sy(p.cost)
    out: list[str] = []
    if p.days_band:
        a, b = sx(p.days_band[0]), sx(p.days_band[1])
        out += [_line(a, cy, b, cy, INK, 0.8), _line(a, cy - 3, a, cy + 3, INK, 0.8),
                _line(b, cy - 3, b, cy + 3, INK, 0.8)]
    if p.cost_band:
        a, b = sy(p.cost_band[0]), sy(p.cost_band[1])
        out += [_line(cx, a, cx, b, INK, 0.8), _line(cx - 3, a, cx + 3, a, INK, 0.8),
                _line(cx - 3, b, cx + 3, b, INK, 0.8)]
    colour = PALETTE[p.group % len(PALETTE)]
    out.append(f'<circle cx="{_n(cx)}" cy="{_n(cy)}" r="4" fill="{colour}" stroke="{INK}" stroke-width="1"/>')
    out.append(_text(cx + 5, cy - 5, p.frontier_label or "", size=8.5, weight="bold"))
    return out
