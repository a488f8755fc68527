"""A change against what it replaced: paired intervals over the matched cells of a gate, and
what makes a baseline a poor reference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ctxbench.bootstrap import Bootstrap


class Measured(Protocol):
    """What these read of a gate cell's metrics: :class:`ctxbench.gate.baseline.BaselineCell`
    (the gate sits above this package, so it is named by what it has)."""

    @property
    def retention(self) -> float | None: ...
    @property
    def input_tokens_total(self) -> float | None: ...
    @property
    def failed_calls(self) -> float | None: ...
    @property
    def calls(self) -> float | None: ...
    @property
    def error(self) -> str | None: ...


def baseline_warnings(cells: Sequence[Measured]) -> list[str]:
    """What makes a baseline a poor reference: cells whose runs failed calls or raised."""
    out = []
    failed = [c for c in cells if (c.failed_calls or 0) > 0]
    if failed:
        total = sum(int(c.failed_calls or 0) for c in failed)
        calls = sum(int(c.calls or 0) for c in failed)
        of = f" of {calls} calls" if calls else ""
        out.append(
            f"the baseline has {total} failed calls{of} in {len(failed)} of {len(cells)} cells: "
            "those runs crashed in a real agent (their probes from the first failed call on "
            "count as lost)"
        )
    errors = [c for c in cells if c.error]
    if errors:
        out.append(
            f"the baseline has {len(errors)} cell(s) whose replay raised, e.g. {errors[0].error}"
        )
    return out


def paired_intervals(pairs: Sequence[tuple[Measured, Measured]]) -> list[str]:
    """The aggregate changes with their paired bootstrap intervals over the matched cells:
    whether a change would show on other traces too, or is within the spread of these."""
    out = []
    rets = [
        (float(c.retention), float(b.retention))
        for b, c in pairs
        if b.retention is not None and c.retention is not None
    ]
    if len(rets) > 1:
        boot = Bootstrap([0] * len(rets))
        point, reps = boot.mean(rets)
        diff = boot.difference(point, reps, 0, 1)
        out.append(
            f"mean retention change {diff.text(4, signed=True)} over {len(rets)} cells "
            f"({diff.level:.0%} paired interval; {_verdict(diff.low, diff.high)})"
        )
    costs = [
        (float(c.input_tokens_total), float(b.input_tokens_total))
        for b, c in pairs
        if b.input_tokens_total is not None and c.input_tokens_total is not None
    ]
    if len(costs) > 1 and sum(b for _, b in costs) > 0:
        boot = Bootstrap([0] * len(costs))
        point, reps = boot.mean(costs)
        ratio = reps[:, 0] / reps[:, 1] - 1
        rise = boot.interval(float(point[0] / point[1] - 1), ratio)
        failed = [(int(b.failed_calls or 0), int(c.failed_calls or 0)) for b, c in pairs]
        before, after = sum(b for b, _ in failed), sum(c for _, c in failed)
        beside = f"; failed calls {before} -> {after}" if before != after else ""
        out.append(
            f"total input tokens change {rise.point:+.2%} [{rise.low:+.2%}, {rise.high:+.2%}] "
            f"over {len(costs)} cells ({_verdict(rise.low, rise.high)}){beside}"
        )
    return out


def _verdict(low: float, high: float) -> str:
    if low > 0 or high < 0:
        return "excludes 0: expect it on other traces too"
    return "includes 0: within the spread of these traces"
