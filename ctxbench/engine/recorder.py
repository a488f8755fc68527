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
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from itertools import compress, count, repeat
from typing import TYPE_CHECKING, Any

from ctxbench.engine import events as ev
from ctxbench.engine.align import aligned
from ctxbench.engine.prompt import Change, Drops, Prompt, Step, few
from ctxbench.pairing import PairingMemo, changed_places
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
        #: every file recorded (:meth:`ReplayContext.write_file`) by path: its sha256, the
        #: content kept in ``files`` or not
        self.written: dict[str, str] = {}
        self.system: tuple[str, ...] = ()
        self.recorded: dict[str, int] = {}  # fingerprint -> trace index of recorded messages
        self.pairing = PairingMemo()
        self.history: list[Message] = []
        #: the rewrites' keys a compaction settled last, every one of them recorded
        self.settled: tuple[str, ...] = ()
        #: the last rewrites in place worked out, for the next call's lists
        self.in_place = InPlace()
        #: the trace indices of the last run dropped, for the next call's
        self.drops = Drops()
        #: the prompt last shown whose keys are known unique (:attr:`Change.unique`)
        self._unique: Prompt | None = None

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
                unique = known_before is not None and known_before is self._unique
                change = change_of(before, messages, keys_before, view.keys, self.in_place, unique)
            self._unique = after if change.unique else None
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
                "dropped_messages": self.dropped_runs(change),
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
        # read lazily: the originals are found at the head, as a rule
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
        else:  # every place holding an unequal message (an equal one has its index)
            places = changed_places(messages, sources, len(messages)) or ()
        for i in places:
            source = sources[i]
            if source is not None:
                self.inherit(messages[i], source)

    def settle(self, change: Change) -> list[list[int | None]]:
        """Carry out ``change`` on this replay's trace indices, step by step in the alignment's
        order: a rewrite inherits its source's index (:meth:`inherit`: when the source has one
        and the rewrite none yet); returns the trace indices found for each step's dropped
        keys (None: a key the replay does not know)."""
        found: list[list[int | None]] = []
        for step in change.steps:
            self._settle_rewrites(step)
            if step[3]:
                found.append(list(map(self.recorded.get, step[3])))
        return found

    def dropped_runs(self, change: Change) -> list[list[int]]:
        """:meth:`settle` ``change``, and the dropped messages' trace indices as ``[first,
        last]`` runs (new lists): a change dropping one run has them carried from the last
        such change (:class:`Drops`), any other works them out once for the indices found
        (:meth:`Change.runs_of`)."""
        drops = sum(map(bool, map(_DROPPED, change.steps)))
        if drops > 1:
            return change.runs_of(self.settle(change))
        runs: list[list[int]] = []  # (none dropped: no runs)
        for step in change.steps:
            self._settle_rewrites(step)
            if step[3]:
                runs = self.drops.runs(step[3], self.recorded)
        return runs

    def _settle_rewrites(self, step: Step) -> None:
        """A step's rewrites inherit their sources' trace indices (:meth:`settle`)."""
        new, source, messages, _ = step
        recorded = self.recorded
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
_DROPPED = operator.itemgetter(3)


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
    """:func:`_rewrites_in_place` for one replay, carried from the last pair of lists of one
    length: DB-GPT 0.8.2 turns its history into its rebuilt prompt at every call, both one
    call longer than the last two and the same but for the system prompt and the few messages
    newly cut. It keeps the last pair's keys (copies), where they differ, and what the answer
    depends on, each counted over the whole lists: each side's keys by how often they occur,
    how many keys repeat on ``a`` and among the rewrites' keys, how many rewrites' keys ``a``
    has, how many rewrites change the role; and the :class:`Change` columns of the rewrites.
    The next pair of that length is compared with it (:func:`changed_places`, in C): the
    places where a key changed and those past the shorter pair are taken out of the counts
    and put back as they are now; every other place holds the keys (and so the roles) it held.
    More than a sixteenth of the places to read again, those added or gone included
    (:func:`ctxbench.engine.prompt.few`): worked out whole again."""

    def __init__(self) -> None:
        self._a: list[str] | None = None  # None: nothing to start from
        self._b: list[str] = []
        self._changed: list[int] = []  # the places where a and b differ
        #: the Change's columns: the rewrites' keys, their sources' keys, the rewrites
        self._new: list[str] = []
        self._sources: list[str] = []
        self._messages: list[Message] = []
        self._count_a: dict[str, int] = {}
        self._count_new: dict[str, int] = {}  # b's keys at the changed places
        self._repeats_a = self._repeats_new = self._shared = 0
        self._retyped: set[int] = set()

    def rewrites(
        self, before: Sequence[Message], after: Sequence[Message], a: list[str], b: list[str]
    ) -> list[int] | None:
        """What :func:`_rewrites_in_place` answers for these lists."""
        if not self._read(before, after, a, b):
            return None
        return list(self._changed) if self._holds() else None

    def change(
        self, before: Sequence[Message], after: Sequence[Message], a: list[str], b: list[str]
    ) -> Change | None:
        """The :class:`Change` of :func:`change_of` when ``after`` rewrites ``before`` in place
        (:func:`_rewrites_in_place`), its columns carried from the last; else None."""
        if not self._read(before, after, a, b) or not self._holds():
            return None
        step = (tuple(self._new), tuple(self._sources), tuple(self._messages), ())
        return Change(0, len(self._new), 0, (step,), unique=self._repeats_a == 0)

    def _holds(self) -> bool:
        return not self._changed or not (
            self._repeats_a or self._repeats_new or self._shared or self._retyped
        )

    def _read(
        self, before: Sequence[Message], after: Sequence[Message], a: list[str], b: list[str]
    ) -> bool:
        """Make the pair ``a``, ``b`` the one held; False when they differ in length."""
        if len(a) != len(b):
            return False
        last_a, last_b = self._a, self._b
        n = len(a)
        if last_a is not None and (most := few(n) - abs(n - len(last_a))) >= 0:
            in_a = changed_places(a, last_a, most)
            in_b = changed_places(b, last_b, most) if in_a is not None else None
            if in_a is not None and in_b is not None and len(in_a) + len(in_b) <= most:
                places = sorted({*in_a, *in_b})
                places += range(min(n, len(last_a)), max(n, len(last_a)))
                self._again(before, after, a, b, places)
                return True
        self._whole(before, after, a, b)
        return True

    def _whole(
        self, before: Sequence[Message], after: Sequence[Message], a: list[str], b: list[str]
    ) -> None:
        self._a, self._b = list(a), list(b)
        changed = list(_positions_not(map(operator.eq, a, b)))
        self._changed = changed
        new = self._new = list(map(b.__getitem__, changed))
        self._sources = list(map(a.__getitem__, changed))
        self._messages = list(map(after.__getitem__, changed))
        self._count_a, self._count_new = Counter(a), Counter(new)
        self._repeats_a = len(a) - len(self._count_a)
        self._repeats_new = len(new) - len(self._count_new)
        shared = self._count_new.keys() & self._count_a.keys()
        self._shared = sum(map(self._count_new.__getitem__, shared))
        roles_before = map(_ROLE, map(before.__getitem__, changed))
        roles_after = map(_ROLE, map(after.__getitem__, changed))
        self._retyped = set(compress(changed, map(operator.ne, roles_before, roles_after)))

    def _again(
        self,
        before: Sequence[Message],
        after: Sequence[Message],
        a: list[str],
        b: list[str],
        places: list[int],
    ) -> None:
        """Carry the held pair to ``a``, ``b``: ``places`` (in order) are where either may
        differ from the held pair, and those past the shorter pair."""
        last_a, last_b, old = self._a, self._b, self._changed
        assert last_a is not None
        n_old, n = len(last_a), len(a)
        last_new, last_sources, last_messages = self._new, self._sources, self._messages
        changed: list[int] = []
        new: list[str] = []
        sources: list[str] = []
        messages: list[Message] = []
        done = 0  # the rewrites held before ``done`` are copied or dropped
        for place in places:
            at = bisect_left(old, place, done)
            changed += old[done:at]
            new += last_new[done:at]
            sources += last_sources[done:at]
            messages += last_messages[done:at]
            if at < len(old) and old[at] == place:  # a rewrite held at this place goes
                self._remove_new(last_b[place])
                self._retyped.discard(place)
                at += 1
            done = at
            if place < n_old:
                self._remove_a(last_a[place])
            if place < n:
                key_a, key_b = a[place], b[place]
                self._add_a(key_a)
                if key_a != key_b:
                    changed.append(place)
                    new.append(key_b)
                    sources.append(key_a)
                    messages.append(after[place])
                    self._add_new(key_b)
                    if before[place].role != after[place].role:
                        self._retyped.add(place)
        changed += old[done:]
        new += last_new[done:]
        sources += last_sources[done:]
        messages += last_messages[done:]
        self._a, self._b = list(a), list(b)
        self._changed, self._new, self._sources, self._messages = changed, new, sources, messages

    def _add_a(self, key: str) -> None:
        held = self._count_a.get(key, 0)
        if held:
            self._repeats_a += 1
        else:
            self._shared += self._count_new.get(key, 0)
        self._count_a[key] = held + 1

    def _remove_a(self, key: str) -> None:
        held = self._count_a[key]
        if held > 1:
            self._repeats_a -= 1
            self._count_a[key] = held - 1
        else:
            self._shared -= self._count_new.get(key, 0)
            del self._count_a[key]

    def _add_new(self, key: str) -> None:
        held = self._count_new.get(key, 0)
        if held:
            self._repeats_new += 1
        if key in self._count_a:
            self._shared += 1
        self._count_new[key] = held + 1

    def _remove_new(self, key: str) -> None:
        held = self._count_new[key]
        if held > 1:
            self._repeats_new -= 1
            self._count_new[key] = held - 1
        else:
            del self._count_new[key]
        if key in self._count_a:
            self._shared -= 1


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
    unique: bool = False,
) -> Change:
    """The accounting of a compaction from ``before`` to ``after`` (keys ``a`` and ``b``).

    The two lists are aligned on their keys; a run of messages replaced by as many messages of
    the same roles counts as rewritten in place (a truncation, a mask), and each rewrite
    stands for the message it replaced (it inherits its trace index, so later drops still
    name it); any other run counts as dropped and added. ``in_place``: the replay's last
    rewrites in place, to start from (:class:`InPlace`); ``unique``: ``a``'s keys are known
    unique (:func:`ctxbench.engine.align.aligned`)."""
    if in_place is not None:
        change = in_place.change(before, after, a, b)
        return change if change is not None else _aligned_change(before, after, a, b, unique)
    rewrites = _rewrites_in_place(before, after, a, b)
    if rewrites is not None:  # the same length, and only rewrites in place of one role
        new = tuple(map(b.__getitem__, rewrites))
        sources = tuple(map(a.__getitem__, rewrites))
        messages = tuple(map(after.__getitem__, rewrites))
        return Change(0, len(rewrites), 0, ((new, sources, messages, ()),), unique=bool(rewrites))
    return _aligned_change(before, after, a, b, unique)


def _aligned_change(
    before: Sequence[Message],
    after: Sequence[Message],
    a: list[str],
    b: list[str],
    unique: bool,
) -> Change:
    """:func:`change_of` from the alignment's opcodes."""
    dropped = rewritten = added = 0
    steps: list[Step] = []
    codes, both_unique = aligned(a, b, unique)
    for tag, i1, i2, j1, j2 in codes:
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
    return Change(dropped, rewritten, added, tuple(steps), unique=both_unique)


def _carries_something(message: Message) -> bool:
    """Whether a message holds anything a model reads: text, parts, tool calls, replay fields."""
    return bool(message.content or message.parts or message.tool_calls or message.replay)
