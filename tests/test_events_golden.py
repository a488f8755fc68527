"""Typed events and rows read as ``RunResult`` change no byte: the command line writes the same
events and rows, and its readers print the same reports, baselines, checks, recommendations
and diffs as ``tests/golden/events_golden.json``, which ``tests/golden/make_events_golden.py``
generated before events became classes."""

from __future__ import annotations

import importlib.util
import json
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

GOLDEN_DIR = Path(__file__).with_name("golden")


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_events_golden", GOLDEN_DIR / "make_events_golden.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _golden() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN_DIR / "events_golden.json").read_text("utf-8"))
    return data


def _same(section: str, got: dict[str, Any], want: dict[str, Any]) -> None:
    """Compare key by key, so a failure names the run or output that changed."""
    assert sorted(got) == sorted(want), section
    for key in sorted(want):
        if isinstance(want[key], dict) and isinstance(got[key], dict):
            _same(f"{section}.{key}", got[key], want[key])
        else:
            assert got[key] == want[key], f"{section}.{key} differs from the golden"


def test_the_quickstart_scenarios_write_and_read_the_golden_bytes() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        got = _generator().sweep_part(Path(tmp))
    _same("sweep", got, _golden()["sweep"])


def test_recorded_traces_write_the_golden_bytes(shared_traces: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        got = _generator().recorded_part(Path(tmp), shared_traces)
    _same("recorded", got, _golden()["recorded"])
