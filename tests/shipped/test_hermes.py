"""``shipped:hermes@0.19.0`` on the released wheel: the loop's compaction sites drive the
release's compressor, the provider's real prompt tokens reach ``update_from_response``, the
attempt budget of one user turn runs out and overflows then fail (``compression_exhausted``),
and a run on every embedded scenario and a recorded trace of every shared source."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from ctxbench.counting.base import TokenCounter
from ctxbench.shipped.releases import HERMES
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.summarizers.extractive import ExtractiveSummarizer
from ctxbench.trace import Trace
from tests.shipped_cases import (
    needs,
    replay_events,
    scenario_trace,
)

pytestmark = needs(HERMES)
NAME = "shipped:hermes@0.19.0"


def single_task(trace: Trace) -> Trace:
    """The trace without the user messages that come mid-run (the generator plants rules and
    preferences there): one user turn, one attempt budget."""
    first = next(i for i, m in enumerate(trace.messages) if m.role == "user")
    kept = [m for i, m in enumerate(trace.messages) if m.role != "user" or i == first]
    return replace(trace, messages=tuple(kept), probes=())


@pytest.fixture(scope="module")
def single_task_run() -> list[dict[str, Any]]:
    trace = single_task(scenario_trace("coding_agent", 40, seed=1))
    return replay_events(trace, NAME, 16_384, reserved=4096)


def test_the_attempt_budget_of_a_user_turn_runs_out_and_overflows_fail(
    single_task_run: list[dict[str, Any]],
) -> None:
    infos = [e for e in single_task_run if e["type"] == "shipped.call"]
    compactions = [e for e in single_task_run if e["type"] == "compaction"]
    assert {e["layer"] for e in compactions} <= {
        "preflight",
        "post_response",
        "pre_api",
        "overflow",
    }
    assert 1 <= len(compactions) <= 3  # three attempts per user turn, shared by both sites
    exhausted = [e for e in infos if (e["exception"] or "").startswith("compression_exhausted")]
    assert exhausted
    first = min(e["call"] for e in exhausted)
    failed = {e["call"] for e in single_task_run if e["type"] == "call.failed"}
    assert first in failed and not [c for c in compactions if c["call"] > first]
    # run_conversation returned: the rest of the (only) user turn is not made, so every
    # later call fails with the turn's exhaustion and spends no attempt
    calls = {e["call"] for e in infos}
    assert {c for c in calls if c > first} <= failed
    later = [e for e in infos if e["call"] > first]
    assert later and all(e["exception"] == exhausted[0]["exception"] for e in later)
    assert len({e["info"]["compression_attempts"] for e in later}) == 1


def test_summaries_come_from_the_runs_summarizer(single_task_run: list[dict[str, Any]]) -> None:
    summaries = [e for e in single_task_run if e["type"] == "summary"]
    assert summaries and all(s["ok"] and s["layer"] == "compaction" for s in summaries)


def test_real_prompt_tokens_reach_update_from_response(
    single_task_run: list[dict[str, Any]],
) -> None:
    accepted = {
        e["call"]: e["true_tokens"]
        for e in single_task_run
        if e["type"] == "provider.call" and e["ok"]
    }
    compacted = {e["call"] for e in single_task_run if e["type"] == "compaction"}
    checked = 0
    for e in single_task_run:
        if e["type"] != "shipped.call" or e["call"] - 1 not in accepted:
            continue
        if e["call"] in compacted or e["call"] - 1 in compacted:
            continue
        assert e["info"]["last_prompt_tokens"] == accepted[e["call"] - 1]
        checked += 1
    assert checked >= 3


def test_a_screenshot_a_tool_returned_is_list_content_as_the_release_stores_it() -> None:
    """research_agent's ``fetch_url`` results carry a screenshot. Hermes stores such a result as
    list content, so its prune replaces the image with a placeholder and never summarises the
    text afterwards; sent as a string, the release summarised it at the next compaction and the
    two sides parted at call 29 of 41 at 64k (agreement 0.805 before the driver sent parts)."""
    from ctxbench import parity
    from ctxbench.synth import generate, load_scenario

    trace = next(generate(load_scenario("research_agent"), 0))
    assert any(m.role == "tool" and m.media_parts for m in trace.messages)
    sides = [
        parity.replay_side(trace, s, window=65_536, reserved=1024, counter="tiktoken:o200k_base")
        for s in ("hermes", NAME)
    ]
    result = parity.compare(trace.id, *sides, window=65_536)
    assert result.first_divergence is None and result.agreeing == result.calls == 41


class Recording(ExtractiveSummarizer):
    """The extractive summarizer, noting every prompt it is handed."""

    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[str] = []

    def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
        self.prompts.append(request.prompt)
        return super().summarize(request, counter)


def summary_prompts(trace: Trace, strategy: str) -> list[str]:
    """The summary prompts a replay at 64k hands its summarizer."""
    from ctxbench.cell.runner import build_parts
    from ctxbench.cell.spec import RunSpec
    from ctxbench.engine.replay import replay

    parts = build_parts(RunSpec(trace.id, trace.content_hash, strategy, {}, 65_536, reserved=1024))
    recording = Recording()
    replay(trace, parts.strategy, parts.provider, true_counter=parts.true_counter,
           estimator=parts.estimator, summarizer=recording)  # fmt: skip
    return recording.prompts


def test_the_reproduction_asks_the_release_summary_prompt_whatever_the_day() -> None:
    """0.19.0 writes today's date into its summary prompt (TEMPORAL ANCHORING) when its clock
    resolves; a replay has none, so the driver leaves the clock unresolved and the release
    omits the rule, as the reproduction does. The reproduction's prompt is the release's, word
    for word (its preamble: "the user had credentials present")."""
    from ctxbench.synth import generate, load_scenario

    trace = next(generate(load_scenario("research_agent"), 0))
    released = summary_prompts(trace, NAME)
    assert len(released) >= 3
    assert not any("TEMPORAL ANCHORING" in p or "current date is" in p for p in released)
    assert summary_prompts(trace, "hermes") == released
