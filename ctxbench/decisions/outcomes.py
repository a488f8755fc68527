"""What the decisions read of one run: its probes' outcomes, what it cost, what failed.

Cost is what a deployment pays for: the input tokens of the calls that went through, plus the
summary calls' tokens, plus the prompts the provider rejected (an overflow error is a request
sent and refused; counting only accepted prompts makes a config that crashes early look
cheap). Rejected prompt tokens come from the ``provider.call`` events; without an events file
they are unknown and counted as 0, which the recommendation says.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ctxbench.engine import events as ev
from ctxbench.engine.result import RunResult
from ctxbench.probes.weights import KindWeights
from ctxbench.report.leaderboard import ConfigKey
from ctxbench.report.results import Results

#: The outcome that counts as kept (``retention``); the others are stale, via_reference, lost.
KEPT = "in_context"


@dataclass(frozen=True)
class Constraints:
    """What a config must meet to be recommended (the defaults are the issue's: a failed call
    is a crash of the real agent, so none is allowed)."""

    max_failed_calls: int = 0
    #: mean cost per trace (input + summary + rejected tokens); None: no budget
    max_tokens: float | None = None
    #: a run whose replay raised disqualifies its config
    allow_errors: bool = False
    #: mean USD per trace through the provider's prompt cache (``RunOutcome.usd``); None: no budget
    max_usd: float | None = None

    def describe(self) -> str:
        parts = [
            "no failed calls"
            if self.max_failed_calls == 0
            else f"at most {self.max_failed_calls} failed calls in all"
        ]
        if self.max_tokens is not None:
            parts.append(f"at most {self.max_tokens:,.0f} tokens per trace")
        if not self.allow_errors:
            parts.append("no replay errors")
        if self.max_usd is not None:
            parts.append(f"at most ${self.max_usd:,.4g} per trace")
        return ", ".join(parts)


@dataclass(frozen=True)
class RunOutcome:
    """One run reduced to what the decisions read."""

    run_id: str
    trace_id: str
    config: ConfigKey
    window: int
    counter: str
    #: (probe id, kind, outcome) in probe-id order; kind "" when only the row was read
    probes: tuple[tuple[str, str, str], ...]
    input_tokens: int
    summary_tokens: int
    rejected_tokens: int
    failed_calls: int
    overflow_errors: int
    error: str | None
    #: probe outcomes came from events (else they are rebuilt from the row's counts)
    from_events: bool = True
    #: USD of the run through its provider's prompt cache (ctxbench.cost.runs); None: not priced
    usd: float | None = None

    @property
    def cost(self) -> int:
        """Input tokens of accepted calls + summary tokens + rejected prompt tokens."""
        return self.input_tokens + self.summary_tokens + self.rejected_tokens

    def only(self, probe_ids: set[str]) -> RunOutcome:
        """The run with only the given probes (those every compared run scored)."""
        return replace(self, probes=tuple(p for p in self.probes if p[0] in probe_ids))

    def kept(self, weights: KindWeights) -> tuple[list[float], list[float]]:
        """(kept 0/1, weight) per probe with a weight > 0 (probes of unknown kind count 1)."""
        pairs = [
            (1.0 if o == KEPT else 0.0, weights.of(k) if k else 1.0) for _, k, o in self.probes
        ]
        kept = [(v, w) for v, w in pairs if w > 0]
        return [v for v, _ in kept], [w for _, w in kept]


def _row_probes(row: RunResult) -> tuple[tuple[str, str, str], ...]:
    """Probe outcomes rebuilt from a row's counts (no events: kinds and ids are unknown)."""
    counts = [
        (KEPT, row.in_context),
        ("via_reference", row.via_reference),
        ("stale", row.stale),
        ("lost", row.lost),
    ]
    out: list[tuple[str, str, str]] = []
    for outcome, count in counts:
        out += [(f"#{len(out) + i}", "", outcome) for i in range(count)]
    return tuple(out)


@dataclass
class _Seen:
    """What the decisions read of one run's events: probe outcomes, rejected prompt tokens."""

    probes: list[tuple[str, str, str]] = field(default_factory=list)
    rejected: int = 0


def outcome_of(row: RunResult, seen: _Seen | None) -> RunOutcome:
    """The outcome of one row, from its events when there are any."""
    probes: tuple[tuple[str, str, str], ...]
    if seen is not None:
        probes, rejected, from_events = tuple(sorted(seen.probes)), seen.rejected, True
    else:
        probes, rejected, from_events = _row_probes(row), 0, False
    return RunOutcome(
        run_id=row.run_id,
        trace_id=row.trace_id,
        config=ConfigKey.of_result(row),
        window=row.window,
        counter=row.counter,
        probes=probes,
        input_tokens=row.input_tokens_total,
        summary_tokens=row.summary_tokens,
        rejected_tokens=rejected,
        failed_calls=row.failed_calls,
        overflow_errors=row.overflow_errors,
        error=row.error or None,
        from_events=from_events,
    )


#: Event types the decisions never read: skipped before parsing.
_SKIP = (ev.CONTEXT_STATUS, ev.SNAPSHOT, ev.COMPACTION, ev.SUMMARY, ev.CALL_FAILED)


def read_outcomes(directory: str | Path) -> list[RunOutcome]:
    """Every run of a results directory, read through :class:`ctxbench.results.ResultsDir`."""
    from ctxbench.results import ResultsDir

    store = ResultsDir(directory)
    seen: dict[str, _Seen] = {}
    if store.has_events:
        for run_id, e in store.typed_events(skip=_SKIP):
            run = seen.setdefault(run_id, _Seen())
            if isinstance(e, ev.ProbeScored):
                run.probes.append((e.probe_id, e.kind, e.outcome))
            elif isinstance(e, ev.ProviderCall) and not e.ok:
                run.rejected += e.true_tokens
    return [outcome_of(row, seen.get(row.run_id)) for row in store.results()]


def outcomes(results: Results) -> list[RunOutcome]:
    """Every run of results the report already read (its reduced events)."""
    out = []
    for row in results.rows:
        events = results.events.get(row.run_id) if results.has_events else None
        seen = None
        if events is not None:
            seen = _Seen(
                [(p.probe_id, p.kind, p.outcome) for p in events.probes],
                sum(c.true for c in events.calls if not c.ok),
            )
        out.append(outcome_of(row, seen))
    return out


def kind_retention(runs: Iterable[RunOutcome]) -> dict[str, tuple[float, int]]:
    """kind -> (share of its probes kept, probes), pooled over runs (kinds known only)."""
    kept: dict[str, list[int]] = {}
    for run in runs:
        for _, kind, outcome in run.probes:
            if kind:
                kept.setdefault(kind, []).append(outcome == KEPT)
    return {k: (sum(v) / len(v), len(v)) for k, v in sorted(kept.items())}


def outcome_of_record(row: RunResult, events: Iterable[str | Mapping[str, Any]]) -> RunOutcome:
    """The outcome :func:`read_outcomes` gives a run, from its row and its events as the sweep
    writes them (JSON texts, each starting with its type, or dicts): a sweep decides from what
    it holds, without reading back the events file it just wrote. Only ``probe`` and failed
    ``provider.call`` events are decoded."""
    seen: _Seen | None = None
    for event in events:
        if isinstance(event, str) and event.startswith(_TYPE_START):
            kind = event[len(_TYPE_START) : event.find('"', len(_TYPE_START))]
            if kind in _SKIP:
                continue
            if kind != ev.PROBE and (kind != ev.PROVIDER_CALL or _NOT_OK not in event):
                seen = seen or _Seen()
                continue
        e = ev.decode(event)
        if e.type in _SKIP:
            continue
        seen = seen or _Seen()
        if isinstance(e, ev.ProbeScored):
            seen.probes.append((e.probe_id, e.kind, e.outcome))
        elif isinstance(e, ev.ProviderCall) and not e.ok:
            seen.rejected += e.true_tokens
    return outcome_of(row, seen)


#: how an event's JSON text starts when its type comes first (as the engine writes it)
_TYPE_START = '{"type":"'
#: in the text of every rejected ``provider.call`` event (and in no string value: quotes escape)
_NOT_OK = '"ok":false'
