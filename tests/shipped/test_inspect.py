"""``shipped:inspect@0.3.285`` on the released wheel. The parity checks port inspect's own
tests of its compaction (``tests/model/test_compaction*.py``): nothing happens under the
threshold (a fraction of the model's input tokens), over it ``CompactionSummary`` sends the
prefix (system message and the sample's input) then the summary and appends the summary to the
history, ``CompactionTrim`` keeps ``preserve`` of the messages with the prefix in front,
``CompactionEdit`` clears old tool results but the ``keep_tool_uses`` newest; then a run on
every embedded scenario and a recorded trace of every shared source."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.engine.context import ReplayContext
from ctxbench.engine.strategy import ProviderCall
from ctxbench.shipped.inspect_ai import ShippedInspect
from ctxbench.shipped.releases import INSPECT
from ctxbench.trace import Message, Trace
from tests.factories import tool_trace
from tests.shipped_cases import (
    SCENARIOS,
    SOURCES,
    check_invariants,
    needs,
    recorded_trace,
    replay_events,
    scenario_trace,
)

pytestmark = needs(INSPECT)
NAME = "shipped:inspect@0.3.285"
#: a tool output of about 1,000 tokens (a repeated letter is a few tokens only)
OUTPUT = " ".join(f"line{i} value={i * 7}" for i in range(160))


class Capturing(ShippedInspect):
    sent: ClassVar[list[tuple[Message, ...]]] = []

    def after_call(self, call: ProviderCall, ctx: ReplayContext) -> None:
        super().after_call(call, ctx)
        Capturing.sent.append(tuple(ctx.view.messages))


def _prompts(trace: Trace, window: int, **params: Any) -> list[tuple[Message, ...]]:
    Capturing.sent = []
    name = f"{__name__}:Capturing"
    run_spec(resolve_spec(RunSpec(trace.id, trace.content_hash, name, params, window)), trace)
    return list(Capturing.sent)


def test_under_the_threshold_nothing_happens() -> None:
    events = replay_events(tool_trace(4, output=OUTPUT), NAME, 65_536)
    assert not [e for e in events if e["type"] in ("compaction", "summary")]


def test_the_summary_follows_the_prefix_and_joins_the_history() -> None:
    trace = tool_trace(14, output=OUTPUT)
    events = replay_events(trace, NAME, 8_192)
    summaries = [e for e in events if e["type"] == "summary"]
    assert summaries and all(s["ok"] and s["layer"] == "summary" for s in summaries)
    prompts = _prompts(trace, 8_192)
    first = next(p for p in prompts if len(p) < 8)
    assert [m.content for m in first[:2]] == [
        "You are a careful agent.",
        "Fix the bug in src/app.py",
    ]
    # every later prompt keeps the summary (it is in the history now) until the next one
    assert len(prompts[-1]) < len(trace.messages) // 2


def test_trim_keeps_the_preserved_share_behind_the_prefix() -> None:
    last = _prompts(tool_trace(14, output=OUTPUT), 8_192, strategy="trim", preserve=0.5)[-1]
    assert [m.role for m in last[:2]] == ["system", "user"]
    assert not [m for m in last if m.content.endswith(" 0.0")]


def test_edit_clears_old_results_but_the_newest() -> None:
    last = _prompts(tool_trace(14, output=OUTPUT), 8_192, strategy="edit", keep_tool_uses=2)[-1]
    results = [m.content for m in last if m.role == "tool"]
    assert len(results) == 14  # a cleared result stays a tool result: the pairs hold
    removed = results.count("(Tool result removed)")
    # the oldest cleared at a compaction, the keep_tool_uses newest of that moment kept; the
    # later ones joined the compacted input unprocessed
    assert removed >= 2 and results[:removed] == ["(Tool result removed)"] * removed
    assert results[removed:] == [f"{OUTPUT} {i}.0" for i in range(removed, 14)]
    assert len(results[removed:]) >= 2


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_on_every_embedded_scenario(scenario: str) -> None:
    check_invariants(replay_events(scenario_trace(scenario), NAME, 16_384))


@pytest.mark.parametrize("source", SOURCES)
def test_on_a_recorded_trace_of_every_source(shared_traces: Path, source: str) -> None:
    check_invariants(replay_events(recorded_trace(shared_traces, source), NAME, 16_384))
