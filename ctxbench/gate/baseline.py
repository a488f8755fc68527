"""Baselines of the CI regression gate: what a cell records, and baseline files written and read.

A baseline records the metrics of every cell of a sweep, by ``run_id`` and by a readable spec
key (trace, strategy and knobs, window, counters), so a cell whose id changed (a renamed
trace file, a new knob with its default) still finds its baseline.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ctxbench import jsontext
from ctxbench.config import INT64_MAX
from ctxbench.engine.events import Event, event_line
from ctxbench.engine.result import RunResult
from ctxbench.errors import ConfigError, CtxbenchError
from ctxbench.guard import small_file

BASELINE_SCHEMA = "ctxbench.baseline/1"

#: Metrics recorded per cell (all are columns of the result row).
METRICS: tuple[str, ...] = (
    "retention",
    "recoverability",
    "probes",
    "input_tokens_total",
    "cached_input_tokens",
    "summary_tokens",
    "cost_usd",
    "failed_calls",
    "overflow_errors",
    "pairing_violations",
    "calls",
    "error",
)

#: A cell's retention by probe kind (``{kind: share}``, from the row's ``retention_by_kind``):
#: what ``check --max-kind-drop`` compares. Baselines recorded before it have none.
KIND_RETENTION = "retention_by_kind"

#: What a cell is, recorded beside its metrics: matching (--match-by) and readable names read them.
IDENTITY: tuple[str, ...] = (
    "trace_id",
    "strategy",
    "params",
    "window",
    "counter",
    "estimator",
    "summarizer",
    "reserved",
)


def events_path(baseline: str | Path) -> Path:
    """Where the events of baseline ``baseline.json`` are stored: ``baseline.events.jsonl.gz``."""
    path = Path(baseline)
    return path.with_name(path.stem + ".events.jsonl.gz")


def write_events(events: Iterable[tuple[str, Event]], path: str | Path) -> int:
    """Write ``events`` ((run id, event) pairs) as the events file's lines, gzip-compressed,
    byte-identical for the same events (no time stamp in the header); returns how many were
    written."""
    import gzip

    from ctxbench.atomic_file import AtomicFile

    lines = [event_line(event, run_id=run_id) + "\n" for run_id, event in events]
    with AtomicFile(path, "wb") as out:
        out.write(gzip.compress("".join(lines).encode("utf-8", "backslashreplace"), mtime=0))
    return len(lines)


def store_events(results_dir: str | Path, run_ids: Iterable[str], path: str | Path) -> int:
    """Write the events of the runs ``run_ids`` of ``results_dir`` to ``path`` (the file
    beside a baseline, :func:`events_path`); returns how many were written."""
    from ctxbench.results import ResultsDir

    wanted = set(run_ids)
    store = ResultsDir(results_dir)
    return write_events(((r, e) for r, e in store.typed_events() if r in wanted), path)


def _spec(result: RunResult) -> Any:
    from ctxbench.cell.spec import RunSpec

    try:
        return RunSpec.from_dict(json.loads(result.spec))
    except (TypeError, ValueError, RecursionError, CtxbenchError):  # a damaged spec
        return None


def cell_key(result: RunResult) -> str:
    """The readable key of a row: the same cell under a new id still matches its baseline."""
    spec = _spec(result)
    if spec is None:
        return f"{result.trace_id}|{result.strategy}|w={result.window}|{result.counter}"
    return str(spec.key)


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _kinds(text: str) -> dict[str, float]:
    """The row's ``retention_by_kind`` JSON as a table ({} when damaged or empty)."""
    try:
        value = json.loads(text or "{}")
    except (TypeError, ValueError, RecursionError):
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): float(v) for k, v in value.items() if isinstance(v, (int, float))}


def gate_cell(result: RunResult) -> dict[str, Any]:
    """A row as a gate cell: run id, key, identity fields and metrics."""
    spec = _spec(result)
    key = str(spec.key) if spec is not None else cell_key(result)
    cell: dict[str, Any] = {"run_id": result.run_id, "key": key}
    cell.update({f: _clean(getattr(result, f)) for f in (*IDENTITY, *METRICS)})
    cell[KIND_RETENTION] = _kinds(result.retention_by_kind)
    if spec is not None and spec.plugin:  # the plug-ins' code: `check` names a change of it
        cell["plugin"] = spec.plugin
    return cell


def make_baseline(
    results: Iterable[RunResult], results_dir: str = "", events_file: str = ""
) -> dict[str, Any]:
    """The baseline document of a results table (cells sorted by run_id); ``results_dir``
    and ``events_file`` (the cells' events, stored beside the baseline by
    :func:`write_events`) are recorded so ``check`` can print the ``ctxbench diff`` command
    of a regressed cell, which works from the events file where the old results are gone."""
    from ctxbench.engine.result import SCHEMA_VERSION
    from ctxbench.version import __version__

    doc: dict[str, Any] = {
        "schema": BASELINE_SCHEMA,
        "ctxbench_version": __version__,
        "result_schema_version": SCHEMA_VERSION,
    }
    if results_dir:
        doc["results_dir"] = results_dir
    if events_file:
        doc["events"] = events_file
    doc["cells"] = [gate_cell(result) for result in sorted(results, key=lambda r: r.run_id)]
    return doc


def load_baseline(path: str | Path) -> dict[str, Any]:
    """Read and check a baseline file; problems are ConfigErrors naming the file."""
    path = small_file(path, what="a baseline", hint="give a file `ctxbench baseline` wrote")
    try:
        text = path.read_text("utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(
            "no such baseline file",
            path=path,
            hint="create one with `ctxbench baseline RESULTS -o FILE`",
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"not UTF-8 text ({exc.reason} at byte {exc.start})",
            path=path,
            hint="give a baseline written by `ctxbench baseline`",
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"cannot read: {exc.strerror or exc}", path=path, hint="give a baseline JSON file"
        ) from None
    data = jsontext.loads(
        text, path=path, hint="give a baseline written by `ctxbench baseline`, or fix its JSON"
    )
    if not isinstance(data, dict) or data.get("schema") != BASELINE_SCHEMA:
        raise ConfigError(
            f"schema is {data.get('schema') if isinstance(data, dict) else None!r}, expected {BASELINE_SCHEMA!r}",
            path=path,
            key="schema",
            hint="create baselines with `ctxbench baseline`",
        )
    from ctxbench.engine.result import SCHEMA_VERSION

    recorded = data.get("result_schema_version", SCHEMA_VERSION)
    if recorded != SCHEMA_VERSION:
        raise ConfigError(
            f"the baseline holds rows of schema {recorded!r}; this ctxbench writes "
            f"{SCHEMA_VERSION!r}, so its metrics cannot be compared",
            path=path,
            key="result_schema_version",
            hint="record a new baseline with this ctxbench (`ctxbench baseline RESULTS -o FILE`)",
        )
    cells = data.get("cells")
    if not isinstance(cells, list) or not all(
        isinstance(c, dict) and "run_id" in c and "key" in c for c in cells
    ):
        raise ConfigError(
            "'cells' must be a list of objects with run_id and key",
            path=path,
            key="cells",
            hint="create baselines with `ctxbench baseline`",
        )
    for name, what in (("events", "a file name"), ("results_dir", "a string")):
        if not isinstance(data.get(name, ""), str):
            raise ConfigError(
                f"{name} must be {what}",
                path=path,
                key=name,
                hint="restore the value `ctxbench baseline` wrote, or record a new baseline",
            )
    for i, cell in enumerate(cells):
        for name, value in cell.items():
            problem = _metric_problem(name, value)
            if problem:
                raise ConfigError(
                    f"{name} must be {problem}, not {value!r}",
                    path=path,
                    key=f"cells[{i}].{name}",
                    hint="restore the value `ctxbench baseline` wrote, or record a new baseline",
                )
    return data


def _metric_problem(name: str, value: Any) -> str | None:
    """What a baseline cell's field must be, when ``value`` is not that (else None)."""
    if name in ("run_id", "key"):
        return None if isinstance(value, str) else "a string"
    if name == "error":
        return None if value is None or isinstance(value, str) else "a string or null"
    if name == KIND_RETENTION:
        shares = isinstance(value, dict) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1
            for v in value.values()
        )
        return None if shares else "a table of probe kind = share from 0 to 1"
    if name not in METRICS or value is None:
        return None  # trace_id, strategy: labels only
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or abs(value) > INT64_MAX
    ):
        return "a finite number or null"
    return None


def version_warnings(baseline: Mapping[str, Any]) -> list[str]:
    """A baseline recorded by another ctxbench version: its replays may differ for that
    reason alone (a strategy's rule fixed, a counter updated)."""
    from ctxbench.version import __version__

    recorded = baseline.get("ctxbench_version")
    if recorded and recorded != __version__:
        return [
            f"the baseline was recorded by ctxbench {recorded}, this is {__version__}: a "
            "change may come from ctxbench itself; record a new baseline when you upgrade"
        ]
    return []
