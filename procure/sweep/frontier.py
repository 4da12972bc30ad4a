"""The Pareto frontier of time to train against cost.

A point is on the frontier when no other point is at least as fast and at least as cheap and
strictly better on one of the two. Equal points are all on it (neither dominates the other).
Within one workload the training tokens are fixed, so cost per million tokens orders points as
total cost does: one frontier serves both.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Union

Number = Union[float, int, Decimal]


def pareto_front(points: Sequence[tuple[Number, Number]]) -> list[bool]:
    """For each (time, cost) pair, whether it is on the frontier (both axes minimised).

    Sorted by time, a point is on the frontier when its cost is the lowest among the points of
    its time and strictly below every cost at an earlier time."""
    on = [False] * len(points)
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    best_before: Number | None = None
    start = 0
    while start < len(order):
        end = start
        while end < len(order) and points[order[end]][0] == points[order[start]][0]:
            end += 1
        group_min = points[order[start]][1]          # sorted by cost within the same time
        if best_before is None or group_min < best_before:
            for k in range(start, end):
                if points[order[k]][1] == group_min:
                    on[order[k]] = True
            best_before = group_min
        start = end
    return on
