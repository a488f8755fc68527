"""``shipped:google_adk@2.13.0`` on the released wheel. The parity checks port ADK's own tests
of its event compaction (``tests/unittests/apps/test_compaction.py``): the request processor
compacts once the last reported prompt tokens reach ``token_threshold``, the summary replaces
the compacted range and the last ``event_retention_size`` events stay raw, no call is cut from
its response, nothing compacts under the threshold. Every embedded scenario and a recorded trace of every source: ``test_every_release.py``."""

from __future__ import annotations

import pytest

from ctxbench.errors import ConfigError
from ctxbench.shipped.google_adk import ShippedGoogleAdk
from ctxbench.shipped.releases import GOOGLE_ADK
from tests.factories import tool_trace
from tests.shipped_cases import (
    needs,
    prompts,
    replay_events,
)

pytestmark = needs(GOOGLE_ADK)
NAME = "shipped:google_adk@2.13.0"
#: a tool output of about 1,000 tokens (a repeated letter is a few tokens only)
OUTPUT = " ".join(f"line{i} value={i * 7}" for i in range(160))


def test_the_request_processor_compacts_at_the_reported_prompt_tokens() -> None:
    trace = tool_trace(10, output=OUTPUT)
    events = replay_events(trace, NAME, 65_536, token_threshold=4_000, event_retention_size=4)
    accepted = {e["call"]: e["true_tokens"] for e in events if e["type"] == "provider.call"}
    first = next(e for e in events if e["type"] == "compaction")
    assert first["layer"] == "request_processor"
    # the usage on the last model event is the previous call's prompt: it reached 4,000
    assert accepted[first["call"] - 1] >= 4_000 > accepted[first["call"] - 2]
    prompt = prompts(
        ShippedGoogleAdk, trace, 65_536, token_threshold=4_000, event_retention_size=4
    )[first["call"]]
    # system (the instruction), the summary, then the retained raw events, pairs whole
    assert prompt[0].role == "system" and prompt[1].role == "assistant"
    assert prompt[2].role == "assistant" and prompt[2].tool_calls
    assert len(prompt) == 2 + 4  # the 4 retained events, the newest result among them


def test_under_the_threshold_nothing_compacts() -> None:
    events = replay_events(tool_trace(6, output=OUTPUT), NAME, 65_536)
    assert not [e for e in events if e["type"] in ("compaction", "summary")]


def test_the_sliding_window_knobs_go_together() -> None:
    with pytest.raises(ConfigError, match="overlap_size"):
        replay_events(tool_trace(2), NAME, 8_192, compaction_interval=2)
