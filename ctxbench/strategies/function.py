"""A plain compactor as a strategy: a function, or a class with a ``compact`` method, that
takes and returns OpenAI-style chat messages (dicts, nested tool calls).

``--strategy mypkg.compaction:compact`` with::

    def compact(messages: list[dict], budget: int, *, keep_last: int = 8) -> list[dict]:
        ...

Before every model call (and once more at the end of the trace, when probes are asked
there) ctxbench calls ``compact(messages, budget, **knobs)``: ``messages`` is the prompt as
it stands (what the previous call returned, plus what the agent appended since), as new dicts
from :func:`ctxbench.formats.openai_messages.to_openai`; ``budget`` is ``window - reserved``.
The returned list is the prompt to send; when it differs from the one given, it is applied as
one compaction named after the function. A returned dict equal to one handed in stands for
that very message (it keeps its counts and its place in the trace); a changed one is new.

The keyword parameters after ``budget`` are the knobs: each needs a default, and its type is
its annotation (or its default's type). ``--set keep_last=4`` and sweep ``params`` set them,
typed like a Strategy's ``Config`` fields.

A class plug-in in the same style (``mypkg.compaction:Compactor``) is built once per replay
with the knobs as its constructor's keyword arguments, and ``compact(messages, budget)`` is
called on the instance, so it may keep state between calls.

Set ``sees = "history"`` on the function or the class to be given the full history instead
(every message the agent appended, whatever earlier calls dropped), e.g. a compactor that
rebuilds its prompt from its own log; ``default_estimator = "tiktoken:o200k_base"`` to decide
with another counter than chars/4 in ctxbench's status events.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ctxbench.engine import faults
from ctxbench.engine.context import ReplayContext
from ctxbench.engine.strategy import Strategy
from ctxbench.errors import PluginError, TraceFormatError, UnknownNameError
from ctxbench.trace import Message

#: What a plain compactor may be given each call.
SEES = ("prompt", "history")


def is_plain_compactor(obj: object) -> bool:
    """A function (or other plain callable), or a class with a ``compact`` method that is not
    a :class:`~ctxbench.engine.strategy.Strategy`."""
    if isinstance(obj, type):
        return not issubclass(obj, Strategy) and callable(getattr(obj, "compact", None))
    return inspect.isfunction(obj) or inspect.isbuiltin(obj) or inspect.ismethod(obj)


class FunctionStrategy(Strategy[Any]):
    """The strategy a plain compactor runs as (one subclass per compactor, by :func:`adapt`)."""

    name: ClassVar[str] = "function"
    target: ClassVar[Any] = None
    sees: ClassVar[str] = "prompt"
    layer: ClassVar[str] = "compact"
    #: knob names passed as keywords (the Config's fields)
    knobs: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        kwargs = {k: getattr(self.config, k) for k in self.knobs}
        target = type(self).target
        self._compact: Callable[..., Any]
        if isinstance(target, type):
            self._compact = target(**kwargs).compact
            self._kwargs: dict[str, Any] = {}
        else:
            self._compact, self._kwargs = target, kwargs
        #: message object id -> (message, its dict's JSON): dicts equal to one handed out
        #: map back to that message
        self._handed: dict[int, tuple[Message, str]] = {}

    def before_call(self, ctx: ReplayContext) -> None:
        prompt = ctx.view.messages
        given = ctx.history if self.sees == "history" else prompt
        texts = [self._text(m) for m in given]
        dicts = [json.loads(t) for t in texts]
        try:
            returned = self._compact(dicts, self.budget(ctx), **self._kwargs)
        except Exception as exc:
            raise faults.raised(
                self.name, self.layer, exc, ctx.trace_id, ctx.call, ctx.n_calls
            ) from exc
        messages = self._messages(returned, given, texts, ctx)
        if len(messages) == len(prompt) and all(map(_same, messages, prompt)):
            return
        ctx.apply(self.layer, messages, note=f"{len(given)} -> {len(messages)} messages")

    def _text(self, message: Message) -> str:
        held = self._handed.get(id(message))
        if held is None or held[0] is not message:
            from ctxbench.formats.openai_messages import message_to_openai

            held = (message, json.dumps(message_to_openai(message), sort_keys=True))
            self._handed[id(message)] = held
        return held[1]

    def _messages(
        self, returned: Any, given: Sequence[Message], texts: Sequence[str], ctx: ReplayContext
    ) -> list[Message]:
        from ctxbench.formats.openai_messages import from_openai

        expected = "a list of OpenAI-style message dicts"
        if not isinstance(returned, (list, tuple)):
            raise faults.wrong_value(
                self.name,
                self.layer,
                returned,
                expected,
                ctx.trace_id,
                ctx.call,
                ctx.n_calls,
                hint=f"return the messages to send ({self.layer} returned "
                "nothing: a missing `return`?)"
                if returned is None
                else "",
            )
        pool: dict[str, list[Message]] = {}
        for message, text in zip(given, texts):
            pool.setdefault(text, []).append(message)
        out: list[Message] = []
        for i, item in enumerate(returned):
            if isinstance(item, Message):  # a compactor that builds ctxbench messages itself
                out.append(item)
                continue
            if not isinstance(item, dict):
                raise faults.wrong_value(
                    self.name,
                    self.layer,
                    item,
                    f"a message dict at index {i}",
                    ctx.trace_id,
                    ctx.call,
                    ctx.n_calls,
                    hint='every item is {"role": ..., "content": ...} (plus tool_calls / '
                    "tool_call_id)",
                )
            try:
                text = json.dumps(item, sort_keys=True)
            except (TypeError, ValueError) as exc:
                raise faults.wrong_value(
                    self.name,
                    self.layer,
                    item,
                    f"JSON-serialisable message dict at index {i}",
                    ctx.trace_id,
                    ctx.call,
                    ctx.n_calls,
                    hint=str(exc),
                ) from None
            same = pool.get(text)
            if same:
                out.append(same.pop(0))
                continue
            try:
                out.extend(from_openai([item], source=f"{self.name} result"))
            except TraceFormatError as exc:
                field = (exc.key or "").removeprefix("$[0]").lstrip(".") or "the message"
                raise PluginError(
                    f"{self.name}: {self.layer} returned a message ctxbench cannot read at "
                    f"index {i} ({field}): {exc.message} "
                    f"{faults.where(ctx.trace_id, ctx.call, ctx.n_calls)}",
                    hint="return OpenAI chat messages: role, content, tool_calls "
                    '[{"id", "type": "function", "function": {"name", "arguments"}}], '
                    "tool_call_id",
                ) from None
        return out


def _same(a: Message, b: Message) -> bool:
    return a is b


def adapt(target: Any, path: str) -> type[Strategy[Any]]:
    """The strategy class of a plain compactor ``target`` loaded from ``path``."""
    function = getattr(target, "__init__") if isinstance(target, type) else target  # noqa: B009
    what = "constructor" if isinstance(target, type) else "function"
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise UnknownNameError(
            f"{path!r}: cannot read the signature of its {what}: {exc}",
            hint="give a Python function compact(messages, budget, **knobs)",
        ) from None
    params = list(signature.parameters.values())
    if isinstance(target, type):
        params = params[1:]  # self
    else:
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if len(positional) < 2 and not any(p.kind is p.VAR_POSITIONAL for p in params):
            raise UnknownNameError(
                f"{path!r} takes {len(positional)} positional parameter(s); a compactor "
                "function takes (messages, budget)",
                hint="def compact(messages: list[dict], budget: int, *, knob=default) -> "
                "list[dict]",
            )
        params = [p for p in params if p not in positional[:2]]
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # an annotation that does not resolve: the defaults' types are used
        hints = {}
    fields: list[tuple[str, Any, Any]] = []
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is inspect.Parameter.empty:
            raise UnknownNameError(
                f"{path!r}: knob {p.name!r} has no default",
                hint=f"give it one ({p.name}=...): knobs are set with --set {p.name}=VALUE "
                "and every one needs a default",
            )
        tp = hints.get(p.name, type(p.default) if p.default is not None else Any)
        if tp in (list, tuple) or isinstance(p.default, (list, dict, set)):
            raise UnknownNameError(
                f"{path!r}: knob {p.name!r} has a {type(p.default).__name__} default",
                hint="knobs are numbers, text or booleans (use a tuple for a list of values)",
            )
        fields.append((p.name, tp, dataclasses.field(default=p.default)))
    short = getattr(target, "__name__", "compact")
    config = dataclasses.make_dataclass(f"{short}Config", fields, frozen=True)
    config.__module__ = getattr(target, "__module__", __name__)
    sees = getattr(target, "sees", "prompt")
    if sees not in SEES:
        raise UnknownNameError(
            f"{path!r}: sees = {sees!r}",
            hint=f"set sees to one of {', '.join(map(repr, SEES))}",
        )
    doc = inspect.getdoc(target) or ""
    attrs: dict[str, Any] = {
        "name": path,
        "summary": doc.splitlines()[0] if doc else f"plain compactor {path}",
        "source": path,
        "Config": config,
        "default_estimator": getattr(target, "default_estimator", "chars4"),
        "target": target,
        "sees": sees,
        "layer": short,
        "knobs": tuple(f[0] for f in fields),
        "__module__": config.__module__,
    }
    return type(f"{short}Strategy", (FunctionStrategy,), attrs)


__all__ = ["FunctionStrategy", "adapt", "is_plain_compactor"]
