"""Behaviour is unchanged by refactoring: the command line gives the same exit codes, rows,
events and report bytes as ``tests/golden/structure_golden.json``, which
``tests/golden/make_structure_golden.py`` generated before the package layout changed."""

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
        "make_structure_golden", GOLDEN_DIR / "make_structure_golden.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _golden() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN_DIR / "structure_golden.json").read_text("utf-8"))
    return data


def _same(section: str, got: dict[str, Any], want: dict[str, Any]) -> None:
    """Compare key by key, so a failure names the part that changed."""
    assert sorted(got) == sorted(want), section
    for key in sorted(want):
        assert got[key] == want[key], f"{section}.{key} differs from the golden"


def test_the_quickstart_part_matches_the_golden() -> None:
    gen = _generator()
    with tempfile.TemporaryDirectory() as tmp:
        got = gen.sweep_part(Path(tmp))
    _same("sweep", got, _golden()["sweep"])


def test_recorded_replays_and_errors_match_the_golden(shared_traces: Path) -> None:
    gen = _generator()
    want = _golden()
    with tempfile.TemporaryDirectory() as tmp:
        recorded = gen.replay_part(Path(tmp), shared_traces)
        errors = gen.error_part(Path(tmp))
    for source in want["recorded"]:
        _same(f"recorded.{source}", recorded[source], want["recorded"][source])
    _same("errors", errors, want["errors"])
