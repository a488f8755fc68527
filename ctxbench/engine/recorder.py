"""The replay's own bookkeeping behind :class:`~ctxbench.engine.context.ReplayContext`.

Engine-private: a strategy never sees it (``docs/plugins.md`` documents the context only).
It keeps the events and files the replay records, the full history appended, the original
system texts, and which trace message each prompt message stands for: a recorded message's
trace index, inherited by its rewrites and by the parts a layer declares as its sources, so a
compaction names the recorded messages it dropped. The engine appends the recorded messages
through it (:meth:`Recorder.append_recorded`); analyses that wrap a strategy read trace
indices with :func:`recorder_of`.
"""

from __future__ import annotations

import operator
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from itertools import compress, count, repeat
from typing import TYPE_CHECKING, Any

from ctxbench.engine import events as ev
from ctxbench.engine.align import opcodes
from ctxbench.engine.prompt import Change, Prompt, Step
from ctxbench.pairing import PairingMemo
from ctxbench.trace import Message

if TYPE_CHECKING:
    from ctxbench.engine.context import ReplayContext
    from ctxbench.engine.view import ContextView


class Recorder:
    """One replay's events, files, history and trace indices (see the module docstring)."""

    def __init__(self, view: ContextView) -> None:
        self.view = view
        self.events: list[ev.Event] = []
        self.files: dict[str, bytes] = {}
        self.system: tuple[str, ...] = ()
        self.recorded: dict[str, int] = {}  # fingerprint -> trace index of recorded messages
        self.pairing = PairingMemo()
        self.history: list[Message] = []
        #: the rewrites' keys a compaction settled last, every one of them recorded
        self.settled: tuple[str, ...] = ()
        #: the last rewrites in place worked out, for the next call's lists
        self.in_place = InPlace()

    def replace(
        self, messages: Sequence[Message], sources: Sequence[Message | None] | None
    ) -> tuple[bool, dict[str, Any]]:
        """Make ``messages`` the view (:meth:`ReplayContext.apply`): whether anything changed
        and, if so, the ``compaction`` event's accounting (tokens and messages before and
        after, dropped, rewritten and added messages, the dropped trace indices as runs, the
        pairing check, whether the system texts survive), the trace indices settled."""
        view = self.view
        before, keys_before, known_before = view.messages, view.keys, view.prompt
        est_before, true_before = view.estimated_tokens, view.true_tokens
        after = messages if isinstance(messages, Prompt) else None
        known = None
        if known_before is not None and after is not None:
            known = known_before.change_to(after)
        changed, change = known if known is not None else (differs(before, messages), None)
        fields: dict[str, Any] = {}
        if changed:
            if sources is not None:
                self.inherit_all(messages, sources)
            view.replace(messages)
            if change is None:
                change = change_of(before, messages, keys_before, view.keys, self.in_place)
            fields = {
                "est_before": est_before,
                "est_after": view.estimated_tokens,
                "true_before": true_before,
                "true_after": view.true_tokens,
                "messages_before": len(before),
                "messages_after": len(messages),
                "dropped": change.dropped,
                "changed": change.rewritten,
                "added": change.added,
                "dropped_messages": change.runs_of(self.settle(change)),
                "pairing_violations": self.violations(messages, after),
                "system_kept": self.system_kept(after),
            }
        if known is None and known_before is not None and after is not None:
            known_before.remember(after, changed, change)
        return changed, fields

    def append_recorded(self, message: Message, index: int | None) -> None:
        """Append a recorded message (or the strategy's version of a recorded tool result)."""
        if index is not None:
            self.recorded.setdefault(message.fingerprint, index)
        self.history.append(message)
        self.view.append(message)

    def remember_system(self, message: Message) -> None:
        """Note an original system message's text (:meth:`system_kept` looks for it)."""
        if message.role == "system" and message.content:
            self.system = (*self.system, message.content)

    def trace_index(self, message: Message) -> int | None:
        """The trace index of a recorded message (or of its rewrite), None for new messages."""
        return self.recorded.get(message.fingerprint)

    def system_kept(self, prompt: Prompt | None = None) -> bool:
        """Every original system message's text still leads some system message of the view
        (which shows ``prompt``, if given: worked out once per prompt and system texts)."""
        if prompt is not None:
            found = prompt.system_kept.get(self.system)
            if found is None:
                found = prompt.system_kept[self.system] = self.system_kept()
            return found
        if not self.system:
            return True
        view = self.view.messages
        missing = set(self.system)  # read the system messages until each original is found
        for message in compress(view, map(operator.eq, map(_ROLE, view), repeat("system"))):
            text = message.content
            missing = {orig for orig in missing if not (text.startswith(orig) or orig in text)}
            if not missing:
                return True
        return False

    def violations(self, messages: Sequence[Message], prompt: Prompt | None) -> int:
        """The pairing violations of ``messages`` (a prompt's, once)."""
        if prompt is None:
            return self.pairing.violations(messages)
        if prompt.violations is None:
            prompt.violations = self.pairing.violations(prompt)
        return prompt.violations

    def inherit(self, message: Message, source: Message) -> None:
        """``message`` stands for ``source`` (its rewrite, a part of it, the memory's own form of
        it): it takes a recorded source's trace index, so it counts as kept and a later drop
        names it, unless it carries nothing at all (no text, parts, tool calls or provider
        replay fields: an empty stand-in keeps nothing of the message). The one rule for a
        rewrite in place, a layer's declared ``sources`` and a re-assembly's."""
        if source is message:  # a message standing for itself already has its index, if any
            return
        index = self.recorded.get(source.fingerprint)
        if index is None:
            return
        if message.fingerprint == source.fingerprint or _carries_something(message):
            self.recorded.setdefault(message.fingerprint, index)

    def inherit_all(self, messages: Sequence[Message], sources: Sequence[Message | None]) -> None:
        """:meth:`inherit` for each pair; a message standing for itself is skipped in C (a
        prompt standing for another prompt knows its places)."""
        if len(messages) != len(sources):
            raise ValueError(
                f"{len(sources)} sources for {len(messages)} messages: one source per message"
            )
        if isinstance(messages, Prompt) and isinstance(sources, Prompt):
            places: Iterable[int] = messages.standing_in(sources)
        else:
            places = _positions_not(map(operator.is_, messages, sources))
        for i in places:
            source = sources[i]
            if source is not None:
                self.inherit(messages[i], source)

    def settle(self, change: Change) -> list[list[int | None]]:
        """Carry out ``change`` on this replay's trace indices, step by step in the alignment's
        order: a rewrite inherits its source's index (:meth:`inherit`: when the source has one
        and the rewrite none yet); returns the dropped messages' trace indices as ``[first,
        last]`` runs (worked out once for the indices found)."""
        recorded = self.recorded
        found: list[list[int | None]] = []
        for new, source, messages, dropped in change.steps:
            # the keys settled last are known recorded (recorded keys stay): a layer that
            # rewrites the same messages again, and a few more, reads only the few more
            start = len(self.settled) if new[: len(self.settled)] == self.settled else 0
            absent = False
            # the membership is read as the loop reaches each place (two rewrites may share a key)
            for i in compress(
                count(start), map(operator.not_, map(recorded.__contains__, new[start:]))
            ):
                index, key = recorded.get(source[i]), new[i]
                if (
                    index is not None
                    and key not in recorded
                    and (key == source[i] or _carries_something(messages[i]))
                ):
                    recorded[key] = index
                absent = absent or key not in recorded
            if new and not absent:
                self.settled = new
            if dropped:
                found.append(list(map(recorded.get, dropped)))
        return found


def recorder_of(ctx: ReplayContext) -> Recorder:
    """The recorder behind a replay context (for the engine, and analyses wrapping a strategy)."""
    return ctx._recorder


def check_messages(ctx: ReplayContext, layer: str, messages: object) -> None:
    """A PluginError naming the layer, the trace and the call when ``ctx.apply`` is given
    anything but a sequence of messages (OpenAI dicts, None)."""
    from ctxbench.engine import faults

    hint = (
        "build ctxbench.Message objects; OpenAI-style dicts convert with "
        "ctxbench.from_openai(dicts)"
    )
    where = (ctx.trace_id, ctx.call, ctx.n_calls)
    if not isinstance(messages, (list, tuple)):
        raise faults.wrong_value(
            f"strategy {ctx.strategy.name}",
            f"ctx.apply({layer!r}, ...)",
            messages,
            "a list of ctxbench.Message",
            *where,
            hint=hint,
        )
    bad = next(
        compress(count(), map(operator.not_, map(isinstance, messages, repeat(Message)))),
        None,
    )
    if bad is not None:
        raise faults.wrong_value(
            f"strategy {ctx.strategy.name}",
            f"ctx.apply({layer!r}, ...)",
            messages[bad],
            f"a ctxbench.Message at index {bad}",
            *where,
            hint=hint,
        )


_ROLE = operator.attrgetter("role")


def _positions_not(flags: Iterator[bool]) -> Iterator[int]:
    """The positions of the false flags."""
    return compress(count(), map(operator.not_, flags))


def differs(before: Sequence[Message], after: Sequence[Message]) -> bool:
    """Whether some message of ``after`` is not the one at its place in ``before``."""
    if len(before) != len(after):
        return True
    return any(before[i] != after[i] for i in _positions_not(map(operator.is_, before, after)))


def _rewrites_in_place(
    before: Sequence[Message], after: Sequence[Message], a: list[str], b: list[str]
) -> list[int] | None:
    """The positions rewritten when ``after`` is ``before`` with messages replaced in place by
    messages of the same role that neither side has elsewhere (a truncation, a mask), each
    key unique on its side: then difflib aligns every other position with itself and each run
    of rewrites is a "replace" of as many messages of the same roles (what :func:`opcodes`
    would give, without walking the opcodes). None for any other pair of lists."""
    if len(a) != len(b):
        return None
    changed = list(_positions_not(map(operator.eq, a, b)))
    if not changed:
        return changed
    if not _keys_unique_and_new(a, b, changed):
        return None
    roles_before = map(_ROLE, map(before.__getitem__, changed))
    if not all(map(operator.eq, roles_before, map(_ROLE, map(after.__getitem__, changed)))):
        return None
    return changed


class InPlace:
    """:func:`_rewrites_in_place` for one replay, worked out from its last answer where the
    lists repeat the last ones: DB-GPT 0.8.2 turns its history into its rebuilt prompt at
    every call, both one call longer than the last two and the same objects but for the system
    prompt. A place where both lists hold the objects they held last time has the last answer
    there (the same keys, a key being its message's fingerprint, and the same roles); the
    other places, and those past the last lists, are read again, and the checks of the whole
    lists' keys (each unique, the new ones new) are made again. Only tuples are remembered (a
    :class:`Prompt`, the view's messages): a list may change after."""

    def __init__(self) -> None:
        #: the last lists with rewrites and those rewrites (None: nothing to start from)
        self._last: tuple[tuple[Message, ...], tuple[Message, ...], list[int]] | None = None

    def rewrites(
        self, before: Sequence[Message], after: Sequence[Message], a: list[str], b: list[str]
    ) -> list[int] | None:
        """What :func:`_rewrites_in_place` answers for these lists."""
        if not isinstance(before, tuple) or not isinstance(after, tuple):
            return _rewrites_in_place(before, after, a, b)
        found = None if len(a) != len(b) else self._again(before, after, a, b, self._last)
        if found is not None:
            self._last = (before, after, found)
        return found

    @staticmethod
    def _again(
        before: tuple[Message, ...],
        after: tuple[Message, ...],
        a: list[str],
        b: list[str],
        last: tuple[tuple[Message, ...], tuple[Message, ...], list[int]] | None,
    ) -> list[int] | None:
        if last is None:
            return _rewrites_in_place(before, after, a, b)
        last_before, last_after, last_found = last
        n = min(len(before), len(last_before), len(last_after))
        moved = list(
            _positions_not(
                map(
                    operator.and_,
                    map(operator.is_, before[:n], last_before[:n]),
                    map(operator.is_, after[:n], last_after[:n]),
                )
            )
        )
        if len(moved) > n // 16:
            return _rewrites_in_place(before, after, a, b)
        kept = last_found[: bisect_left(last_found, n)]
        for place in moved:
            at = bisect_left(kept, place)
            if at < len(kept) and kept[at] == place:
                del kept[at]
        read = [*moved, *range(n, len(a))]
        new = [i for i in read if a[i] != b[i]]
        if any(before[i].role != after[i].role for i in new):
            return None
        changed = sorted(kept + new) if new else kept
        if not changed:
            return changed
        return changed if _keys_unique_and_new(a, b, changed) else None


def _keys_unique_and_new(a: list[str], b: list[str], changed: list[int]) -> bool:
    """``a`` unique, and ``b``'s keys at ``changed`` unique and none of ``a``'s: then ``b`` is
    unique too, and neither side has the other's changed keys."""
    keys_a = set(a)
    new_keys = list(map(b.__getitem__, changed))
    return (
        len(keys_a) == len(a)
        and len(set(new_keys)) == len(new_keys)
        and keys_a.isdisjoint(new_keys)
    )


def change_of(
    before: Sequence[Message],
    after: Sequence[Message],
    a: list[str],
    b: list[str],
    in_place: InPlace | None = None,
) -> Change:
    """The accounting of a compaction from ``before`` to ``after`` (keys ``a`` and ``b``).

    The two lists are aligned on their keys; a run of messages replaced by as many messages of
    the same roles counts as rewritten in place (a truncation, a mask), and each rewrite
    stands for the message it replaced (it inherits its trace index, so later drops still
    name it); any other run counts as dropped and added. ``in_place``: the replay's last
    rewrites in place, to start from (:class:`InPlace`)."""
    if in_place is not None:
        rewrites = in_place.rewrites(before, after, a, b)
    else:
        rewrites = _rewrites_in_place(before, after, a, b)
    if rewrites is not None:  # the same length, and only rewrites in place of one role
        new = tuple(map(b.__getitem__, rewrites))
        sources = tuple(map(a.__getitem__, rewrites))
        messages = tuple(map(after.__getitem__, rewrites))
        return Change(0, len(rewrites), 0, ((new, sources, messages, ()),))
    dropped = rewritten = added = 0
    steps: list[Step] = []
    for tag, i1, i2, j1, j2 in opcodes(a, b):
        if tag == "equal":
            continue
        olds, news = before[i1:i2], after[j1:j2]
        if (
            tag == "replace"
            and len(olds) == len(news)
            and all(o.role == n.role for o, n in zip(olds, news))
        ):
            rewritten += len(news)
            steps.append((tuple(b[j1:j2]), tuple(a[i1:i2]), tuple(news), ()))
            continue
        dropped += len(olds)
        added += len(news)
        steps.append(((), (), (), tuple(a[i1:i2])))
    return Change(dropped, rewritten, added, tuple(steps))


def _carries_something(message: Message) -> bool:
    """Whether a message holds anything a model reads: text, parts, tool calls, replay fields."""
    return bool(message.content or message.parts or message.tool_calls or message.replay)
