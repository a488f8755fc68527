"""Which runs the viewer shows: the rows of a results directory, of a rows file, or the runs of
an events file (whose rows say how to replay them).

Rows carry their RunSpec, so every run can be replayed again; events files do not, so an
events file needs the rows it was written with (``ctxbench run ... --events ev.jsonl --out
rows.jsonl``), and the viewer says at which call the replay's events differ from the file's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ctxbench import jsontext
from ctxbench.engine.events import Event
from ctxbench.engine.result import RunResult
from ctxbench.errors import ConfigError
from ctxbench.guard import regular_file

_HINT = (
    "give a sweep's results directory, the rows of `ctxbench run --out rows.jsonl`, "
    "or an events file with --rows"
)


@dataclass(frozen=True)
class Source:
    """The rows to show, and the recorded events of each run when an events file was given."""

    rows: tuple[RunResult, ...]
    recorded: Mapping[str, Sequence[Event]]


def _is_events_file(path: Path) -> bool:
    for number, line in jsontext.text_lines(path, hint=_HINT):
        if line.strip():
            first = jsontext.loads(line, path=path, line=number, hint=_HINT)
            return isinstance(first, dict) and "type" in first and "spec" not in first
    return False


def read_source(path: str | Path, *, rows: str | Path | None = None) -> Source:
    """The runs behind ``path``; ``rows`` gives the rows of an events file."""
    from ctxbench.results import read_results

    path = Path(path)
    if path.is_dir():
        from ctxbench.results import ResultsDir

        return Source(tuple(ResultsDir(path).results()), {})
    regular_file(path, hint=_HINT)
    if not path.is_file():
        raise ConfigError("no such file or directory", path=path, hint=_HINT)
    if path.suffix != ".parquet" and _is_events_file(path):
        if rows is None:
            raise ConfigError(
                "an events file does not say how to replay its runs",
                path=path,
                hint="add --rows ROWS.jsonl (the --out of the same `ctxbench run`)",
            )
        from ctxbench.divergence import read_events

        found = read_source(rows)
        recorded = {}
        for row in found.rows:
            try:
                _, events = read_events(path, row.run_id)
            except ConfigError:
                continue
            recorded[row.run_id] = events
        if not recorded:
            raise ConfigError(
                "none of its runs is in the rows", path=path, hint="give the rows of the same run"
            )
        return Source(tuple(r for r in found.rows if r.run_id in recorded), recorded)
    return Source(tuple(read_results(path)), {})


def select(rows: Sequence[RunResult], run_ids: Sequence[str]) -> list[RunResult]:
    """The rows to show: all, or those of ``run_ids`` (an unknown id is an error)."""
    if not run_ids:
        return list(rows)
    by_id = {r.run_id: r for r in rows}
    unknown = [r for r in run_ids if r not in by_id]
    if unknown:
        raise ConfigError(
            f"no row with run_id {unknown[0]!r}",
            hint="run ids are in the run_id column (`ctxbench run --json` prints them)",
        )
    return [by_id[r] for r in run_ids]


def counterparts(
    rows: Sequence[RunResult],
    shown: Sequence[RunResult],
    run_ids: Sequence[str],
) -> list[RunResult]:
    """The rows of the other source to show beside ``shown``: those of ``run_ids`` when it
    has them, else every row of the traces ``shown`` replays (runs compare within a trace)."""
    if run_ids:
        wanted = [r for r in rows if r.run_id in set(run_ids)]
        if wanted:
            return wanted
    traces = {r.trace_id for r in shown}
    same = [r for r in rows if r.trace_id in traces]
    if not same:
        raise ConfigError(
            "the other source holds no run of the traces shown",
            hint="compare runs of the same traces (trace_id column)",
        )
    return same


def source_names(first: str | Path, second: str | Path) -> tuple[str, str]:
    """How the viewer names two sources: their last path parts that differ."""
    a, b = Path(first).resolve(), Path(second).resolve()
    for depth in range(1, max(len(a.parts), len(b.parts)) + 1):
        name_a, name_b = "/".join(a.parts[-depth:]), "/".join(b.parts[-depth:])
        if name_a != name_b:
            return name_a, name_b
    return "A", "B"
