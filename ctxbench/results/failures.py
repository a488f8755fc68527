"""Why a run's calls failed, told from its events in one line.

A run whose calls fail keeps a row (its retention counts what the failed calls asked as lost),
and a row alone does not say why: ``run`` prints this line under its table for every run with
a failed call. The line names how many calls failed, the first one (its true size against the
limit, or the check that refused it), what the strategy's own code reported before it
(``strategy.error``: DB-GPT 0.8.2's Layer 3, ...), whether the strategy compacted after that
first failure, and the strategy's hint for an error it knows (:attr:`Strategy.failure_hints`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ctxbench.engine import events as ev


@dataclass(frozen=True)
class FailureStory:
    """What the events of one run say about its failed calls."""

    calls: int
    failed: int
    first: ev.CallFailed | None
    #: the strategy's own errors (``strategy.error``), in order
    errors: tuple[ev.StrategyError, ...]
    #: the call of the last compaction (None: it never compacted)
    last_compaction: int | None

    def describe(self, trace_id: str, hints: Mapping[str, str] | None = None) -> str:
        """The warning line (empty when no call failed), then a hint line when the strategy
        has one for an error it reported."""
        first = self.first
        if first is None:
            return ""
        if first.kind == ev.OVERFLOW:
            how = f"{first.true_tokens:,} true tokens > limit {first.limit:,}"
        else:
            how = f"refused for its {first.kind}: {first.error or 'no error text'}"
        line = (
            f"{trace_id}: {self.failed} of {self.calls} calls failed, the first at call "
            f"{first.call} ({how}); retention counts what they asked as lost"
        )
        if self.errors:
            calls = ", ".join(str(e.call) for e in self.errors[:5])
            more = ", ..." if len(self.errors) > 5 else ""
            layer = f"{self.errors[0].layer}, " if self.errors[0].layer else ""
            line += (
                f". The strategy's own code failed {len(self.errors)} time(s) ({layer}calls "
                f"{calls}{more}): {self.errors[0].error}"
            )
        if self.last_compaction is None:
            line += ". It never compacted"
        elif self.last_compaction < first.call:
            line += f". Its last compaction was at call {self.last_compaction}"
        said = {e.error for e in self.errors}
        hint = next((h for key, h in (hints or {}).items() if any(key in e for e in said)), "")
        return f"{line}.\n  hint: {hint}" if hint else f"{line}."


def failure_story(calls: int, events: Iterable[ev.Event]) -> FailureStory:
    """The story of a run of ``calls`` model calls from its events (in order)."""
    failed = 0
    first: ev.CallFailed | None = None
    errors: list[ev.StrategyError] = []
    last: int | None = None
    for event in events:
        if isinstance(event, ev.CallFailed):
            failed += 1
            first = first or event
        elif isinstance(event, ev.StrategyError):
            errors.append(event)
        elif isinstance(event, ev.Compaction):
            last = event.call
    return FailureStory(calls, failed, first, tuple(errors), last)


__all__ = ["FailureStory", "failure_story"]
