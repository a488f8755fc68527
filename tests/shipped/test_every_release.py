"""Every shipped strategy on the representative subset: each embedded scenario (its first 24
rounds) and a recorded trace of each shared source replay through the released code without a
replay error, the release announced itself once (a ``shipped`` event) and no prompt was
accepted over the window. The framework-specific behaviour (ports of each framework's own tests
of its compaction) is in ``test_<framework>.py``; a release whose environment is not installed
skips with its install command."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest

from ctxbench.shipped.releases import (
    AGENT_FRAMEWORK,
    AGENTSCOPE,
    DBGPT,
    DEEPAGENTS,
    GEMINI_CLI,
    GOOGLE_ADK,
    HERMES,
    INSPECT,
    LANGCHAIN_SUMMARIZATION,
    OPENAI_AGENTS_TRIMMER,
    PI,
    STRANDS,
    Release,
)
from tests.shipped_cases import (
    SCENARIOS,
    SOURCES,
    check_invariants,
    needs,
    recorded_trace,
    replay_events,
    scenario_trace,
)


class Case(NamedTuple):
    release: Release
    strategy: str
    window: int
    params: dict[str, Any]


#: the window each was written for (the older three at 8k, issue 42's at 16k)
CASES = (
    Case(DBGPT, "shipped:dbgpt@0.8.2", 8_192, {}),
    Case(HERMES, "shipped:hermes@0.19.0", 8_192, {}),
    Case(AGENTSCOPE, "shipped:agentscope@2.0.11", 8_192, {}),
    Case(LANGCHAIN_SUMMARIZATION, "shipped:langchain_summarization@1.5.2", 16_384, {}),
    Case(
        LANGCHAIN_SUMMARIZATION,
        "shipped:langchain_clear_tool_uses@1.5.2",
        16_384,
        {"trigger": 8_000},
    ),
    Case(STRANDS, "shipped:strands@1.62.0", 16_384, {}),
    Case(OPENAI_AGENTS_TRIMMER, "shipped:openai_agents_trimmer@0.24.0", 16_384, {}),
    Case(AGENT_FRAMEWORK, "shipped:agent_framework@1.26.0", 16_384, {}),
    Case(INSPECT, "shipped:inspect@0.3.285", 16_384, {}),
    Case(GOOGLE_ADK, "shipped:google_adk@2.13.0", 16_384, {}),
    Case(DEEPAGENTS, "shipped:deepagents@0.7.32", 16_384, {}),
    Case(GEMINI_CLI, "shipped:gemini_cli@0.61.0", 16_384, {}),
    Case(PI, "shipped:pi@1.6.0", 16_384, {}),
)


def _cases() -> list[Any]:
    return [pytest.param(c, id=c.strategy, marks=needs(c.release)) for c in CASES]


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("case", _cases())
def test_on_every_embedded_scenario(case: Case, scenario: str) -> None:
    check_invariants(replay_events(scenario_trace(scenario), case.strategy, case.window,
                                   **case.params))  # fmt: skip


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("case", _cases())
def test_on_a_recorded_trace_of_every_source(case: Case, shared_traces: Path, source: str) -> None:
    check_invariants(replay_events(recorded_trace(shared_traces, source), case.strategy,
                                   case.window, **case.params))  # fmt: skip
