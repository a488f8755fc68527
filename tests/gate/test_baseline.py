"""Baseline files: typed cells and documents that write the same bytes as they read; one of
another schema, or with a value of the wrong type, is refused with a ConfigError naming the
key and the fix; one recorded by an older ctxbench (before names, per-kind retention, plug-in
versions) still loads and checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxbench.engine.events import UnknownEvent
from ctxbench.engine.result import RunResult
from ctxbench.errors import ConfigError
from ctxbench.gate.baseline import (
    BASELINE_SCHEMA,
    IDENTITY,
    METRICS,
    Baseline,
    BaselineCell,
    load_baseline,
    make_baseline,
    version_warnings,
)
from ctxbench.gate.check import Tolerances, check
from ctxbench.probes.kind_limits import KindLimits
from ctxbench.results import ResultsDir
from ctxbench.testing import run_sweep

SWEEP = """
windows = [16384]
counters = ["chars4"]
[[traces]]
scenario = "coding_agent"
[[strategies]]
name = "none"
[[strategies]]
name = "sliding_window"
"""


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[RunResult]:
    folder = tmp_path_factory.mktemp("baseline")
    (folder / "sweep.toml").write_text(SWEEP, "utf-8")
    return ResultsDir(run_sweep(folder / "sweep.toml", folder / "results")).results()


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc), "utf-8")
    return path


def test_a_baseline_reads_back_equal_and_writes_the_same_bytes(
    rows: list[RunResult], tmp_path: Path
) -> None:
    doc = make_baseline(rows, "results", "b.events.jsonl.gz")
    path = tmp_path / "b.json"
    path.write_text(doc.text(), "utf-8")
    loaded = load_baseline(path)
    assert loaded == doc and loaded.text() == path.read_text("utf-8")
    assert [c.run_id for c in doc.cells] == sorted(r.run_id for r in rows)
    first = doc.cells[0].to_dict()
    # no plug-ins ran: no `plugin`
    assert list(first) == ["run_id", "key", *IDENTITY, *METRICS, "retention_by_kind"]


def test_a_baseline_recorded_before_names_kinds_and_plug_in_versions_still_loads_and_checks(
    rows: list[RunResult], tmp_path: Path
) -> None:
    """Before ``--match-by`` (5a8a596) a cell had its run id, key and metrics; before issue 46
    no ``retention_by_kind``; no events file or results folder recorded."""
    new = make_baseline(rows).to_dict()
    dropped = (*IDENTITY, "retention_by_kind", "plugin")
    cells = [{k: v for k, v in c.items() if k not in dropped} for c in new["cells"]]
    old = write(tmp_path / "old.json", {"schema": BASELINE_SCHEMA, "cells": cells})
    doc = load_baseline(old)
    assert all(c.retention_by_kind is None and c.window is None for c in doc.cells)
    assert [c.retention for c in doc.cells] == [c["retention"] for c in cells]
    assert (doc.events, doc.results_dir, version_warnings(doc)) == ("", "", [])
    report = check(rows, doc, Tolerances(kinds=KindLimits({"safety": 0.0})))
    assert not report.failed and {c.matched_by for c in report.cells} == {"run_id"}
    with pytest.raises(ConfigError, match="records no retention by probe kind"):
        check(rows, doc, Tolerances(kinds=KindLimits({}, {"constraint": 0.0})))


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("trace_id", 3, "a string or null"),
        ("window", "16k", "a whole number or null"),
        ("reserved", True, "a whole number or null"),
        ("params", "{", "JSON text of an object (the knobs) or null"),
        ("plugin", None, "a string"),
        ("retention", "high", "a finite number or null"),
        ("retention_by_kind", {"safety": 2}, "a table of probe kind = share from 0 to 1"),
    ],
)
def test_a_cell_value_of_the_wrong_type_names_its_cell_and_the_fix(
    rows: list[RunResult], tmp_path: Path, name: str, value: Any, problem: str
) -> None:
    doc = make_baseline(rows).to_dict()
    doc["cells"][1][name] = value
    path = write(tmp_path / "b.json", doc)
    with pytest.raises(ConfigError) as info:
        load_baseline(path)
    assert info.value.key == f"cells[1].{name}" and info.value.path == str(path)
    assert info.value.message == f"{name} must be {problem}, not {value!r}"
    assert "record a new baseline" in str(info.value.hint)


def test_a_cell_field_of_a_newer_ctxbench_is_ignored(rows: list[RunResult]) -> None:
    cell = make_baseline(rows).cells[0]
    assert BaselineCell.from_dict({**cell.to_dict(), "novel": [1]}) == cell


def test_a_baseline_of_another_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"schema": "other/1", "cells": []}), "utf-8")
    with pytest.raises(ConfigError, match="schema"):
        load_baseline(path)


def test_a_baseline_of_another_result_schema_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    doc = {"schema": "ctxbench.baseline/1", "result_schema_version": "ctxbench.result/0"}
    path.write_text(json.dumps({**doc, "cells": []}), "utf-8")
    with pytest.raises(ConfigError) as info:
        load_baseline(path)
    assert info.value.key == "result_schema_version" and "record a new baseline" in str(info.value)


def test_a_baseline_of_another_ctxbench_version_is_warned_about() -> None:
    from ctxbench.version import __version__

    assert version_warnings(Baseline(cells=(), ctxbench_version=__version__)) == []
    (warning,) = version_warnings(Baseline(cells=(), ctxbench_version="0.0.9"))
    assert f"recorded by ctxbench 0.0.9, this is {__version__}" in warning


def test_the_events_beside_a_baseline_are_the_same_bytes_for_the_same_events(
    tmp_path: Path,
) -> None:
    from ctxbench.divergence import read_events
    from ctxbench.gate.baseline import events_path, write_events

    events = [
        (run, UnknownEvent(name="strategy.note", payload={"used": used}, call=0, step=0))
        for run, used in (("r1", 3), ("r2", 4))
    ]
    where = events_path(tmp_path / "baseline.json")
    assert where.name == "baseline.events.jsonl.gz"
    assert write_events(events, where) == 2
    first = where.read_bytes()
    write_events(events, where)
    assert where.read_bytes() == first
    run, read = read_events(where, "r2")
    assert run == "r2" and read == [events[1][1]]
