"""Each reproduction at its release next to its design (or later-commit) mode, on the shared
recorded traces and the embedded scenarios, at 8k/16k/32k/64k windows.

Per strategy, mode and window: traces replayed, traces that compact, the mean first compaction
call, compaction events, failed calls by kind and traces with a failed call; per strategy and
window, how the two modes agree (calls with the same compact-or-not decision, traces with the
same first compaction, traces with the same failed calls). When the shipped-code strategies
exist, the same comparison against them is ``ctxbench parity``.

    CTXBENCH_TRACES=/work/shared/traces .venv/bin/python -m benchmarks.releases --per-source 10

Not part of ``python -m benchmarks`` (it measures behaviour, not speed).
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxbench.counting import get_counter
from ctxbench.engine import events as ev
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import ReplayOutput, replay
from ctxbench.errors import CtxbenchError
from ctxbench.formats.importing import import_file
from ctxbench.strategies import build_strategy, strategy_class
from ctxbench.summarizers.extractive import ExtractiveSummarizer
from ctxbench.synth import generate, load_scenario
from ctxbench.synth.scenario_file import scenario_names
from ctxbench.trace import Trace

#: (strategy, the release mode, the mode it is compared with)
PAIRS: tuple[tuple[str, str, str], ...] = (
    ("dbgpt", "0.8.2", "design"),
    ("hermes", "0.19.0", "0000416b"),
    ("agentscope", "2.0.11", "design"),
)
WINDOWS = (8_192, 16_384, 32_768, 65_536)
#: every embedded scenario
SCENARIOS = tuple(scenario_names())
RESERVED = 1024
#: layers that add to the prompt rather than compact it (AgentScope's runtime-state injection)
NOT_COMPACTION = frozenset({"runtime_state"})


@dataclass(frozen=True)
class Outcome:
    """What one replay decided, call by call."""

    compacted_calls: frozenset[int]
    compactions: int
    failed: dict[int, str]

    @classmethod
    def of(cls, out: ReplayOutput) -> Outcome:
        compactions = [
            e for e in out.events if e.type == ev.COMPACTION and e["layer"] not in NOT_COMPACTION
        ]
        failed = {
            e.call: str(e.data.get("kind", ev.OVERFLOW))
            for e in out.events
            if e.type == ev.CALL_FAILED
        }
        return cls(frozenset(e.call for e in compactions), len(compactions), failed)

    @property
    def first(self) -> int | None:
        return min(self.compacted_calls) if self.compacted_calls else None


def shared_traces(root: Path, per_source: int) -> Iterator[tuple[str, Trace]]:
    """The longest ``per_source`` traces (by characters) of every importable shared file."""
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        try:
            traces = [t for t in import_file(path)[0] if len(t.call_indices) >= 4]
        except CtxbenchError:
            continue
        traces.sort(key=lambda t: -sum(len(m.content) for m in t.messages))
        for trace in traces[:per_source]:
            yield str(path.relative_to(root)), trace


def corpus(per_source: int) -> list[tuple[str, Trace]]:
    items = [(f"scenario:{name}", next(generate(load_scenario(name), 0))) for name in SCENARIOS]
    root = os.environ.get("CTXBENCH_TRACES")
    if root:
        items += list(shared_traces(Path(root), per_source))
    return items


def run_one(trace: Trace, strategy: str, release: str, window: int) -> Outcome:
    built = build_strategy(strategy, {"release": release})
    counter = get_counter("tiktoken:o200k_base")
    estimator = get_counter(strategy_class(strategy).default_estimator)
    out = replay(
        trace,
        built,
        SimulatedProvider(window, RESERVED),
        true_counter=counter,
        estimator=estimator,
        summarizer=ExtractiveSummarizer(),
    )
    return Outcome.of(out)


def summarise(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    firsts = [o.first for o in outcomes if o.first is not None]
    kinds: Counter[str] = Counter(k for o in outcomes for k in o.failed.values())
    return {
        "traces": len(outcomes),
        "compacting_traces": len(firsts),
        "mean_first_compaction_call": round(sum(firsts) / len(firsts), 2) if firsts else None,
        "compactions": sum(o.compactions for o in outcomes),
        "failed_calls": dict(sorted(kinds.items())),
        "traces_with_failed_calls": sum(1 for o in outcomes if o.failed),
    }


def agreement(
    pairs: Sequence[tuple[Outcome, Outcome]], calls: Sequence[int]
) -> dict[str, float | None]:
    decided = sum(
        sum(1 for k in range(n) if (k in a.compacted_calls) == (k in b.compacted_calls))
        for (a, b), n in zip(pairs, calls)
    )
    return {
        "same_decision_calls": round(decided / sum(calls), 4) if sum(calls) else None,
        "same_first_compaction_traces": round(
            sum(1 for a, b in pairs if a.first == b.first) / len(pairs), 4
        )
        if pairs
        else None,
        "same_failed_calls_traces": round(
            sum(1 for a, b in pairs if a.failed == b.failed) / len(pairs), 4
        )
        if pairs
        else None,
    }


def run(per_source: int, windows: Sequence[int], strategies: Sequence[str] = ()) -> dict[str, Any]:
    items = corpus(per_source)
    report: dict[str, Any] = {"traces": len(items), "reserved": RESERVED, "strategies": {}}
    for strategy, released, other in PAIRS:
        if strategies and strategy not in strategies:
            continue
        by_window: dict[str, Any] = {}
        for window in windows:
            pairs = [
                (run_one(t, strategy, released, window), run_one(t, strategy, other, window))
                for _, t in items
            ]
            by_window[str(window)] = {
                released: summarise([a for a, _ in pairs]),
                other: summarise([b for _, b in pairs]),
                "agreement": agreement(pairs, [len(t.call_indices) for _, t in items]),
            }
        report["strategies"][strategy] = by_window
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-source", type=int, default=10, help="longest traces per shared file")
    parser.add_argument("--windows", type=int, nargs="*", default=list(WINDOWS))
    parser.add_argument(
        "--strategies", nargs="*", default=[], help="a subset of dbgpt, hermes, agentscope"
    )
    args = parser.parse_args(argv)
    print(json.dumps(run(args.per_source, args.windows, args.strategies), indent=2))


if __name__ == "__main__":
    main()
