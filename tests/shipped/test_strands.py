"""``shipped:strands@1.62.0`` on the released wheel. The parity checks port Strands' own tests
of its conversation managers (``tests/strands/agent/conversation_manager/``,
``test_summarizing_conversation_manager.py``, ``test_sliding_window_conversation_manager.py``):
by default nothing happens before an overflow, the overflow summarizes the oldest
``summary_ratio`` of the messages into one user-role summary and the call is retried, the
proactive threshold compacts before the call instead, the sliding window trims to
``window_size`` when an invocation ends. Every embedded scenario and a recorded trace of every source: ``test_every_release.py``."""

from __future__ import annotations

from typing import Any

import pytest

from ctxbench.errors import ConfigError
from ctxbench.shipped.releases import STRANDS
from ctxbench.trace import Message, Trace
from tests.factories import tool_round, tool_trace
from tests.shipped_cases import (
    needs,
    replay_events,
)

pytestmark = needs(STRANDS)
NAME = "shipped:strands@1.62.0"


#: a tool output of about 1,000 tokens (a repeated letter is a few tokens only)
OUTPUT = " ".join(f"line{i} value={i * 7}" for i in range(160))


def _of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def test_the_overflow_summarizes_the_oldest_messages_and_retries() -> None:
    events = replay_events(tool_trace(14, output=OUTPUT), NAME, 8_192)
    compactions = _of(events, "compaction")
    assert compactions and {e["layer"] for e in compactions} == {"summarizing"}
    first = compactions[0]
    # reactive only (proactive_compression None): the provider rejected the call first
    rejected = [e for e in _of(events, "provider.call") if not e["ok"]]
    assert rejected and rejected[0]["call"] == first["call"]
    summaries = _of(events, "summary")
    assert summaries and all(s["ok"] and s["layer"] == "summarizing" for s in summaries)
    # the retried call went through: the same call has an accepted attempt after the summary
    assert any(e["ok"] and e["call"] == first["call"] for e in _of(events, "provider.call"))


def test_proactive_compression_compacts_before_the_call() -> None:
    events = replay_events(tool_trace(14, output=OUTPUT), NAME, 8_192, proactive_compression=0.7)
    first = _of(events, "compaction")[0]
    assert not [
        e for e in _of(events, "provider.call") if not e["ok"] and e["call"] <= first["call"]
    ]


def test_the_sliding_window_trims_when_an_invocation_ends() -> None:
    msgs = [Message("system", "s")]
    for t in range(6):
        msgs += [Message("user", f"task {t}"), *tool_round(t), Message("assistant", f"done {t}")]
    msgs += [Message("user", "last"), Message("assistant", "ok")]
    events = replay_events(Trace("turns", tuple(msgs)), NAME, 65_536, manager="sliding_window",
                           window_size=6)  # fmt: skip
    infos = [e["info"] for e in _of(events, "shipped.call") if e["info"]]
    # apply_management at each invocation's end: never more than window_size + one turn's
    # messages, and the removed count grows
    assert max(i["messages"] for i in infos) <= 6 + 3
    assert infos[-1]["removed_message_count"] > 0
    # each trim is a compaction of the call that starts the next invocation, not a re-assembly
    trims = _of(events, "compaction")
    assert trims and {(e["layer"], e["note"]) for e in trims} == {
        ("sliding_window", "invocation end")
    }


def test_the_proactive_threshold_is_checked_as_the_release_checks_it() -> None:
    with pytest.raises(ConfigError, match="proactive_compression"):
        replay_events(tool_trace(2), NAME, 8_192, proactive_compression=1.5)
