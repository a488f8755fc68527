"""``ctxbench parity``: call-by-call agreement of two replays, the first divergence with both
sides' state, and the command's output (reproductions only: no framework needed)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from click.testing import CliRunner

from ctxbench import parity
from ctxbench.cli import cli
from ctxbench.engine.context import ReplayContext
from ctxbench.engine.strategy import Strategy
from ctxbench.formats.canonical import write_traces
from ctxbench.parity import CallState, Side, compare
from tests.shipped_cases import scenario_trace


def state(call: int, kept: tuple[int, ...], *, layers: tuple[str, ...] = (), tokens: int = 100,
          failed: bool = False) -> CallState:  # fmt: skip
    return CallState(call, kept, layers, tokens, failed, "normal", tokens, 1000)


def test_agreement_counts_each_criterion_and_names_the_first_divergence() -> None:
    a = Side("a", (state(0, (0, 1)), state(1, (0, 1, 2), tokens=1000),
                   state(2, (0, 2, 3), layers=("x",)), state(3, (0, 3), failed=True)))  # fmt: skip
    b = Side("b", (state(0, (0, 1)), state(1, (0, 1, 2), tokens=1040),
                   state(2, (0, 1, 2, 3)), state(3, (0, 3))))  # fmt: skip
    result = compare("t", a, b, window=8192, tolerance=0.05)
    assert (result.calls, result.agreeing) == (4, 2)
    assert (result.same_compacted, result.same_kept, result.tokens_within, result.same_failed) == (
        3, 3, 4, 3)  # fmt: skip
    first = result.first_divergence
    assert first is not None and first["call"] == 2
    assert first["differs"] == ["compacted", "kept"]
    assert first["only_shipped_kept"] == [[1, 1]] and first["only_reproduction_kept"] == []
    assert first["reproduction"]["layers"] == ("x",)
    assert result.agreement == 0.5


def test_tokens_outside_the_tolerance_disagree() -> None:
    a, b = Side("a", (state(0, (0,), tokens=1000),)), Side("b", (state(0, (0,), tokens=1100),))
    assert compare("t", a, b, window=1, tolerance=0.05).tokens_within == 0
    assert compare("t", a, b, window=1, tolerance=0.10).tokens_within == 1


def test_a_strategy_agrees_with_itself_and_differs_from_none_where_it_compacts() -> None:
    trace = scenario_trace("coding_agent", 40, seed=1)
    same = parity.parity([trace], "sliding_window", "sliding_window", window=16_384)[0]
    assert same.calls == len(trace.call_indices) and same.agreeing == same.calls
    versus = parity.parity([trace], "sliding_window", "none", window=16_384)[0]
    first = versus.first_divergence
    assert first is not None and "compacted" in first["differs"]
    assert first["reproduction"]["layers"] and not first["shipped"]["layers"]
    assert versus.same_kept < versus.calls  # later, sliding_window drops rounds that none keeps
    summary = parity.overall([same, versus])
    assert summary["identical_traces"] == 1 and summary["calls"] == 2 * same.calls


class Exploding(Strategy):
    """Raises at the third call, like a driver that crashes mid-trace."""

    def before_call(self, ctx: ReplayContext) -> None:
        if ctx.call == 2:
            raise RuntimeError("driver crashed")


def test_a_side_that_raises_is_reported_and_the_other_traces_go_on() -> None:
    traces = [scenario_trace("sql_agent", 6), scenario_trace("coding_agent", 6)]
    results = parity.parity(traces, "dbgpt", "tests.test_parity:Exploding", window=8192)
    assert [r.error for r in results] == ["RuntimeError: driver crashed"] * 2
    assert parity.overall(results)["errors"] == 2


def test_the_command_prints_json_per_trace_and_overall(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    write_traces(traces, [scenario_trace("coding_agent", 30), scenario_trace("sql_agent", 20)])
    out = CliRunner().invoke(
        cli, ["parity", "dbgpt", "sliding_window", str(traces), "-w", "8192", "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert [t["trace_id"] for t in data["traces"]] == ["coding_agent-s0-0", "sql_agent-s0-0"]
    assert data["overall"]["calls"] == sum(t["calls"] for t in data["traces"])
    text = CliRunner().invoke(cli, ["parity", "dbgpt", "sliding_window", str(traces), "-w", "8192"])
    assert "first divergence at call" in text.output and text.output.count("overall:") == 1


def test_the_first_compaction_is_the_first_layer_that_dropped_or_rewrote() -> None:
    note = dataclasses.replace(state(0, (0,), layers=("runtime_state",)), reduced=False)
    cut = dataclasses.replace(state(2, (2,), layers=("compression",)), reduced=True)
    a = Side("a", (note, state(1, (0, 1)), cut, state(3, (2, 3), failed=True)))
    b = Side("b", (note, dataclasses.replace(state(1, (1,), layers=("c",)), reduced=True),
                   cut, state(3, (2, 3), failed=True)))  # fmt: skip
    result = compare("t", a, b, window=8192)
    assert result.first_compaction == (2, 1) and result.failed == (1, 1)
    same = compare("t", a, a, window=8192)
    summary = parity.overall([result, same])
    assert summary["same_first_compaction"] == 0.5 and summary["failed_calls"] == [2, 2]
