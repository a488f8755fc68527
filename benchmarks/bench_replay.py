"""Replay cost: the engine vs the tokenization floor, vs a naive recount, and vs trace length.

- ``replay_vs_floor_ratio``: a cold-cache replay (strategy ``none``, exact counter as both the
  true counter and the estimator) divided by the time to tokenize the trace's distinct
  messages once, each text whole. Target <= 1.5.
- ``naive_speedup``: a naive replay that recounts the whole prompt at every call, each text
  whole (what a ``build_for_llm`` without caching does), divided by the engine's replay.
- ``length_scaling``: milliseconds per round of a cold replay at 10, 100 and 1,000 rounds, for
  the engine alone (``none``) and for ``dbgpt`` at an 8k window (compacting from early on);
  a ``length_scaling_ratio_1000_vs_100_*`` near 1 means linear.
- ``growing_prompt``: a cold DB-GPT 0.8.2 replay (the default release, o200k, 128k window) of
  3,000 rounds of 1 KB observations (300 in ``--quick``), whose system prompt gains a line of
  task progress at every step: counting long texts in segments (the counters' default) against
  counting every text whole, and ``whole_vs_segments_ratio`` (above 1: segments are faster).
All figures come from one run, side by side.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ctxbench.counting import get_counter
from ctxbench.counting.base import TokenCounter
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import replay
from ctxbench.strategies import build_strategy
from ctxbench.trace import Message, ToolCall, Trace

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "error",
    "warning",
    "request",
    "response",
    "table",
    "column",
    "index",
    "value",
    "function",
    "class",
    "module",
    "import",
    "return",
    "status",
    "pending",
    "done",
    "config",
    "path",
    "file",
]


def synthetic_trace(rounds: int, seed: int = 7, obs_chars: int = 8000) -> Trace:
    """A long tool-calling trace with mixed prose / log / JSON observations (deterministic)."""
    rng = random.Random(seed)
    msgs = [
        Message("system", "You are a coding agent. " * 20),
        Message("user", "Fix the failing build in src/app.py"),
    ]
    for i in range(rounds):
        call = ToolCall(f"call_{i}", "bash", json.dumps({"cmd": f"run step {i} --verbose"}))
        msgs.append(
            Message("assistant", " ".join(rng.choice(WORDS) for _ in range(40)), tool_calls=(call,))
        )
        kind = i % 3
        if kind == 0:
            body = " ".join(rng.choice(WORDS) for _ in range(obs_chars // 6))
        elif kind == 1:
            body = "\n".join(
                f"2025-01-{1 + j % 28:02d}T12:{j % 60:02d}:00Z INFO worker[{j}] {rng.choice(WORDS)} latency={rng.randint(1, 999)}ms"
                for j in range(obs_chars // 70)
            )
        else:
            body = json.dumps(
                [
                    {"id": j, "name": rng.choice(WORDS), "score": rng.random()}
                    for j in range(obs_chars // 55)
                ]
            )
        msgs.append(Message("tool", body[:obs_chars], tool_call_id=call.id, name="bash"))
    msgs.append(Message("assistant", "done"))
    return Trace(f"bench-{rounds}", tuple(msgs))


def _fresh(spec: str) -> TokenCounter:
    counter = get_counter(spec)
    counter.clear_cache()
    return counter


@contextmanager
def _whole_texts() -> Iterator[None]:
    """Counters count every text whole (no segment memo): the raw tokenizer's cost."""
    from ctxbench.counting import chunking

    default = chunking.SEGMENTED_FROM
    chunking.SEGMENTED_FROM = 1 << 62  # read at each count
    try:
        yield
    finally:
        chunking.SEGMENTED_FROM = default


def _floor(trace: Trace, counter: TokenCounter) -> float:
    distinct = {m.fingerprint: m for m in trace.messages}
    with _whole_texts():
        started = time.perf_counter()
        for message in distinct.values():
            counter.message_tokens(message)
        return time.perf_counter() - started


def _engine(trace: Trace, spec: str, strategy: str, window: int) -> float:
    counter = _fresh(spec)
    started = time.perf_counter()
    replay(
        trace,
        build_strategy(strategy),
        SimulatedProvider(window, 0),
        true_counter=counter,
        estimator=counter,
    )
    return time.perf_counter() - started


def _naive(trace: Trace, counter: TokenCounter) -> float:
    """Recount the whole prompt (no cache) before every model call."""
    with _whole_texts():
        started = time.perf_counter()
        for index in trace.call_indices:
            sum(counter.message_tokens(m) for m in trace.messages[:index])
        return time.perf_counter() - started


def _growing_prompt(spec: str, rounds: int) -> dict[str, Any]:
    """A cold 0.8.2 replay counting long texts in segments, and counting them whole."""
    trace = synthetic_trace(rounds, obs_chars=1000)
    seconds = {"segments": round(_engine(trace, spec, "dbgpt", 131072), 3)}
    with _whole_texts():
        seconds["whole"] = round(_engine(trace, spec, "dbgpt", 131072), 3)
    return {
        "rounds": rounds,
        "seconds": seconds,
        "whole_vs_segments_ratio": round(seconds["whole"] / seconds["segments"], 2),
    }


def _best(fn: Any, repeats: int) -> float:
    return min(fn() for _ in range(repeats))


def run(quick: bool = False) -> dict[str, Any]:
    spec = "tiktoken:o200k_base"
    counter = get_counter(spec)
    rounds = 60 if quick else 300
    trace = synthetic_trace(rounds)
    # warm-up: fingerprints and the tokenizer itself
    for m in trace.messages:
        m.fingerprint  # noqa: B018
    counter.count("warm up")
    repeats = 2 if quick else 3
    floor = _best(lambda: _floor(trace, counter), repeats)
    engine = _best(lambda: _engine(trace, spec, "none", 10**9), repeats)
    naive = _naive(trace, counter)
    tokens = counter.count_prompt(trace.messages)
    out: dict[str, Any] = {
        "counter": spec,
        "rounds": rounds,
        "trace_tokens": tokens,
        "floor_seconds": round(floor, 4),
        "replay_seconds": round(engine, 4),
        "naive_seconds": round(naive, 4),
        "replay_vs_floor_ratio": round(engine / floor, 3),
        "naive_speedup": round(naive / engine, 1),
    }
    lengths = (10, 100) if quick else (10, 100, 1000)
    scaling: dict[str, dict[str, float]] = {}
    # the engine alone (no compaction), and DB-GPT at a window small enough to compact early
    for label, strategy, window in (("none", "none", 10**9), ("dbgpt_8k", "dbgpt", 8192)):
        per_round = {}
        for n in lengths:
            t = synthetic_trace(n, obs_chars=2000)
            for m in t.messages:
                m.fingerprint  # noqa: B018
            seconds = _best(lambda t=t, s=strategy, w=window: _engine(t, spec, s, w), 3)
            per_round[str(n)] = round(seconds / n * 1000, 4)
        scaling[label] = per_round
    out["length_scaling_ms_per_round"] = scaling
    out["growing_prompt"] = _growing_prompt(spec, 300 if quick else 3000)
    last, prev = str(lengths[-1]), str(lengths[-2])
    for label, per_round in scaling.items():
        out[f"length_scaling_ratio_{last}_vs_{prev}_{label}"] = round(
            per_round[last] / per_round[prev], 3
        )
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
