"""Grading a compaction saved to a file: the transcript (or summary text) a product wrote when
it compacted, scored against a trace's probes as a replay scores a prompt.

A team whose agent writes its ``/compact`` output to a file grades it without writing a
strategy: ``ctxbench score --compacted FILE --trace TRACE`` (or ``--probes PROBES``). The
file is read as:

- a transcript, when it ends in ``.json`` / ``.jsonl`` (``.gz`` too): any format ``ctxbench
  import`` reads (a canonical trace, a chat-messages JSON list or ``{"messages": [...]}``
  object, a session log), holding one conversation; its messages are the compacted prompt;
- summary text otherwise (``.txt``, ``.md``, ...): one user message, as Claude Code and Codex
  put their summaries.

Each probe is scored by :class:`~ctxbench.probes.scoring.PromptScorer`, the engine's own
matching (a path as absolute, cwd- or repo-relative, a command without its ``cd X &&``, ...),
with no written files (a saved compaction cites none it ships). The probes graded are those
the compaction had to carry: with a cut (``at``: the call before which the history was
replaced; by default the trace's first recorded compaction) the probes asked at or after it
whose evidence starts before it; without one, every probe. The size is the compacted
messages' tokens against the replaced history's, with one counter.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxbench.counting.base import TokenCounter
from ctxbench.errors import TraceFormatError
from ctxbench.guard import small_file
from ctxbench.probes.model import Probe
from ctxbench.probes.scoring import PromptScorer
from ctxbench.trace import Message, Trace

#: Suffixes read as a transcript (any other file is summary text).
TRANSCRIPT_SUFFIXES = (".json", ".jsonl", ".json.gz", ".jsonl.gz")
#: The largest summary text read whole (a transcript goes through the importers' own limits).
MAX_TEXT_BYTES = 64 * 1024 * 1024
#: Outcomes that count as kept (``retention``: in context, as the engine's rows count it).
KEPT = "in_context"
OUTCOMES = ("in_context", "via_reference", "stale", "lost")
TEXT_HINT = "give the summary as UTF-8 text, or the transcript as .json / .jsonl"


@dataclass(frozen=True)
class Compacted:
    """A saved compaction: its messages and what it was read as."""

    path: Path
    messages: tuple[Message, ...]
    #: "transcript (FORMAT)" or "summary text"
    read_as: str


@dataclass(frozen=True)
class Cut:
    """The history a compaction replaced: the trace's messages before ``call``."""

    trace: Trace
    #: the model call before which the history was replaced (None: the whole trace)
    call: int | None

    @property
    def end(self) -> int:
        """The index of the first trace message the compaction did not replace."""
        if self.call is None or self.call >= len(self.trace.call_indices):
            return len(self.trace.messages)
        return self.trace.call_indices[self.call]

    @property
    def history(self) -> tuple[Message, ...]:
        return self.trace.messages[: self.end]

    def carries(self, probe: Probe) -> bool:
        """Whether the compaction had to carry ``probe``: asked at or after the cut, about a
        fact stated before it (every probe when the whole trace was replaced)."""
        if self.call is None:
            return True
        asked_after = probe.ask_at is None or probe.ask_at >= self.call
        stated_before = not probe.evidence or min(probe.evidence) < self.end
        return asked_after and stated_before


@dataclass(frozen=True)
class Graded:
    """One probe's outcome in the compacted prompt."""

    probe: Probe
    outcome: str
    #: the answer kept only as a bare list item (no words around it)
    bare: bool


@dataclass(frozen=True)
class Grade:
    """A saved compaction graded against probes, with its size."""

    compacted: Compacted
    counter: str
    graded: tuple[Graded, ...]
    #: probes the cut left out (asked before it, or stated after it)
    left_out: int
    compacted_tokens: int
    cut: Cut | None
    history_tokens: int | None

    @property
    def share(self) -> float | None:
        """The compacted tokens as a share of the history they replaced."""
        if not self.history_tokens:
            return None
        return self.compacted_tokens / self.history_tokens

    @property
    def retention(self) -> float | None:
        n = len(self.graded)
        return sum(g.outcome == KEPT for g in self.graded) / n if n else None

    def by_kind(self) -> dict[str, dict[str, Any]]:
        """Per probe kind: how many, each outcome's count, and retention (sorted by kind)."""
        counts: dict[str, Counter[str]] = {}
        for g in self.graded:
            counts.setdefault(g.probe.kind, Counter())[g.outcome] += 1
        return {
            kind: {
                "probes": sum(c.values()),
                **{o: c[o] for o in OUTCOMES},
                "retention": round(c[KEPT] / sum(c.values()), 4),
            }
            for kind, c in sorted(counts.items())
        }

    def to_dict(self) -> dict[str, Any]:
        """The grade as JSON (``ctxbench score --json``)."""
        cut = self.cut
        return {
            "compacted": str(self.compacted.path),
            "read_as": self.compacted.read_as,
            "messages": len(self.compacted.messages),
            "counter": self.counter,
            "compacted_tokens": self.compacted_tokens,
            "trace_id": cut.trace.id if cut else None,
            "replaced_before_call": cut.call if cut else None,
            "replaced_messages": cut.end if cut else None,
            "history_tokens": self.history_tokens,
            "share": None if self.share is None else round(self.share, 4),
            "retention": None if self.retention is None else round(self.retention, 4),
            "by_kind": self.by_kind(),
            "left_out": self.left_out,
            "probes": [
                {
                    "id": g.probe.id,
                    "kind": g.probe.kind,
                    "outcome": g.outcome,
                    "bare": g.bare,
                    "answers": list(g.probe.answers),
                    "question": g.probe.question,
                    "ask_at": g.probe.ask_at,
                }
                for g in self.graded
            ],
        }


def read_compacted(path: str | Path) -> Compacted:
    """The saved compaction at ``path`` (see the module docstring for how it is read)."""
    path = Path(path)
    if path.name.endswith(TRANSCRIPT_SUFFIXES):
        return _transcript(path)
    small_file(
        path, what="a summary text", error=TraceFormatError, limit=MAX_TEXT_BYTES, hint=TEXT_HINT
    )
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise TraceFormatError(
            "no such file", path=path, hint="give the file your agent wrote its compaction to"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise TraceFormatError(f"cannot read: {reason}", path=path, hint=TEXT_HINT) from None
    if not text.strip():
        raise TraceFormatError(
            "the summary is empty", path=path, hint="give the file holding the compacted text"
        )
    return Compacted(path, (Message("user", text),), "summary text")


def _transcript(path: Path) -> Compacted:
    from ctxbench.formats.importing import open_source

    source = open_source(path)
    traces = list(source.traces())
    if len(traces) != 1:
        raise TraceFormatError(
            f"holds {len(traces)} conversations; a compacted transcript is one",
            path=path,
            hint="write the one compacted conversation to its own file",
        )
    (trace,) = traces
    if not trace.messages:
        raise TraceFormatError(
            "the transcript has no messages", path=path, hint="give the compacted conversation"
        )
    return Compacted(path, trace.messages, f"transcript ({source.importer.name})")


def probes_for(
    trace: Trace | None, probe_sets: Mapping[str, tuple[Probe, ...]] | None, *, source: str
) -> tuple[Probe, ...]:
    """The probes to grade with: the probe file's for the trace (or its only trace), else the
    trace's own, else mined from the trace (as a run with ``mine_probes`` does)."""
    if probe_sets is not None:
        if trace is not None:
            if trace.id not in probe_sets:
                raise TraceFormatError(
                    f"has no probes for trace {trace.id!r}",
                    path=source,
                    hint=f"its traces: {', '.join(sorted(probe_sets)) or 'none'}",
                )
            return probe_sets[trace.id]
        if len(probe_sets) != 1:
            raise TraceFormatError(
                f"holds the probes of {len(probe_sets)} traces",
                path=source,
                hint="say which trace the compaction replaced: --trace TRACE or --trace-id ID",
            )
        return next(iter(probe_sets.values()))
    assert trace is not None
    if trace.probes:
        return trace.probes
    from ctxbench.probes.mining import mine_probes

    return mine_probes(trace)


def default_cut(trace: Trace) -> int | None:
    """The call of the trace's first recorded compaction (None: it recorded none)."""
    return min((c.call for c in trace.recorded_compactions), default=None)


def grade(
    compacted: Compacted,
    probes: Sequence[Probe],
    counter: TokenCounter,
    *,
    cut: Cut | None = None,
) -> Grade:
    """Score ``probes`` (those ``cut`` says the compaction carries) against ``compacted``."""
    carried = [p for p in probes if cut is None or cut.carries(p)]
    scorer = PromptScorer(compacted.messages, {})
    graded = []
    for probe in carried:
        outcome = scorer.score(probe)
        graded.append(Graded(probe, outcome, outcome == KEPT and scorer.is_bare(probe)))
    return Grade(
        compacted=compacted,
        counter=counter.name,
        graded=tuple(graded),
        left_out=len(probes) - len(carried),
        compacted_tokens=sum(counter.count_message(m) for m in compacted.messages),
        cut=cut,
        history_tokens=None if cut is None else sum(counter.count_message(m) for m in cut.history),
    )
