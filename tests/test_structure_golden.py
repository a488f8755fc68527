"""Behaviour is unchanged by refactoring: the command line gives the same exit codes, rows,
events and report bytes as ``tests/golden/structure_golden.json``, which
``tests/golden/make_structure_golden.py`` generated before the package layout changed."""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.golden.golden_tools import generator, golden, same


def _generator() -> ModuleType:
    return generator("make_structure_golden")


def _golden() -> dict[str, Any]:
    return golden("structure_golden.json")


def test_the_quickstart_part_matches_the_golden() -> None:
    gen = _generator()
    with tempfile.TemporaryDirectory() as tmp:
        got = gen.sweep_part(Path(tmp))
    same("sweep", got, _golden()["sweep"])


def test_recorded_replays_and_errors_match_the_golden(shared_traces: Path) -> None:
    gen = _generator()
    want = _golden()
    with tempfile.TemporaryDirectory() as tmp:
        recorded = gen.replay_part(Path(tmp), shared_traces)
        errors = gen.error_part(Path(tmp))
    for source in want["recorded"]:
        same(f"recorded.{source}", recorded[source], want["recorded"][source])
    same("errors", errors, want["errors"])
