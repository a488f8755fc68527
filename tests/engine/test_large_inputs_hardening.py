"""Large inputs are handled, correctly: a 5 MB single message and a 2,000-round trace here
(the 50 MB message and the 10,000-round trace, with time and peak memory, are measured by
``benchmarks/bench_limits.py``), and pathological text that used to make regular
expressions quadratic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.bench_limits import big_message_trace, log_lines, many_rounds_trace
from ctxbench.counting import get_counter
from ctxbench.counting.chunking import CHUNK_CHARS
from ctxbench.counting.tiktoken_counter import TiktokenCounter
from ctxbench.engine.result import Identity, result_from_events
from ctxbench.formats.canonical import read_traces, write_traces
from ctxbench.pairing import pairing_violations
from ctxbench.probes.mining import mine_probes
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.summarizers.extractive import ExtractiveSummarizer
from ctxbench.trace import Message, Trace
from ctxbench.validation import validate
from tests.replaying import run

O200K = get_counter("tiktoken:o200k_base")


@pytest.fixture(scope="module")
def big_message() -> Trace:
    return big_message_trace(5_000_000)


@pytest.fixture(scope="module")
def many_rounds() -> Trace:
    return many_rounds_trace(2_000)


def test_a_5mb_message_round_trips_through_the_canonical_file(
    big_message: Trace, tmp_path: Path
) -> None:
    path = tmp_path / "big.jsonl"
    write_traces(path, [big_message])
    assert list(read_traces(path)) == [big_message]
    assert validate(big_message) == []


def test_a_5mb_message_is_counted_in_pieces_to_exactly_the_tokenizers_total() -> None:
    text = log_lines(5_000_000)
    assert len(text) > 50 * CHUNK_CHARS  # the counter has to cut it
    assert isinstance(O200K, TiktokenCounter)
    assert O200K.count(text) == len(O200K.encoding.encode_ordinary(text))


@pytest.mark.parametrize("strategy", ["none", "sliding_window", "dbgpt"])
def test_a_5mb_message_replays_and_the_row_matches_its_events(
    big_message: Trace, strategy: str
) -> None:
    out = run(big_message, strategy, 131_072, reserved=4096, counter=O200K, estimator=O200K)
    assert out.result.calls == 2 and out.result.pairing_violations == 0
    # the message alone overflows the window: only dbgpt, which offloads large tool results
    # to a file, keeps the final call within it
    assert out.result.failed_calls == (0 if strategy == "dbgpt" else 1)
    identity = Identity(trace_id=big_message.id, strategy=strategy)
    assert result_from_events(out.events, identity) == out.result


@pytest.mark.parametrize("strategy", ["none", "sliding_window", "dbgpt"])
def test_2000_rounds_replay_with_pairs_intact(many_rounds: Trace, strategy: str) -> None:
    # dbgpt as designed: 0.8.2's breaker stops compacting by design of its defect
    params: dict[str, Any] = {"release": "design"} if strategy == "dbgpt" else {}
    out = run(many_rounds, strategy, 131_072, reserved=4096, **params)
    assert out.result.calls == len(many_rounds.call_indices) == 2_001
    assert out.result.pairing_violations == 0 and pairing_violations(out.final_view) == 0
    if strategy != "none":  # compaction keeps every call within the window
        assert out.result.failed_calls == 0
    assert [e.step for e in out.events] == list(range(len(out.events)))


@pytest.mark.parametrize(
    "filler",
    ["\n" * 400_000, " \n" * 200_000, "a-" * 200_000, "1a-" * 130_000, "  " * 200_000],
)
def test_pathological_text_leaves_mining_and_summaries_unchanged(filler: str) -> None:
    """Runs of blank lines or dashes once made regular expressions quadratic (minutes on a
    megabyte); now they are linear, and the facts found around them are the same."""
    facts = (
        "Error: build failed in src/app/main.py\n$ pytest tests/test_main.py -q\n"
        "We decided to use PostgreSQL because of ORD-20240517."
    )
    trace = Trace(
        "t",
        (
            Message("user", "Fix the build."),
            Message("assistant", "Thought: look\nAction: bash\nAction Input: make"),
            Message("user", "Observation: " + facts),
            Message("assistant", facts),
        ),
    )
    padded = Trace(
        "t",
        tuple(
            m if m.role == "user" else m.with_text(m.content + "\n" + filler)
            for m in trace.messages
        ),
    )
    assert mine_probes(padded) == mine_probes(trace)
    summarizer = ExtractiveSummarizer()
    plain = summarizer.facts(SummaryRequest("test", "test", "", trace.messages, ()))
    with_filler = summarizer.facts(SummaryRequest("test", "test", "", padded.messages, ()))
    assert {f.text for f in plain} <= {f.text for f in with_filler}
