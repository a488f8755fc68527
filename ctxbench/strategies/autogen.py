"""AutoGen model contexts: ``autogen_head_tail`` and ``autogen_token_limited``.

Release: ``autogen-core==0.7.5`` (the wheel's ``autogen_core/model_context/``
``_head_and_tail_chat_completion_context.py`` and ``_token_limited_chat_completion_context.py``);
The reading in docs/sources.md is of a later commit, which also filters mid-list orphans.

An AutoGen context stores every message and builds the prompt in ``get_messages`` on every call,
so these strategies rebuild the prompt from the full history before every call. The system
message is not part of an AutoGen context (the agent prepends it), so it is always kept and never
counted as a context message. One AutoGen ``FunctionExecutionResultMessage`` carries all the
results of one turn: ctxbench treats the consecutive tool results after an assistant message as
one message; any other message (an assistant message with calls is AutoGen's function-call
``AssistantMessage``) is one message.

``autogen_head_tail`` (``HeadAndTailChatCompletionContext``): the first ``head_size`` messages
(minus a trailing function-call message), ``UserMessage("Skipped {n} messages.",
source="System")`` with ``n = len - head_size - tail_size``, and the last ``tail_size`` messages
(minus a leading function-result message); all messages when ``n <= 0``. Both sizes are required
in AutoGen (no defaults); ctxbench uses head 3 and tail 20. As in 0.7.5's ``__init__``, both must
be > 0 (``head_size must be greater than 0.``).

``autogen_token_limited`` (``TokenLimitedChatCompletionContext``): while the context's tokens are
over ``token_limit`` (None: the model client's ``remaining_tokens`` < 0, i.e. over the whole
window, with no room left for the output reservation, as AutoGen computes it), pop the
middle message (``len // 2``); then, as 0.7.5 does, drop the first message if it is a function
result. Mid-list orphans (a result whose call was popped, a call whose results were popped) stay,
and the provider rejects that prompt (a failed call of kind ``pairing``). ``repair_pairs=true``
adds ctxbench's repair instead: every orphan result is removed and calls without results are
stripped (dropping an assistant message left empty). ``count_tokens(messages, tools=tool_schema)`` counts the context
messages only (not the system message) plus the tool schemas when ``tool_schema`` is given (None
by default): ``count_tool_schemas`` False.

Knobs (defaults): head_size 3, tail_size 20; token_limit None, count_tool_schemas False,
repair_pairs False.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxbench.engine.context import ReplayContext
from ctxbench.strategies.layers import RebuiltFromHistory, drop_unpaired, split_system
from ctxbench.trace import Message

Unit = tuple[Message, ...]


def autogen_messages(messages: Sequence[Message]) -> list[Unit]:
    """Group consecutive tool results into one unit (AutoGen's FunctionExecutionResultMessage)."""
    units: list[Unit] = []
    for msg in messages:
        if msg.role == "tool" and units and units[-1][-1].role == "tool":
            units[-1] = (*units[-1], msg)
        else:
            units.append((msg,))
    return units


def is_call_message(unit: Unit) -> bool:
    return unit[0].role == "assistant" and bool(unit[0].tool_calls)


def is_result_message(unit: Unit) -> bool:
    return unit[0].role == "tool"


def flatten(units: Sequence[Unit]) -> list[Message]:
    return [m for unit in units for m in unit]


def head_and_tail(units: list[Unit], head_size: int, tail_size: int) -> list[Unit]:
    """``HeadAndTailChatCompletionContext.get_messages`` over AutoGen messages."""
    head = units[:head_size]
    if head and is_call_message(head[-1]):
        head = head[:-1]
    tail = units[-tail_size:]
    if tail and is_result_message(tail[0]):
        tail = tail[1:]
    skipped = len(units) - head_size - tail_size
    if skipped <= 0:
        return units
    placeholder: Unit = (Message("user", f"Skipped {skipped} messages.", name="System"),)
    return [*head, placeholder, *tail]


def pop_middle(units: list[Unit], sizes: list[int], limit: int) -> tuple[list[Unit], int]:
    """``TokenLimitedChatCompletionContext``: pop ``len // 2`` while over ``limit``."""
    units, sizes = list(units), list(sizes)
    tokens = sum(sizes)
    popped = 0
    while tokens > limit and units:
        middle = len(units) // 2
        units.pop(middle)
        tokens -= sizes.pop(middle)
        popped += 1
    return units, popped


@dataclass(frozen=True)
class HeadTailConfig:
    head_size: int = field(default=3, metadata={"help": "first messages kept"})
    tail_size: int = field(default=20, metadata={"help": "last messages kept"})

    def __post_init__(self) -> None:
        # the wording of autogen-core 0.7.5's HeadAndTailChatCompletionContext.__init__
        if self.head_size <= 0:
            raise ValueError("head_size must be greater than 0.")
        if self.tail_size <= 0:
            raise ValueError("tail_size must be greater than 0.")


@dataclass(frozen=True)
class TokenLimitedConfig:
    token_limit: int | None = field(
        default=None, metadata={"help": "context tokens kept (None = the model window)"}
    )
    count_tool_schemas: bool = field(
        default=False, metadata={"help": "count the tool schemas (AutoGen tool_schema given)"}
    )
    repair_pairs: bool = field(
        default=False,
        metadata={"help": "ctxbench's pair repair (0.7.5 drops only a leading result message)"},
    )

    def __post_init__(self) -> None:
        if self.token_limit is not None and self.token_limit <= 0:
            raise ValueError("token_limit must be greater than 0.")


class AutoGenHeadTail(RebuiltFromHistory[HeadTailConfig]):
    name = "autogen_head_tail"
    summary = "AutoGen HeadAndTailChatCompletionContext: first n + 'Skipped' + last m."
    source = (
        "microsoft/autogen autogen_core/model_context/_head_and_tail_chat_completion_context.py"
    )
    Config = HeadTailConfig
    default_estimator = "chars4"
    layer = "autogen_head_tail"

    def rebuild(self, history: list[Message], ctx: ReplayContext) -> tuple[list[Message], str]:
        cfg = self.config
        system, rest = split_system(history)
        units = head_and_tail(autogen_messages(rest), cfg.head_size, cfg.tail_size)
        return [*system, *flatten(units)], ""


class AutoGenTokenLimited(RebuiltFromHistory[TokenLimitedConfig]):
    name = "autogen_token_limited"
    summary = "AutoGen TokenLimitedChatCompletionContext: pop the middle message until it fits."
    source = (
        "microsoft/autogen autogen_core/model_context/_token_limited_chat_completion_context.py"
    )
    Config = TokenLimitedConfig
    default_estimator = "chars4"
    layer = "autogen_token_limited"

    def keeps_pairs(self) -> bool:
        """Only ``repair_pairs=true`` promises prompts a provider accepts."""
        return bool(self.config.repair_pairs)

    def budget(self, ctx: ReplayContext) -> int:
        cfg = self.config
        return cfg.token_limit if cfg.token_limit is not None else ctx.window

    def rebuild(self, history: list[Message], ctx: ReplayContext) -> tuple[list[Message], str]:
        cfg = self.config
        system, rest = split_system(history)
        units = autogen_messages(rest)
        overhead = ctx.view.est_overhead if cfg.count_tool_schemas else 0
        sizes = [sum(ctx.estimator.count_message(m) for m in unit) for unit in units]
        units, popped = pop_middle(units, sizes, self.budget(ctx) - overhead)
        if cfg.repair_pairs:
            kept = drop_unpaired(flatten(units))
        else:
            kept = flatten(units[1:] if units and is_result_message(units[0]) else units)
        return [*system, *kept], f"popped={popped}"
