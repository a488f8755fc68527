"""Recorded compactions as ground truth: where a replay compacted against where the real agent did.

A trace imported from a session that recorded its own compactions (Claude Code
``compact_boundary``, Codex ``compacted``) holds them as :class:`~ctxbench.trace.RecordedCompaction`.
:func:`compare_recorded` pairs each with the replay's compaction nearest in call index and
reads the count the replayed strategy decided with at both calls: a strategy that decides with
something other than its estimator (``claude_code``'s usage-anchored count) emits a
:data:`DECISION` event per call; for the others the ``context.status`` estimate is used.

Pure: events and a trace in, a :class:`RecordedParity` out, rendered as text or JSON. The
``ctxbench recorded`` command and the ``recorded`` side of ``ctxbench parity`` call it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxbench.engine import events as ev
from ctxbench.engine.events import UNCOMPACTED_NOTE
from ctxbench.strategies import RECORDED_DEFAULT
from ctxbench.trace import RecordedCompaction, Trace

#: Layers that are not a compaction of the history (clearing old tool results in place).
NOT_HISTORY = ("microcompact",)


@dataclass(frozen=True)
class RecordedRow:
    """One recorded compaction and the replay's nearest compaction."""

    recorded: RecordedCompaction
    #: the replay's count at the recorded call (None: the replay made no call there)
    tokens_at_recorded: int | None
    #: the call of the replay's nearest compaction, and its count there
    call: int | None
    tokens: int | None

    @property
    def same_call(self) -> bool:
        return self.call is not None and self.call == self.recorded.call

    @property
    def call_delta(self) -> int | None:
        return None if self.call is None else self.call - self.recorded.call

    @property
    def token_delta(self) -> int | None:
        pre = self.recorded.pre_tokens
        return None if self.tokens is None or pre is None else self.tokens - pre

    def to_dict(self) -> dict[str, Any]:
        return {
            "recorded_call": self.recorded.call,
            "trigger": self.recorded.trigger,
            "pre_tokens": self.recorded.pre_tokens,
            "tokens_at_recorded_call": self.tokens_at_recorded,
            "replay_call": self.call,
            "replay_tokens": self.tokens,
            "call_delta": self.call_delta,
            "token_delta": self.token_delta,
            "same_call": self.same_call,
            "source": self.recorded.source,
        }


@dataclass(frozen=True)
class RecordedParity:
    """A replay's compactions against one trace's recorded compactions."""

    trace_id: str
    strategy: str
    rows: tuple[RecordedRow, ...]
    #: the replay's compactions no recorded one was paired with: (call, count)
    extra: tuple[tuple[int, int | None], ...] = ()
    note: str = UNCOMPACTED_NOTE

    @property
    def auto_matched(self) -> bool:
        """Every automatic recorded compaction was reproduced at its call."""
        return all(r.same_call for r in self.rows if r.recorded.trigger == "auto")

    def to_dict(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "strategy": self.strategy,
            "auto_matched": self.auto_matched,
            "rows": [r.to_dict() for r in self.rows],
            "extra_compactions": [{"call": c, "tokens": t} for c, t in self.extra],
            "note": self.note,
        }

    def to_text(self) -> str:
        head = f"{self.trace_id}  {self.strategy} vs recorded"
        lines = [head, f"  note: {self.note}"]
        if not self.rows:
            lines.append("  the trace records no compaction")
        for row in self.rows:
            rec = row.recorded
            pre = _num(rec.pre_tokens)
            at = _num(row.tokens_at_recorded)
            if row.call is None:
                ours = "no compaction"
            else:
                verdict = "same call" if row.same_call else f"{row.call_delta:+d} calls"
                ours = f"compacts at call {row.call} with {_num(row.tokens)} ({verdict}"
                ours += "" if row.token_delta is None else f", {row.token_delta:+,d} tokens"
                ours += ")"
            lines.append(
                f"  recorded {rec.trigger} at call {rec.call}, preTokens {pre};"
                f" replay count there {at}; {ours}"
            )
        for call, tokens in self.extra:
            lines.append(f"  replay also compacts at call {call} with {_num(tokens)}")
        return "\n".join(lines)


def _num(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def decided_counts(events: Iterable[ev.Event]) -> dict[int, int]:
    """The count the strategy decided with at each call: its first DECISION event, else the
    first ``context.status`` of the call."""
    decisions: dict[int, int] = {}
    status: dict[int, int] = {}
    for event in events:
        if isinstance(event, ev.StrategyDecision):
            decisions.setdefault(event.call, event.tokens)
        elif isinstance(event, ev.ContextStatus):
            status.setdefault(event.call, event.used)
    return {**status, **decisions}


def compaction_calls(events: Iterable[ev.Event]) -> list[int]:
    """Calls at which the replay compacted its history (once per call, in order)."""
    calls: list[int] = []
    for event in events:
        if not isinstance(event, ev.Compaction) or event.layer in NOT_HISTORY:
            continue
        if not event.dropped and not event.added:
            continue  # a result shrunk in place, not a compaction of the history
        if not calls or calls[-1] != event.call:
            calls.append(event.call)
    return calls


def compare_recorded(
    trace: Trace, events: Sequence[ev.Event], *, strategy: str = ""
) -> RecordedParity:
    """Pair each recorded compaction with the replay's nearest compaction (each used once;
    ties go to the earlier call) and read the counts at both calls."""
    counts = decided_counts(events)
    ours = compaction_calls(events)
    free = list(ours)
    rows: list[RecordedRow] = []
    for rec in trace.recorded_compactions:
        call = min(free, key=lambda c: (abs(c - rec.call), c)) if free else None
        if call is not None:
            free.remove(call)
        rows.append(
            RecordedRow(rec, counts.get(rec.call), call, None if call is None else counts.get(call))
        )
    extra = tuple((c, counts.get(c)) for c in free)
    return RecordedParity(trace.id, strategy, tuple(rows), extra)


def recorded_summary(trace: Trace) -> list[dict[str, Any]]:
    """The recorded compactions as the run output and the report show them (no summary text)."""
    return [
        {"call": c.call, "trigger": c.trigger, "pre_tokens": c.pre_tokens, "source": c.source}
        for c in trace.recorded_compactions
    ]


def render(parities: Sequence[RecordedParity], *, as_json: bool = False) -> str:
    """Several parities as text blocks or one JSON list."""
    if as_json:
        import json

        return json.dumps([p.to_dict() for p in parities], indent=2)
    return "\n\n".join(p.to_text() for p in parities)


#: Claude Code's defaults for its sessions: a 200K window and 32,000 output tokens
#: (CLAUDE_CODE_MAX_OUTPUT_TOKENS; v2.0.30 ``/context`` shows 45.0k = 32,000 + 13,000 reserved).
CLAUDE_CODE_WINDOW = 200_000
CLAUDE_CODE_MAX_OUTPUT = 32_000


def strategy_params(trace: Trace, strategy: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` plus the values the strategy takes from the trace where they are unset
    (for ``claude_code`` on a Claude Code session: its CLI version and Claude Code's output
    limit; :mod:`ctxbench.trace_defaults`, the same rule as ``run`` and sweeps)."""
    from ctxbench.trace_defaults import trace_params

    return trace_params(trace.meta, strategy, params)[0]


def replay_recorded(
    trace: Trace,
    strategy: str = RECORDED_DEFAULT,
    params: Mapping[str, Any] | None = None,
    *,
    window: int = CLAUDE_CODE_WINDOW,
    reserved: int = CLAUDE_CODE_MAX_OUTPUT,
    counter: str = "tiktoken:o200k_base",
    summarizer: str = "extractive",
) -> RecordedParity:
    """Replay ``trace`` through ``strategy`` and compare its compactions with the recorded ones."""
    from ctxbench.cell.runner import resolve_spec, run_spec
    from ctxbench.cell.spec import RunSpec

    spec = resolve_spec(
        RunSpec(
            trace_id=trace.id,
            trace_hash=trace.content_hash,
            strategy=strategy,
            params=strategy_params(trace, strategy, params or {}),
            window=window,
            reserved=reserved,
            counter=counter,
            summarizer=summarizer,
            error_style="anthropic",
        )
    )
    output = run_spec(spec, trace)
    return compare_recorded(trace, output.events, strategy=strategy)
