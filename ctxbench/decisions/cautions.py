"""What to check before deploying a recommendation: a pick at the edge of the swept range, a
pick that keeps few facts, and an excluded config that would win under a slightly looser
failed-call limit. Each is one sentence that names the numbers and the next step."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from ctxbench.decisions.outcomes import Constraints

if TYPE_CHECKING:
    from ctxbench.decisions.recommend import ConfigStanding

#: Below this retention a pick is called out: it loses most of the facts probed.
LOW_RETENTION = 0.5


def cautions(
    pick: ConfigStanding | None,
    configs: Sequence[ConfigStanding],
    constraints: Constraints,
    traces: int,
    inert: Collection[tuple[str, str]] = (),
) -> tuple[str, ...]:
    """The warnings about ``pick`` among ``configs`` (best first) of one group; ``inert``
    (strategy, knob) pairs changed nothing, so their range does not matter."""
    if pick is None:
        return ()
    return (
        *edge_of_range(pick, configs, inert),
        *low_retention(pick),
        *near_miss(pick, configs, constraints, traces),
    )


def edge_of_range(
    pick: ConfigStanding,
    configs: Sequence[ConfigStanding],
    inert: Collection[tuple[str, str]] = (),
) -> list[str]:
    """A numeric knob of the pick at the smallest or largest value its strategy was swept at:
    the best value may lie beyond the range."""
    out = []
    mine = [s.key.param_values for s in configs if s.key.strategy == pick.key.strategy]
    for knob, value in sorted(pick.key.param_values.items()):
        if not _number(value) or (pick.key.strategy, knob) in inert:
            continue
        swept = sorted({p[knob] for p in mine if _number(p.get(knob))})
        if len(swept) < 2 or swept[0] < value < swept[-1]:
            continue
        end = "smallest" if value == swept[0] else "largest"
        out.append(
            f"{knob}={value} is the {end} value swept ({swept[0]} to {swept[-1]}): the best "
            f"may lie beyond it; sweep past it before deploying"
        )
    return out


def low_retention(pick: ConfigStanding) -> list[str]:
    point = pick.retention.point
    if not math.isfinite(point) or point >= LOW_RETENTION:
        return []
    return [
        f"the pick keeps {point:.1%} of the probed facts: every config loses most of them here; "
        "compare a larger window or other strategies before deploying it"
    ]


def near_miss(
    pick: ConfigStanding, configs: Sequence[ConfigStanding], constraints: Constraints, traces: int
) -> list[str]:
    """The best excluded config that beats the pick and was left out only for a few more
    failed calls than allowed (at most ``max(3, traces)`` more)."""
    if not math.isfinite(pick.retention.point):
        return []
    slack = max(3, traces)
    for s in configs:  # best first
        only_failed = (
            not s.feasible
            and (s.errors == 0 or constraints.allow_errors)
            and s.failed_calls > constraints.max_failed_calls
            and s.excluded.endswith("failed call(s)")
        )
        if not only_failed or not s.retention.point > pick.retention.point:
            continue
        if s.failed_calls - constraints.max_failed_calls > slack:
            continue
        return [
            f"{s.name} keeps more ({s.retention.point:.3f} vs {pick.retention.point:.3f}) but "
            f"fails {s.failed_calls} call(s): it would be the pick with --max-failed-calls "
            f"{s.failed_calls}"
        ]
    return []


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
