"""Baselines of the CI regression gate: what a cell records, and baseline files written and read.

A baseline records the metrics of every cell of a sweep, by ``run_id`` and by a readable spec
key (trace, strategy and knobs, window, counters), so a cell whose id changed (a renamed
trace file, a new knob with its default) still finds its baseline.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, TypeVar

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

#: The hint of every damaged value of a baseline file.
_RESTORE = "restore the value `ctxbench baseline` wrote, or record a new baseline"
_RECORD = "create baselines with `ctxbench baseline`"


@dataclass(frozen=True, slots=True, kw_only=True)
class BaselineCell:
    """One cell as the gate compares it (a baseline's, or a current row's: :func:`gate_cell`):
    its run id and readable spec key, what it is (the identity fields, which ``--match-by``
    and the readable names read), its metrics (the row's columns, NaN as None), its retention
    by probe kind and the version of its plug-ins' code.

    A baseline recorded by an older ctxbench lacks some fields: identity fields and metrics
    read as None (before names, a cell had its key only), ``retention_by_kind`` as None
    (recorded before it existed: ``check --max-kind-drop`` refuses such a baseline),
    ``plugin`` as "" (no plug-in, or recorded before plug-in versions). Counts are read as
    numbers: a baseline file may hold ``3.0``.
    """

    run_id: str
    key: str
    trace_id: str | None = None
    strategy: str | None = None
    params: str | None = None
    window: int | None = None
    counter: str | None = None
    estimator: str | None = None
    summarizer: str | None = None
    reserved: int | None = None
    retention: float | None = None
    recoverability: float | None = None
    probes: float | None = None
    input_tokens_total: float | None = None
    cached_input_tokens: float | None = None
    summary_tokens: float | None = None
    cost_usd: float | None = None
    failed_calls: float | None = None
    overflow_errors: float | None = None
    pairing_violations: float | None = None
    calls: float | None = None
    error: str | None = None
    retention_by_kind: Mapping[str, float] | None = None
    plugin: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The cell as ``baseline.json`` stores it: run id, key, identity fields, metrics,
        ``retention_by_kind`` (when recorded) and ``plugin`` (when the cell ran plug-ins)."""
        out = {name: getattr(self, name) for name in _CELL_FIELDS[:-2]}  # all but the last two
        if self.retention_by_kind is not None:
            out[KIND_RETENTION] = dict(self.retention_by_kind)
        if self.plugin:
            out["plugin"] = self.plugin
        return out

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, path: str | Path | None = None, index: int = 0
    ) -> BaselineCell:
        """A cell of a baseline file (``data``: its JSON object, ``index``: its place in
        ``cells``); a value of the wrong type is a ConfigError naming ``cells[i].name``.
        Names this ctxbench does not know are ignored (a newer ctxbench's fields)."""
        if "run_id" not in data or "key" not in data:
            raise ConfigError(
                "a cell must have run_id and key", path=path, key=f"cells[{index}]", hint=_RECORD
            )
        for name, value in data.items():
            problem = _metric_problem(name, value)
            if problem:
                raise ConfigError(
                    f"{name} must be {problem}, not {value!r}",
                    path=path,
                    key=f"cells[{index}].{name}",
                    hint=_RESTORE,
                )
        return cls(**{name: data[name] for name in _CELL_FIELDS if name in data})

    def with_strategy(self, strategy: str, key: str) -> BaselineCell:
        """The same cell under another strategy name and key (``check --rename OLD=NEW``)."""
        return replace(self, strategy=strategy, key=key)


_CELL_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(BaselineCell))


@dataclass(frozen=True, slots=True, kw_only=True)
class Baseline:
    """A baseline file (``ctxbench baseline``): its schema, the ctxbench and result schema
    versions that recorded it, where its results were (``results_dir``) and the events file
    stored beside it (``events``; both empty when not recorded), and its cells by run id."""

    cells: tuple[BaselineCell, ...]
    ctxbench_version: str = ""
    result_schema_version: str = ""
    results_dir: str = ""
    events: str = ""
    schema: str = BASELINE_SCHEMA

    def to_dict(self) -> dict[str, Any]:
        """The document as ``baseline.json`` stores it (``results_dir`` and ``events`` only
        when recorded)."""
        out: dict[str, Any] = {"schema": self.schema}
        if self.ctxbench_version:
            out["ctxbench_version"] = self.ctxbench_version
        if self.result_schema_version:
            out["result_schema_version"] = self.result_schema_version
        if self.results_dir:
            out["results_dir"] = self.results_dir
        if self.events:
            out["events"] = self.events
        out["cells"] = [cell.to_dict() for cell in self.cells]
        return out

    def text(self) -> str:
        """The bytes of ``baseline.json`` (as text): indented JSON, non-ASCII kept, a newline."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, data: Any, *, path: str | Path | None = None) -> Baseline:
        """A baseline file's JSON checked: its schema, a result schema this ctxbench writes
        (else its metrics cannot be compared), cells with run id and key, and every value's
        type; problems are ConfigErrors naming ``path``, the key and the fix."""
        from ctxbench.engine.result import SCHEMA_VERSION

        if not isinstance(data, dict) or data.get("schema") != BASELINE_SCHEMA:
            raise ConfigError(
                f"schema is {data.get('schema') if isinstance(data, dict) else None!r}, "
                f"expected {BASELINE_SCHEMA!r}",
                path=path,
                key="schema",
                hint="create baselines with `ctxbench baseline`",
            )
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
                hint=_RECORD,
            )
        for name, what in (
            ("events", "a file name"),
            ("results_dir", "a string"),
            ("ctxbench_version", "a string"),
        ):
            if not isinstance(data.get(name, ""), str):
                raise ConfigError(f"{name} must be {what}", path=path, key=name, hint=_RESTORE)
        return cls(
            cells=tuple(
                BaselineCell.from_dict(cell, path=path, index=i) for i, cell in enumerate(cells)
            ),
            ctxbench_version=data.get("ctxbench_version", ""),
            result_schema_version=data.get("result_schema_version", ""),
            results_dir=data.get("results_dir", ""),
            events=data.get("events", ""),
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


_V = TypeVar("_V")


def _clean(value: _V) -> _V | None:
    """A row's value as a cell records it: NaN (a float column's null) as None."""
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


def gate_cell(result: RunResult) -> BaselineCell:
    """A row as a gate cell: run id, key, identity fields, metrics, retention by probe kind and
    the version of its plug-ins' code (which ``check`` names when it changed)."""
    spec = _spec(result)
    return BaselineCell(
        run_id=result.run_id,
        key=str(spec.key) if spec is not None else cell_key(result),
        trace_id=_clean(result.trace_id),
        strategy=_clean(result.strategy),
        params=_clean(result.params),
        window=_clean(result.window),
        counter=_clean(result.counter),
        estimator=_clean(result.estimator),
        summarizer=_clean(result.summarizer),
        reserved=_clean(result.reserved),
        retention=_clean(result.retention),
        recoverability=_clean(result.recoverability),
        probes=_clean(result.probes),
        input_tokens_total=_clean(result.input_tokens_total),
        cached_input_tokens=_clean(result.cached_input_tokens),
        summary_tokens=_clean(result.summary_tokens),
        cost_usd=_clean(result.cost_usd),
        failed_calls=_clean(result.failed_calls),
        overflow_errors=_clean(result.overflow_errors),
        pairing_violations=_clean(result.pairing_violations),
        calls=_clean(result.calls),
        error=_clean(result.error),
        retention_by_kind=_kinds(result.retention_by_kind),
        plugin=spec.plugin if spec is not None and spec.plugin else "",
    )


def make_baseline(
    results: Iterable[RunResult], results_dir: str = "", events_file: str = ""
) -> Baseline:
    """The baseline of a results table (cells sorted by run_id); ``results_dir`` and
    ``events_file`` (the cells' events, stored beside the baseline by :func:`write_events`)
    are recorded so ``check`` can print the ``ctxbench diff`` command of a regressed cell,
    which works from the events file where the old results are gone."""
    from ctxbench.engine.result import SCHEMA_VERSION
    from ctxbench.version import __version__

    return Baseline(
        cells=tuple(gate_cell(result) for result in sorted(results, key=lambda r: r.run_id)),
        ctxbench_version=__version__,
        result_schema_version=SCHEMA_VERSION,
        results_dir=results_dir,
        events=events_file,
    )


def load_baseline(path: str | Path) -> Baseline:
    """Read and check a baseline file (:meth:`Baseline.from_dict`); problems are ConfigErrors
    naming the file."""
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
    return Baseline.from_dict(data, path=path)


def _text(value: Any) -> str | None:
    return None if isinstance(value, str) else "a string"


def _text_or_null(value: Any) -> str | None:
    return None if value is None or isinstance(value, str) else "a string or null"


def _knobs(value: Any) -> str | None:
    if not isinstance(value, str):
        return _text_or_null(value)
    try:
        knobs = json.loads(value)
    except (ValueError, RecursionError):
        knobs = None
    return None if isinstance(knobs, dict) else "JSON text of an object (the knobs) or null"


def _whole_or_null(value: Any) -> str | None:
    whole = isinstance(value, int) and not isinstance(value, bool) and abs(value) <= INT64_MAX
    return None if value is None or whole else "a whole number or null"


def _number_or_null(value: Any) -> str | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or abs(value) > INT64_MAX
    ):
        return "a finite number or null"
    return None


def _shares(value: Any) -> str | None:
    shares = isinstance(value, dict) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1
        for v in value.values()
    )
    return None if shares else "a table of probe kind = share from 0 to 1"


#: What each field of a baseline cell must be: a check returning the problem (else None).
_FIELD_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "run_id": _text,
    "key": _text,
    **dict.fromkeys(("trace_id", "strategy", "counter", "estimator", "summarizer"), _text_or_null),
    "params": _knobs,
    "window": _whole_or_null,
    "reserved": _whole_or_null,
    **dict.fromkeys(METRICS, _number_or_null),
    "error": _text_or_null,
    KIND_RETENTION: _shares,
    "plugin": _text,
}


def _metric_problem(name: str, value: Any) -> str | None:
    """What a baseline cell's field must be, when ``value`` is not that (else None; a field
    of a newer ctxbench is not read, so anything goes)."""
    check = _FIELD_CHECKS.get(name)
    return check(value) if check is not None else None


def version_warnings(baseline: Baseline) -> list[str]:
    """A baseline recorded by another ctxbench version: its replays may differ for that
    reason alone (a strategy's rule fixed, a counter updated)."""
    from ctxbench.version import __version__

    recorded = baseline.ctxbench_version
    if recorded and recorded != __version__:
        return [
            f"the baseline was recorded by ctxbench {recorded}, this is {__version__}: a "
            "change may come from ctxbench itself; record a new baseline when you upgrade"
        ]
    return []
