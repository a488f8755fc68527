"""Lost facts: the probes some runs failed, with where the fact entered the trace and who lost it.

A probe is "lost" in a run when neither its answer nor a pointer to a file holding it is in
the prompt at its ask point. Grouping by probe shows whether a fact is fragile for every
strategy (it sits in an old tool result everyone drops) or only for some.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from ctxbench.pairing import rounds
from ctxbench.report.results import ProbeOutcome
from ctxbench.trace import Trace

LOST = "lost"
STALE = "stale"


@dataclass(frozen=True)
class LostFact:
    """One probe that at least one run lost (or only found stale)."""

    trace_id: str
    probe_id: str
    kind: str
    runs: int
    lost: int
    stale: int
    #: (config label, runs that lost it, runs that asked it), most losses first
    lost_by: tuple[tuple[str, int, int], ...]
    #: from the trace, when it could be loaded
    question: str | None = None
    answers: tuple[str, ...] = ()
    evidence: tuple[int, ...] = ()
    #: the round (0-based) of each evidence message
    evidence_rounds: tuple[int | None, ...] = ()
    ask_at: int | None = None


def _round_of(trace: Trace) -> dict[int, int]:
    return {i: r.index for r in rounds(trace) for i in r.indices}


def lost_facts(
    outcomes: Iterable[tuple[str, str, ProbeOutcome]],
    traces: Mapping[str, Trace],
) -> list[LostFact]:
    """``outcomes`` are (trace_id, config label, outcome) per probe event; probes never lost
    or stale are left out. Sorted by most losses, then trace and probe id."""
    asked: dict[tuple[str, str], Counter[str]] = {}
    losses: dict[tuple[str, str], Counter[str]] = {}
    kinds: dict[tuple[str, str], str] = {}
    tally: dict[tuple[str, str], Counter[str]] = {}
    for trace_id, label, o in outcomes:
        key = (trace_id, o.probe_id)
        kinds.setdefault(key, o.kind)
        asked.setdefault(key, Counter())[label] += 1
        tally.setdefault(key, Counter())[o.outcome] += 1
        if o.outcome == LOST:
            losses.setdefault(key, Counter())[label] += 1
    facts = []
    rounds_cache: dict[str, dict[int, int]] = {}
    for key, counts in tally.items():
        if not counts[LOST] and not counts[STALE]:
            continue
        trace_id, probe_id = key
        by = sorted(
            ((label, n, asked[key][label]) for label, n in losses.get(key, Counter()).items()),
            key=lambda t: (-t[1], t[0]),
        )
        fact = LostFact(
            trace_id=trace_id,
            probe_id=probe_id,
            kind=kinds[key],
            runs=sum(counts.values()),
            lost=counts[LOST],
            stale=counts[STALE],
            lost_by=tuple(by),
        )
        trace = traces.get(trace_id)
        probe = next((p for p in trace.probes if p.id == probe_id), None) if trace else None
        if trace is not None and probe is not None:
            if trace_id not in rounds_cache:
                rounds_cache[trace_id] = _round_of(trace)
            where = rounds_cache[trace_id]
            fact = replace(
                fact,
                question=probe.question,
                answers=probe.answers,
                evidence=probe.evidence,
                evidence_rounds=tuple(where.get(i) for i in probe.evidence),
                ask_at=probe.ask_at,
            )
        facts.append(fact)
    facts.sort(key=lambda f: (-f.lost, -f.stale, f.trace_id, f.probe_id))
    return facts
