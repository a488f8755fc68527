"""``shipped:pi@1.6.0`` on the released npm package, with the machine's node. The checks port
pi's own tests of its compaction (``packages/coding-agent/test/compaction.test.ts``:
``shouldCompact`` past ``contextWindow - reserveTokens``, ``findCutPoint`` keeping about
``keepRecentTokens`` and never cutting at a tool result, the summary as a user message between
``COMPACTION_SUMMARY_PREFIX`` and its suffix) and the session's one compact-and-retry after an
overflow."""

from __future__ import annotations

from ctxbench.shipped.pi import ShippedPi
from ctxbench.shipped.releases import PI
from ctxbench.trace import Message, Trace
from tests.factories import tool_round, tool_trace
from tests.shipped_cases import needs, prompts, replay_events

pytestmark = needs(PI)
NAME = "shipped:pi@1.6.0"
PREFIX = "The conversation history before this point was compacted into the following summary:"


def test_past_the_window_minus_the_reserve_the_oldest_turns_become_the_summary() -> None:
    trace = tool_trace(40, output="w " * 2_000)
    events = replay_events(trace, NAME, 65_536)
    compactions = [e for e in events if e["type"] == "compaction"]
    assert compactions
    calls = {e["call"]: e["info"] for e in events if e["type"] == "shipped.call" and e["info"]}
    for c in compactions:  # pi's own count was over 65,536 - 16,384 when it compacted
        assert calls[c["call"]]["pi_tokens"] > 65_536 - 16_384
        assert c["note"].startswith("threshold: ")
    before = compactions[0]["call"] - 1
    assert calls[before]["pi_tokens"] <= 65_536 - 16_384  # and not one call earlier
    sent = prompts(ShippedPi, trace, 65_536)
    after = next(p for p in sent if any(m.content.startswith(PREFIX) for m in p))
    assert after[0].role == "system" and after[1].role == "user"
    assert after[1].content.startswith(PREFIX) and after[1].content.endswith("</summary>")
    # the kept part starts at an assistant turn (its tool results follow), never a tool result
    assert after[2].role == "assistant" and after[2].tool_calls


def test_keep_recent_tokens_is_what_stays() -> None:
    trace = tool_trace(40, output="w " * 2_000)
    default = [p for p in prompts(ShippedPi, trace, 65_536) if p[1].content.startswith(PREFIX)]
    fewer = [
        p
        for p in prompts(ShippedPi, trace, 65_536, keep_recent_tokens=5_000)
        if p[1].content.startswith(PREFIX)
    ]
    assert default and fewer and len(fewer[0]) < len(default[0])


def test_a_window_at_or_under_the_reserve_keeps_everything_and_overflows() -> None:
    # 16,384 - 16,384 = 0: over the threshold at once, but 20,000 estimated tokens are kept and
    # this history's estimate stays under them, so nothing is left to summarize; the overflow's
    # compact-and-retry finds nothing either
    events = replay_events(tool_trace(30, output="w " * 1_200), NAME, 16_384)
    assert not [e for e in events if e["type"] == "compaction"]
    assert [e for e in events if e["type"] == "call.failed"]


def test_an_overflow_compacts_once_and_retries() -> None:
    # a large reserve-free window on a prompt the provider rejects: the reserve is 0, the keep
    # small, so the threshold never fires and the overflow path compacts
    events = replay_events(
        tool_trace(30, output="w " * 1_200), NAME, 16_384, reserve_tokens=0,
        keep_recent_tokens=2_000, context_window=1_000_000,
    )  # fmt: skip
    compactions = [e for e in events if e["type"] == "compaction"]
    assert compactions and all("overflow" in c["note"] for c in compactions)
    retried = [e for e in events if e["type"] == "provider.call" and e["attempt"] == 1]
    assert retried and all(e["ok"] for e in retried)


def test_a_cut_inside_a_turn_summarizes_the_history_and_the_turn_prefix_apart() -> None:
    # compaction.test.ts "split turn": the history before the turn and the turn's own prefix
    # are two summary calls, merged under "**Turn Context (split turn):**"
    msgs = [Message("system", "You are a careful agent.")]
    for t in range(4):
        msgs.append(Message("user", f"task {t}"))
        for i in range(6):
            msgs += tool_round(10 * t + i, output="w " * 3_000)
        msgs.append(Message("assistant", f"done {t}"))
    trace = Trace("turns", tuple(msgs))
    events = replay_events(trace, NAME, 65_536)
    layers = [e["layer"] for e in events if e["type"] == "summary"]
    assert "compaction" in layers and "turn_prefix" in layers
    sent = prompts(ShippedPi, trace, 65_536)
    summary = next(m for p in sent for m in p if m.content.startswith(PREFIX))
    assert "**Turn Context (split turn):**" in summary.content
