"""A results directory, read for the report: the rows, and the events reduced per run
(read by :class:`ctxbench.results.ResultsDir`; layout in :mod:`ctxbench.results.layout`).

Events are streamed once and reduced to :class:`RunEvents` (calls, compactions, probe
outcomes, summary tokens), so a sweep with millions of events fits in memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxbench.cost.ledger import RunTokens
from ctxbench.engine import events as ev
from ctxbench.engine.result import RunResult
from ctxbench.report.decisions import CallRecord
from ctxbench.results import ResultsDir
from ctxbench.results.layout import SPEC_FILE


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    probe_id: str
    kind: str
    outcome: str


@dataclass(frozen=True, slots=True)
class AnswerOutcome:
    """A probe a model was asked (``--answerer``): its ``verdict`` beside string presence."""

    probe_id: str
    kind: str
    verdict: str
    outcome: str


@dataclass(frozen=True)
class RunEvents:
    """One run's events, reduced to what the report draws."""

    calls: tuple[CallRecord, ...] = ()
    #: (call, layer) of every compaction
    compactions: tuple[tuple[int, str], ...] = ()
    probes: tuple[ProbeOutcome, ...] = ()
    summary_input_tokens: int = 0
    summary_output_tokens: int = 0
    #: calls whose recorded action wrote a value the prompt no longer showed
    open_loop_breaks: tuple[int, ...] = ()
    #: the probes an answerer was asked (none without ``--answerer``)
    answers: tuple[AnswerOutcome, ...] = ()
    #: what the cost model reads: accepted calls with their shared prefix, removed tokens and
    #: summaries by call (:mod:`ctxbench.cost.ledger`)
    tokens: RunTokens = field(default_factory=RunTokens)


class _Digest:
    """Accumulates one run's events."""

    def __init__(self) -> None:
        self.calls: list[CallRecord] = []
        self.compactions: list[tuple[int, str]] = []
        self.probes: list[ProbeOutcome] = []
        self.summary_in = 0
        self.summary_out = 0
        self.breaks: list[int] = []
        self.answers: list[AnswerOutcome] = []
        self.sent: list[tuple[int, int, int]] = []
        self.removed: dict[int, int] = {}
        self.summaries: dict[int, tuple[int, int]] = {}

    def add(self, e: ev.Event) -> None:
        if isinstance(e, ev.ProviderCall):
            record = CallRecord(e.call, e.attempt, e.estimated_tokens, e.true_tokens, e.limit, e.ok)
            self.calls.append(record)
            if e.ok:
                self.sent.append((e.call, e.true_tokens, e.cached_tokens or 0))
        elif isinstance(e, ev.Compaction):
            self.compactions.append((e.call, e.layer))
            self.removed[e.call] = self.removed.get(e.call, 0) + e.true_before - e.true_after
        elif isinstance(e, ev.RecordedCompaction):  # drawn beside the strategy's own compactions
            self.compactions.append((e.call, f"recorded {e.trigger}"))
        elif isinstance(e, ev.ProbeScored):
            self.probes.append(ProbeOutcome(e.probe_id, e.kind, e.outcome))
        elif isinstance(e, ev.Summary):
            self.summary_in += e.input_tokens or 0
            self.summary_out += e.output_tokens or 0
            s_in, s_out = self.summaries.get(e.call, (0, 0))
            self.summaries[e.call] = (
                s_in + (e.input_tokens or 0),
                s_out + (e.output_tokens or 0),
            )
        elif isinstance(e, ev.OpenLoopBreak):
            self.breaks.append(e.call)
        elif isinstance(e, ev.ProbeAnswer):
            self.answers.append(AnswerOutcome(e.probe_id, e.kind, e.verdict, e.outcome))

    def freeze(self) -> RunEvents:
        return RunEvents(
            tuple(self.calls),
            tuple(self.compactions),
            tuple(self.probes),
            self.summary_in,
            self.summary_out,
            tuple(self.breaks),
            tuple(self.answers),
            RunTokens(tuple(self.sent), self.removed, self.summaries),
        )


#: Event types the report never reads: skipped before JSON parsing when the line shows them.
_SKIPPED = (ev.CONTEXT_STATUS, ev.SNAPSHOT)


def digest_events(events: Iterable[tuple[str, ev.Event]]) -> dict[str, RunEvents]:
    """run_id -> the run's reduced events, from ``(run_id, event)`` pairs."""
    digests: dict[str, _Digest] = {}
    for run_id, e in events:
        digests.setdefault(run_id, _Digest()).add(e)
    return {run_id: d.freeze() for run_id, d in digests.items()}


@dataclass(frozen=True)
class Results:
    """Rows, reduced events and the sweep spec of a results directory."""

    path: Path
    rows: tuple[RunResult, ...]
    events: Mapping[str, RunEvents] = field(default_factory=dict)
    sweep: Mapping[str, Any] = field(default_factory=dict)
    has_events: bool = False

    def run_events(self, run_id: str) -> RunEvents:
        return self.events.get(run_id, RunEvents())


def load_results(directory: str | Path) -> Results:
    """Read a results directory through the one results reader, for the report."""
    store = ResultsDir(directory)
    rows = sorted(store.results(), key=lambda r: (r.trace_id, r.run_id))
    events = digest_events(store.typed_events(skip=_SKIPPED))
    sweep = store.spec() if (store.path / SPEC_FILE).is_file() else {}
    return Results(store.path, tuple(rows), events, sweep, store.has_events)
