"""Where two replays of the same trace part ways: the first call whose events differ.

Events are compared call by call with their ``step`` and ``run_id`` removed, so two runs that
differ in one threshold line up until the first call where the threshold matters. At that
call ``diff`` shows what each replay did (status, compactions with their layer, the trace
messages they dropped, provider calls) and, over the whole runs, which probes changed outcome.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxbench.engine import events as ev
from ctxbench.engine.events import Event
from ctxbench.errors import ResultsError
from ctxbench.results import ResultsDir, event_lines


def read_events(path: str | Path, run_id: str | None = None) -> tuple[str, list[Event]]:
    """The events of one run from an events JSONL file (the only run, or ``run_id``). The
    diff ignores steps, so a line whose ``step`` is missing (or not an integer) takes its
    position in its run."""
    path = Path(path)
    runs: dict[str, list[Event]] = {}
    for event in event_lines(path):
        run = runs.setdefault(str(event.pop("run_id", "")), [])
        step = event.get("step")
        if not isinstance(step, int) or isinstance(step, bool):
            event["step"] = len(run)
        run.append(Event.from_dict(event))
    if run_id is not None:
        if run_id not in runs:
            raise ResultsError(
                f"no events of run {run_id!r}",
                path=path,
                key="$.run_id",
                hint=f"runs in this file: {', '.join(sorted(runs)[:10])}",
            )
        return run_id, runs[run_id]
    if len(runs) != 1:
        raise ResultsError(
            f"holds {len(runs)} runs",
            path=path,
            key="$.run_id" if runs else None,
            hint="pick one with --run-a / --run-b; runs: " + ", ".join(sorted(runs)[:10]),
        )
    only = next(iter(runs))
    return only, runs[only]


def run_events(source: str | Path, run_id: str | None = None) -> tuple[str, list[Event]]:
    """The events of one run from an events file or a results directory (where ``run_id``
    is required): a baseline's results and the current ones can be compared run by run."""
    path = Path(source)
    if not path.is_dir():
        return read_events(path, run_id)
    if run_id is None:
        raise ResultsError(
            "a results directory holds many runs",
            path=path,
            hint="name the run with --run-a / --run-b (`ctxbench check` prints the command)",
        )
    events = [e for _, e in ResultsDir(path).typed_events(run_id)]
    if not events:
        raise ResultsError(
            f"no events of run {run_id!r}",
            path=path,
            hint="run ids are in the run_id column of results.parquet",
        )
    return run_id, events


def _normal(event: Event) -> dict[str, Any]:
    """What is compared of an event: everything but its step."""
    return {k: v for k, v in event.to_dict().items() if k != "step"}


#: a model's answers about a replay (``--answerer``), not what the replay did
_NOT_COMPARED = frozenset({ev.PROBE_ANSWER, ev.NEXT_ACTION})


def _by_call(events: Iterable[Event]) -> dict[int, list[Event]]:
    out: dict[int, list[Event]] = {}
    for e in events:
        if e.type not in _NOT_COMPARED:
            out.setdefault(e.call, []).append(e)
    return out


def probe_outcomes(events: Iterable[Event]) -> dict[str, str]:
    return {e.probe_id: e.outcome for e in events if isinstance(e, ev.ProbeScored)}


@dataclass(frozen=True)
class Divergence:
    """The first call where two replays differ, what each did there, and probe changes."""

    call: int | None
    a: list[Event] = field(default_factory=list)
    b: list[Event] = field(default_factory=list)
    probes: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    @property
    def identical(self) -> bool:
        return self.call is None and not self.probes


def first_divergence(a: Sequence[Event], b: Sequence[Event]) -> Divergence:
    """Compare two runs' events call by call."""
    calls_a, calls_b = _by_call(a), _by_call(b)
    first = None
    for call in sorted(set(calls_a) | set(calls_b)):
        if [_normal(e) for e in calls_a.get(call, ())] != [
            _normal(e) for e in calls_b.get(call, ())
        ]:
            first = call
            break
    pa, pb = probe_outcomes(a), probe_outcomes(b)
    changed = {
        pid: (pa.get(pid), pb.get(pid))
        for pid in sorted(set(pa) | set(pb))
        if pa.get(pid) != pb.get(pid)
    }
    if first is None:
        return Divergence(None, probes=changed)
    return Divergence(first, calls_a.get(first, []), calls_b.get(first, []), changed)


def _describe(event: Event) -> str:
    if isinstance(event, ev.ContextStatus):
        layer = f" after {event.compact_layer}" if event.compact_layer else ""
        return (
            f"status{layer}: {event.used} / {event.budget} estimated ({event.ratio}) "
            f"-> {event.state}"
        )
    if isinstance(event, ev.Compaction):
        ranges = ", ".join(
            f"{a}" if a == b else f"{a}-{b}" for a, b in event.dropped_messages or []
        )
        dropped = f"; trace messages dropped: {ranges}" if ranges else ""
        return (
            f"compaction {event.layer}: {event.messages_before} -> {event.messages_after} "
            f"messages (dropped {event.dropped}, rewritten {event.changed}, added "
            f"{event.added}), est {event.est_before} -> {event.est_after}, true "
            f"{event.true_before} -> {event.true_after}{dropped}"
        )
    if isinstance(event, ev.ProviderCall):
        # labelled by the kind the event records (events written before it had one: overflow)
        verdict = "ok" if event.ok else f"REJECTED ({event.error_kind or ev.OVERFLOW})"
        return (
            f"provider attempt {event.attempt}: {event.true_tokens} true / {event.limit} limit "
            f"(estimated {event.estimated_tokens}) {verdict}"
        )
    if isinstance(event, ev.CallFailed):
        return f"call FAILED after {event.attempts} attempt(s): {_failure(event)}"
    if isinstance(event, ev.Summary):
        return f"summary for {event.layer}: {'ok' if event.ok else 'failed: ' + str(event.error)}"
    if isinstance(event, ev.ProbeScored):
        return f"probe {event.probe_id} ({event.kind}): {event.outcome}"
    if isinstance(event, ev.Snapshot):
        return f"file {event.path} ({event.bytes} bytes)"
    return json.dumps(_normal(event), ensure_ascii=False)


def _failure(event: ev.CallFailed) -> str:
    """Why a call failed, by the kind its ``call.failed`` records: only an overflow is a count
    over the limit."""
    kind = event.kind or ev.OVERFLOW
    tokens = f"{event.true_tokens} true / {event.limit} limit"
    if kind == ev.OVERFLOW:
        because = f"{event.true_tokens} > {event.limit}"
    elif kind == ev.PAIRING_REJECTED:
        because = f"refused for its tool pairing ({tokens})"
    elif kind == ev.ABORTED:
        because = f"aborted by the framework ({tokens})"
    else:
        because = f"{kind} ({tokens})"
    error = event.error
    return f"{because}: {error}" if error and kind != ev.PAIRING_REJECTED else because


def render(div: Divergence, label_a: str, label_b: str) -> str:
    """A readable account of a :class:`Divergence`."""
    if div.identical:
        return "the two replays are identical (apart from step numbers and run ids)"
    lines = []
    if div.call is None:
        lines.append("every call's events agree")
    else:
        lines.append(f"first divergence at call {div.call}")
        for label, events in ((label_a, div.a), (label_b, div.b)):
            lines.append(f"\n{label}:")
            lines.extend(f"  {_describe(e)}" for e in events) if events else lines.append(
                "  (no events)"
            )
    if div.probes:
        lines.append("\nprobes whose outcome changed:")
        for pid, (oa, ob) in div.probes.items():
            lines.append(f"  {pid}: {oa or '-'} -> {ob or '-'}")
    return "\n".join(lines)
