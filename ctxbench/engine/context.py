"""The replay context: what a strategy sees and the only way it acts on the prompt.

Pure: it records events and files in memory; nothing here touches the disk or the clock.
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import compress, count, repeat
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any

from ctxbench.counting.base import TokenCounter
from ctxbench.engine import events as ev
from ctxbench.engine.align import opcodes
from ctxbench.engine.prompt import Change, Prompt, Step
from ctxbench.engine.view import ContextView
from ctxbench.errors import SummarizerError
from ctxbench.memo import ContentMemo
from ctxbench.pairing import PairingMemo
from ctxbench.summarizers.base import Summarizer, SummaryRequest, summary_source
from ctxbench.trace import Message, ToolSpec

if TYPE_CHECKING:
    from ctxbench.engine.strategy import Strategy

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_component(text: str, *, limit: int = 64) -> str:
    """A file-name component from untrusted text (tool names, call ids): no separators, no
    ``..``, no leading dot, never empty, at most ``limit`` characters. Keeps snapshot files
    inside the run's directory. Text that has to change gets a short hash of the original, so
    two names never share a file (``a/b`` and ``a_b``); a safe result is returned as is."""
    cleaned = _UNSAFE.sub("_", text).strip("._").replace("..", "_") or "x"
    if cleaned == text and len(text) <= limit:
        return text
    digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return cleaned[: limit - 9] + "_" + digest


@functools.lru_cache(maxsize=65536)
def safe_path(relative_path: str) -> str:
    """A relative path of :func:`safe_component` parts (``""``, ``.`` and ``..`` left out),
    ``file`` when none is left. Memoised: a sweep's replays of one trace write the same
    paths again."""
    parts = [safe_component(p) for p in relative_path.split("/") if p not in ("", ".", "..")]
    return "/".join(parts) or "file"


class ReplayContext:
    """Everything a strategy may read or do during one replay."""

    def __init__(
        self,
        *,
        trace_id: str,
        strategy: Strategy,
        estimator: TokenCounter,
        true_counter: TokenCounter,
        window: int,
        reserved: int,
        tools: Sequence[ToolSpec],
        n_calls: int,
        summarizer: Summarizer | None,
        seed: int,
    ) -> None:
        self.trace_id = trace_id
        self.strategy = strategy
        self.estimator = estimator
        self._true_counter = true_counter
        self.window = window
        self.reserved = reserved
        self.tools = tuple(tools)
        self.n_calls = n_calls
        self.summarizer = summarizer
        self.seed = seed
        self.view = ContextView(estimator, true_counter, tools)
        self.call = 0
        self.events: list[ev.Event] = []
        self.files: dict[str, bytes] = {}
        self._system: tuple[str, ...] = ()
        self._recorded: dict[str, int] = {}  # fingerprint -> trace index of recorded messages
        self._pairing = PairingMemo()
        self._history: list[Message] = []
        #: the rewrites' keys a compaction settled last, every one of them recorded
        self._settled: tuple[str, ...] = ()

    # -- events ---------------------------------------------------------------------------------
    def emit(self, type_: str, **data: Any) -> ev.Event:
        """Record an event at the current call (strategies may emit ``strategy.*`` events)."""
        event = ev.Event(type_, len(self.events), self.call, data)
        self.events.append(event)
        return event

    def status(self, layer: str | None = None) -> ev.Event:
        """Emit ``context.status`` with exactly DB-GPT's fields, by the strategy's estimate."""
        used = self.view.estimated_tokens
        budget = self.strategy.budget(self)
        ratio = used / budget if budget > 0 else float("inf")
        return self.emit(
            ev.CONTEXT_STATUS,
            used=used,
            budget=budget,
            ratio=round(ratio, 4) if budget > 0 else None,
            state=self.strategy.state_of(ratio, budget),
            compact_layer=layer,
        )

    # -- the one way to change the prompt ---------------------------------------------------------
    def apply(
        self,
        layer: str,
        messages: Sequence[Message],
        *,
        note: str = "",
        sources: Sequence[Message | None] | None = None,
    ) -> bool:
        """Replace the view with ``messages`` as compaction ``layer``.

        Emits a ``compaction`` event when anything changed (with estimated and true tokens
        before and after, messages dropped or changed, and the pairing check), then a
        ``context.status``. Returns whether anything changed. ``sources[i]``, when given, is
        the message ``messages[i]`` stands for (a part of a message the layer cut in two);
        None leaves it to the alignment (a rewrite in place stands for what it replaced).
        """
        if not isinstance(messages, Prompt):
            self._check_messages(layer, messages)
        view = self.view
        before, keys_before, known_before = view.messages, view.keys, view.prompt
        est_before, true_before = view.estimated_tokens, view.true_tokens
        after = messages if isinstance(messages, Prompt) else None
        known = None
        if known_before is not None and after is not None:
            known = known_before.change_to(after)
        changed_flag, change = known if known is not None else (_differs(before, messages), None)
        if changed_flag:
            if sources is not None:
                self._inherit_all(messages, sources)
            view.replace(messages)
            if change is None:
                change = _change(before, messages, keys_before, view.keys)
            runs = change.runs_of(self._settle(change))
            self.emit(
                ev.COMPACTION,
                layer=layer,
                est_before=est_before,
                est_after=view.estimated_tokens,
                true_before=true_before,
                true_after=view.true_tokens,
                messages_before=len(before),
                messages_after=len(messages),
                dropped=change.dropped,
                changed=change.rewritten,
                added=change.added,
                dropped_messages=runs,
                pairing_violations=self._violations(messages, after),
                system_kept=self._system_kept(after),
                note=note,
            )
        if known is None and known_before is not None and after is not None:
            known_before.remember(after, changed_flag, change)
        self.status(layer)
        return changed_flag

    def _check_messages(self, layer: str, messages: object) -> None:
        """A PluginError naming the layer, the trace and the call when ``apply`` is given
        anything but a sequence of messages (OpenAI dicts, None)."""
        from ctxbench.engine import faults

        hint = (
            "build ctxbench.Message objects; OpenAI-style dicts convert with "
            "ctxbench.from_openai(dicts)"
        )
        if not isinstance(messages, (list, tuple)):
            raise faults.wrong_value(
                f"strategy {self.strategy.name}",
                f"ctx.apply({layer!r}, ...)",
                messages,
                "a list of ctxbench.Message",
                self.trace_id,
                self.call,
                self.n_calls,
                hint=hint,
            )
        bad = next(
            compress(count(), map(operator.not_, map(isinstance, messages, repeat(Message)))),
            None,
        )
        if bad is not None:
            raise faults.wrong_value(
                f"strategy {self.strategy.name}",
                f"ctx.apply({layer!r}, ...)",
                messages[bad],
                f"a ctxbench.Message at index {bad}",
                self.trace_id,
                self.call,
                self.n_calls,
                hint=hint,
            )

    def _violations(self, messages: Sequence[Message], prompt: Prompt | None) -> int:
        """The pairing violations of ``messages`` (a prompt's, once)."""
        if prompt is None:
            return self._pairing.violations(messages)
        if prompt.violations is None:
            prompt.violations = self._pairing.violations(prompt)
        return prompt.violations

    def _system_kept(self, prompt: Prompt | None) -> bool:
        """:meth:`system_kept` of the view (which shows ``prompt``, if given: once per prompt
        and system texts)."""
        if prompt is None:
            return self.system_kept()
        found = prompt.system_kept.get(self._system)
        if found is None:
            found = prompt.system_kept[self._system] = self.system_kept()
        return found

    def reassemble(self, messages: Sequence[Message], sources: Sequence[Message | None]) -> None:
        """Replace the view without a compaction event: the system rebuilt its prompt from its
        own memory (DB-GPT's ReAct agent at every call). ``sources[i]`` is the message
        ``messages[i]`` stands for (None: new); a recorded message the memory keeps in its own
        form (a task-progress block in the system prompt) keeps its trace index."""
        self._inherit_all(messages, sources)
        before = self.view.messages
        if len(before) != len(messages) or not all(map(operator.is_, before, messages)):
            self.view.replace(messages)

    def tool_result_changed(
        self, layer: str, original: Message, kept: Message, *, note: str = ""
    ) -> None:
        """Record that ``on_tool_result`` shrank or offloaded a result before it was appended."""
        est_o, est_k = self.estimator.count_message(original), self.estimator.count_message(kept)
        true_o, true_k = (
            self._true_counter.count_message(original),
            self._true_counter.count_message(kept),
        )
        n = len(self.view)
        self.emit(
            ev.COMPACTION,
            layer=layer,
            est_before=self.view.estimated_tokens + est_o,
            est_after=self.view.estimated_tokens + est_k,
            true_before=self.view.true_tokens + true_o,
            true_after=self.view.true_tokens + true_k,
            messages_before=n + 1,
            messages_after=n + 1,
            dropped=0,
            changed=1,
            added=0,
            dropped_messages=[],
            pairing_violations=0,
            system_kept=True,
            note=note,
        )

    def system_kept(self) -> bool:
        """Every original system message's text still leads some system message of the view."""
        if not self._system:
            return True
        view = self.view.messages
        missing = set(self._system)  # read the system messages until each original is found
        for message in compress(view, map(operator.eq, map(_ROLE, view), repeat("system"))):
            text = message.content
            missing = {orig for orig in missing if not (text.startswith(orig) or orig in text)}
            if not missing:
                return True
        return False

    def trace_index(self, message: Message) -> int | None:
        """The trace index of a recorded message (or of its rewrite), None for new messages."""
        return self._recorded.get(message.fingerprint)

    def _inherit(self, message: Message, source: Message) -> None:
        """``message`` stands for ``source`` (its rewrite, a part of it, the memory's own form of
        it): it takes a recorded source's trace index, so it counts as kept and a later drop
        names it, unless it carries nothing at all (no text, parts, tool calls or provider
        replay fields: an empty stand-in keeps nothing of the message). The one rule for a
        rewrite in place, a layer's declared ``sources`` and a re-assembly's."""
        if source is message:  # a message standing for itself already has its index, if any
            return
        index = self._recorded.get(source.fingerprint)
        if index is None:
            return
        if message.fingerprint == source.fingerprint or _carries_something(message):
            self._recorded.setdefault(message.fingerprint, index)

    def _inherit_all(self, messages: Sequence[Message], sources: Sequence[Message | None]) -> None:
        """:meth:`_inherit` for each pair; a message standing for itself is skipped in C (a
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
                self._inherit(messages[i], source)

    def append_recorded(self, message: Message, index: int | None) -> None:
        """Append a recorded message (or the strategy's version of a recorded tool result)."""
        if index is not None:
            self._recorded.setdefault(message.fingerprint, index)
        self._history.append(message)
        self.view.append(message)

    @property
    def history(self) -> tuple[Message, ...]:
        """Every message the replay appended so far, in order, whatever the strategy dropped
        since: the full history an agent that keeps its own log would hold (tool results as
        ``on_tool_result`` kept them). ``view.messages`` is the prompt as it stands. The
        engine only appends to the prompt between two hooks: what is new since a strategy last
        looked is the tail past the length it left."""
        return tuple(self._history)

    def _settle(self, change: Change) -> list[list[int | None]]:
        """Carry out ``change`` on this replay's trace indices, step by step in the alignment's
        order: a rewrite inherits its source's index (:meth:`_inherit`: when the source has one
        and the rewrite none yet); returns the dropped messages' trace indices as ``[first,
        last]`` runs (worked out once for the indices found)."""
        recorded = self._recorded
        found: list[list[int | None]] = []
        for new, source, messages, dropped in change.steps:
            # the keys settled last are known recorded (recorded keys stay): a layer that
            # rewrites the same messages again, and a few more, reads only the few more
            start = len(self._settled) if new[: len(self._settled)] == self._settled else 0
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
                self._settled = new
            if dropped:
                found.append(list(map(recorded.get, dropped)))
        return found

    def remember_system(self, message: Message) -> None:
        if message.role == "system" and message.content:
            self._system = (*self._system, message.content)

    # -- summaries ----------------------------------------------------------------------------------
    def summarize(self, request: SummaryRequest) -> str:
        """Call the summarizer, record a ``summary`` event, and return the text.

        Raises :class:`SummarizerError` (after recording it) when there is no summarizer or it
        fails; each strategy handles that by its own rule (breaker, fallback, abort).
        """
        input_tokens = self._true_counter.count(request.prompt)
        if self.summarizer is None:
            self._summary_failed(request, 0, "no summarizer")
            raise SummarizerError("no summarizer configured", kind="missing")
        try:
            try:
                text = self.summarizer.summarize(request, self._true_counter)
            except SummarizerError:
                raise
            except Exception as exc:  # a plug-in's bug is a failed summary, not a crashed replay
                raise SummarizerError(
                    f"the summarizer raised {type(exc).__name__}: {exc}", kind="crash"
                ) from exc
        except SummarizerError as exc:
            self._summary_failed(request, input_tokens, f"{exc.kind}: {exc.message}")
            raise
        if not isinstance(text, str) or not text.strip():
            self._summary_failed(request, input_tokens, "empty: the summarizer returned no text")
            raise SummarizerError("the summarizer returned an empty summary", kind="empty")
        said = summary_source(text)
        self.emit(
            ev.SUMMARY,
            layer=request.layer,
            ok=True,
            input_tokens=input_tokens,
            output_tokens=self._true_counter.count(text),
            error=None,
            **said,
        )
        return text

    def _summary_failed(self, request: SummaryRequest, input_tokens: int, error: str) -> None:
        self.emit(
            ev.SUMMARY,
            layer=request.layer,
            ok=False,
            input_tokens=input_tokens,
            output_tokens=0,
            error=error,
        )

    def summary_request(
        self,
        strategy: str,
        layer: str,
        messages: Sequence[Message],
        *,
        prompt: str,
        sections: tuple[str, ...],
        max_tokens: int | None,
        previous_summary: str | None = None,
    ) -> SummaryRequest:
        """The request of one summary of ``messages``, keyed by this call and ``layer``."""
        return SummaryRequest(
            strategy=strategy,
            layer=layer,
            prompt=prompt,
            messages=tuple(messages),
            sections=sections,
            max_tokens=max_tokens,
            previous_summary=previous_summary,
            key=self.request_key(layer),
        )

    def request_key(self, layer: str) -> str:
        """A stable key for a summary request: trace, call, layer and seed."""
        return f"{self.trace_id}:{self.call}:{layer}:{self.seed}"

    # -- files at the edge ---------------------------------------------------------------------------
    def write_file(self, relative_path: str, content: bytes, *, sha256: str | None = None) -> str:
        """Record a file (snapshot, offload) to be written under the run's output directory.

        ``relative_path`` components are sanitised; the returned path is what the prompt cites.
        ``sha256``: the content's, when the caller has it (:func:`json_file` gives it).
        """
        if sha256 is None:
            sha256 = hashlib.sha256(content).hexdigest()
        return self._record(relative_path, content, sha256)

    def write_json(self, relative_path: str, payload: Any) -> str:
        """:meth:`write_file` of ``payload`` as indented JSON."""
        return self._record(relative_path, *json_file(payload))

    def _record(self, relative_path: str, content: bytes, sha256: str) -> str:
        path = _unused(safe_path(relative_path), content, self.files)
        self.files[path] = content
        self.emit(ev.SNAPSHOT, path=path, bytes=len(content), sha256=sha256)
        return path


_SCALARS = (str, int, float, bool, type(None))


def indented_json(payload: Any) -> str:
    """``json.dumps(payload, ensure_ascii=False, indent=2)``, the same text; a flat object of
    scalars (every snapshot) is rendered with the C encoder, item by item, since ``indent``
    sends ``json.dumps`` to its pure-Python encoder (a third of a DB-GPT replay's time)."""
    if not _flat(payload):
        return json.dumps(payload, ensure_ascii=False, indent=2)
    items = (f"  {encode_basestring(k)}: {_scalar_json(v)}" for k, v in payload.items())
    return "{\n" + ",\n".join(items) + "\n}"


#: the memo (of the current caches, :mod:`ctxbench.engine.caches`) of the files of flat JSON
#: payloads (every snapshot) and their sha256, and the bytes it holds: a sweep's replays of one
#: trace write the same snapshots again
_JSON_FILES = "engine.json_files"
_JSON_FILES_LIMIT = 16 * 2**20


def json_file(payload: Any) -> tuple[bytes, str]:
    """``payload`` as an indented JSON file, and the file's sha256."""

    def render() -> tuple[bytes, str]:
        content = indented_json(payload).encode("utf-8", "surrogatepass")
        return content, hashlib.sha256(content).hexdigest()

    if not _flat(payload):
        return render()
    # the type is part of the key: True == 1, but they are written "true" and "1"
    key = tuple((k, type(v), v) for k, v in payload.items())
    size = sum(map(sys.getsizeof, payload.values()))  # what the key holds (the file is smaller)
    from ctxbench.engine.caches import current

    files: ContentMemo[tuple[tuple[str, type, Any], ...], tuple[bytes, str]]
    files = current().content(_JSON_FILES, _JSON_FILES_LIMIT)
    return files.get(key, render, size)


def _flat(payload: Any) -> bool:
    """A non-empty object of scalars keyed by text."""
    return (
        isinstance(payload, dict)
        and bool(payload)
        and all(type(k) is str and isinstance(v, _SCALARS) for k, v in payload.items())
    )


def _scalar_json(value: Any) -> str:
    if isinstance(value, str):
        return encode_basestring(value)
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if type(value) is int:
        return int.__repr__(value)
    return json.dumps(value)  # floats (NaN, Infinity), int subclasses


def _unused(path: str, content: bytes, files: Mapping[str, bytes]) -> str:
    """``path``, or ``name~2.ext``, ``name~3.ext``, ... when another content already has it:
    a file a strategy wrote is never replaced by a later one (its snapshot event's hash
    would no longer match the file)."""
    if files.get(path, content) == content:
        return path
    folder, _, name = path.rpartition("/")
    stem, dot, suffix = name.rpartition(".") if "." in name.lstrip(".") else (name, "", "")
    n = 2
    while True:
        candidate = f"{folder + '/' if folder else ''}{stem}~{n}{dot}{suffix}"
        if files.get(candidate, content) == content:
            return candidate
        n += 1


_ROLE = operator.attrgetter("role")


def _positions_not(flags: Iterator[bool]) -> Iterator[int]:
    """The positions of the false flags."""
    return compress(count(), map(operator.not_, flags))


def _differs(before: Sequence[Message], after: Sequence[Message]) -> bool:
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
    # ``a`` unique, and the new keys unique and none of ``a``'s: then ``b`` is unique too, and
    # neither side has the other's changed keys
    keys_a = set(a)
    new_keys = list(map(b.__getitem__, changed))
    if (
        len(keys_a) != len(a)
        or len(set(new_keys)) != len(new_keys)
        or not keys_a.isdisjoint(new_keys)
    ):
        return None
    roles_before = map(_ROLE, map(before.__getitem__, changed))
    if not all(map(operator.eq, roles_before, map(_ROLE, map(after.__getitem__, changed)))):
        return None
    return changed


def _change(
    before: Sequence[Message], after: Sequence[Message], a: list[str], b: list[str]
) -> Change:
    """The accounting of a compaction from ``before`` to ``after`` (keys ``a`` and ``b``).

    The two lists are aligned on their keys; a run of messages replaced by as many messages of
    the same roles counts as rewritten in place (a truncation, a mask), and each rewrite
    stands for the message it replaced (it inherits its trace index, so later drops still
    name it); any other run counts as dropped and added."""
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
