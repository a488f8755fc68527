"""Every registered strategy on every embedded scenario and on a recorded trace of every shared
source: zero pairing violations, the system message kept (unless its documented rule drops it),
and no accepted prompt over the window."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ctxbench.counting import get_counter
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import replay
from ctxbench.formats.importing import import_file
from ctxbench.pairing import rounds
from ctxbench.strategies import STRATEGIES, build_strategy
from ctxbench.summarizers.extractive import ExtractiveSummarizer
from ctxbench.synth import generate, load_scenario
from ctxbench.trace import Trace

SCENARIOS = ("coding_agent", "sql_agent", "support_agent", "research_agent", "cjk_agent")
SOURCES = (
    "tau2-bench/2025-08-10T02-44-06.496849_telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.json",
    "tau-bench/gpt-4o-airline.json",
    "mini-swe-agent/astropy__astropy-12907.traj.json",
    "openhands-benchmarks/output.critic_attempt_1.jsonl",
    "swe-agent/trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__function_calling__install-1/marshmallow-code__marshmallow-1867.traj",
)


def check_all_strategies(trace: Trace, window: int) -> None:
    true = get_counter("tiktoken:o200k_base")
    for name in STRATEGIES.names():
        strategy = build_strategy(name)
        estimator = get_counter(type(strategy).default_estimator)
        out = replay(
            trace,
            strategy,
            SimulatedProvider(window, 1024),
            true_counter=true,
            estimator=estimator,
            summarizer=ExtractiveSummarizer(),
        )
        if strategy.keeps_pairs():
            assert out.result.pairing_violations == 0, name
        if strategy.keeps_system():
            assert out.result.system_kept, name
        for e in out.events:
            if e.type == "provider.call" and e["ok"]:
                assert e["true_tokens"] <= e["limit"], name


def first_rounds(trace: Trace, n: int) -> Trace:
    """The trace cut after its first ``n`` rounds (pairs intact), without probes."""
    segs = rounds(trace)
    end = segs[min(n, len(segs)) - 1].last + 1
    return dataclasses.replace(trace, messages=trace.messages[:end], probes=())


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_strategy_on_every_embedded_scenario(scenario: str) -> None:
    check_all_strategies(first_rounds(next(generate(load_scenario(scenario), 0)), 24), 8_192)


@pytest.mark.parametrize("source", SOURCES)
def test_every_strategy_on_a_recorded_trace_of_every_source(
    shared_traces: Path, source: str
) -> None:
    traces = [t for t in import_file(shared_traces / source)[0] if len(t.call_indices) >= 4]
    longest = max(traces[:10], key=lambda t: sum(len(m.content) for m in t.messages))
    check_all_strategies(longest, 8_192)
