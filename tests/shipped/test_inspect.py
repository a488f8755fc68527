"""``shipped:inspect@0.3.285`` on the released wheel. The parity checks port inspect's own
tests of its compaction (``tests/model/test_compaction*.py``): nothing happens under the
threshold (a fraction of the model's input tokens), over it ``CompactionSummary`` sends the
prefix (system message and the sample's input) then the summary and appends the summary to the
history, ``CompactionTrim`` keeps ``preserve`` of the messages with the prefix in front,
``CompactionEdit`` clears old tool results but the ``keep_tool_uses`` newest. Every embedded scenario and a recorded trace of every source: ``test_every_release.py``."""

from __future__ import annotations

from ctxbench.shipped.inspect_ai import ShippedInspect
from ctxbench.shipped.releases import INSPECT
from tests.factories import tool_trace
from tests.shipped_cases import (
    needs,
    prompts,
    replay_events,
)

pytestmark = needs(INSPECT)
NAME = "shipped:inspect@0.3.285"
#: a tool output of about 1,000 tokens (a repeated letter is a few tokens only)
OUTPUT = " ".join(f"line{i} value={i * 7}" for i in range(160))


def test_under_the_threshold_nothing_happens() -> None:
    events = replay_events(tool_trace(4, output=OUTPUT), NAME, 65_536)
    assert not [e for e in events if e["type"] in ("compaction", "summary")]


def test_the_summary_follows_the_prefix_and_joins_the_history() -> None:
    trace = tool_trace(14, output=OUTPUT)
    events = replay_events(trace, NAME, 8_192)
    summaries = [e for e in events if e["type"] == "summary"]
    assert summaries and all(s["ok"] and s["layer"] == "summary" for s in summaries)
    sent = prompts(ShippedInspect, trace, 8_192)
    first = next(p for p in sent if len(p) < 8)
    assert [m.content for m in first[:2]] == [
        "You are a careful agent.",
        "Fix the bug in src/app.py",
    ]
    # every later prompt keeps the summary (it is in the history now) until the next one
    assert len(sent[-1]) < len(trace.messages) // 2


def test_trim_keeps_the_preserved_share_behind_the_prefix() -> None:
    last = prompts(
        ShippedInspect, tool_trace(14, output=OUTPUT), 8_192, strategy="trim", preserve=0.5
    )[-1]
    assert [m.role for m in last[:2]] == ["system", "user"]
    assert not [m for m in last if m.content.endswith(" 0.0")]


def test_edit_clears_old_results_but_the_newest() -> None:
    last = prompts(
        ShippedInspect, tool_trace(14, output=OUTPUT), 8_192, strategy="edit", keep_tool_uses=2
    )[-1]
    results = [m.content for m in last if m.role == "tool"]
    assert len(results) == 14  # a cleared result stays a tool result: the pairs hold
    removed = results.count("(Tool result removed)")
    # the oldest cleared at a compaction, the keep_tool_uses newest of that moment kept; the
    # later ones joined the compacted input unprocessed
    assert removed >= 2 and results[:removed] == ["(Tool result removed)"] * removed
    assert results[removed:] == [f"{OUTPUT} {i}.0" for i in range(removed, 14)]
    assert len(results[removed:]) >= 2
