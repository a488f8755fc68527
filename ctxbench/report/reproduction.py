"""Reproduction vs release: a results directory holding both a reproduction (``dbgpt`` with
``release = "0.8.2"``) and the released code itself (``shipped:dbgpt@0.8.2``) on the same
traces, windows, reservation and counters is compared call by call from the recorded events,
with :mod:`ctxbench.parity`'s reduction (``side_of``) and comparison (``compare``).

The events do not record which trace messages each prompt kept (``ctxbench parity`` observes
that while replaying), so "same trace messages kept" is not judged here: both sides are given
the same empty set, and the report says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ctxbench.engine import events as ev
from ctxbench.engine.events import Event
from ctxbench.engine.result import RunResult
from ctxbench.parity import DEFAULT_TOLERANCE, Side, TraceParity, compare, side_of
from ctxbench.report import table as tb
from ctxbench.report.leaderboard import RELEASE_PARAM, params_of
from ctxbench.report.page import Block, Paragraph, Section, TableBlock

Row = RunResult
#: The prefix of a released framework's strategy name (``shipped:NAME@VERSION``).
SHIPPED = "shipped:"
#: Event types the comparison reads (the reduction of :func:`ctxbench.parity.side_of`).
READ = (ev.CONTEXT_STATUS, ev.COMPACTION, ev.PROVIDER_CALL, ev.CALL_FAILED)


def release_of(row: Row) -> tuple[str, str] | None:
    """``(reproduction, release)`` a row stands for: ``shipped:dbgpt@0.8.2`` is the release
    0.8.2 of ``dbgpt``; ``dbgpt`` with param ``release = "0.8.2"`` reproduces it."""
    if row.strategy.startswith(SHIPPED) and "@" in row.strategy:
        name, _, version = row.strategy.removeprefix(SHIPPED).partition("@")
        return name, version
    release = params_of(row).get(RELEASE_PARAM)
    return (row.strategy, release) if isinstance(release, str) else None


def _where(row: Row) -> tuple[str, int, int, str]:
    return row.trace_id, row.window, row.reserved, row.counter


@dataclass(frozen=True)
class ReleasePair:
    """A reproduction's run and the release's run of one trace, window and counter."""

    reproduction: str
    release: str
    trace_id: str
    window: int
    counter: str
    reproduction_run: str
    shipped_run: str


def release_pairs(rows: Sequence[Row]) -> list[ReleasePair]:
    """Every (reproduction run, shipped run) on the same trace, window, reservation and true
    counter, rows whose replay raised left out; in a stable order."""
    ok = [r for r in rows if not r.error]
    shipped: dict[tuple[str, str, tuple[str, int, int, str]], list[Row]] = {}
    for r in ok:
        of = release_of(r)
        if of is not None and r.strategy.startswith(SHIPPED):
            shipped.setdefault((*of, _where(r)), []).append(r)
    out = []
    for r in sorted(ok, key=lambda r: r.run_id):
        of = release_of(r)
        if of is None or r.strategy.startswith(SHIPPED):
            continue
        for s in sorted(shipped.get((*of, _where(r)), []), key=lambda s: s.run_id):
            trace_id, window, _, counter = _where(r)
            out.append(ReleasePair(*of, trace_id, window, counter, r.run_id, s.run_id))
    return sorted(out, key=lambda p: (p.reproduction, p.release, p.window, p.counter, p.trace_id))


@dataclass(frozen=True)
class PairParity:
    """One pair compared: parity's counts, and the first compaction of each side."""

    pair: ReleasePair
    parity: TraceParity
    first_compaction: tuple[int | None, int | None]

    @property
    def same_first_compaction(self) -> bool:
        return self.first_compaction[0] == self.first_compaction[1]


def _side(strategy: str, events: Sequence[Event]) -> Side:
    calls = {e.call for e in events}
    return side_of(strategy, events, {call: () for call in calls})


def _first_compaction(side: Side) -> int | None:
    return next((c.call for c in side.calls if c.layers), None)


def compare_pair(
    pair: ReleasePair,
    events: Mapping[str, Sequence[Event]],
    *,
    tolerance: float = DEFAULT_TOLERANCE,
) -> PairParity:
    """Compare the recorded events of both runs of ``pair`` call by call."""
    a = _side(f"{pair.reproduction}@{pair.release}", events.get(pair.reproduction_run, ()))
    b = _side(f"{SHIPPED}{pair.reproduction}@{pair.release}", events.get(pair.shipped_run, ()))
    result = compare(pair.trace_id, a, b, window=pair.window, tolerance=tolerance)
    return PairParity(pair, result, (_first_compaction(a), _first_compaction(b)))


def _share(part: int, whole: int) -> tb.Cell:
    return tb.number(part / whole if whole else None, percent=True)


def _divergence(p: TraceParity) -> str:
    first = p.first_divergence
    if first is None:
        return "none"
    differs = [d for d in first["differs"] if d != "kept"]
    x, y = first["reproduction"], first["shipped"]
    return (
        f"call {first['call']}: {', '.join(differs)} differ; reproduction "
        f"{'+'.join(x['layers']) or 'no compaction'}, {x['true_tokens']:,} tokens"
        f"{', failed' if x['failed'] else ''} ({x['state'] or '-'}); release "
        f"{'+'.join(y['layers']) or 'no compaction'}, {y['true_tokens']:,} tokens"
        f"{', failed' if y['failed'] else ''} ({y['state'] or '-'})"
    )


def reproduction_section(compared: Sequence[PairParity]) -> Section:
    """The "reproduction vs release" section (empty list: the results hold no pair)."""
    blocks: list[Block] = [
        Paragraph(
            "Each reproduction run next to the run of the released framework code it "
            "reproduces (shipped:NAME@VERSION) on the same trace, window and true counter, "
            "compared call by call from the recorded events: the share of calls with the same "
            "compaction decision (compacted or not), tokens within "
            f"{DEFAULT_TOLERANCE:.0%}, the same failed calls, whether the first compaction "
            "came at the same call, and the first call where they part. Which trace messages "
            "each prompt kept is not in the events: `ctxbench parity` compares that too."
        )
    ]
    rows = []
    for c in compared:
        p = c.parity
        first_a, first_b = c.first_compaction
        rows.append(
            [
                tb.text(f"{c.pair.reproduction}@{c.pair.release}"),
                tb.text(c.pair.trace_id),
                tb.number(c.pair.window),
                tb.text(c.pair.counter),
                tb.count(p.calls),
                _share(p.same_compacted, p.calls),
                _share(p.tokens_within, p.calls),
                _share(p.same_failed, p.calls),
                tb.text(
                    ("yes" if c.same_first_compaction else "no")
                    + f" ({'–' if first_a is None else first_a} / "
                    f"{'–' if first_b is None else first_b})"
                ),
                tb.text(p.error or _divergence(p)),
            ]
        )
    blocks.append(
        TableBlock(
            tb.table(
                "release-parity",
                tb.columns(
                    tb.Column("reproduction", pin=True),
                    tb.Column("trace", pin=True),
                    ("window", True),
                    "true counter",
                    ("calls", True, "calls both sides made"),
                    ("same compaction", True, "share of calls compacted on both sides or neither"),
                    ("tokens within", True, f"share of calls within {DEFAULT_TOLERANCE:.0%}"),
                    ("same failed", True, "share of calls failed on both sides or neither"),
                    (
                        "same first compaction",
                        False,
                        "call of the first compaction: ours / release",
                    ),
                    tb.Column("first divergence", wide=True),
                ),
                rows,
                caption=f"{len(rows)} reproduction / release pairs",
            )
        )
    )
    return Section("reproduction-vs-release", "Reproduction vs release", tuple(blocks))
