"""The loss table: per run, every probe it did not keep (which, of what kind, where it was
stated, the call and compaction it was lost at, the answer missing, a superseded value present)
and per kind the retention and the cliff. ``ctxbench losses``, ``run --losses`` and the gate's
per-kind failures read a run's losses here; :mod:`ctxbench.probes.losses` computes them.

A results directory gives its events; a file of rows (``run --out``) is replayed from each
row's ``spec`` (deterministic: the same events the run had), unless ``events`` names the
events file the run wrote (``run --events``). Traces are loaded from the rows' sources, as the
report does; a trace that cannot be loaded leaves its losses without statement and answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxbench.engine import events as ev
from ctxbench.engine.events import Event
from ctxbench.engine.result import RunResult
from ctxbench.probes.losses import (
    Loss,
    cliffs,
    compaction_calls,
    inferred,
    kind_retention,
    losses,
    tracking_probes,
)
from ctxbench.trace import Trace


@dataclass(frozen=True)
class RunLosses:
    """One run's loss table."""

    run_id: str
    trace_id: str
    label: str
    losses: tuple[Loss, ...]
    #: per kind: (kept, asked), and the cliff (first compaction under half kept)
    kinds: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    cliffs: Mapping[str, int] = field(default_factory=dict)
    compactions: int = 0
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "trace_id": self.trace_id,
            "config": self.label,
            "compactions": self.compactions,
            "kinds": {
                k: {"kept": kept, "asked": asked, "cliff": self.cliffs.get(k)}
                for k, (kept, asked) in self.kinds.items()
            },
            "losses": [loss.to_dict() for loss in self.losses],
            **({"note": self.note} if self.note else {}),
        }


def run_losses(
    events: Sequence[Event], trace: Trace | None, *, run_id: str, trace_id: str, label: str = ""
) -> RunLosses:
    """The loss table of one run's events and its trace (None: not at hand)."""
    found = losses(
        events,
        trace.probes if trace is not None else (),
        trace.call_indices if trace is not None else (),
        trace_id=trace_id,
        run_id=run_id,
    )
    return RunLosses(
        run_id,
        trace_id,
        label,
        tuple(found),
        kind_retention(events),
        cliffs(events),
        len(compaction_calls(events)),
        "" if trace is not None else "trace not loaded: no statement or answers",
    )


def watched(
    table: RunLosses, events: Sequence[Event], row: RunResult, trace: Trace | None
) -> RunLosses:
    """``table`` with the exact call of each loss whose call it inferred (rewritten away, or
    dropped in a run whose compactions added a summary): the run replayed from its row's spec
    once more, each such probe asked at every call from its statement to its ask point
    (:func:`~ctxbench.probes.losses.tracking_probes`; the loss then reads ``seen``). The same
    table when no call was inferred or the trace is not at hand; its kinds and cliffs are the
    run's own."""
    vague = inferred(events, table.losses)
    if not vague or trace is None:
        return table
    from dataclasses import replace

    from ctxbench.cell.runner import mined_probes, run_spec
    from ctxbench.results import spec_of_row

    spec = spec_of_row(row)
    probes = trace.probes or (mined_probes(trace) if spec.mine_probes else ())
    watch = tracking_probes([p for p in probes if p.id in vague], trace.call_indices)
    output = run_spec(spec, replace(trace, probes=(*probes, *watch)))
    found = losses(
        output.events,
        probes,
        trace.call_indices,
        trace_id=table.trace_id,
        run_id=table.run_id,
    )
    return replace(table, losses=tuple(found))


def _label(row: RunResult) -> str:
    params = "" if row.params in ("", "{}") else f" {row.params}"
    return f"{row.strategy}{params} w={row.window}"


def _traces(rows: Sequence[RunResult]) -> tuple[dict[str, Trace], list[str]]:
    from ctxbench.report.write import load_traces

    return load_traces(rows)


class ResultsLosses:
    """The losses of the runs of a results directory, by run id (what ``check`` names in a
    per-kind failure); events and traces are read when first asked for."""

    def __init__(self, results_dir: str | Path, rows: Sequence[RunResult] | None = None) -> None:
        from ctxbench.results import ResultsDir

        self.store = ResultsDir(results_dir)
        self.rows = {r.run_id: r for r in (rows if rows is not None else self.store.results())}
        self._traces: dict[str, Trace] | None = None
        self._events: dict[str, list[Event]] | None = None

    def table(self, run_id: str, *, watch: bool = False) -> RunLosses:
        """One run's table (``watch``: with the exact calls, :func:`watched`)."""
        row = self.rows[run_id]
        if self._traces is None:
            self._traces = _traces(list(self.rows.values()))[0]
        events = self._events_of(run_id)
        trace = self._traces.get(row.trace_id)
        table = run_losses(events, trace, run_id=run_id, trace_id=row.trace_id, label=_label(row))
        return watched(table, events, row, trace) if watch else table

    def __call__(self, run_id: str) -> Sequence[Loss]:
        return self.table(run_id).losses if run_id in self.rows else ()

    def _events_of(self, run_id: str) -> list[Event]:
        """One run's events that a loss table reads, from one pass over the directory's events
        for every run (a pass per run read a quickstart's 20 MB file 216 times)."""
        if self._events is None:
            self._events = {}
            for rid, event in self.store.typed_events(skip=_NOT_READ):
                if rid in self.rows:
                    self._events.setdefault(rid, []).append(event)
        return self._events.get(run_id, [])


#: the events a loss table does not read (most of a file: a status at every step, snapshots,
#: provider attempts): it reads probes, compactions and failed calls
_NOT_READ = (ev.CONTEXT_STATUS, ev.SNAPSHOT, ev.PROVIDER_CALL, ev.SUMMARY)


class EventsLosses:
    """The losses (probe ids and calls; no trace) of the runs of an events file, such as the
    one stored beside a baseline: which probes the baseline run had already lost."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def __call__(self, run_id: str) -> Sequence[Loss]:
        from ctxbench.divergence import run_events
        from ctxbench.errors import CtxbenchError

        try:
            events = run_events(self.path, run_id)[1]
        except CtxbenchError:  # a run the file does not hold
            return ()
        return losses(events, run_id=run_id)


def rows_losses(
    path: str | Path,
    events_file: str | Path | None = None,
    *,
    run_ids: Iterable[str] = (),
    watch: bool = False,
) -> list[RunLosses]:
    """The loss tables of a file of rows (those of ``run_ids``; all when empty): from
    ``events_file`` when given, else each row replayed from its ``spec`` (the row is data: a
    plug-in it names is not imported); ``watch``: with the exact calls (:func:`watched`)."""
    from ctxbench.cell.runner import run_spec
    from ctxbench.cell.traces import load_trace
    from ctxbench.results import spec_of_row
    from ctxbench.results.table import read_results

    wanted = set(run_ids)
    rows = [r for r in read_results(Path(path)) if not wanted or r.run_id in wanted]
    given: dict[str, Sequence[Event]] = {}
    if events_file is not None:
        from ctxbench.divergence import run_events

        for row in rows:
            given[row.run_id] = run_events(str(events_file), row.run_id)[1]
    out = []
    for row in rows:
        spec = spec_of_row(row)
        trace = load_trace(spec.trace_source, spec.trace_id, spec.trace_hash)
        events: Sequence[Event] = given.get(spec.run_id) or run_spec(spec, trace).events
        table = run_losses(events, trace, run_id=spec.run_id, trace_id=trace.id, label=_label(row))
        out.append(watched(table, events, row, trace) if watch else table)
    return out


def results_losses(
    path: str | Path,
    events_file: str | Path | None = None,
    *,
    run_ids: Iterable[str] = (),
    watch: bool = False,
) -> list[RunLosses]:
    """The loss tables of a results directory or of a file of rows: the runs ``run_ids`` (every
    run when empty), with the exact calls when ``watch`` (:func:`watched`)."""
    if Path(path).is_dir():
        source = ResultsLosses(path)
        wanted = set(run_ids)
        chosen = [r for r in sorted(source.rows) if not wanted or r in wanted]
        return [source.table(run_id, watch=watch) for run_id in chosen]
    return rows_losses(path, events_file, run_ids=run_ids, watch=watch)


LOSS_HEADER = ("probe", "kind", "outcome", "stated", "lost at", "missing answer", "stale present")
KIND_HEADER = ("kind", "kept", "asked", "retention", "cliff")


def _stated(loss: Loss) -> str:
    if not loss.stated:
        return "-"
    messages = ",".join(str(i) for i in loss.stated)
    return f"msg {messages} / call {loss.stated_call}"


def _lost_at(loss: Loss) -> str:
    if loss.lost_at is None:
        return "-"
    if loss.compaction is None:
        return f"call {loss.lost_at} ({loss.how})"
    return f"call {loss.lost_at} (compaction {loss.compaction}, {loss.how})"


def loss_rows(table: RunLosses) -> list[tuple[str, ...]]:
    return [
        (
            loss.probe_id,
            loss.kind,
            loss.outcome,
            _stated(loss),
            _lost_at(loss),
            " | ".join(loss.missing) or "-",
            " | ".join(loss.stale) or "-",
        )
        for loss in table.losses
    ]


def kind_rows(table: RunLosses) -> list[tuple[str, ...]]:
    return [
        (
            kind,
            str(kept),
            str(asked),
            f"{kept / asked:.2f}" if asked else "-",
            str(table.cliffs[kind]) if kind in table.cliffs else "-",
        )
        for kind, (kept, asked) in table.kinds.items()
    ]


def _aligned(header: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> list[str]:
    rows = list(rows)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in [header, *rows]]


def render(tables: Sequence[RunLosses]) -> str:
    """The loss tables as text: per run, its lost probes, then its kinds with their cliffs."""
    out: list[str] = []
    for table in tables:
        asked = sum(a for _, a in table.kinds.values())
        lost = asked - sum(k for k, _ in table.kinds.values())
        out.append(
            f"{table.trace_id}  {table.label}  (run {table.run_id}): {lost} of {asked} probes "
            f"not kept, {table.compactions} compactions"
        )
        if table.note:
            out.append(f"  note: {table.note}")
        if table.losses:
            out += ["  " + line for line in _aligned(LOSS_HEADER, loss_rows(table))]
        if table.kinds:
            out.append("")
            out += ["  " + line for line in _aligned(KIND_HEADER, kind_rows(table))]
        out.append("")
    return "\n".join(out).rstrip() + "\n"
