"""Cost of replaying through released framework code.

- ``driver_startup_seconds``: per installed release, from starting its driver process to its
  ``ready`` answer (the framework's import time dominates);
- ``shipped_vs_reproduction_ratio``: one replay of the same trace through the shipped strategy
  (driver already started) divided by one through the reproduction (``dbgpt`` vs
  ``shipped:dbgpt@0.8.2``, ...), measured side by side in one run.
Releases whose environment is not installed are listed under ``not_installed``.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from ctxbench.counting import get_counter
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import replay
from ctxbench.shipped import environment, process
from ctxbench.shipped.releases import AGENTSCOPE, DBGPT, HERMES, LANGCHAIN_CORE, Release
from ctxbench.strategies import build_strategy
from ctxbench.summarizers.extractive import ExtractiveSummarizer
from ctxbench.synth import generate, load_scenario

#: (release, reproduction, shipped strategy)
PAIRS: tuple[tuple[Release, str, str], ...] = (
    (DBGPT, "dbgpt", "shipped:dbgpt@0.8.2"),
    (AGENTSCOPE, "agentscope", "shipped:agentscope@2.0.11"),
    (HERMES, "hermes", "shipped:hermes@0.19.0"),
    (LANGCHAIN_CORE, "langchain_trim", "shipped:langchain_trim@1.8.3"),
)


def _replay_seconds(strategy: str, trace: Any, window: int) -> float:
    built = build_strategy(strategy)
    started = time.perf_counter()
    replay(
        trace,
        built,
        SimulatedProvider(window, 1024),
        true_counter=get_counter("tiktoken:o200k_base"),
        estimator=get_counter(type(built).default_estimator),
        summarizer=ExtractiveSummarizer(),
    )
    return time.perf_counter() - started


def _startup_seconds(strategy: str, tiny: Any, window: int) -> float:
    """A cold replay of a two-call trace (driver started) minus a warm one (driver reused)."""
    process.shutdown()
    cold = _replay_seconds(strategy, tiny, window)
    warm = _replay_seconds(strategy, tiny, window)
    return cold - warm


def run(quick: bool = False) -> dict[str, Any]:
    trace = next(generate(load_scenario("coding_agent"), 0))
    tiny = dataclasses.replace(trace, messages=trace.messages[: trace.call_indices[1] + 1])
    window = 16_384
    out: dict[str, Any] = {
        "trace": trace.id,
        "calls": len(trace.call_indices),
        "window": window,
        "driver_startup_seconds": {},
        "shipped_vs_reproduction_ratio": {},
        "not_installed": [],
    }
    for release, reproduction, shipped in PAIRS:
        if environment.installed(release) is None:
            out["not_installed"].append(release.key)
            continue
        startup = _startup_seconds(shipped, tiny, window)
        out["driver_startup_seconds"][release.key] = round(startup, 3)
        ours = _replay_seconds(reproduction, trace, window)
        theirs = _replay_seconds(shipped, trace, window)
        out["shipped_vs_reproduction_ratio"][shipped] = round(theirs / ours, 2)
        out.setdefault("seconds", {})[shipped] = {
            "reproduction": round(ours, 3),
            "shipped": round(theirs, 3),
        }
    process.shutdown()
    return out
