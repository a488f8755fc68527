"""``shipped:openai_agents_trimmer@0.24.0`` on the released wheel. The parity checks port the
SDK's own tests of the trimmer (``tests/extensions/test_tool_output_trimmer.py``): outputs
over ``max_output_chars`` before the ``recent_turns``-th user message from the end become the
``[Trimmed: ...]`` preview, recent ones and short ones stay, ``trimmable_tools`` limits which
tools trim, fewer user messages than ``recent_turns`` trims nothing (a single-task agent trace
is never trimmed). Every embedded scenario and a recorded trace of every source: ``test_every_release.py``."""

from __future__ import annotations

from typing import Any

from ctxbench.shipped.openai_agents import ShippedOpenAIAgentsTrimmer
from ctxbench.shipped.releases import OPENAI_AGENTS_TRIMMER
from ctxbench.trace import Message, Trace
from tests.factories import tool_round, tool_trace
from tests.shipped_cases import (
    needs,
    prompts,
    replay_events,
)

pytestmark = needs(OPENAI_AGENTS_TRIMMER)
NAME = "shipped:openai_agents_trimmer@0.24.0"


def _last_prompt(trace: Trace, **params: Any) -> tuple[Message, ...]:
    return prompts(ShippedOpenAIAgentsTrimmer, trace, 65_536, **params)[-1]


def _conversation(turns: int, output: str) -> Trace:
    """``turns`` user turns of two tool rounds each, then a last user turn (its answer is the
    last call, which sees every result)."""
    msgs = [Message("system", "You are a careful agent.")]
    for t in range(turns):
        msgs += [Message("user", f"task {t}"), *tool_round(2 * t, output=output),
                 *tool_round(2 * t + 1, output=output), Message("assistant", f"done {t}")]  # fmt: skip
    msgs += [Message("user", "one more thing"), Message("assistant", "sure")]
    return Trace("turns", tuple(msgs))


def test_old_large_outputs_become_the_preview_and_recent_ones_stay() -> None:
    big = "r" * 1_000
    results = [m.content for m in _last_prompt(_conversation(3, big)) if m.role == "tool"]
    # 3 turns x 2 rounds; the last 2 user messages ("task 2", "one more thing") bound the recent
    preview = f"[Trimmed: bash output — {len(big) + 4} chars → 200 char preview]\n" + "r" * 200
    assert results[:4] == [preview + "..."] * 4
    assert results[4:] == [f"{big} 4.0", f"{big} 5.0"]


def test_short_outputs_and_untrimmable_tools_stay() -> None:
    assert all(
        not m.content.startswith("[Trimmed")
        for m in _last_prompt(_conversation(3, "short"))
        if m.role == "tool"
    )
    kept = _last_prompt(_conversation(3, "r" * 1_000), trimmable_tools=("search",))
    assert all(not m.content.startswith("[Trimmed") for m in kept if m.role == "tool")


def test_a_single_task_trace_is_never_trimmed() -> None:
    # _find_recent_boundary: fewer user messages than recent_turns -> boundary 0
    events = replay_events(tool_trace(10, output="q" * 5_000), NAME, 65_536)
    assert not [e for e in events if e["type"] == "compaction"]
