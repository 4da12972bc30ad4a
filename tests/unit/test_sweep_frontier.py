"""The Pareto frontier: a point dominated on both axes is never on it; every other point is."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from procure.sweep.frontier import pareto_front


def dominated(i: int, points) -> bool:
    x, y = points[i]
    return any(px <= x and py <= y and (px < x or py < y) for j, (px, py) in enumerate(points) if j != i)


coords = st.lists(st.tuples(st.integers(1, 12).map(float),
                            st.integers(1, 12).map(lambda c: Decimal(c) / 4)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(coords)
def test_a_dominated_point_is_never_on_the_frontier_and_every_other_point_is(points):
    front = pareto_front(points)
    for i in range(len(points)):
        assert front[i] == (not dominated(i, points)), (points, i)


@settings(max_examples=100, deadline=None)
@given(coords)
def test_the_frontier_does_not_depend_on_the_order_of_the_points(points):
    reversed_front = pareto_front(points[::-1])[::-1]
    assert pareto_front(points) == reversed_front


def test_cases():
    assert pareto_front([]) == []
    assert pareto_front([(1.0, 5), (2.0, 3), (3.0, 4), (2.0, 3)]) == [True, True, False, True]
    # same time, higher cost: dominated; same cost, slower: dominated
    assert pareto_front([(1.0, 2), (1.0, 3), (2.0, 2)]) == [True, False, False]
