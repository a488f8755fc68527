"""Where a trace's tokens go: per role, per content class, and the framing around the text.

``ctxbench count`` prints it, and the drift report compares it across counters: the same
trace breaks down differently under ``chars4`` and an exact tokenizer, and the content classes
say which text causes the difference.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxbench.counting.base import TokenCounter, replay_text
from ctxbench.counting.content_class import CONTENT_CLASSES, ContentClass, classify
from ctxbench.jsontext import attrs
from ctxbench.trace import ROLES, Message, Trace


def text_segments(message: Message) -> Iterator[str]:
    """The pieces of text a message carries, each classified on its own: the content, each
    tool call's arguments and the replay fields (names, ids and markers are framing)."""
    if message.content:
        yield message.content
    for call in message.tool_calls:
        if call.arguments:
            yield call.arguments
    replay = replay_text(message)
    if replay:
        yield replay


@dataclass(frozen=True)
class Breakdown:
    """One counter's tokens for one trace sent as a single request.

    ``total`` is ``count_prompt`` (exact for chat-template counters); ``incremental`` is
    ``overhead + sum(by_role)``, what the replay engine adds up. ``by_class`` counts the text
    segments alone, so ``framing = total - sum(by_class)`` is everything around the text.
    """

    counter: str
    total: int
    overhead: int
    by_role: Mapping[str, int] = field(default_factory=dict)
    by_class: Mapping[str, int] = field(default_factory=dict)

    @property
    def incremental(self) -> int:
        return self.overhead + sum(self.by_role.values())

    @property
    def framing(self) -> int:
        return self.total - sum(self.by_class.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            **attrs(self, "counter total incremental overhead framing"),
            "by_role": dict(self.by_role),
            "by_class": dict(self.by_class),
        }

    def __add__(self, other: Breakdown) -> Breakdown:
        if other.counter != self.counter:
            raise ValueError(f"cannot add breakdowns of {self.counter!r} and {other.counter!r}")
        return Breakdown(
            self.counter,
            self.total + other.total,
            self.overhead + other.overhead,
            _add(self.by_role, other.by_role),
            _add(self.by_class, other.by_class),
        )


def _add(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    keys = [k for k in (*ROLES, *CONTENT_CLASSES) if k in a or k in b]
    keys += sorted(k for k in {*a, *b} if k not in keys)
    return {k: a.get(k, 0) + b.get(k, 0) for k in keys}


def _ordered(values: Mapping[str, int], order: tuple[str, ...]) -> dict[str, int]:
    out = {k: values[k] for k in order if k in values}
    out.update((k, values[k]) for k in sorted(values) if k not in out)
    return out


def classes_of(trace: Trace) -> list[tuple[str, ContentClass]]:
    """Every text segment of the trace with its content class (counter-independent)."""
    return [(text, classify(text)) for message in trace.messages for text in text_segments(message)]


def chars_by_class(segments: list[tuple[str, ContentClass]]) -> dict[str, int]:
    chars: dict[str, int] = {}
    for text, cls in segments:
        chars[cls] = chars.get(cls, 0) + len(text)
    return _ordered(chars, CONTENT_CLASSES)


def breakdown(
    trace: Trace, counter: TokenCounter, segments: list[tuple[str, ContentClass]] | None = None
) -> Breakdown:
    """``counter``'s tokens for ``trace`` (pass ``segments`` from :func:`classes_of` to reuse them)."""
    by_role: dict[str, int] = {}
    for message in trace.messages:
        by_role[message.role] = by_role.get(message.role, 0) + counter.count_message(message)
    by_class: dict[str, int] = {}
    for text, cls in segments if segments is not None else classes_of(trace):
        by_class[cls] = by_class.get(cls, 0) + counter.count(text)
    return Breakdown(
        counter=counter.name,
        total=counter.count_prompt(trace.messages, trace.tools),
        overhead=counter.prompt_overhead(trace.tools),
        by_role=_ordered(by_role, ROLES),
        by_class=_ordered(by_class, CONTENT_CLASSES),
    )
