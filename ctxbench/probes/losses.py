"""The probes a replay lost: which, of what kind, where the fact was stated, the call (and the
compaction) that removed it, the answer missing, a superseded value standing in its place; and
per kind the cliff, the first compaction after which that kind's retention falls below half.

One module computes losses; ``ctxbench losses``, ``run --losses``, the per-kind gate's failures,
the row's ``cliff_by_kind`` and the pytest plugin read them from here.

A probe is scored once, at its ask point (``probe`` events). Where it left the prompt is read
from the ``compaction`` events before that point: the call whose compaction removed the last
recorded message holding the fact (``dropped_messages``: ``how = "dropped"``); when no
compaction removed them all (the fact sat in a message rewritten in place, or in a summary
summarised again), the last compaction before the ask point (``how = "rewritten"``); a probe
scored lost because the task had already failed (``after_failure``) names the failed call.
A replay given :func:`tracking_probes` as well (the same probes asked at every call from the
one that first sent them) shows the exact call: the last one where the answer left the prompt
(``how = "seen"``), a summary summarised again included; those events are read only here.

The cliff of a kind: the probes of that kind asked after exactly ``k`` compactions (calls that
compacted, counted from 1) form bucket ``k``; the cliff is the first ``k`` whose bucket keeps
(``in_context``) under half its probes. A pure function of the events, so the row holds it.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ctxbench.engine import events as ev
from ctxbench.jsontext import attrs
from ctxbench.probes.model import Probe

#: the outcome that counts as kept (the row's ``retention``)
KEPT = "in_context"
#: ``how`` a probe left the prompt (``seen``: watched call by call, :func:`tracking_probes`)
DROPPED, REWRITTEN, AFTER_FAILURE, NEVER_SEEN = "dropped", "rewritten", "after_failure", "never"
SEEN = "seen"
#: the id of a probe asked again at a call to watch where it left the prompt: ``ID@@CALL``
TRACK = "@@"
#: a kind's bucket keeps less than this share of its probes: the cliff
CLIFF_BELOW = 0.5


@dataclass(frozen=True)
class Loss:
    """One probe a replay did not keep in context at its ask point."""

    probe_id: str
    kind: str
    #: lost, stale (only a superseded value found) or via_reference (in a cited file only)
    outcome: str
    #: the call it was asked at (the trace's call count: the end of the trace)
    asked_at: int
    #: the call whose prompt no longer held it, and which compaction (1-based) that was
    lost_at: int | None = None
    compaction: int | None = None
    #: dropped / rewritten / seen (watched call by call) / after_failure / never (no
    #: compaction before it was asked)
    how: str = ""
    #: the trace messages that state the fact, and the first call whose prompt held them
    stated: tuple[int, ...] = ()
    stated_call: int | None = None
    #: the answers the prompt did not hold, and the superseded values it held instead
    missing: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    question: str = ""
    trace_id: str = ""
    run_id: str = ""

    def where(self) -> str:
        """``call 21 (after compaction 3)``, or why no call is named."""
        if self.lost_at is None:
            return "never left (no compaction before its ask point)"
        if self.how == AFTER_FAILURE:
            return f"call {self.lost_at} (the task failed there)"
        if self.compaction is None:
            return f"call {self.lost_at}"
        return f"call {self.lost_at} (after compaction {self.compaction})"

    def line(self) -> str:
        """One readable line: ``safety-1 (safety): "rm -rf" missing, lost at call 21 ...``."""
        answer = " | ".join(self.missing) or "?"
        stale = f"; stale {' | '.join(self.stale)!s} present" if self.stale else ""
        return (
            f"{self.probe_id} ({self.kind}, {self.outcome}): {answer!r} missing at call "
            f"{self.asked_at}, lost at {self.where()}{stale}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **attrs(self, "trace_id run_id probe_id kind outcome asked_at lost_at compaction how"),
            "stated": list(self.stated),
            "stated_call": self.stated_call,
            "missing": list(self.missing),
            "stale": list(self.stale),
            "question": self.question,
        }


def _ranges(value: Sequence[Sequence[int]]) -> Iterable[int]:
    for pair in value:
        first, last = int(pair[0]), int(pair[1])
        yield from range(first, last + 1)


@dataclass(frozen=True)
class _Run:
    """What the loss table reads from a replay's events."""

    probes: tuple[tuple[int, ev.ProbeScored], ...]
    #: per call that compacted (ascending): the trace messages removed by then
    compactions: tuple[tuple[int, frozenset[int]], ...]
    failed: tuple[int, ...]
    #: per probe id, (call, kept) of its tracking probes (:func:`tracking_probes`)
    tracks: Mapping[str, tuple[tuple[int, bool], ...]] = field(default_factory=dict)
    #: a compaction added messages (a summary, a note) that may have carried a fact on
    added: bool = False


def _read(events: Iterable[ev.Event]) -> _Run:
    probes: list[tuple[int, ev.ProbeScored]] = []
    dropped: set[int] = set()
    compactions: dict[int, frozenset[int]] = {}
    failed: list[int] = []
    tracks: dict[str, list[tuple[int, bool]]] = {}
    added = False
    for e in events:
        if isinstance(e, ev.ProbeScored) and TRACK in e.probe_id:
            probe_id = e.probe_id.partition(TRACK)[0]
            tracks.setdefault(probe_id, []).append((e.call, e.outcome == KEPT))
        elif isinstance(e, ev.ProbeScored):
            probes.append((e.call, e))
        elif isinstance(e, ev.Compaction):
            dropped.update(_ranges(e.dropped_messages))
            compactions[e.call] = frozenset(dropped)
            added = added or bool(e.added)
        elif isinstance(e, ev.CallFailed):
            failed.append(e.call)
    return _Run(
        tuple(probes),
        tuple(sorted(compactions.items())),
        tuple(failed),
        {k: tuple(sorted(v)) for k, v in tracks.items()},
        added,
    )


def inferred(events: Iterable[ev.Event], found: Iterable[Loss]) -> set[str]:
    """The losses whose call is inferred rather than seen: rewritten away, or dropped in a run
    whose compactions added messages (a summary may have carried the fact past that call).
    Replaying with their :func:`tracking_probes` names the exact call."""
    added = _read(events).added
    return {x.probe_id for x in found if x.how == REWRITTEN or (x.how == DROPPED and added)}


def tracking_probes(probes: Sequence[Probe], call_indices: Sequence[int]) -> tuple[Probe, ...]:
    """Each probe asked again at every call from the first that sent its evidence to its ask
    point (ids ``ID@@CALL``): given to a replay beside the probes, they let :func:`losses`
    name the exact call a fact left the prompt. They are not the run's probes: a row computed
    from such events counts them, so only the loss table should read them."""
    n_calls = len(call_indices)
    out = []
    for probe in probes:
        if not probe.evidence:
            continue
        first = bisect.bisect_right(call_indices, min(probe.evidence))
        last = n_calls if probe.ask_at is None else min(max(probe.ask_at, 0), n_calls)
        out += [
            replace(probe, id=f"{probe.id}{TRACK}{call}", ask_at=call)
            for call in range(first, last + 1)
        ]
    return tuple(out)


def compaction_calls(events: Iterable[ev.Event]) -> list[int]:
    """The calls that compacted, ascending (compaction ``k`` is the ``k``-th of them)."""
    return [call for call, _ in _read(events).compactions]


def losses(
    events: Iterable[ev.Event],
    probes: Sequence[Probe] = (),
    call_indices: Sequence[int] = (),
    *,
    trace_id: str = "",
    run_id: str = "",
) -> list[Loss]:
    """The probes ``events`` did not keep, in ask order. ``probes`` (the trace's) give the
    statement, the answers and the superseded values; ``call_indices`` (the trace's
    assistant messages) the call a statement was first sent at. Without them a loss still
    names its probe, kind and calls."""
    run = _read(events)
    by_id = {p.id: p for p in probes}
    out: list[Loss] = []
    for asked, scored in run.probes:
        outcome = scored.outcome
        if outcome == KEPT:
            continue
        probe = by_id.get(scored.probe_id)
        stated = tuple(probe.evidence) if probe else ()
        first = min(stated) if stated else None
        stated_call = (
            bisect.bisect_right(call_indices, first) if call_indices and first is not None else None
        )
        lost_at, how = _lost_at(run, asked, stated, stated_call, scored.reason or None)
        seen = _left_at(run.tracks.get(scored.probe_id, ()), asked)
        if seen is not None and how != AFTER_FAILURE:
            lost_at, how = seen, SEEN
        compaction = None
        if lost_at is not None and how != AFTER_FAILURE:
            compaction = bisect.bisect_right([c for c, _ in run.compactions], lost_at) or None
        out.append(
            Loss(
                probe_id=scored.probe_id,
                kind=scored.kind,
                outcome=outcome,
                asked_at=asked,
                lost_at=lost_at,
                compaction=compaction,
                how=how,
                stated=stated,
                stated_call=stated_call,
                missing=probe.answers if probe else (),
                stale=probe.stale_answers if probe and outcome == "stale" else (),
                question=probe.question if probe else "",
                trace_id=trace_id,
                run_id=run_id,
            )
        )
    return out


def _lost_at(
    run: _Run, asked: int, stated: tuple[int, ...], stated_call: int | None, reason: Any
) -> tuple[int | None, str]:
    """(the call it left the prompt at, how); see the module docstring."""
    if reason == AFTER_FAILURE:
        before = [c for c in run.failed if c <= asked]
        return (before[0] if before else asked), AFTER_FAILURE
    since = stated_call or 0
    window = [(c, gone) for c, gone in run.compactions if since <= c <= asked]
    if stated:
        for call, gone in window:
            if gone.issuperset(stated):
                return call, DROPPED
    if window:
        return window[-1][0], REWRITTEN
    return None, NEVER_SEEN


def _left_at(track: Sequence[tuple[int, bool]], asked: int) -> int | None:
    """The last call up to ``asked`` where a watched answer left the prompt (None: it never
    was in it, or never left)."""
    left, before = None, False
    for call, kept in track:
        if call > asked:
            break
        if before and not kept:
            left = call
        before = kept
    return left


def cliffs(events: Iterable[ev.Event]) -> dict[str, int]:
    """Per kind, the first compaction after which its retention falls below half (kinds that
    never fall are left out); see the module docstring."""
    run = _read(events)
    asked = [(call, p.kind, p.outcome == KEPT) for call, p in run.probes]
    return cliff_table([c for c, _ in run.compactions], asked)


def cliff_table(
    compactions: Sequence[int], asked: Iterable[tuple[int, str, bool]]
) -> dict[str, int]:
    """:func:`cliffs` from the calls that compacted (ascending) and each probe's (ask call,
    kind, kept): what the row computes in its one pass over the events."""
    buckets: dict[str, dict[int, Counter[bool]]] = {}
    for call, kind, kept in asked:
        k = bisect.bisect_right(compactions, call)
        buckets.setdefault(kind, {}).setdefault(k, Counter())[kept] += 1
    out: dict[str, int] = {}
    for kind, by_k in sorted(buckets.items()):
        for k in sorted(by_k):
            if k >= 1 and by_k[k][True] < CLIFF_BELOW * sum(by_k[k].values()):
                out[kind] = k
                break
    return out


def kind_retention(events: Iterable[ev.Event]) -> dict[str, tuple[int, int]]:
    """Per kind, (kept, asked)."""
    out: dict[str, list[int]] = {}
    for _, scored in _read(events).probes:
        counts = out.setdefault(scored.kind, [0, 0])
        counts[0] += scored.outcome == KEPT
        counts[1] += 1
    return {k: (v[0], v[1]) for k, v in sorted(out.items())}
