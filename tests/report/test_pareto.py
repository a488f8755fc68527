"""The Pareto frontier: fewer input tokens and more retention are better."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from ctxbench.report.pareto import pareto_front


def test_the_frontier_is_the_points_nothing_beats_on_both_axes() -> None:
    # (1, .2) cheapest; (2, .5) better; (3, .4) beaten by (2, .5); (4, .9) best retention
    assert pareto_front([1, 2, 3, 4], [0.2, 0.5, 0.4, 0.9]) == [0, 1, 3]


def test_equal_points_are_both_kept_but_a_costlier_equal_value_is_not() -> None:
    assert pareto_front([1, 1, 2], [0.5, 0.5, 0.5]) == [0, 1]


def test_same_cost_lower_value_is_dominated() -> None:
    assert pareto_front([3, 3], [0.9, 0.8]) == [0]


def test_points_with_nan_never_join_the_frontier() -> None:
    assert pareto_front([1, 2, math.nan], [math.nan, 0.5, 1.0]) == [1]


def _dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[0] and a[1] >= b[1] and a != b


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 10)), min_size=1, max_size=40))
def test_frontier_points_are_undominated_and_every_other_point_is_dominated(
    points: list[tuple[int, int]],
) -> None:
    front = pareto_front([float(c) for c, _ in points], [float(v) for _, v in points])
    for i in front:
        assert not any(_dominates(p, points[i]) for p in points)
    for i in set(range(len(points))) - set(front):
        assert any(_dominates(points[j], points[i]) for j in front)
