"""The Pareto frontier of (cost, value) points: the configurations worth choosing from.

A configuration is on the frontier when no other one keeps at least as many facts for at most
as many input tokens and is strictly better on one of the two. Everything off the frontier is
beaten on both axes by something on it, which is what makes the chart a tuning tool.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def pareto_front(costs: Sequence[float], values: Sequence[float]) -> list[int]:
    """Indices (ascending) of the points not dominated: lower cost and higher value are better.

    Equal points are all kept (neither dominates the other); points with a NaN coordinate are
    never on the frontier.
    """
    if len(costs) != len(values):
        raise ValueError(f"costs and values differ in length ({len(costs)} != {len(values)})")
    usable = [i for i in range(len(costs)) if not (math.isnan(costs[i]) or math.isnan(values[i]))]
    order = sorted(usable, key=lambda i: (costs[i], -values[i]))
    front: list[int] = []
    best = -math.inf
    last: tuple[float, float] | None = None
    for i in order:
        point = (costs[i], values[i])
        if values[i] > best:
            front.append(i)
            best = values[i]
            last = point
        elif point == last:
            front.append(i)
    return sorted(front)
