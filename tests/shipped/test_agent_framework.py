"""``shipped:agent_framework@1.26.0`` on the released wheel. The parity checks port Agent
Framework's own tests of its compaction (``python/packages/core/tests/core/
test_compaction.py``): over ``tool_eviction_threshold`` of the input budget the older
tool-call groups collapse into one ``[Tool results: name: result]`` assistant message each and
the last ``keep_last_tool_call_groups`` stay verbatim, over ``truncation_threshold`` the oldest
groups go, the system message never does. Every embedded scenario and a recorded trace of every source: ``test_every_release.py``."""

from __future__ import annotations

import pytest

from ctxbench.errors import ConfigError
from ctxbench.shipped.agent_framework import ShippedAgentFramework
from ctxbench.shipped.releases import AGENT_FRAMEWORK
from tests.factories import tool_trace
from tests.shipped_cases import (
    needs,
    prompts,
    replay_events,
)

pytestmark = needs(AGENT_FRAMEWORK)
NAME = "shipped:agent_framework@1.26.0"


def test_older_tool_groups_collapse_into_results_summaries() -> None:
    # 8 rounds (len // 4 of each serialized message): past 0.5 of the budget of 8,192 - 1,024
    # the eviction runs; under 0.8 nothing is truncated
    last = prompts(ShippedAgentFramework, tool_trace(8, output="w" * 1_200), 8_192)[-1]
    summaries = [m for m in last if m.content.startswith("[Tool results: ")]
    assert summaries and all(m.role == "assistant" for m in summaries)
    assert summaries[0].content == "[Tool results: bash: " + "w" * 1_200 + " 0.0]"
    verbatim = [m for m in last if m.role == "tool"]
    assert [m.content[-4:] for m in verbatim] == [" 4.0", " 5.0", " 6.0", " 7.0"]
    assert len(summaries) == 4 and last[1].content == "Fix the bug in src/app.py"


def test_keep_last_tool_call_groups_is_the_knob() -> None:
    last = prompts(
        ShippedAgentFramework,
        tool_trace(8, output="w" * 1_200),
        8_192,
        keep_last_tool_call_groups=1,
    )[-1]
    assert [m.content[-4:] for m in last if m.role == "tool"] == [" 7.0"]


def test_over_the_truncation_threshold_the_oldest_groups_go() -> None:
    trace = tool_trace(9, output="w" * 1_200)
    events = replay_events(trace, NAME, 8_192)
    assert {e["layer"] for e in events if e["type"] == "compaction"} == {"context_window"}
    last = prompts(ShippedAgentFramework, trace, 8_192)[-1]
    # truncated down to the eviction threshold: the task and the oldest summaries are gone
    assert [m.role for m in last[:2]] == ["system", "assistant"]
    assert last[1].content.startswith("[Tool results: bash: ") and last[1].content.endswith(" 4.0]")
    assert not [m for m in last if m.content == "Fix the bug in src/app.py"]
    # a summary is capped at 4,096 characters
    big = prompts(ShippedAgentFramework, tool_trace(12, output="w" * 6_000), 32_768)[-1]
    assert [len(m.content) for m in big if m.content.startswith("[Tool results")][:1] == [4_096]


def test_thresholds_are_checked_as_the_release_checks_them() -> None:
    with pytest.raises(ConfigError, match="truncation_threshold"):
        replay_events(tool_trace(2), NAME, 8_192, tool_eviction_threshold=0.9)
