"""Typed events and rows read as ``RunResult`` change no byte: the command line writes the same
events and rows, and its readers print the same reports, baselines, checks, recommendations
and diffs as ``tests/golden/events_golden.json``, which ``tests/golden/make_events_golden.py``
generated before events became classes."""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.golden.golden_tools import generator, golden, same


def _generator() -> ModuleType:
    return generator("make_events_golden")


def _golden() -> dict[str, Any]:
    return golden("events_golden.json")


def test_the_quickstart_scenarios_write_and_read_the_golden_bytes() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        got = _generator().sweep_part(Path(tmp))
    same("sweep", got, _golden()["sweep"])


def test_recorded_traces_write_the_golden_bytes(shared_traces: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        got = _generator().recorded_part(Path(tmp), shared_traces)
    same("recorded", got, _golden()["recorded"])
