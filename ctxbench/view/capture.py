"""Re-replay one result row and record the prompt the model saw at every call.

Rows and events do not hold prompts (a 10,000-round run would need gigabytes), so the viewer
replays the row's spec again (replays are deterministic: the same events, byte for byte) and
records the view the engine hands to ``replay(on_view=...)`` at every call: the prompt its
probes are scored on (the last attempt's, whether the call was accepted, over the window,
refused for its tool pairing or aborted), and the end's. Watching the provider instead missed
the calls that never reach it (a pairing rejection, an abort), so every later call showed a
later call's prompt. Each distinct message gets one id (by fingerprint, in order of first
appearance), and a call's prompt is stored as runs of consecutive ids, so a prompt that only
grew costs one pair and the whole capture stays linear in the trace length.

For every probe it follows where the answer was at each call: ``in_context`` (a message of the
prompt holds an accepted answer, matched as the scorer matches), ``via_reference`` (a message
cites a written file that holds one) or ``gone``; the call where it stopped being in context is
where it was lost, with the compaction that happened there.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxbench.cell.runner import build_parts, identity_of, mined_probes
from ctxbench.cell.spec import RunSpec, canonical_json
from ctxbench.counting.base import replay_text
from ctxbench.engine import events as ev
from ctxbench.engine.replay import ReplayOutput, replay
from ctxbench.engine.result import Prices, RunResult
from ctxbench.engine.view import ContextView
from ctxbench.probes.model import Probe
from ctxbench.probes.scoring import TextIndex, answer_forms, file_text, normalise
from ctxbench.trace import Message, Trace, message_search_text

#: Probe states along the run, as the viewer names them.
IN_CONTEXT, VIA_REFERENCE, GONE, NOT_YET = "in_context", "via_reference", "gone", "not_yet"
#: Event fields that differ between two replays of the same cell without meaning anything.
_IGNORED = ("step", "run_id")


@dataclass(frozen=True)
class ProbeTrack:
    """One probe: what it asks, the call it is asked at, the engine's outcome there, and its
    state changes ``(call, state)``."""

    probe: Probe
    ask_call: int
    outcome: str | None
    changes: tuple[tuple[int, str], ...]
    #: why the engine scored it as it did, when not by the prompt (``after_failure``: the
    #: task had failed by its ask point, whatever the prompt held)
    reason: str | None = None

    @property
    def lost_at(self) -> int | None:
        """The last call up to the ask point where the answer left the prompt (None when it
        never left or never came)."""
        lost = None
        previous = NOT_YET
        for call, state in self.changes:
            if call > self.ask_call:
                break
            if previous == IN_CONTEXT and state != IN_CONTEXT:
                lost = call
            previous = state
        return lost


@dataclass(frozen=True)
class CallRecord:
    """What call ``k`` sent: the prompt as runs of message ids ``[first, last]``, and totals.
    The last record of a capture is the end of the trace (no call is made there)."""

    ranges: tuple[tuple[int, int], ...]
    true_tokens: int
    estimated_tokens: int


@dataclass
class Capture:
    """Everything the viewer shows of one run."""

    spec: RunSpec
    #: the row the run was recorded with (None: a run replayed from its spec alone)
    row: RunResult | None
    messages: list[Message] = field(default_factory=list)
    #: per message id: the trace index it is (or was rewritten from), None for added messages
    origins: list[int | None] = field(default_factory=list)
    #: per message id: "trace" (a recorded message as is), "rewritten" (a recorded tool result
    #: truncated or masked) or "added" (a summary, a note)
    kinds: list[str] = field(default_factory=list)
    #: per message id: (true tokens, estimated tokens)
    counts: list[tuple[int, int]] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    events: list[ev.Event] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    #: per message id: the written files its text cites (only messages the strategy wrote)
    cites: dict[int, list[str]] = field(default_factory=dict)
    probes: list[ProbeTrack] = field(default_factory=list)
    output: ReplayOutput | None = None

    def prompt(self, call: int) -> list[Message]:
        """The messages call ``call`` sent, rebuilt from its id ranges."""
        record = self.calls[call]
        return [self.messages[i] for a, b in record.ranges for i in range(a, b + 1)]

    def digests(self) -> list[str]:
        """Per call, a short hash of its events (step and run id removed): equal digests mean the
        two replays did the same thing there, as ``ctxbench diff`` compares them."""
        by_call: dict[int, list[dict[str, Any]]] = {}
        for e in self.events:
            by_call.setdefault(e.call, []).append(
                {k: v for k, v in e.to_dict().items() if k not in _IGNORED}
            )
        n = len(self.calls)
        return [
            hashlib.sha1(canonical_json(by_call.get(k, [])).encode("utf-8")).hexdigest()[:10]
            for k in range(n)
        ]


class _Observer:
    """Records the view the engine scores at each call (``replay(on_view=...)``)."""

    def __init__(self, capture: Capture, trace: Trace) -> None:
        self.capture = capture
        self._ids: dict[str, int] = {}
        self._trace_index = {m.fingerprint: i for i, m in enumerate(trace.messages)}
        self._by_call_id = {
            m.tool_call_id: i for i, m in enumerate(trace.messages) if m.tool_call_id
        }
        self._shown: list[Message] = []  # the prompt of the previous attempt
        self._length = 0  # messages in the prompt of the previous attempt
        self._ranges: list[list[int]] = []  # [first_id, last_id, start position]

    def id_of(self, message: Message, view: ContextView) -> int:
        key = message.fingerprint
        found = self._ids.get(key)
        if found is not None:
            return found
        new = len(self.capture.messages)
        self._ids[key] = new
        self.capture.messages.append(message)
        origin = self._trace_index.get(key)
        kind = "trace"
        if origin is None:
            kind = "added"
            if message.role == "tool" and message.tool_call_id in self._by_call_id:
                origin, kind = self._by_call_id[message.tool_call_id], "rewritten"
        self.capture.origins.append(origin)
        self.capture.kinds.append(kind)
        self.capture.counts.append(
            (view.true_counter.count_message(message), view.estimator.count_message(message))
        )
        return new

    def observe(self, call: int, view: ContextView) -> None:
        if call != len(self.capture.calls):
            raise AssertionError(f"the engine showed call {call} after {len(self.capture.calls)}")
        current = list(view)
        previous = self._shown
        common = min(len(current), len(previous))
        if current[:common] != previous[:common]:  # C-speed when only appended to
            common = next(
                i for i, (a, b) in enumerate(zip(current, previous)) if a is not b and a != b
            )
        self._truncate(common)
        for message in current[common:]:
            self._push(self.id_of(message, view))
        self._shown = current
        self.capture.calls.append(
            CallRecord(
                tuple((a, b) for a, b, _ in self._ranges), view.true_tokens, view.estimated_tokens
            )
        )

    def _truncate(self, keep: int) -> None:
        self._length = min(self._length, keep)
        while self._ranges and self._ranges[-1][2] >= keep:
            self._ranges.pop()
        if self._ranges:
            first, _, start = self._ranges[-1]
            if start + (self._ranges[-1][1] - first) >= keep:
                self._ranges[-1][1] = first + keep - start - 1

    def _push(self, message_id: int) -> None:
        if self._ranges and self._ranges[-1][1] + 1 == message_id:
            self._ranges[-1][1] = message_id
        else:
            self._ranges.append([message_id, message_id, self._length])
        self._length += 1


def capture_run(
    spec: RunSpec, trace: Trace, row: RunResult | None, *, prices: Prices | None = None
) -> Capture:
    """Replay ``spec`` on ``trace`` recording every call's prompt (see the module docstring),
    with the parts a cell is run with (:func:`ctxbench.cell.runner.build_parts`: the counters
    under the reasoning rule, the provider's prompt cache, a ``recorded`` summarizer bound to
    the trace), so the replay is the run's."""
    parts = build_parts(spec, trace)
    probes = mined_probes(trace) if spec.mine_probes and not trace.probes else None
    capture = Capture(spec=spec, row=row)
    observer = _Observer(capture, trace)
    output = replay(
        trace,
        parts.strategy,
        parts.provider,
        true_counter=parts.true_counter,
        estimator=parts.estimator,
        summarizer=parts.summarizer,
        probes=probes,
        seed=spec.seed,
        identity=identity_of(spec),
        prices=prices,
        on_view=observer.observe,  # every call, and the end (the prompt a next call would see)
    )
    capture.output = output
    capture.events = list(output.events)
    capture.files = dict(output.files)
    capture.cites = _citations(capture)
    probe_list = tuple(trace.probes if probes is None else probes)
    capture.probes = _track_probes(capture, probe_list, trace)
    return capture


class _Haystack:
    """Many texts searched for many answers: one case-folded string finds the candidates at C
    speed, and each candidate is confirmed by the scorer's own match (:class:`TextIndex`)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._texts = texts
        folded = [normalise(t) for t in texts]
        self._folded = "\x00".join(folded)
        self._starts = list(itertools.accumulate((len(f) + 1 for f in folded[:-1]), initial=0))
        self._indexes: dict[int, TextIndex] = {}

    def holding(self, answers: Sequence[str]) -> list[int]:
        """Sorted indices of the texts holding any of ``answers``."""
        found: set[int] = set()
        for answer in answers:
            for form in answer_forms(answer):  # a path's tails, a command's core, ...
                needle = normalise(form)
                at = self._folded.find(needle) if needle else -1
                while at >= 0:
                    i = bisect.bisect_right(self._starts, at) - 1
                    if i not in found and self._index(i).has(answer):
                        found.add(i)
                    nxt = self._starts[i + 1] if i + 1 < len(self._starts) else len(self._folded)
                    at = self._folded.find(needle, nxt)
        return sorted(found)

    def _index(self, i: int) -> TextIndex:
        if i not in self._indexes:
            self._indexes[i] = TextIndex.of(self._texts[i])
        return self._indexes[i]


#: What a written file's path looks like in a prompt (safe_component names joined by "/").
_PATH_LIKE = re.compile(r"[A-Za-z0-9_./-]+")


def _citations(capture: Capture) -> dict[int, list[str]]:
    """Which written files each message cites. Only messages the strategy made (rewritten or
    added) can name a file it wrote, so recorded messages are not searched; one pass over
    their words, looked up in the set of paths."""
    paths = set(capture.files)
    out: dict[int, list[str]] = {}
    if not paths:
        return out
    for i, (message, kind) in enumerate(zip(capture.messages, capture.kinds)):
        if kind == "trace":
            continue
        found = []
        for word in _PATH_LIKE.findall(message_search_text(message)):
            for candidate in (word, word.rstrip(".")):
                if candidate in paths and candidate not in found:
                    found.append(candidate)
        if found:
            out[i] = found
    return out


def _track_probes(capture: Capture, probes: Sequence[Probe], trace: Trace) -> list[ProbeTrack]:
    """Each probe's state at every call, from which messages of the prompt hold an answer."""
    if not probes:
        return []
    asked = [e for e in capture.events if isinstance(e, ev.ProbeScored)]
    outcomes = {e.probe_id: e.outcome for e in asked}
    reasons = {e.probe_id: e.reason for e in asked if e.reason}
    raw = [message_search_text(m) for m in capture.messages]
    messages = _Haystack([r + replay_text(m) for r, m in zip(raw, capture.messages)])
    cited_by: dict[str, set[int]] = {}
    for i, cited in capture.cites.items():
        for path in cited:
            cited_by.setdefault(path, set()).add(i)
    paths = sorted(cited_by)  # a file no message cites cannot make a probe recoverable
    files = _Haystack([file_text(p, capture.files[p]) for p in paths])
    n_calls = len(trace.call_indices)
    wanted = []
    for probe in probes:
        holding = set(messages.holding(probe.answers))
        citing: set[int] = set()
        for f in files.holding(probe.answers):
            citing |= cited_by[paths[f]]
        wanted.append((holding, citing))
    changes: list[list[tuple[int, str]]] = [[] for _ in probes]
    states = [NOT_YET] * len(probes)
    for k, record in enumerate(capture.calls):
        ids = _ids_of(record.ranges)
        for j, (holding, citing) in enumerate(wanted):
            if _meets(ids, holding):
                now = IN_CONTEXT
            elif _meets(ids, citing):
                now = VIA_REFERENCE
            else:
                now = NOT_YET if states[j] == NOT_YET else GONE
            if now != states[j]:
                changes[j].append((k, now))
                states[j] = now
    return [
        ProbeTrack(
            probe,
            n_calls if probe.ask_at is None else min(max(probe.ask_at, 0), n_calls),
            outcomes.get(probe.id),
            tuple(found),
            reasons.get(probe.id),
        )
        for probe, found in zip(probes, changes)
    ]


def _meets(ids: set[int], wanted: set[int]) -> bool:
    """Whether the prompt's ids and the wanted ids share one (iterating the smaller side)."""
    small, large = (ids, wanted) if len(ids) < len(wanted) else (wanted, ids)
    return any(i in large for i in small)


def _ids_of(ranges: Sequence[tuple[int, int]]) -> set[int]:
    out: set[int] = set()
    for a, b in ranges:
        out.update(range(a, b + 1))
    return out


def probe_json(track: ProbeTrack) -> dict[str, Any]:
    """A probe track as the viewer reads it."""
    p = track.probe
    return {
        "id": p.id,
        "kind": p.kind,
        "question": p.question,
        "answers": list(p.answers),
        "evidence": list(p.evidence),
        "ask_at": p.ask_at,
        "ask_call": track.ask_call,
        "outcome": track.outcome,
        "reason": track.reason,
        "changes": [list(c) for c in track.changes],
        "lost_at": track.lost_at,
    }
