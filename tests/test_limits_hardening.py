"""Hardening: resource bounds are checked in product, before work starts (issue 22).

Before: a scenario of 100,000 rounds x 50 MB outputs passed the per-field checks, and ``gen``
and ``sweep --dry-run`` ran without end (2.7 GB RSS at 90 s, nothing written). Now the
expected size of one trace (rounds x calls x output size) and the messages a sweep replays
(cells x trace length) have documented limits (ctxbench/limits.py) checked up front.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ctxbench import limits
from ctxbench.formats.canonical import write_traces
from ctxbench.synth.scenario_file import load_scenario
from tests.factories import tool_trace
from tests.hardening import run_main

REPO = Path(__file__).resolve().parents[1]


def huge_scenario(folder: Path, rounds: int, chars: int) -> Path:
    """coding_agent with ``rounds`` rounds whose every tool output has ``chars`` characters."""
    out, section = [], ""
    for line in (REPO / "scenarios" / "coding_agent.toml").read_text("utf-8").splitlines():
        if line.startswith("["):
            section = line
        key = line.split("=")[0].strip()
        if line.startswith("rounds ="):
            line = f"rounds = {rounds}"
        elif section.startswith("[output.") and key in ("median_chars", "min_chars", "max_chars"):
            continue
        elif section.startswith("[output.") and key == "sigma":
            line = f"sigma = 0.0\nmedian_chars = {chars}\nmin_chars = {chars}\nmax_chars = {chars}"
        elif section == "[large]" and key == "probability":
            line = "probability = 0.0"
        out.append(line)
    path = folder / "huge.toml"
    path.write_text("\n".join(out) + "\n", "utf-8")
    return path


@pytest.mark.parametrize(
    ("rounds", "chars"), [(100_000, 50_000_000), (100_000, 20_000), (50, 50_000_000)]
)
def test_a_scenario_too_big_in_product_is_refused_at_once(
    tmp_path: Path, rounds: int, chars: int
) -> None:
    scenario = huge_scenario(tmp_path, rounds, chars)
    (tmp_path / "sweep.toml").write_text(
        f'windows = [32000]\n\n[[traces]]\nscenario = "{scenario}"\n\n[[strategies]]\nname = "none"\n',
        "utf-8",
    )
    for argv in (
        ["gen", str(scenario), "-o", str(tmp_path / "t.jsonl")],
        ["sweep", str(tmp_path / "sweep.toml"), "--dry-run"],
    ):
        started = time.monotonic()
        code, err = run_main(argv)
        assert code == 2 and err.startswith("error: ") and "Traceback" not in err, err
        assert "MAX_TRACE_CHARS" in err.splitlines()[0] and str(scenario) in err.splitlines()[0]
        assert time.monotonic() - started < 10  # before: no end
    assert not (tmp_path / "t.jsonl").exists()


def test_the_embedded_scenarios_are_far_below_the_limit() -> None:
    for path in sorted((REPO / "scenarios").glob("*.toml")):
        if path.name == "quickstart.toml":  # a sweep file
            continue
        assert load_scenario(path).expected_chars() < limits.MAX_TRACE_CHARS / 100, path


def test_a_scenario_at_the_limit_is_accepted(tmp_path: Path) -> None:
    per_round = 10_000
    rounds = limits.MAX_TRACE_CHARS // per_round // 2
    scenario = load_scenario(huge_scenario(tmp_path, min(rounds, 100_000), per_round))
    assert scenario.expected_chars() <= limits.MAX_TRACE_CHARS


def test_a_sweep_over_its_message_budget_is_refused_before_any_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_SWEEP_MESSAGES", 500)
    write_traces(tmp_path / "traces.jsonl", [tool_trace(20, trace_id=f"t{i}") for i in range(4)])
    (tmp_path / "sweep.toml").write_text(
        'windows = [3000, 4000, 5000]\nreserved = [0]\ncounters = ["chars4"]\n\n'
        '[[traces]]\npath = "traces.jsonl"\n\n[[strategies]]\nname = "none"\n',
        "utf-8",
    )
    for argv in (["--dry-run"], ["-o", str(tmp_path / "out"), "-q", "-j", "1"]):
        code, err = run_main(["sweep", str(tmp_path / "sweep.toml"), *argv])
        assert code == 2 and "MAX_SWEEP_MESSAGES" in err.splitlines()[0], err
    assert (
        not list((tmp_path / "out").glob("cells.jsonl"))
        or not (tmp_path / "out" / "cells.jsonl").stat().st_size
    )
