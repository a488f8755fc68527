"""Runs for the viewer tests: a synthetic coding-agent trace replayed by DB-GPT under two
warning thresholds (they part ways at some call), with the prompt the engine accepted at each
call recorded through ``ContextView.mark_sent`` (independently of the viewer's capture)."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.engine.events import Event, event_line
from ctxbench.engine.result import RunResult
from ctxbench.engine.view import ContextView
from ctxbench.formats.canonical import write_traces
from ctxbench.synth import generate, load_scenario
from ctxbench.trace import Message, Trace

WINDOW = 16_000
THRESHOLDS = (0.7, 0.5)


@contextmanager
def accepted_prompts() -> Iterator[list[tuple[Message, ...]]]:
    """Every prompt the provider accepted, in order, while the block runs."""
    seen: list[tuple[Message, ...]] = []
    original = ContextView.mark_sent

    def mark_sent(self: ContextView) -> None:
        seen.append(self.messages)
        original(self)

    ContextView.mark_sent = mark_sent  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        ContextView.mark_sent = original  # type: ignore[method-assign]


@dataclass(frozen=True)
class Runs:
    root: Path
    trace: Trace
    rows: list[dict[str, Any]]
    events: list[list[dict[str, Any]]]
    #: the same events, typed (what ``first_divergence`` compares)
    typed: list[list[Event]]
    #: per run: call index -> the prompt the engine accepted at that call
    prompts: list[dict[int, tuple[Message, ...]]]

    @property
    def rows_file(self) -> Path:
        return self.root / "rows.jsonl"

    @property
    def results(self) -> list[RunResult]:
        """The rows as the results reader gives them."""
        return [RunResult.from_row(r) for r in self.rows]


def spec_for(trace: Trace, source: Path, threshold: float) -> RunSpec:
    return resolve_spec(
        RunSpec(
            trace_id=trace.id,
            trace_hash=trace.content_hash,
            strategy="dbgpt",
            # the documented design compacts native tool-calling rounds (0.8.2 never does)
            params={"warning_threshold": threshold, "release": "design"},
            window=WINDOW,
            counter="tiktoken:o200k_base",
            trace_source=str(source),
        )
    )


@cache
def two_runs() -> Runs:
    """Replayed once per test process (removed at exit)."""
    root = Path(tempfile.mkdtemp(prefix="ctxbench-view-test-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    trace = next(generate(load_scenario("coding_agent"), seed=1))
    source = root / "traces.jsonl"
    write_traces(source, [trace])
    rows, events, prompts, typed = [], [], [], []
    lines = []
    for threshold in THRESHOLDS:
        spec = spec_for(trace, source, threshold)
        with accepted_prompts() as seen:
            output = run_spec(spec, trace)
        accepted = [e.call for e in output.events if e.type == "provider.call" and e["ok"]]
        assert len(accepted) == len(seen)
        prompts.append(dict(zip(accepted, seen)))
        rows.append(output.result.to_row())
        events.append([{"run_id": spec.run_id, **e.to_dict()} for e in output.events])
        typed.append(list(output.events))
        lines += [event_line(e, run_id=spec.run_id) for e in output.events]
    with (root / "rows.jsonl").open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    (root / "events.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Runs(root, trace, rows, events, typed, prompts)
