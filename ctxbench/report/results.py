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

from ctxbench.engine import events as ev
from ctxbench.report.decisions import CallRecord
from ctxbench.results import ResultsDir
from ctxbench.results.layout import SPEC_FILE


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    probe_id: str
    kind: str
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


class _Digest:
    """Accumulates one run's events."""

    def __init__(self) -> None:
        self.calls: list[CallRecord] = []
        self.compactions: list[tuple[int, str]] = []
        self.probes: list[ProbeOutcome] = []
        self.summary_in = 0
        self.summary_out = 0

    def add(self, e: Mapping[str, Any]) -> None:
        kind = e.get("type")
        if kind == ev.PROVIDER_CALL:
            self.calls.append(
                CallRecord(
                    call=int(e["call"]),
                    attempt=int(e.get("attempt", 0)),
                    estimated=int(e["estimated_tokens"]),
                    true=int(e["true_tokens"]),
                    limit=int(e["limit"]),
                    ok=bool(e["ok"]),
                )
            )
        elif kind == ev.COMPACTION:
            self.compactions.append((int(e["call"]), str(e["layer"])))
        elif kind == ev.RECORDED:  # drawn beside the strategy's own compactions
            self.compactions.append((int(e["call"]), f"recorded {e.get('trigger')}"))
        elif kind == ev.PROBE:
            self.probes.append(ProbeOutcome(str(e["probe_id"]), str(e["kind"]), str(e["outcome"])))
        elif kind == ev.SUMMARY:
            self.summary_in += int(e.get("input_tokens") or 0)
            self.summary_out += int(e.get("output_tokens") or 0)

    def freeze(self) -> RunEvents:
        return RunEvents(
            tuple(self.calls),
            tuple(self.compactions),
            tuple(self.probes),
            self.summary_in,
            self.summary_out,
        )


#: Event types the report never reads: skipped before JSON parsing when the line shows them.
_SKIPPED = (ev.CONTEXT_STATUS, ev.SNAPSHOT)


def digest_events(events: Iterable[Mapping[str, Any]]) -> dict[str, RunEvents]:
    """run_id -> the run's reduced events (events without ``run_id`` go under ``""``)."""
    digests: dict[str, _Digest] = {}
    for e in events:
        digests.setdefault(str(e.get("run_id", "")), _Digest()).add(e)
    return {run_id: d.freeze() for run_id, d in digests.items()}


@dataclass(frozen=True)
class Results:
    """Rows, reduced events and the sweep spec of a results directory."""

    path: Path
    rows: tuple[dict[str, Any], ...]
    events: Mapping[str, RunEvents] = field(default_factory=dict)
    sweep: Mapping[str, Any] = field(default_factory=dict)
    has_events: bool = False

    def run_events(self, run_id: str) -> RunEvents:
        return self.events.get(run_id, RunEvents())


def load_results(directory: str | Path) -> Results:
    """Read a results directory through the one results reader, for the report."""
    store = ResultsDir(directory)
    rows = sorted(store.rows(), key=lambda r: (str(r["trace_id"]), str(r["run_id"])))
    events = digest_events(store.events(skip=_SKIPPED))
    sweep = store.spec() if (store.path / SPEC_FILE).is_file() else {}
    return Results(store.path, tuple(rows), events, sweep, store.has_events)
