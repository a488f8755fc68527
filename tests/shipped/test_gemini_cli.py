"""``shipped:gemini_cli@0.61.0`` on the released npm package, with the machine's node. The
split-point checks run the release's own ``findCompressSplitPoint`` on the histories of its own
tests (``dist/src/context/chatCompressionService.test.js``, "findCompressSplitPoint"); the
replay checks port that file's ``ChatCompressionService`` cases: NOOP under the threshold, a
compression with the verification turn (two summary calls, the snapshot as a user turn and the
model's acknowledgement before the kept newest 30%), and the behaviour where it differs from
the Claude Code-like rule: a single-task tool loop has no split point (the release cuts only
before a user turn that is not a tool result), so it never compresses."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from ctxbench.shipped import environment
from ctxbench.shipped.gemini_cli import ShippedGeminiCli
from ctxbench.shipped.releases import GEMINI_CLI
from ctxbench.trace import Message, Trace
from tests.factories import tool_round, tool_trace
from tests.shipped_cases import needs, prompts, replay_events

pytestmark = needs(GEMINI_CLI)
NAME = "shipped:gemini_cli@0.61.0"
ACK = "Got it. Thanks for the additional context!"


def _text(n: int) -> dict[str, Any]:
    words = ["first", "second", "third", "fourth", "fifth"]
    return {"role": "user" if n % 2 == 0 else "model",
            "parts": [{"text": f"This is the {words[n]} message."}]}  # fmt: skip


#: (history, fraction, expected) from the release's "findCompressSplitPoint" tests
SPLIT_CASES = [
    ([], 0.5, 0),
    ([_text(i) for i in range(5)], 0.5, 4),
    ([_text(i) for i in range(5)], 0.9, 4),
    ([_text(i) for i in range(4)], 0.8, 4),
    ([*[_text(i) for i in range(3)],
      {"role": "model", "parts": [{"functionCall": {"name": "foo", "args": {}}}]}], 0.99, 2),
    ([{"role": "user", "parts": [{"text": "Message 1"}]}], 0.5, 0),
    ([{"role": "user", "parts": [{"text": "Message 1"}]},
      {"role": "model", "parts": [{"fileData": {"fileUri": "derp", "mimeType": "text/plain"}}]},
      {"role": "user", "parts": [{"text": "Message 2"}]}], 0.5, 2),
]  # fmt: skip


def _split_points(cases: list[tuple[list[Any], float]]) -> list[Any]:
    env = environment.require(GEMINI_CLI)
    script = (
        "import { pathToFileURL } from 'node:url';"
        "const m = await import(pathToFileURL(process.env.CTXBENCH_NODE_MODULES + "
        "'/@google/gemini-cli-core/dist/src/context/chatCompressionService.js').href);"
        "const cases = JSON.parse(process.argv[1]); const out = [];"
        "for (const [h, f] of cases) { try { out.push(m.findCompressSplitPoint(h, f)); }"
        " catch (e) { out.push(e.message); } }"
        "process.stderr.write(JSON.stringify(out));"
    )
    done = subprocess.run(
        [environment.node_tool("node", GEMINI_CLI), "--input-type=module", "-e", script, json.dumps(cases)],
        capture_output=True, text=True, env=env.process_env(), check=True, timeout=120,
    )  # fmt: skip
    result: list[Any] = json.loads(done.stderr.strip().splitlines()[-1])
    return result


def test_the_release_split_point_is_its_own_tests() -> None:
    got = _split_points([(h, f) for h, f, _ in SPLIT_CASES] + [([], 0), ([], 1)])
    assert got[: len(SPLIT_CASES)] == [want for _, _, want in SPLIT_CASES]
    assert got[len(SPLIT_CASES) :] == ["Fraction must be between 0 and 1"] * 2


def _conversation(turns: int, output: str) -> Trace:
    """``turns`` user tasks of two tool rounds and an answer each: a user turn to cut at."""
    msgs = [Message("system", "You are a careful agent.")]
    for t in range(turns):
        msgs += [Message("user", f"task {t}"), *tool_round(2 * t, output=output),
                 *tool_round(2 * t + 1, output=output), Message("assistant", f"done {t}")]  # fmt: skip
    return Trace("turns", tuple(msgs))


def test_over_half_the_limit_the_history_becomes_the_snapshot_and_the_newest_30_percent() -> None:
    trace = _conversation(8, "r " * 900)
    events = replay_events(trace, NAME, 16_384)
    compactions = [e for e in events if e["type"] == "compaction"]
    summaries = [e["layer"] for e in events if e["type"] == "summary"]
    assert compactions and {e["layer"] for e in compactions} == {"chat_compression"}
    # two summary calls a compression: the snapshot and the verification
    assert summaries[:2] == ["state_snapshot", "verify"]
    assert len(summaries) == 2 * len(compactions)
    sent = prompts(ShippedGeminiCli, trace, 16_384)
    after = next(p for p in sent if any(m.content == ACK for m in p))
    roles = [m.role for m in after[:3]]
    assert roles == ["system", "user", "assistant"] and after[2].content == ACK
    # the kept part starts at a task, never on a tool result
    assert after[3].role == "user" and after[3].content.startswith("task ")
    # the trigger is the LAST prompt: the call that compressed had been sent >= 0.5 x 16,384
    calls = {e["call"]: e for e in events if e["type"] == "shipped.call"}
    first = compactions[0]["call"]
    assert calls[first]["info"]["status"] == "COMPRESSED"
    assert (
        calls[first - 1]["info"]["last_prompt_tokens"]
        < 8_192
        <= next(
            e["true_tokens"]
            for e in events
            if e["type"] == "provider.call" and e["call"] == first - 1
        )
    )


def test_under_the_threshold_nothing_happens() -> None:
    events = replay_events(_conversation(8, "r " * 900), NAME, 16_384, compression_threshold=0.95)
    assert not [e for e in events if e["type"] in ("compaction", "summary")]


def test_a_single_task_tool_loop_has_no_split_point_and_never_compresses() -> None:
    events = replay_events(tool_trace(30, output="w " * 1_200), NAME, 16_384)
    infos = [e["info"] for e in events if e["type"] == "shipped.call" and e["info"]]
    assert not [e for e in events if e["type"] == "compaction"]
    assert {i["status"] for i in infos} == {"NOOP"}
    assert max(i["last_prompt_tokens"] for i in infos) > 8_192  # over the threshold all along
    assert [e for e in events if e["type"] == "call.failed"]


def test_the_threshold_is_checked() -> None:
    from ctxbench.errors import ConfigError

    with pytest.raises(ConfigError, match="compression_threshold"):
        replay_events(tool_trace(2), NAME, 16_384, compression_threshold=1.5)


def test_older_tool_outputs_are_masked_past_the_protection_threshold() -> None:
    # toolOutputMaskingService.test.js: outputs older than the latest turn past the protection
    # threshold become a <tool_output_masked> preview once enough tokens can go; the newest stay
    params: dict[str, Any] = {"compression_threshold": 1.0, "masking_protection_tokens": 2_000,
                              "masking_min_prunable_tokens": 1_000}  # fmt: skip
    trace = tool_trace(12, output="r " * 1_500)
    events = replay_events(trace, NAME, 65_536, **params)
    assert {e["layer"] for e in events if e["type"] == "compaction"} == {"tool_output_masking"}
    last = prompts(ShippedGeminiCli, trace, 65_536, **params)[-1]
    results = [m.content for m in last if m.role == "tool"]
    masked = [r for r in results if r.startswith("<tool_output_masked>")]
    assert masked and results[-1].startswith("r r") and not results[0].startswith("r r")
    assert all("Output too large. Full output available at: " in r for r in masked)
    # the same names in every run (seeded Math.random): two replays give the same prompt
    assert prompts(ShippedGeminiCli, trace, 65_536, **params)[-1] == last
