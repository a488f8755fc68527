"""Trace sources of a sweep: its ``[[traces]]`` tables as concrete sources, read once.

The driver reads every source once, trace by trace, to hash the traces (a run id needs the
trace's content hash) and keeps only a small :class:`TraceEntry` per trace. A cell carries
its trace's *address* (see :mod:`ctxbench.cell.traces`) and the worker that runs it loads the
trace itself through :func:`ctxbench.cell.traces.load_trace`.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ctxbench.cell.spec import RunSpec
from ctxbench.cell.traces import CANONICAL, SourceRef, iter_traces
from ctxbench.counting.auto import AUTO, choose, trace_model
from ctxbench.errors import ConfigError
from ctxbench.sweep.spec import TraceSource
from ctxbench.trace_defaults import hook_meta
from ctxbench.validation import refuse_duplicate_call_ids


def refs_of(source: TraceSource) -> list[SourceRef]:
    """The concrete sources of one ``[[traces]]`` table (a glob's files in sorted order)."""
    common: list[tuple[str, str]] = []
    if source.messages_column:
        common.append(("messages_column", source.messages_column))
    if source.limit:
        common.append(("limit", str(source.limit)))
    if source.probes:
        common.append(("probes", source.probes))
    if source.scenario:
        return [
            SourceRef(
                "scenario",
                source.scenario,
                tuple(sorted([("seed", str(s)), ("count", str(source.count)), *common])),
            )
            for s in source.seeds
        ]
    if source.hf:
        return [SourceRef("hf", source.hf, tuple(sorted(common)))]
    fmt = [("format", source.format)] if source.format != CANONICAL else []
    paths = sorted(glob.glob(source.path)) if glob.has_magic(source.path) else [source.path]
    if not paths:
        raise ConfigError(
            f"no file matches {source.path}", key="traces.path", hint="check the glob pattern"
        )
    return [SourceRef("file", p, tuple(sorted(common + fmt))) for p in paths]


@dataclass(frozen=True)
class TraceEntry:
    """What the driver keeps of one trace: its address, id, content hash and size."""

    source: str
    index: int
    trace_id: str
    trace_hash: str
    messages: int
    random_access: bool = True
    #: the model the trace recorded (``meta.model``; "" when none), for ``counters = ["auto"]``
    model: str = ""
    #: the meta the strategies' trace defaults read (:func:`ctxbench.trace_defaults.hook_meta`)
    meta: str = ""

    @property
    def address(self) -> str:
        return f"{self.source}#{self.index}"

    def cell(self, config: RunSpec) -> RunSpec:
        """The configuration applied to this trace (``auto``: the counter of its model; knobs
        left at None take the strategy's trace defaults, as in ``run``)."""
        from ctxbench.trace_defaults import trace_params

        counter = choose(self.model).counter if config.counter == AUTO else config.counter
        params = config.params
        if self.meta:
            given, taken = trace_params(self.meta, config.strategy, config.params)
            params = given if taken else params
        return config.with_(
            trace_id=self.trace_id,
            trace_hash=self.trace_hash,
            trace_source=self.address,
            counter=counter,
            params=params,
        )


def catalogue(sources: Iterable[TraceSource]) -> Iterator[TraceEntry]:
    """Every trace of every source, read once and forgotten. A trace listed twice (same id and
    content) is kept once; two different traces with one id, or a trace reusing a tool call
    id, are errors (before any cell runs)."""
    seen: dict[str, tuple[str, str]] = {}
    for source in sources:
        for ref in refs_of(source):
            text = str(ref)
            for index, trace in enumerate(iter_traces(ref)):
                refuse_duplicate_call_ids(trace, source=f"{text}#{index}")
                digest = trace.content_hash
                earlier = seen.get(trace.id)
                if earlier is not None:
                    if earlier[0] == digest:
                        continue
                    raise ConfigError(
                        f"two different traces have the id {trace.id!r}: {earlier[1]} and "
                        f"{text}#{index}",
                        key="traces",
                        hint="give every trace a unique id (re-import with `ctxbench import`)",
                    )
                seen[trace.id] = (digest, f"{text}#{index}")
                yield TraceEntry(
                    text,
                    index,
                    trace.id,
                    digest,
                    len(trace.messages),
                    ref.random_access,
                    trace_model(trace) or "",
                    hook_meta(trace.meta),
                )
