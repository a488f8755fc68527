"""What a replay emits: frozen, JSON-serialisable events, ordered by ``step``, no wall clock.

Each event type is a frozen, slotted class (:class:`ContextStatus`, :class:`Compaction`, ...,
:data:`EVENT_CLASSES` by type name) whose fields are read as attributes; ``emit`` takes its
objects and :func:`decode` turns a line of an events file back into its class (a type no
class knows into an :class:`UnknownEvent`, so older and newer files still read). A line
written, decoded and written again is the same bytes (``tests/test_events_golden.py``).

Event types and their fields (besides ``type``, ``call`` and ``step``):

- ``context.status``: exactly DB-GPT's fields ``used``, ``budget``, ``ratio`` (4 places),
  ``state`` and ``compact_layer``, by the strategy's own estimate.
- ``compaction``: ``layer``, ``est_before``/``est_after`` (strategy's estimate),
  ``true_before``/``true_after`` (true counter), ``messages_before``/``messages_after``,
  ``dropped`` (messages removed), ``changed`` (messages rewritten in place: truncated,
  masked), ``added`` (new messages: summaries, notes), ``dropped_messages`` (trace indices of
  the recorded messages removed, as [first, last] ranges), ``pairing_violations``, ``system_kept``, ``note``.
- ``provider.call``: ``attempt``, ``estimated_tokens``, ``true_tokens``, ``limit``, ``ok``,
  ``error`` (the provider's message), ``error_kind`` (``overflow`` or ``pairing``),
  ``cached_tokens`` (prefix shared with the last accepted
  prompt), ``messages`` (prompt length).
- ``call.failed``: ``true_tokens``, ``limit``, ``attempts``, ``kind`` (``overflow``;
  ``pairing``: the provider rejected a tool result without its call or a call without results;
  ``aborted``: the system ended the reply before calling, with its ``error``).
- ``summary``: ``layer``, ``ok``, ``input_tokens``, ``output_tokens``, ``error``; and
  ``source`` when the summarizer says where the text came from (``recorded``: the recorded
  agent's own summary; ``fallback:NAME``: the summarizer it fell back to, and ``why``).
- ``snapshot``: ``path``, ``bytes``, ``sha256`` (file contents travel beside the events).
- ``probe``: ``probe_id``, ``kind``, ``outcome`` (in_context / via_reference / stale / lost);
  ``bare`` (true, only when set) when the answer stands only as a bare list item with no words
  around it; ``reason`` (only when set): ``after_failure``, lost because the agent's task had
  already failed at an earlier (or this) call: the real agent crashed there.
- ``open_loop.break``: the recorded assistant message of this call writes a value it learned
  earlier (a needed value, :mod:`ctxbench.probes.needed`) that the prompt no longer shows, in
  context or through a cited file: from here the recorded run could not have happened as
  recorded. ``value``, ``source_message`` (where it was learned), ``message`` (the use).
- ``recorded.compaction``: a compaction the recorded agent made before this call (ground truth,
  not the strategy's): ``trigger``, ``pre_tokens``, ``source``, ``note`` (the replay keeps the
  uncompacted history). Emitted only for traces that hold recorded compactions.
- ``probe.answer`` (with ``--answerer``): a model asked the probe's ``question`` after the
  prompt scored at this call; ``answer``, its ``verdict`` (answered / stale / missed, by the
  probe matching), the string-presence ``outcome`` beside it, ``prompt_tokens`` and
  ``completion_tokens`` (as the endpoint reported them). After the replay's own events.
- ``next_action`` (with ``--next-action``): the model's next step after the ``uncompacted``
  history and after the ``compacted`` prompt (``{tool, args}``: the naming arguments), whether
  they ``agree``, the ``trigger`` (compaction or sample) and both replies as text.
- ``shipped`` / ``shipped.call``: a released framework ran the replay (its release, version,
  environment hash, driver, notes) / its own account of one call (layers, info, exception).
- ``strategy.decision``, ``strategy.error``, ``strategy.skipped``: a strategy's count and
  threshold before a call, a failure of its own code, a compaction it skipped.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any, ClassVar, TypeVar

from ctxbench.event_json import EventTexts, Plan
from ctxbench.jsontext import compact_json

CONTEXT_STATUS = "context.status"
COMPACTION = "compaction"
PROVIDER_CALL = "provider.call"
CALL_FAILED = "call.failed"
SUMMARY = "summary"
SNAPSHOT = "snapshot"
PROBE = "probe"
RECORDED = "recorded.compaction"
OPEN_LOOP_BREAK = "open_loop.break"
#: ``reason`` of a probe scored lost because the task had failed before it was asked
AFTER_FAILURE = "after_failure"
#: a model's answer to a probe's question (``ctxbench.answering``)
PROBE_ANSWER = "probe.answer"
#: a model's next step with and without compaction (``ctxbench.answering``)
NEXT_ACTION = "next_action"
#: a ``summary`` event's ``source`` when the text is the recorded agent's own summary
RECORDED_SOURCE = "recorded"
#: a released framework ran the replay (shipped strategies): its release and environment hash
SHIPPED = "shipped"
#: a released framework's own account of one call (``ctxbench.shipped``)
SHIPPED_CALL = "shipped.call"
#: a strategy's own code failed (as its release does) and the replay went on
STRATEGY_ERROR = "strategy.error"
#: a strategy skipped a compaction it would have made (Hermes' anti-thrashing guard)
STRATEGY_SKIPPED = "strategy.skipped"
#: Event a strategy emits before each call with the count it decides with:
#: ``tokens``, ``threshold``, ``anchored`` (the count starts from a provider's usage), ``compact``.
DECISION = "strategy.decision"
#: Note every replay of a trace with recorded compactions carries.
UNCOMPACTED_NOTE = (
    "the trace keeps the uncompacted history: the replay sees the messages before each recorded"
    " compaction boundary and decides for itself where to compact"
)

#: ``kind`` of a ``call.failed`` (and ``error_kind`` of a rejected ``provider.call``): the prompt
#: was over the window, or the provider refused its tool pairing (a 400 whatever the length)
OVERFLOW = "overflow"
PAIRING_REJECTED = "pairing"
#: the system's own code ended the reply before the call (no provider call; ``error`` says why)
ABORTED = "aborted"

EVENT_TYPES = (
    CONTEXT_STATUS,
    COMPACTION,
    PROVIDER_CALL,
    CALL_FAILED,
    SUMMARY,
    SNAPSHOT,
    PROBE,
    RECORDED,
    OPEN_LOOP_BREAK,
    PROBE_ANSWER,
    NEXT_ACTION,
)

#: The fields every event of a type carries, with their JSON type: what readers of events files
#: (``diff``, the report) rely on.
FIELDS: dict[str, dict[str, type]] = {
    CONTEXT_STATUS: {"used": int, "budget": int, "state": str},
    COMPACTION: {
        "layer": str,
        **dict.fromkeys(("est_before", "est_after", "true_before", "true_after"), int),
        **dict.fromkeys(("messages_before", "messages_after", "dropped", "changed"), int),
    },
    PROVIDER_CALL: {
        **dict.fromkeys(("attempt", "estimated_tokens", "true_tokens", "limit"), int),
        "ok": bool,
    },
    CALL_FAILED: dict.fromkeys(("attempts", "true_tokens", "limit"), int),
    SUMMARY: {"layer": str, "ok": bool, "input_tokens": int, "output_tokens": int},
    SNAPSHOT: {"path": str, "bytes": int},
    PROBE: {"probe_id": str, "kind": str, "outcome": str},
    RECORDED: {"trigger": str, "source": str},
    OPEN_LOOP_BREAK: {"value": str, "source_message": int, "message": int},
    PROBE_ANSWER: {"probe_id": str, "kind": str, "verdict": str, "outcome": str},
    NEXT_ACTION: {"trigger": str, "agree": bool},
}
_TYPE_NAMES = {int: "an integer", bool: "true or false", str: "a string"}


_E = TypeVar("_E", bound="Event")


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """One thing that happened during a replay, at model call ``call``, in order ``step``.

    Every event type is a subclass with its fields as attributes and its type name as
    :attr:`TYPE`; :func:`decode` turns a JSON line (or its dict) back into its class, and a
    type no class knows into an :class:`UnknownEvent`. ``step`` and ``call`` are given when the
    event is emitted (:meth:`stamped`); an event built by a strategy leaves them at -1.

    ``data`` (its fields as its JSON line holds them), ``event["key"]`` and ``"key" in
    event`` read an event as its JSON line: how a plug-in reads the fields of its own
    ``strategy.*`` events (an :class:`UnknownEvent` has no attributes for them) and how
    tests check a line. ctxbench's own readers use the attributes."""

    #: the event's ``type`` in the JSON line
    TYPE: ClassVar[str] = ""
    #: fields written only when they differ from their default (``bare``, ``reason``, ...)
    OPTIONAL: ClassVar[frozenset[str]] = frozenset()

    step: int = -1
    call: int = -1

    @property
    def type(self) -> str:
        return self.TYPE

    @property
    def data(self) -> dict[str, Any]:
        """The event's fields besides ``type``, ``call`` and ``step``, as its JSON line holds
        them, in that order."""
        return self._json_fields()

    def _json_fields(self) -> dict[str, Any]:
        names, values, optional = _encoding(type(self))
        out = dict(zip(names, values(self)))
        for name, default in optional:
            if out[name] == default:
                del out[name]
        return out

    def stamped(self: _E, step: int, call: int) -> _E:
        """The event at ``step`` of call ``call`` (how the replay records it). An event not
        stamped yet (``step`` -1: just built by its emitter, who hands it over) is stamped in
        place; a recorded one is copied."""
        if self.step != -1:
            return replace(self, step=step, call=call)
        object.__setattr__(self, "step", step)
        object.__setattr__(self, "call", call)
        return self

    def to_json(self) -> str:
        """``to_dict()`` as compact JSON (what the journal and the events file hold)."""
        plan = _JSON_PLANS.get(type(self), _UNPLANNED)
        if plan is _UNPLANNED:
            plan = _json_plan(type(self))
        if plan is not None:  # the same text as below, its values' part written once
            return _TEXTS.text(self, plan)
        data = self._json_fields()
        if not data or "type" in data or "call" in data or "step" in data:
            return _ENCODE(self.to_dict())
        kind = _KINDS.get(self.type) or _KINDS.setdefault(self.type, _ENCODE(self.type))
        return (
            f'{{"type":{kind},{_ENCODE(data)[1:-1]},'
            f'"call":{int.__repr__(self.call)},"step":{int.__repr__(self.step)}}}'
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        out.update(self._json_fields())
        out["call"] = self.call
        out["step"] = self.step
        return out

    def __getitem__(self, key: str) -> Any:
        """``event["key"]``: ``event.to_dict()["key"]`` (the JSON line's view)."""
        return self.to_dict()[key]

    def __contains__(self, key: object) -> bool:
        """``"key" in event``: as for its JSON line."""
        return key in self.to_dict()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Event:
        """The event a parsed JSON line holds, as its class (:func:`decode`)."""
        return decode(data)


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownEvent(Event):
    """An event of a type no class here knows (a plug-in's ``strategy.*`` event, an event of
    a newer ctxbench): its type name and fields kept as read, so old and new files still read
    and write back the same."""

    name: str
    payload: Mapping[str, Any] = field(default_factory=dict)

    @property
    def type(self) -> str:
        return self.name

    def _json_fields(self) -> dict[str, Any]:
        return dict(self.payload)


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextStatus(Event):
    """Before each call and after each compaction: exactly DB-GPT's fields, by the strategy's
    own estimate."""

    TYPE: ClassVar[str] = CONTEXT_STATUS
    used: int
    budget: int
    ratio: float | None
    state: str
    compact_layer: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Compaction(Event):
    """The prompt changed: a strategy's layer dropped, rewrote or added messages."""

    TYPE: ClassVar[str] = COMPACTION
    layer: str
    est_before: int
    est_after: int
    true_before: int
    true_after: int
    messages_before: int
    messages_after: int
    dropped: int
    changed: int
    added: int = 0
    #: trace indices of the recorded messages removed, as [first, last] ranges
    dropped_messages: Sequence[Sequence[int]] = ()
    pairing_violations: int = 0
    system_kept: bool = True
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderCall(Event):
    """One attempt of a model call against the simulated provider."""

    TYPE: ClassVar[str] = PROVIDER_CALL
    attempt: int
    estimated_tokens: int
    true_tokens: int
    limit: int
    ok: bool
    error: str | None = None
    #: :data:`OVERFLOW` or :data:`PAIRING_REJECTED` when rejected (None: accepted, or a file
    #: written before the kind was recorded: an overflow)
    error_kind: str | None = None
    cached_tokens: int = 0
    messages: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class CallFailed(Event):
    """A call still over the window (or refused) after the strategy's reactions."""

    TYPE: ClassVar[str] = CALL_FAILED
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"error"})
    true_tokens: int
    limit: int
    attempts: int
    kind: str = OVERFLOW
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary(Event):
    """A summary call a strategy made (through the run's summarizer)."""

    TYPE: ClassVar[str] = SUMMARY
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"source", "why"})
    layer: str
    ok: bool
    input_tokens: int
    output_tokens: int
    error: str | None = None
    #: ``recorded`` (:data:`RECORDED_SOURCE`) or ``fallback:NAME``; "" when not said
    source: str = ""
    why: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot(Event):
    """A file a strategy wrote (its contents travel beside the events)."""

    TYPE: ClassVar[str] = SNAPSHOT
    path: str
    bytes: int
    sha256: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeScored(Event):
    """A probe scored against the prompt at its ask point."""

    TYPE: ClassVar[str] = PROBE
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"reason", "bare"})
    probe_id: str
    kind: str
    outcome: str
    #: :data:`AFTER_FAILURE` when lost because the task had already failed; "" otherwise
    reason: str = ""
    #: the answer stands only as a bare list item
    bare: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedCompaction(Event):
    """A compaction the recorded agent made before this call (ground truth)."""

    TYPE: ClassVar[str] = RECORDED
    trigger: str
    pre_tokens: int | None = None
    source: str = ""
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenLoopBreak(Event):
    """The recorded message of this call writes a needed value the prompt no longer shows."""

    TYPE: ClassVar[str] = OPEN_LOOP_BREAK
    value: str
    source_message: int
    message: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeAnswer(Event):
    """A model's answer to a probe's question (``--answerer``)."""

    TYPE: ClassVar[str] = PROBE_ANSWER
    probe_id: str
    kind: str
    question: str = ""
    answer: str = ""
    verdict: str
    outcome: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class NextAction(Event):
    """A model's next step with and without compaction (``--next-action``)."""

    TYPE: ClassVar[str] = NEXT_ACTION
    trigger: str
    agree: bool
    #: ``{tool, args}``: the step's tool and naming arguments
    uncompacted: Mapping[str, Any] = field(default_factory=dict)
    compacted: Mapping[str, Any] = field(default_factory=dict)
    uncompacted_answer: str = ""
    compacted_answer: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Shipped(Event):
    """A released framework ran the replay: its release, version and environment."""

    TYPE: ClassVar[str] = SHIPPED
    release: str
    framework_version: str = ""
    env_hash: str
    driver: str = ""
    notes: Sequence[str] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ShippedCall(Event):
    """A released framework's own account of a call: the layers that ran, its counts."""

    TYPE: ClassVar[str] = SHIPPED_CALL
    layers: Sequence[str] = ()
    info: Mapping[str, Any] = field(default_factory=dict)
    exception: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategyDecision(Event):
    """The count a strategy decides with before a call, and its threshold."""

    TYPE: ClassVar[str] = DECISION
    tokens: int
    threshold: int
    #: the count starts from a provider's reported usage
    anchored: bool = False
    compact: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategyError(Event):
    """A strategy's own code failed where its release fails (DB-GPT's Layer 3, ...)."""

    TYPE: ClassVar[str] = STRATEGY_ERROR
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"layer"})
    strategy: str
    layer: str = ""
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategySkipped(Event):
    """A strategy skipped its compaction (Hermes' ineffective-compression guard)."""

    TYPE: ClassVar[str] = STRATEGY_SKIPPED
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"trigger"})
    strategy: str
    reason: str
    trigger: str = ""
    ineffective: int = 0
    fallback_streak: int = 0


#: every event class, by its type name (what :func:`decode` picks from)
EVENT_CLASSES: dict[str, type[Event]] = {
    cls.TYPE: cls
    for cls in (
        ContextStatus,
        Compaction,
        ProviderCall,
        CallFailed,
        Summary,
        Snapshot,
        ProbeScored,
        RecordedCompaction,
        OpenLoopBreak,
        ProbeAnswer,
        NextAction,
        Shipped,
        ShippedCall,
        StrategyDecision,
        StrategyError,
        StrategySkipped,
    )
}
_ENVELOPE = frozenset({"type", "step", "call"})
#: class -> (its data field names in JSON order, a getter of their values, the optional
#: fields with their defaults)
_ENCODINGS: dict[
    type[Event], tuple[tuple[str, ...], Callable[[Event], tuple[Any, ...]], tuple[Any, ...]]
] = {}


def _encoding(
    cls: type[Event],
) -> tuple[tuple[str, ...], Callable[[Event], tuple[Any, ...]], tuple[Any, ...]]:
    known = _ENCODINGS.get(cls)
    if known is None:
        pairs = _data_fields(cls)
        names = tuple(name for name, _ in pairs)
        getter = operator.attrgetter(*names) if len(names) > 1 else None
        values: Callable[[Event], tuple[Any, ...]] = (
            getter if getter is not None else (lambda e: tuple(getattr(e, n) for n in names))
        )
        optional = tuple((n, d) for n, d in pairs if n in cls.OPTIONAL)
        known = _ENCODINGS[cls] = (names, values, optional)
    return known


#: class -> (name, default) of its data fields, in JSON order
_FIELDS: dict[type[Event], tuple[tuple[str, Any], ...]] = {}


def _data_fields(cls: type[Event]) -> tuple[tuple[str, Any], ...]:
    known = _FIELDS.get(cls)
    if known is None:
        known = tuple(
            (f.name, f.default if f.default_factory is MISSING else f.default_factory())
            for f in fields(cls)
            if f.name not in _ENVELOPE
        )
        _FIELDS[cls] = known
    return known


def event_of(type_name: str, data: Mapping[str, Any], *, step: int = -1, call: int = -1) -> Event:
    """The event of type ``type_name`` with fields ``data``: its class when one knows the type
    and every key of ``data`` is one of its fields (a field ``data`` lacks, as in a file
    written before the field existed, reads as its default, else as the zero of its type:
    0, "", false, null), else an :class:`UnknownEvent` holding ``data`` as given."""
    cls = EVENT_CLASSES.get(type_name)
    if cls is not None and data.keys() <= _names(cls):
        missing = {name: zero for name, zero in _zeros(cls) if name not in data}
        return cls(step=step, call=call, **data, **missing)
    return UnknownEvent(step=step, call=call, name=type_name, payload=dict(data))


def _names(cls: type[Event]) -> frozenset[str]:
    known = _NAMES.get(cls)
    if known is None:
        known = _NAMES[cls] = frozenset(name for name, _ in _data_fields(cls))
    return known


def _zeros(cls: type[Event]) -> tuple[tuple[str, Any], ...]:
    """(name, zero value) of each field of ``cls`` without a default, by its annotation."""
    known = _ZEROS.get(cls)
    if known is None:
        known = _ZEROS[cls] = tuple(
            (f.name, _zero(str(f.type)))
            for f in fields(cls)
            if f.default is MISSING and f.default_factory is MISSING
        )
    return known


def _zero(annotation: str) -> Any:
    if "None" in annotation:
        return None
    return {"int": 0, "str": "", "bool": False, "float": 0.0}.get(annotation.split("[")[0], ())


_NAMES: dict[type[Event], frozenset[str]] = {}
_ZEROS: dict[type[Event], tuple[tuple[str, Any], ...]] = {}


def decode(line: str | bytes | Mapping[str, Any]) -> Event:
    """The event a JSON line of an events file (or its parsed dict) holds, as its class; keys
    besides the event's own (``run_id`` before it) are not part of the event."""
    data: Mapping[str, Any] = json.loads(line) if isinstance(line, (str, bytes)) else line
    rest = {k: v for k, v in data.items() if k not in _ENVELOPE and k != "run_id"}
    return event_of(str(data["type"]), rest, step=int(data.get("step", -1)), call=int(data["call"]))


_ENCODE = compact_json
#: class -> how :meth:`Event.to_json` writes its events (:func:`_json_plan`)
_JSON_PLANS: dict[type[Event], Plan | None] = {}
_UNPLANNED: Any = object()
#: the texts of the events' values, the process's (:class:`EventTexts`)
_TEXTS = EventTexts(compact_json)


def _json_plan(cls: type[Event]) -> Plan | None:
    """How :meth:`Event.to_json` writes an event of ``cls`` through :data:`_TEXTS`: the line
    the general path writes (``type``, the data fields in order but the optional ones at their
    default, ``call`` and ``step``); None for a class with its own fields or type (an
    :class:`UnknownEvent`) or no data fields."""
    plan = None
    names, _, optional = _encoding(cls)
    if (
        names
        and cls._json_fields is Event._json_fields
        and cls.type is Event.type
        and not _ENVELOPE & set(names)
    ):
        kind = cls.TYPE
        getter = operator.attrgetter(*names)
        if len(names) > 1:

            def values(event: Event) -> tuple[Any, ...]:
                return (kind, *getter(event))

        else:

            def values(event: Event) -> tuple[Any, ...]:
                return (kind, getter(event))

        plan = Plan(("type", *names), values, optional)
    _JSON_PLANS[cls] = plan
    return plan


#: each event type as JSON (a handful of types, a hundred thousand events a sweep)
_KINDS: dict[str, str] = {}


def event_line(event: Event, **extra: Any) -> str:
    """One event as a JSON line (deterministic), with extra leading keys such as ``run_id``."""
    payload = dict(extra)
    payload.update(event.to_dict())
    return compact_json(payload)


def event_problem(data: Any) -> tuple[str, str] | None:
    """``(JSON path, what is wrong)`` when a parsed events-file line is not a well-formed event,
    else None. Readers check lines with it, so a damaged file fails at the line, by name."""
    if not isinstance(data, Mapping) or not isinstance(data.get("type"), str):
        return "$", "not a ctxbench event (needs a string type and an integer call)"
    wanted = {"call": int, **FIELDS.get(data["type"], {})}
    for name, tp in wanted.items():
        value = data.get(name)
        if name not in data:
            return f"$.{name}", f"a {data['type']} event needs {name}"
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            return f"$.{name}", f"{name} must be {_TYPE_NAMES[tp]}, not {value!r}"
    ranges = data.get("dropped_messages") or []
    if not isinstance(ranges, list) or not all(isinstance(r, list) and len(r) == 2 for r in ranges):
        return "$.dropped_messages", "dropped_messages must be a list of [first, last] pairs"
    return None
