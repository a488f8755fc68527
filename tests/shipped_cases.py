"""What the tests of the real releases share: the skip when an environment is missing, the
representative subset (each embedded scenario, a recorded trace of each shared source), a
replay that returns the events as dicts and one that returns the prompts the model was sent
(:func:`prompts`, through a capturing subclass of the shipped strategy)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.cell.traces import open_traces
from ctxbench.engine.context import ReplayContext
from ctxbench.engine.strategy import ProviderCall
from ctxbench.pairing import rounds
from ctxbench.shipped import environment
from ctxbench.shipped.releases import Release
from ctxbench.shipped.strategy import ShippedStrategy
from ctxbench.synth import generate, load_scenario
from ctxbench.synth.scenario_file import scenario_names
from ctxbench.trace import Message, Trace

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


_CAPTURING: dict[type[ShippedStrategy], type[ShippedStrategy]] = {}


def capturing(base: type[ShippedStrategy]) -> type[ShippedStrategy]:
    """A subclass of ``base`` that records the prompt of every call it made (``sent``); it is a
    name of this module, so the cell runner loads it as ``tests.shipped_cases:<name>``."""
    cls = _CAPTURING.get(base)
    if cls is not None:
        return cls

    class Capturing(base):  # type: ignore[valid-type,misc]
        sent: ClassVar[list[tuple[Message, ...]]] = []

        def after_call(self, call: ProviderCall, ctx: ReplayContext) -> None:
            super().after_call(call, ctx)
            Capturing.sent.append(tuple(ctx.view.messages))

    name = f"Capturing{base.__name__}"
    Capturing.__name__ = Capturing.__qualname__ = name
    globals()[name] = _CAPTURING[base] = Capturing
    return Capturing


def prompts(
    base: type[ShippedStrategy], trace: Trace, window: int, **params: Any
) -> list[tuple[Message, ...]]:
    """The prompt of every call ``base`` made replaying ``trace`` at ``window``."""
    cls = capturing(base)
    sent: list[tuple[Message, ...]] = cls.sent  # type: ignore[attr-defined]
    sent.clear()
    name = f"{__name__}:{cls.__name__}"
    run_spec(resolve_spec(RunSpec(trace.id, trace.content_hash, name, params, window)), trace)
    return list(sent)
