"""A results directory, read for the report: the rows, and the events reduced per run.

Layout (written by ``ctxbench sweep``; ``ctxbench run --out DIR/results.jsonl --events
DIR/events.jsonl`` makes one too): ``results.parquet`` or ``results.jsonl`` (one row per run),
``events.jsonl`` (every event, each line carrying its ``run_id``; optional) and ``sweep.json``
(the sweep's spec; optional).

Events are streamed once and reduced to :class:`RunEvents` (calls, compactions, probe
outcomes, summary tokens), so a sweep with millions of events fits in memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxbench import jsontext
from ctxbench.engine import events as ev
from ctxbench.errors import CtxbenchError
from ctxbench.report.decisions import CallRecord

ROW_FILES = ("results.parquet", "results.jsonl")
EVENTS_FILE = "events.jsonl"
SWEEP_FILE = "sweep.json"


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
_DAMAGED_EVENTS = "events.jsonl is damaged: delete it and rerun the sweep with --resume"
_SKIPPED = (f'"type":"{ev.CONTEXT_STATUS}"', f'"type":"{ev.SNAPSHOT}"')


def digest_events(events: Iterable[Mapping[str, Any]]) -> dict[str, RunEvents]:
    """run_id -> the run's reduced events (events without ``run_id`` go under ``""``)."""
    digests: dict[str, _Digest] = {}
    for e in events:
        digests.setdefault(str(e.get("run_id", "")), _Digest()).add(e)
    return {run_id: d.freeze() for run_id, d in digests.items()}


def _event_lines(path: Path) -> Iterable[Mapping[str, Any]]:
    with _text_lines(path) as lines:
        for number, line in lines:
            head = line[:120]
            if any(s in head for s in _SKIPPED) or not line.strip():
                continue
            event = jsontext.loads(
                line,
                path=path,
                line=number,
                error=CtxbenchError,
                hint="the events file is JSON Lines; was it truncated by a crash? "
                "re-run the sweep with --resume",
            )
            problem = ev.event_problem(event)
            if problem is not None:
                key, message = problem
                raise CtxbenchError(message, path=path, line=number, key=key, hint=_DAMAGED_EVENTS)
            yield event


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


@contextmanager
def _text_lines(path: Path) -> Iterator[Iterator[tuple[int, str]]]:
    """Numbered lines of a UTF-8 file; undecodable bytes are an error naming the file."""
    try:
        with path.open(encoding="utf-8") as fh:
            yield enumerate(fh, 1)
    except UnicodeDecodeError as exc:
        raise CtxbenchError(
            f"not UTF-8 text ({exc.reason} at byte {exc.start})",
            path=path,
            hint="the file is damaged: delete it and rerun the sweep with --resume",
        ) from None


def _clean(value: Any) -> Any:
    """Parquet nulls of float columns come back as NaN in some writers: make them None."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a ``.parquet`` or ``.jsonl`` results file as plain Python values."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            records = pq.read_table(path).to_pylist()
        except Exception as exc:  # pyarrow raises several unrelated types for bad files
            raise CtxbenchError(
                f"cannot read parquet: {exc}", path=path, hint="is the sweep still writing it?"
            ) from None
    else:
        records = []
        with _text_lines(path) as lines:
            for number, line in lines:
                if not line.strip():
                    continue
                records.append(
                    jsontext.loads(
                        line,
                        path=path,
                        line=number,
                        error=CtxbenchError,
                        hint="each line of a results file is one JSON row",
                    )
                )
    if not all(isinstance(r, dict) for r in records):
        number = next(i for i, r in enumerate(records, 1) if not isinstance(r, dict))
        raise CtxbenchError(
            f"row {number} is not a JSON object",
            path=path,
            hint="this is not a ctxbench results file",
        )
    rows = [{k: _clean(v) for k, v in r.items()} for r in records]
    for number, row in enumerate(rows, 1):
        missing = [c for c in ("run_id", "trace_id", "strategy", "window") if c not in row]
        if missing:
            raise CtxbenchError(
                f"row {number} has no {', '.join(missing)}",
                path=path,
                hint="this is not a ctxbench results file",
            )
    return rows


def load_results(directory: str | Path) -> Results:
    """Read a results directory (see the module docstring)."""
    root = Path(directory)
    if not root.is_dir():
        raise CtxbenchError(
            "not a results directory",
            path=root,
            hint="pass the folder `ctxbench sweep -o DIR` wrote",
        )
    rows_file = next((root / name for name in ROW_FILES if (root / name).is_file()), None)
    if rows_file is None:
        raise CtxbenchError(
            f"no {' or '.join(ROW_FILES)} in this folder",
            path=root,
            hint="run `ctxbench sweep SWEEP.toml -o DIR` first",
        )
    rows = read_rows(rows_file)
    rows.sort(key=lambda r: (str(r["trace_id"]), str(r["run_id"])))
    events_file = root / EVENTS_FILE
    events = digest_events(_event_lines(events_file)) if events_file.is_file() else {}
    sweep: dict[str, Any] = {}
    if (root / SWEEP_FILE).is_file():
        sweep = jsontext.loads(
            (root / SWEEP_FILE).read_bytes(),
            path=root / SWEEP_FILE,
            error=CtxbenchError,
            hint="sweep.json is written when a sweep starts; restore it or delete it",
        )
        if not isinstance(sweep, dict):
            raise CtxbenchError(
                "the sweep spec is not a JSON object",
                path=root / SWEEP_FILE,
                key="$",
                hint="restore sweep.json or delete it",
            )
    return Results(root, tuple(rows), events, sweep, events_file.is_file())
