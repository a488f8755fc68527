"""What a replay emits: frozen, JSON-serialisable events, ordered by ``step``, no wall clock.

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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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


@dataclass(frozen=True)
class Event:
    """One thing that happened during a replay, at model call ``call``, in order ``step``."""

    type: str
    step: int
    call: int
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        """``to_dict()`` as compact JSON (what the journal and the events file hold), encoded
        without building the dict."""
        data = self.data
        if not data or "type" in data or "call" in data or "step" in data:
            return _ENCODE(self.to_dict())
        kind = _KINDS.get(self.type) or _KINDS.setdefault(self.type, _ENCODE(self.type))
        return (
            f'{{"type":{kind},{_ENCODE(data)[1:-1]},'
            f'"call":{int.__repr__(self.call)},"step":{int.__repr__(self.step)}}}'
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        out.update(self.data)
        out["call"] = self.call
        out["step"] = self.step
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Event:
        rest = {k: v for k, v in data.items() if k not in ("type", "step", "call")}
        return cls(
            type=str(data["type"]), step=int(data["step"]), call=int(data["call"]), data=rest
        )

    def __getitem__(self, key: str) -> Any:
        return self.data[key]


_ENCODE = compact_json
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
