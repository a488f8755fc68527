"""Any summarizer against the summaries real agents wrote: ``ctxbench summaries``.

For each recorded compaction that kept its summary text (Claude Code ``compact_boundary`` +
``isCompactSummary``, Codex ``compacted``), :func:`compare` rebuilds the history the agent
compacted (the recorded summary before it, if any, then the messages since) and the request
the matching strategy would make of it (:func:`recorded_request`: its own prompt, sections and
summary budget), runs the summarizer on it, and measures both texts the same way:

- **length** in tokens of the given counter;
- **mined probes**: the probes :func:`ctxbench.probes.mining.mine_probes` mines on that
  history, scored by :class:`ctxbench.probes.scoring.PromptScorer` on a prompt holding only
  the summary, kept (``in_context``) by mined category;
- **used after**: the facts the agent used after the compaction
  (:func:`ctxbench.probes.needed.used_after`: the needed facts of the compaction), scored the
  same way.

Pure but for the summarizer (an LLM-backed one calls its endpoint); the command prints it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxbench.counting.base import TokenCounter
from ctxbench.jsontext import attrs
from ctxbench.probes.mining import mine_probes
from ctxbench.probes.model import Probe
from ctxbench.probes.needed import used_after
from ctxbench.probes.scoring import PromptScorer
from ctxbench.summarizers.base import Summarizer, SummaryRequest
from ctxbench.trace import Message, Trace


@dataclass(frozen=True)
class Measured:
    """One summary measured: its tokens, mined probes kept by category, used-after facts kept."""

    tokens: int
    probes: Mapping[str, tuple[int, int]]
    used_after: tuple[int, int]
    #: the used-after facts the summary lost (for --why)
    lost: tuple[str, ...] = ()

    @property
    def probes_kept(self) -> tuple[int, int]:
        kept = sum(k for k, _ in self.probes.values())
        return kept, sum(n for _, n in self.probes.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "probes": {k: {"kept": a, "of": b} for k, (a, b) in sorted(self.probes.items())},
            "probes_kept": dict(zip(("kept", "of"), self.probes_kept, strict=True)),
            "used_after": dict(zip(("kept", "of"), self.used_after, strict=True)),
            "used_after_lost": list(self.lost),
        }


@dataclass(frozen=True)
class Compared:
    """One recorded compaction: the recorded summary and the summarizer's, measured alike."""

    trace_id: str
    call: int
    trigger: str
    strategy: str
    history_tokens: int
    recorded: Measured
    ours: Measured
    summary: str = field(repr=False, default="")

    def to_dict(self) -> dict[str, Any]:
        return {
            **attrs(self, "trace_id call trigger strategy history_tokens"),
            "recorded": self.recorded.to_dict(),
            "summarizer": self.ours.to_dict(),
        }


def history_before(trace: Trace, index: int) -> tuple[tuple[Message, ...], int]:
    """The history the agent compacted at recorded compaction ``index`` (its summary of the
    previous one as a user message, then the messages since), and where it starts."""
    compactions = trace.recorded_compactions
    this = compactions[index]
    start = compactions[index - 1].message if index > 0 else 0
    system = tuple(m for m in trace.messages[:start] if m.role == "system")
    head: tuple[Message, ...] = ()
    if index > 0 and compactions[index - 1].summary:
        head = (Message("user", compactions[index - 1].summary),)
    return system + head + tuple(trace.messages[start : this.message]), start


def recorded_request(trace: Trace, index: int, history: Sequence[Message]) -> SummaryRequest:
    """The request the strategy reproducing the trace's agent (:func:`strategy_for`) makes of
    ``history``: its :meth:`~ctxbench.engine.strategy.Strategy.recorded_summary_request` (its
    own prompt, sections and default summary budget, keyed as a replay with seed 0)."""
    from ctxbench.strategies import RECORDED_DEFAULT, strategy_class

    call = trace.recorded_compactions[index].call
    for name in (strategy_for(trace), RECORDED_DEFAULT):  # one that summarises, else the default
        request = strategy_class(name).recorded_summary_request(
            tuple(history), trace_id=trace.id, call=call, first=index == 0
        )
        if request is not None:
            return request
    raise ValueError(f"strategy {RECORDED_DEFAULT} makes no summary request")


def strategy_for(trace: Trace) -> str:
    """The strategy that reproduces the agent a trace was imported from (its
    :attr:`~ctxbench.engine.strategy.Strategy.reproduces`; Claude Code's by default: its
    sessions are where recorded summaries come from)."""
    from ctxbench.strategies import RECORDED_DEFAULT, reproducing

    return reproducing(trace.meta, default=RECORDED_DEFAULT) or RECORDED_DEFAULT


def measure(
    summary: str,
    probes: Sequence[Probe],
    facts: Sequence[str],
    counter: TokenCounter,
) -> Measured:
    """``summary`` alone as the prompt: its tokens, the probes and facts it keeps."""
    scorer = PromptScorer((Message("user", summary),), {})
    by_kind: dict[str, list[int]] = {}
    for probe in probes:
        kind = str(probe.meta.get("mined") or probe.kind)
        tally = by_kind.setdefault(kind, [0, 0])
        tally[0] += scorer.score(probe) == "in_context"
        tally[1] += 1
    lost = tuple(f for f in facts if scorer.score(_fact_probe(f)) != "in_context")
    return Measured(
        counter.count(summary),
        {k: (a, b) for k, (a, b) in by_kind.items()},
        (len(facts) - len(lost), len(facts)),
        lost,
    )


def _fact_probe(value: str) -> Probe:
    return Probe("used-after", "recall", "Which value did the agent use?", (value,))


def compare(
    traces: Iterable[Trace], summarizer: Summarizer, counter: TokenCounter
) -> list[Compared]:
    """Every recorded compaction with a summary in ``traces``, measured for the recorded
    summary and for ``summarizer``'s on the same request."""
    out: list[Compared] = []
    for trace in traces:
        compactions = trace.recorded_compactions
        for index, compaction in enumerate(compactions):
            if not compaction.summary:
                continue
            history, _ = history_before(trace, index)
            end = compactions[index + 1].message if index + 1 < len(compactions) else None
            after = trace.messages[compaction.message : end]
            facts = used_after(history, after)
            probes = mine_probes(Trace(f"{trace.id}@{compaction.call}", history))
            request = recorded_request(trace, index, history)
            text = summarizer.summarize(request, counter)
            out.append(
                Compared(
                    trace.id,
                    compaction.call,
                    compaction.trigger,
                    request.strategy,
                    counter.count(request.prompt),
                    measure(compaction.summary, probes, facts, counter),
                    measure(text, probes, facts, counter),
                    text,
                )
            )
    return out


def _pct(pair: tuple[int, int]) -> str:
    kept, of = pair
    return "-" if of == 0 else f"{100 * kept / of:.0f}% ({kept}/{of})"


def _sum(pairs: Iterable[tuple[int, int]]) -> tuple[int, int]:
    kept = of = 0
    for a, b in pairs:
        kept, of = kept + a, of + b
    return kept, of


def render(rows: Sequence[Compared], summarizer: str, *, as_json: bool = False) -> str:
    """The rows as a table (one block per compaction, a total) or one JSON document."""
    if as_json:
        return json.dumps(
            {"summarizer": summarizer, "compactions": [r.to_dict() for r in rows]}, indent=2
        )
    if not rows:
        return "no recorded compaction with a summary in these traces"
    lines = [f"recorded summaries vs {summarizer}"]
    for row in rows:
        lines.append(
            f"\n{row.trace_id} call {row.call} ({row.trigger}, {row.strategy},"
            f" history {row.history_tokens:,} tokens)"
        )
        lines += _table(row.recorded, row.ours, summarizer)
    if len(rows) > 1:
        total_r = _total(r.recorded for r in rows)
        total_o = _total(r.ours for r in rows)
        lines.append(f"\nall {len(rows)} compactions")
        lines += _table(total_r, total_o, summarizer)
    return "\n".join(lines)


def _total(measured: Iterable[Measured]) -> Measured:
    items = list(measured)
    kinds = sorted({k for m in items for k in m.probes})
    return Measured(
        sum(m.tokens for m in items),
        {k: _sum(m.probes.get(k, (0, 0)) for m in items) for k in kinds},
        _sum(m.used_after for m in items),
    )


def _table(recorded: Measured, ours: Measured, name: str) -> list[str]:
    rows = [("length (tokens)", f"{recorded.tokens:,}", f"{ours.tokens:,}")]
    rows.append(("mined probes kept", _pct(recorded.probes_kept), _pct(ours.probes_kept)))
    for kind in sorted(set(recorded.probes) | set(ours.probes)):
        rows.append(
            (
                f"  {kind}",
                _pct(recorded.probes.get(kind, (0, 0))),
                _pct(ours.probes.get(kind, (0, 0))),
            )
        )
    rows.append(("used after, kept", _pct(recorded.used_after), _pct(ours.used_after)))
    width = max(len(r[0]) for r in rows)
    second = max(len("recorded"), *(len(r[1]) for r in rows))
    out = [f"  {'':<{width}}  {'recorded':>{second}}  {name}"]
    out += [f"  {a:<{width}}  {b:>{second}}  {c}" for a, b, c in rows]
    return out
