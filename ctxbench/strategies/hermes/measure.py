"""How the hermes-agent 0.19.0 loop measures a conversation: the message dicts it stores and
sends, and its rough ``len(str(msg))`` estimates of them (``agent/model_metadata.py``).

The loop measures three different shapes, and each trigger uses its own:

- the stored message (``build_assistant_message``, ``make_tool_message``): what the turn
  prologue, the post-compaction latch, the overflow progress check and the summary budget see;
- the API copy (``conversation_loop.py:870-1080``): what the pre-API pressure check sees, with
  the system prompt as a message;
- the compressor's budget walk (``_estimate_msg_budget_tokens``): :class:`BudgetCounter`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from ctxbench.counting.base import TokenCounter, tool_schemas
from ctxbench.memo import ObjectMemo, shared_memo
from ctxbench.strategies.hermes.summary import SUMMARY_MARK
from ctxbench.trace import Message, ToolCall, ToolSpec

ROUGH_IMAGE_TOKENS = 1500
BUDGET_IMAGE_TOKENS = 1600
_IMAGE_TYPES = frozenset({"image", "image_url", "input_image"})
#: replay fields ``_estimate_msg_budget_tokens`` counts (context_compressor.py:408-414)
BUDGET_REPLAY_KEYS = (
    "reasoning",
    "reasoning_content",
    "reasoning_details",
    "codex_reasoning_items",
    "codex_message_items",
)
#: keys of a stored message the API copy drops (conversation_loop.py:879, 925-933)
API_DROPPED_KEYS = frozenset({"api_content", "reasoning", "finish_reason"})
#: tool-call keys the chat-completions API copy strips (run_agent.py:6099)
API_DROPPED_CALL_KEYS = frozenset({"call_id", "response_item_id", "extra_content"})


def response_item_id(call_id: str) -> str:
    """``_derive_responses_function_call_id(call_id, None)`` (codex_responses_adapter.py:211)."""
    source = call_id.strip()
    if source.startswith("fc_"):
        return source
    if source.startswith("call_") and len(source) > len("call_"):
        return f"fc_{source[len('call_') :]}"
    sanitized = re.sub(r"[^A-Za-z0-9_-]", "", source)
    if sanitized.startswith("fc_"):
        return sanitized
    if sanitized.startswith("call_") and len(sanitized) > len("call_"):
        return f"fc_{sanitized[len('call_') :]}"
    if sanitized:
        return f"fc_{sanitized[:48]}"
    return f"fc_{hashlib.sha1(source.encode('utf-8')).hexdigest()[:24]}"


def stored_call(call: ToolCall) -> dict[str, Any]:
    """A tool call as the agent stores it (chat_completion_helpers.py:1436-1446)."""
    return {
        "id": call.id,
        "call_id": call.id,
        "response_item_id": response_item_id(call.id),
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def _content(message: Message) -> Any:
    if message.parts is None:
        return message.content
    return [
        {"type": p.type, "image": "[stripped]"} if p.type in _IMAGE_TYPES else p.to_dict()
        for p in message.parts
    ]


def stored_message(message: Message) -> dict[str, Any]:
    """A message as the agent keeps it in ``messages`` (images stripped, as the estimate does):
    assistant turns with ``reasoning`` and ``finish_reason`` (chat_completion_helpers.py:1314),
    tool results with ``name`` and ``tool_name`` (tool_dispatch_helpers.py:484), compaction
    summaries with their ``_compressed_summary`` flag (context_compressor.py:3639)."""
    content = _content(message)
    if message.role == "tool":
        name = message.name or ""
        return {
            "role": "tool",
            "name": name,
            "tool_name": name,
            "content": content,
            "tool_call_id": message.tool_call_id or "",
        }
    out: dict[str, Any] = {"role": message.role, "content": content}
    replay = dict(message.replay)
    if message.role == "assistant":
        out["reasoning"] = replay.pop("reasoning", None)
        out["finish_reason"] = "tool_calls" if message.tool_calls else "stop"
    out.update(replay)
    if message.tool_calls:
        out["tool_calls"] = [stored_call(c) for c in message.tool_calls]
    if message.meta.get(SUMMARY_MARK):
        out[SUMMARY_MARK] = True
    return out


def _normalised_arguments(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), separators=(",", ":"), sort_keys=True)
    except ValueError:
        return arguments


def api_message(message: Message) -> dict[str, Any]:
    """The copy the loop sends for a stored message: sidecar, reasoning and finish_reason
    dropped, Codex fields stripped from the calls, content stripped, arguments re-serialised
    compactly with sorted keys (conversation_loop.py:870-1080, chat_completions mode)."""
    out = {k: v for k, v in stored_message(message).items() if k not in API_DROPPED_KEYS}
    if isinstance(out["content"], str):
        out["content"] = out["content"].strip()
    if "tool_calls" in out:
        out["tool_calls"] = [
            {
                **{k: v for k, v in call.items() if k not in API_DROPPED_CALL_KEYS},
                "function": {
                    **call["function"],
                    "arguments": _normalised_arguments(call["function"]["arguments"]),
                },
            }
            for call in out["tool_calls"]
        ]
    return out


def _image_count(message: Message) -> int:
    return sum(1 for p in message.parts or () if p.type in _IMAGE_TYPES)


def _images(messages: Sequence[Message]) -> int:
    memo: ObjectMemo[Message, int] = shared_memo(("hermes.images",), _image_count)
    return sum(memo.many(messages))


def _stored_chars(message: Message) -> int:
    """``len(str(msg))`` of the message as the agent stores it."""
    return len(str(stored_message(message)))


def _api_chars(message: Message) -> int:
    """``len(str(msg))`` of the API copy the loop sends for the message."""
    return len(str(api_message(message)))


# Each message's share of the rough estimates is kept per message object in a shared memo
# (:func:`~ctxbench.memo.shared_memo`): the loop measures its whole history several times per
# call, a message's ``str`` depends only on the message, and a replay holds the same objects
# from call to call, so a call costs a lookup per message in C and only the messages new since
# the last call run Python.


def _stored_chars_of(messages: Sequence[Message]) -> list[int]:
    memo: ObjectMemo[Message, int] = shared_memo(("hermes.stored_chars",), _stored_chars)
    return memo.many(messages)


def _api_chars_of(messages: Sequence[Message]) -> list[int]:
    memo: ObjectMemo[Message, int] = shared_memo(("hermes.api_chars",), _api_chars)
    return memo.many(messages)


#: the tools last measured and their estimate (a replay passes the same tuple at every call)
_LAST_TOOLS: list[Any] = [None, 0]


def rough_tools_tokens(tools: Sequence[ToolSpec]) -> int:
    """``_estimate_tools_tokens_rough``: name + description + compact parameters JSON."""
    if tools is _LAST_TOOLS[0]:
        return int(_LAST_TOOLS[1])
    tokens = _rough_tools_tokens(tools)
    if isinstance(tools, tuple):  # immutable: the same object has the same estimate
        _LAST_TOOLS[:] = [tools, tokens]
    return tokens


def _rough_tools_tokens(tools: Sequence[ToolSpec]) -> int:
    chars = 0
    for schema in tool_schemas(tools):
        fn = schema["function"]
        chars += len(fn.get("name") or "") + len(fn.get("description") or "")
        chars += len(
            json.dumps(fn.get("parameters") or {}, ensure_ascii=False, separators=(",", ":"))
        )
    return (chars + 3) // 4 if tools else 0


def system_prompt(messages: Sequence[Message]) -> str:
    """The agent's system prompt: the view's system messages, outside the message list."""
    return "\n\n".join(m.content for m in messages if m.role == "system").strip()


def conversation(messages: Sequence[Message]) -> list[Message]:
    """The list the agent keeps and ``compress()`` sees: everything but the system prompt."""
    return [m for m in messages if m.role != "system"]


def rough_messages_tokens(messages: Sequence[Message]) -> int:
    """``estimate_messages_tokens_rough`` of the stored messages (no system prompt)."""
    kept = conversation(messages)
    return (sum(_stored_chars_of(kept)) + 3) // 4 + ROUGH_IMAGE_TOKENS * _images(kept)


def rough_request_tokens(
    messages: Sequence[Message], tools: Sequence[ToolSpec], *, with_system: bool = True
) -> int:
    """``estimate_request_tokens_rough``: the system prompt's ``(len + 3) // 4`` (when passed),
    the stored messages and the tools (the turn prologue, the post-compaction latch; without
    the system prompt, the post-response fallback)."""
    system = system_prompt(messages) if with_system else ""
    head = (len(system) + 3) // 4 if system else 0
    return head + rough_messages_tokens(messages) + rough_tools_tokens(tools)


def rough_api_tokens(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
    """``request_pressure_tokens`` (conversation_loop.py:1086-1089): the API copies with the
    system prompt as their first message, plus the tools."""
    system = system_prompt(messages)
    kept = conversation(messages)
    chars = len(str({"role": "system", "content": system})) if system else 0
    chars += sum(_api_chars_of(kept))
    return (chars + 3) // 4 + ROUGH_IMAGE_TOKENS * _images(kept) + rough_tools_tokens(tools)


class BudgetCounter(TokenCounter):
    """0.19.0 ``_estimate_msg_budget_tokens`` (context_compressor.py:419): ``content_len // 4 +
    10``, ``len(str(tc)) // 4`` of each tool call as stored, replay keys, 1600 per image."""

    kind = "estimator"

    def __init__(self) -> None:
        super().__init__("hermes@0.19.0", "hermes-agent 0.19.0 _estimate_msg_budget_tokens")

    def count(self, text: str) -> int:
        return len(text) // 4

    def message_tokens(self, message: Message) -> int:
        tokens = len(message.content) // 4 + 10
        tokens += BUDGET_IMAGE_TOKENS * len(message.media_parts)
        tokens += sum(len(str(stored_call(c))) // 4 for c in message.tool_calls)
        for key in BUDGET_REPLAY_KEYS:
            value = message.replay.get(key)
            if value is None or value == "":
                continue
            serialised = (
                value
                if isinstance(value, str)
                else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
            )
            tokens += len(serialised) // 4
        return tokens

    def prompt_overhead(self, tools: Sequence[ToolSpec] = ()) -> int:
        return 0
