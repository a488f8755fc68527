"""Baseline files: one of another schema is refused with a ConfigError naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxbench.engine.events import UnknownEvent
from ctxbench.errors import ConfigError
from ctxbench.gate.baseline import load_baseline


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
    from ctxbench.gate.baseline import version_warnings
    from ctxbench.version import __version__

    assert version_warnings({"ctxbench_version": __version__}) == []
    (warning,) = version_warnings({"ctxbench_version": "0.0.9"})
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
