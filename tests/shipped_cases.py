"""What the tests of the real releases share: the skip when an environment is missing, the
representative subset (each embedded scenario, a recorded trace of each shared source) and a
replay that returns the events as dicts."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.cell.traces import open_traces
from ctxbench.pairing import rounds
from ctxbench.shipped import environment
from ctxbench.shipped.releases import Release
from ctxbench.synth import generate, load_scenario
from ctxbench.synth.scenario_file import scenario_names
from ctxbench.trace import Trace

#: every embedded scenario (``tests/synth/test_scenario_file.py`` holds the ones that must ship)
SCENARIOS = tuple(scenario_names())
SOURCES = (
    "tau2-bench/2025-08-10T02-44-06.496849_telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.json",
    "tau-bench/gpt-4o-airline.json",
    "mini-swe-agent/astropy__astropy-12907.traj.json",
    "openhands-benchmarks/output.critic_attempt_1.jsonl",
    "swe-agent/trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__function_calling__install-1/marshmallow-code__marshmallow-1867.traj",
    "OpenHands+software-agent-sdk/tests/fixtures/llm_data/llm-logs/litellm_proxy__anthropic__claude-sonnet-4-20250514-1757015046.707.json",
    "codemie-ai+codemie-code/src/agents/plugins/codex/__tests__/fixtures/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
    "marot+spotter/test/fixtures/transcripts/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    "sierra-research+tau2-bench/web/leaderboard/public/submissions/claude-sonnet-4-5_aide-platform_2025-10-31/trajectories/claude-sonnet-4-5_airline_default_gpt4.1_1trials.json",
)


def needs(release: Release) -> pytest.MarkDecorator:
    """Skip (with the install command) when the release's environment is not installed."""
    return pytest.mark.skipif(
        environment.installed(release) is None,
        reason=f"{release.key} environment not installed under {environment.cache_root()}: "
        f"run `{release.install_command}`",
    )


def first_rounds(trace: Trace, n: int) -> Trace:
    segs = rounds(trace)
    end = segs[min(n, len(segs)) - 1].last + 1
    return dataclasses.replace(trace, messages=trace.messages[:end], probes=())


def scenario_trace(name: str, n_rounds: int = 24, seed: int = 0) -> Trace:
    return first_rounds(next(generate(load_scenario(name), seed)), n_rounds)


def recorded_trace(shared: Path, source: str, n_rounds: int = 24) -> Trace:
    traces = [t for t in open_traces(shared / source).traces() if len(t.call_indices) >= 4]
    longest = max(traces[:10], key=lambda t: sum(len(m.content) for m in t.messages))
    return first_rounds(longest, n_rounds)


def replay_events(
    trace: Trace, strategy: str, window: int, reserved: int = 1024, **params: Any
) -> list[dict[str, Any]]:
    spec = resolve_spec(
        RunSpec(trace.id, trace.content_hash, strategy, params, window, reserved=reserved)
    )
    return [e.to_dict() for e in run_spec(spec, trace).events]


def check_invariants(events: list[dict[str, Any]]) -> None:
    """The release ran (a ``shipped`` event), every call was made, none accepted over the limit."""
    assert [e["type"] for e in events].count("shipped") == 1
    for e in events:
        if e["type"] == "provider.call" and e["ok"]:
            assert e["true_tokens"] <= e["limit"]
