"""``langchain_trim``: LangChain ``trim_messages`` applied to the history before every model call.

Release: ``langchain-core==1.8.3`` (read again in the 1.8.4 wheel: the same code).
Source: langchain-ai/langchain ``libs/core/langchain_core/messages/utils.py`` (``trim_messages``,
``_first_max_tokens``, ``_last_max_tokens``, ``_default_text_splitter``) and the reference page
reference.langchain.com ``trim_messages``; the tool-pair rule follows PR #34195 ("if the cutoff
is not safe, move forward ... until it finds the first non tool message"); docs/sources.md.

In LangGraph ``trim_messages`` typically runs in a ``pre_model_hook`` that returns
``llm_input_messages``: the stored history is untouched and every call trims it again, so
ctxbench rebuilds the prompt from the full history before every call.

Rules reproduced:

- ``strategy="last"`` (default): keep the longest suffix whose tokens are <= ``max_tokens``;
  with ``include_system`` the first message, if a system message, is kept and its tokens are
  subtracted first; ``end_on`` first pops trailing messages not of those types; ``start_on`` then
  drops the oldest kept messages until one of those types leads.
- ``strategy="first"``: the longest prefix within ``max_tokens``, then ``end_on`` pops trailing
  messages. ``include_system`` and ``start_on`` only apply to ``"last"``; like LangChain,
  combining them with ``"first"`` is an error.
- ``allow_partial``: the message at the boundary may be cut by ``text_splitter`` (LangChain's
  default splits at newlines, keeping them), keeping its last pieces (``"last"``) or first pieces
  (``"first"``) that fit. The binary search of ``_first_max_tokens`` counts each candidate with
  its pieces in the searched order (for ``"last"``: reversed lines) and only the kept text is
  put back in order, so a counter that is not additive over lines may keep a different count.
- Message types are LangChain's: ``human`` (user messages, observations included), ``ai``,
  ``tool``, ``system``.
- Tool pairs: ``trim_messages`` itself does not look at pairs, so a trim can send a tool result
  whose call was cut, which a provider rejects (a failed call of kind ``pairing``). That is the
  default. ``repair_pairs=true`` adds ctxbench's repair, modelled on LangChain's summarization
  cutoff (PR #34195): a kept suffix that starts on tool results moves forward past them (drops
  more), and calls whose results were cut are stripped (:func:`drop_unpaired`).

The token counter (``token_counter="approximate"``, the default) is LangChain's
``count_tokens_approximately`` (langchain-core 1.8.3 ``messages/utils.py`` lines 2262-2437) on
each message as a LangGraph agent holds it (:func:`approximate_tokens`): ``ceil(chars / 4) + 3``
where chars counts the content, the role (``user``, ``assistant``, ``tool``, ``system``), the
``repr`` of an AI message's parsed tool calls and a tool message's ``tool_call_id``; reasoning
fields are not in a LangChain message's content and are not counted; tool schemas are not
counted. ``token_counter="estimator"`` uses the replay's estimator instead (chars4 by default:
``len // 4`` with no role and no per-message 3, which on a text-action run, many short user
observations, counts a prompt ~10% under LangChain and sends it untrimmed where LangChain trims).

Knobs (defaults): max_tokens None (= window - reserved; ``trim_messages`` has no default),
strategy "last", include_system False, start_on (), end_on (), allow_partial False,
repair_pairs False, token_counter "approximate".
``include_system`` defaults to False as in ``trim_messages``, so by LangChain's own rule a "last"
trim may drop the system prompt; every LangChain example sets it to True, so set
``include_system=true`` to compare with that usage. ``keeps_system()`` tells the invariant
checks which configurations promise to keep the system message.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ctxbench.config import require_non_negative
from ctxbench.engine.context import ReplayContext
from ctxbench.strategies.layers import RebuiltFromHistory, drop_unpaired, safe_start_forward
from ctxbench.trace import Message

MESSAGE_TYPES = ("human", "ai", "tool", "system")
_TYPE_OF_ROLE = {"user": "human", "assistant": "ai", "tool": "tool", "system": "system"}

Count = Callable[[Message], int]


def message_type(message: Message) -> str:
    """LangChain's type of a trace message: any role but assistant, tool and system is a
    ``HumanMessage`` (as a LangGraph agent, and the shipped driver, build it)."""
    return _TYPE_OF_ROLE.get(message.role, "human")


_OPENAI_ROLE = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def _tool_call_args(arguments: str) -> dict[str, Any]:
    """An AI message's ``args``: the JSON arguments parsed; text that is not a JSON object is
    wrapped as ``{"input": ...}`` (a ``ToolCall``'s args must be a dict)."""
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        return {"input": arguments}
    return args if isinstance(args, dict) else {"input": args}


def approximate_tokens(message: Message) -> int:
    """langchain-core 1.8.3 ``count_tokens_approximately([m])`` with its defaults
    (``messages/utils.py`` 2352-2408): the content's characters (2356), plus
    ``len(repr(message.tool_calls))`` of an AI message with tool calls (2384-2391; a
    ``ToolCall`` dict is ``name, args, id, type``), plus the tool message's ``tool_call_id``
    (2393-2394), plus the OpenAI role (2396-2397), rounded up per message over 4 chars a
    token (2405), plus 3 a message (2408). A sum over messages equals the list's count."""
    kind = message_type(message)
    chars = len(message.content) + len(_OPENAI_ROLE[kind])
    if kind == "ai" and message.tool_calls:
        calls = [
            {"name": c.name, "args": _tool_call_args(c.arguments), "id": c.id, "type": "tool_call"}
            for c in message.tool_calls
        ]
        chars += len(repr(calls))
    if kind == "tool":
        chars += len(message.tool_call_id or "")
    return math.ceil(chars / 4) + 3


def default_text_splitter(text: str) -> list[str]:
    """LangChain ``_default_text_splitter``: split at newlines, keeping them."""
    splits = text.split("\n")
    return [s + "\n" for s in splits[:-1]] + splits[-1:]


def first_max_tokens(
    messages: list[Message],
    max_tokens: int,
    count: Count,
    *,
    partial: Literal["first", "last"] | None,
    end_on: tuple[str, ...],
) -> list[Message]:
    """``_first_max_tokens``: the longest prefix within ``max_tokens`` (plus a partial message)."""
    messages = list(messages)
    total = 0
    idx = 0
    for msg in messages:
        cost = count(msg)
        if total + cost > max_tokens:
            break
        total += cost
        idx += 1
    if partial and idx < len(messages) and messages[idx].content:
        pieces = default_text_splitter(messages[idx].content)
        if partial == "last":
            pieces.reverse()
        # LangChain's binary search; each candidate is counted in the searched order
        left, right = 0, len(pieces)
        for _ in range(len(pieces).bit_length()):
            if left >= right:
                break
            mid = (left + right + 1) // 2
            if total + count(messages[idx].with_text("".join(pieces[:mid]))) <= max_tokens:
                left = mid
            else:
                right = mid - 1
        if left:
            chosen = pieces[:left] if partial == "first" else list(reversed(pieces[:left]))
            messages = [*messages[:idx], messages[idx].with_text("".join(chosen))]
            idx += 1
    if end_on:
        while idx > 0 and message_type(messages[idx - 1]) not in end_on:
            idx -= 1
    return messages[:idx]


def trim_messages(
    messages: Sequence[Message],
    *,
    max_tokens: int,
    count: Count,
    strategy: Literal["last", "first"],
    include_system: bool,
    start_on: tuple[str, ...],
    end_on: tuple[str, ...],
    allow_partial: bool,
) -> list[Message]:
    """LangChain ``trim_messages`` over ctxbench messages (no pair handling)."""
    messages = list(messages)
    if strategy == "first":
        return first_max_tokens(
            messages, max_tokens, count, partial="first" if allow_partial else None, end_on=end_on
        )
    if end_on:
        while messages and message_type(messages[-1]) not in end_on:
            messages.pop()
    system: Message | None = None
    if include_system and messages and messages[0].role == "system":
        system = messages[0]
        messages = messages[1:]
    remaining = max(0, max_tokens - count(system)) if system is not None else max_tokens
    kept = first_max_tokens(
        messages[::-1],
        remaining,
        count,
        partial="last" if allow_partial else None,
        end_on=start_on,
    )[::-1]
    return [system, *kept] if system is not None else kept


@dataclass(frozen=True)
class LangChainTrimConfig:
    max_tokens: int | None = field(
        default=None, metadata={"help": "token budget (None = window - reserved)"}
    )
    strategy: Literal["last", "first"] = field(default="last", metadata={"help": "keep which end"})
    include_system: bool = field(
        default=False,
        metadata={"help": "keep a leading system message (LangChain's default False)"},
    )
    start_on: tuple[str, ...] = field(
        default=(), metadata={"help": "message types the kept part must start on (last only)"}
    )
    end_on: tuple[str, ...] = field(
        default=(), metadata={"help": "message types the kept part must end on"}
    )
    allow_partial: bool = field(default=False, metadata={"help": "cut the boundary message"})
    repair_pairs: bool = field(
        default=False,
        metadata={
            "help": "ctxbench's tool-pair repair (not in LangChain: off sends what it sends)"
        },
    )
    token_counter: Literal["approximate", "estimator"] = field(
        default="approximate",
        metadata={"help": "LangChain's count_tokens_approximately, or the replay's estimator"},
    )

    def __post_init__(self) -> None:
        require_non_negative(self, "max_tokens")
        for name in ("start_on", "end_on"):
            unknown = [t for t in getattr(self, name) if t not in MESSAGE_TYPES]
            if unknown:
                raise ValueError(
                    f"{name} has unknown message types {unknown}; use {', '.join(MESSAGE_TYPES)}"
                )
        if self.strategy == "first" and self.include_system:
            raise ValueError("include_system only applies to strategy='last'; set it to false")
        if self.strategy == "first" and self.start_on:
            raise ValueError("start_on only applies to strategy='last'")


class LangChainTrim(RebuiltFromHistory[LangChainTrimConfig]):
    name = "langchain_trim"

    def keeps_system(self) -> bool:
        """Only ``include_system=true`` promises to keep the system message."""
        return bool(self.config.include_system)

    def keeps_pairs(self) -> bool:
        """Only ``repair_pairs=true`` promises prompts a provider accepts."""
        return bool(self.config.repair_pairs)

    summary = "LangChain trim_messages before every call: last/first N tokens, type boundaries."
    source = "langchain-ai/langchain libs/core/langchain_core/messages/utils.py trim_messages"
    Config = LangChainTrimConfig
    default_estimator = "chars4"
    layer = "langchain_trim"

    def budget(self, ctx: ReplayContext) -> int:
        return (
            self.config.max_tokens
            if self.config.max_tokens is not None
            else ctx.window - ctx.reserved
        )

    def rebuild(self, history: list[Message], ctx: ReplayContext) -> tuple[list[Message], str]:
        cfg = self.config
        trimmed = trim_messages(
            history,
            max_tokens=self.budget(ctx),
            count=approximate_tokens
            if cfg.token_counter == "approximate"
            else ctx.estimator.count_message,
            strategy=cfg.strategy,
            include_system=cfg.include_system,
            start_on=cfg.start_on,
            end_on=cfg.end_on,
            allow_partial=cfg.allow_partial,
        )
        return (make_pair_safe(trimmed) if cfg.repair_pairs else trimmed), ""


def make_pair_safe(messages: list[Message]) -> list[Message]:
    """Move an unsafe start forward past tool results (PR #34195), then strip unanswered calls."""
    lead = 1 if messages and messages[0].role == "system" else 0
    start = safe_start_forward(messages, lead)
    return drop_unpaired([*messages[:lead], *messages[start:]])
