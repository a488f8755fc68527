"""Synthetic traces: generation time and size of every embedded scenario, the o200k token
density of each content class, and probe-mining time on the generated traces.

``python -m benchmarks synth [--quick]``; quick skips the 300-round scenario's token count.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from typing import Any

from ctxbench.counting import get_counter
from ctxbench.probes.mining import mine_probes
from ctxbench.synth import generate, load_scenario, scenario_names
from ctxbench.synth.content import CONTENT_CLASSES, render


def _scenario(name: str, count_tokens: bool) -> dict[str, Any]:
    spec = load_scenario(name)
    started = time.perf_counter()
    trace = next(generate(spec, 0))
    seconds = time.perf_counter() - started
    chars = sum(len(m.content) for m in trace.messages)
    row: dict[str, Any] = {
        "rounds": spec.rounds,
        "messages": len(trace.messages),
        "chars": chars,
        "generate_seconds": round(seconds, 3),
        "probes": dict(Counter(p.kind for p in trace.probes)),
        "probes_mid_trace": sum(1 for p in trace.probes if p.ask_at is not None),
    }
    if count_tokens:
        counter = get_counter("tiktoken:o200k_base")
        tokens = counter.count_prompt(trace.messages, trace.tools)
        row["o200k_tokens"] = tokens
        row["chars4_over_o200k"] = round(
            get_counter("chars4").count_prompt(trace.messages, trace.tools) / tokens, 3
        )
    started = time.perf_counter()
    mined = mine_probes(trace)
    row["mine_seconds"] = round(time.perf_counter() - started, 3)
    row["mined"] = len(mined)
    return row


def _density() -> dict[str, float]:
    counter = get_counter("tiktoken:o200k_base")
    out = {}
    for kind in CONTENT_CLASSES:
        rng = random.Random(kind)
        texts = [render(kind, rng, 4000) for _ in range(25)]
        out[kind] = round(sum(map(len, texts)) / sum(counter.count(t) for t in texts), 2)
    return out


def run(quick: bool) -> dict[str, Any]:
    scenarios = {
        name: _scenario(name, count_tokens=not (quick and name == "long_horizon"))
        for name in scenario_names()
    }
    return {"scenarios": scenarios, "chars_per_o200k_token": _density()}
