"""Layers several strategies share: where a cut is safe for tool pairs, how to repair pairs after
a system's own cut, how to blank a message, and the full history a per-call view is built from.

Every function here is pure (messages in, messages or indices out). Providers reject a prompt in
which a tool result has no preceding call, or a call has no result; real systems avoid that in
different ways, and each strategy picks the one its source uses:

- :func:`safe_start_forward` moves a cut that would start the kept part on a tool result forward
  past the results (LangChain PR #34195: "moves forward ... until it finds the first non tool
  message", i.e. drop more);
- :func:`safe_end_backward` moves the end of a kept prefix back before an assistant turn whose
  results it would cut off;
- :func:`drop_unpaired` removes results whose call is gone and strips calls whose results are
  gone (OpenHands ``ConversationMemory`` and AutoGen filter orphans this way).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import ClassVar, TypeVar

from ctxbench.engine.context import ReplayContext
from ctxbench.engine.strategy import Strategy
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.trace import OBSERVATION_PREFIX, Message

C = TypeVar("C")

#: The design article three strategies reproduce (their ``source`` starts with it).
CONTEXT_MANAGER_ARTICLE = (
    '"Why Agent Conversations Aren\'t Just Chat Logs" (ContextManager design article)'
)


def split_system(messages: Sequence[Message]) -> tuple[list[Message], list[Message]]:
    """(system messages, everything else), each in order."""
    system = [m for m in messages if m.role == "system"]
    rest = [m for m in messages if m.role != "system"]
    return system, rest


def is_tool_result(message: Message) -> bool:
    """A native tool result or a text-ReAct ``Observation:`` message."""
    return message.role == "tool" or message.is_observation


def safe_start_forward(messages: Sequence[Message], start: int) -> int:
    """The first index >= ``start`` that is not a native tool result (drop orphan results)."""
    while start < len(messages) and messages[start].role == "tool":
        start += 1
    return start


def safe_end_backward(messages: Sequence[Message], end: int) -> int:
    """Move the end of a kept prefix ``messages[:end]`` back so that it does not stop between
    an assistant's calls and their results (the whole assistant turn goes)."""
    if end >= len(messages) or messages[end].role != "tool":
        return end
    while end > 0 and messages[end - 1].role == "tool":
        end -= 1
    if end > 0 and messages[end - 1].tool_calls:
        end -= 1
    return end


def results_after_calls(messages: Sequence[Message], cut: int) -> int:
    """Move a split ``messages[:cut] | messages[cut:]`` forward until no tool result after it
    answers a call made before it, iterating to a fixed point.

    Each pass moves the split just past the last such result (the result joins its call on the
    earlier side); the messages this moves may hold calls whose results lie further on, hence
    the loop. This is AgentScope's fix for split multi-tool batches (PR #2093), applied across
    messages rather than inside one message."""
    while True:
        calls_before = {c.id for m in messages[:cut] for c in m.tool_calls}
        answering = [
            i
            for i in range(cut, len(messages))
            if messages[i].role == "tool" and messages[i].tool_call_id in calls_before
        ]
        if not answering:
            return cut
        cut = max(answering) + 1


def drop_unpaired(messages: Sequence[Message]) -> list[Message]:
    """Remove tool results without a preceding call, and strip calls without a result.

    An assistant message left with neither text, media nor calls is dropped. Results are
    matched to the most recent assistant turn they follow, as providers require."""
    answered: set[str] = set()
    valid_results: set[int] = set()
    open_calls: set[str] = set()  # calls of the assistant turn results may still answer
    for i, msg in enumerate(messages):
        if msg.role == "assistant":
            open_calls = {c.id for c in msg.tool_calls}
        elif msg.role == "tool":
            cid = msg.tool_call_id
            if cid is not None and cid in open_calls:
                open_calls.discard(cid)
                answered.add(cid)
                valid_results.add(i)
        elif msg.role != "system":
            open_calls = set()
    out: list[Message] = []
    for i, msg in enumerate(messages):
        if msg.role == "tool":
            if i in valid_results:
                out.append(msg)
            continue
        if msg.role == "assistant" and msg.tool_calls:
            kept_calls = tuple(c for c in msg.tool_calls if c.id in answered)
            if len(kept_calls) != len(msg.tool_calls):
                if not kept_calls and not msg.content and not msg.media_parts and not msg.replay:
                    continue
                msg = replace(msg, tool_calls=kept_calls)
        out.append(msg)
    return out


def with_placeholder(message: Message, text: str) -> Message:
    """``message`` with its whole content (media included) replaced by ``text``.

    A text-ReAct observation keeps its ``Observation:`` prefix, so the round segmentation of
    :func:`ctxbench.pairing.rounds` does not change when an observation is blanked."""
    if message.is_observation and not text.lstrip().startswith(OBSERVATION_PREFIX):
        text = f"{OBSERVATION_PREFIX} {text}"
    return replace(message, content=text, parts=None)


def transcript(messages: Sequence[Message], *, max_chars: int | None = None) -> str:
    """A plain-text rendering of messages (``[role]: text`` plus tool calls), for summary
    prompts of systems that send the history itself rather than their own serialisation."""
    lines = []
    for msg in messages:
        text = msg.content if max_chars is None else msg.content[:max_chars]
        line = f"[{msg.role}]: {text}"
        for call in msg.tool_calls:
            line += f"\n  -> {call.name}({call.arguments})"
        lines.append(line)
    return "\n".join(lines)


class FullHistory:
    """The full recorded history of a strategy that rebuilds its prompt from it every call.

    Several systems never edit their stored history: AutoGen's ``get_messages``, LangGraph's
    ``pre_model_hook``, Anthropic's server-side context editing and SWE-agent's history
    processors compute each prompt from everything recorded so far. Such a strategy calls
    :meth:`sync` with the view at the start of ``before_call`` (new recorded messages are what
    the engine appended after its last prompt) and :meth:`sent` after ``ctx.apply``.
    """

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._seen = 0

    def sync(self, view: Sequence[Message]) -> list[Message]:
        """Add the messages appended to ``view`` since the last prompt; return the history."""
        self.messages.extend(view[self._seen :])
        self._seen = len(view)
        return self.messages

    def sent(self, view: Sequence[Message]) -> None:
        """Remember the prompt just built, so the next :meth:`sync` finds what follows it."""
        self._seen = len(view)


class RebuiltFromHistory(Strategy[C]):
    """A strategy whose every prompt is rebuilt from the full recorded history
    (:class:`FullHistory`): :meth:`rebuild` returns the prompt and its note, applied as
    ``layer`` when it differs from the view."""

    #: the layer named in the compaction events
    layer: ClassVar[str] = ""

    def __init__(self, config: C | None = None) -> None:
        super().__init__(config)
        self.history = FullHistory()

    def rebuild(self, history: list[Message], ctx: ReplayContext) -> tuple[list[Message], str]:
        """The prompt to send, built from ``history`` (not to be edited), and the note."""
        raise NotImplementedError

    def before_call(self, ctx: ReplayContext) -> None:
        out, note = self.rebuild(self.history.sync(ctx.view.messages), ctx)
        if not ctx.view.shows(out):
            ctx.apply(self.layer, out, note=note)
        self.history.sent(ctx.view.messages)


__all__ = [
    "FullHistory",
    "RebuiltFromHistory",
    "drop_unpaired",
    "is_tool_result",
    "results_after_calls",
    "safe_end_backward",
    "safe_start_forward",
    "split_system",
    "transcript",
    "with_placeholder",
]


def transcript_request(
    strategy: str,
    layer: str,
    history: Sequence[Message],
    prompt: str,
    sections: tuple[str, ...],
    max_tokens: int | None,
    key: str,
) -> SummaryRequest:
    """A request to summarise ``history`` past its system messages as a transcript followed by
    ``prompt`` as the user's turn (Claude Code's and Codex's compaction calls)."""
    _, rest = split_system(history)
    return SummaryRequest(
        strategy=strategy,
        layer=layer,
        prompt=transcript(rest) + "\n\n[user]: " + prompt,
        messages=tuple(rest),
        sections=sections,
        max_tokens=max_tokens,
        key=key,
    )
