"""AgentScope's pure steps: how a request is counted (``ChatModelBase.count_tokens``), the
context split (``_split_context_for_compression``) and the tool-result split
(``_split_tool_result_for_compression``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from ctxbench.counting.base import TokenCounter, replay_text, tool_schemas
from ctxbench.counting.estimators import AgentScopeCounter
from ctxbench.memo import ObjectMemo, shared_memo
from ctxbench.strategies.agentscope.prompts import IMAGE_PART_TYPES
from ctxbench.strategies.layers import results_after_calls
from ctxbench.trace import Message, Part, ToolSpec


def _with_parts(message: Message, parts: Sequence[Part]) -> Message:
    text = "\n".join(p.text for p in parts if p.is_text)
    return replace(message, content=text, parts=tuple(parts))


def _splits(message: Message) -> list[tuple[Message | None, Message | None]] | None:
    """Where a boundary message may be cut between its content blocks: for each cut, the part
    compressed and the part kept (None: empty). A multi-part user or assistant message cuts
    between its parts. An assistant turn with tool calls or provider replay fields is stored
    by AgentScope 2.0.11 as a ``ThinkingBlock`` (the replay fields), a ``TextBlock`` (the
    text) and one ``ToolCallBlock`` per call, in that order (the response's blocks,
    ``Agent._save_to_context``, agent/_agent.py:3440-3486); it cuts between any two, so a kept
    part may be a turn's text and calls without its reasoning, or its calls alone. None: the
    message is one block."""
    thinking = bool(replay_text(message))
    if message.role == "assistant" and (message.tool_calls or thinking):
        blocks: list[str] = []
        if thinking:
            blocks.append("thinking")
        if message.content or message.parts:
            blocks.append("text")
        blocks += ["call"] * len(message.tool_calls)
        if len(blocks) < 2:
            return None
        return [
            (_blocks_of(message, blocks[:cut], 0) if cut else None,
             _blocks_of(message, blocks[cut:], cut) if cut < len(blocks) else None)
            for cut in range(len(blocks) + 1)
        ]  # fmt: skip
    if message.tool_calls or message.role not in ("user", "assistant"):
        return None
    if message.parts is None or len(message.parts) < 2:
        return None
    parts = list(message.parts)
    return [
        (_with_parts(message, parts[:i]) if i else None,
         _with_parts(message, parts[i:]) if i < len(parts) else None)
        for i in range(len(parts) + 1)
    ]  # fmt: skip


def _blocks_of(message: Message, blocks: Sequence[str], first: int) -> Message:
    """The part of an assistant turn made of ``blocks`` (thinking, text, calls), the first of
    them at block position ``first``: the whole message when it is all of them."""
    n_calls = blocks.count("call")
    if len(blocks) == len(message.tool_calls) + bool(replay_text(message)) + bool(
        message.content or message.parts
    ):
        return message
    calls = message.tool_calls[len(message.tool_calls) - n_calls :] if first else (
        message.tool_calls[:n_calls]
    )  # fmt: skip
    return replace(
        message,
        content=message.content if "text" in blocks else "",
        parts=message.parts if "text" in blocks else None,
        replay=message.replay if "thinking" in blocks else {},
        tool_calls=calls,
    )


class Meter:
    """How a strategy counts a whole request (the prompt or a candidate part of it)."""

    def tokens(self, messages: Sequence[Message]) -> int:
        raise NotImplementedError


class PerMessage(Meter):
    """The estimator's per-message counts plus the tools' overhead (2.0.6; any estimator)."""

    def __init__(self, counter: TokenCounter, overhead: int = 0) -> None:
        self.counter, self.overhead = counter, overhead

    def tokens(self, messages: Sequence[Message]) -> int:
        return self.overhead + sum(self.counter.message_counts(messages))


class WholePrompt(Meter):
    """``ChatModelBase.count_tokens`` of 2.0.11 (model/_base.py:379-465): the UTF-8 bytes of
    every text, thinking and tool-call input of the request and ``json.dumps(tools,
    ensure_ascii=False)``, divided by 4 and rounded **once**, plus 2000 per data block."""

    def __init__(self, tools: Sequence[ToolSpec]) -> None:
        self.tools_bytes = (
            len(json.dumps(tool_schemas(tools), ensure_ascii=False).encode("utf-8")) if tools else 0
        )

    def tokens(self, messages: Sequence[Message]) -> int:
        # each message's bytes and data blocks, once per message object (a shared memo): a
        # request is counted whole at every call, from the same objects (a lookup each, in C)
        sizes: ObjectMemo[Message, int] = shared_memo(("agentscope.bytes",), message_bytes)
        media_of: ObjectMemo[Message, int] = shared_memo(("agentscope.media",), _media)
        n_bytes = self.tools_bytes + sum(sizes.many(messages))
        media = sum(media_of.many(messages))
        return int(n_bytes / 4 + 0.5) + AgentScopeCounter.MEDIA_TOKENS * media


def message_bytes(message: Message) -> int:
    """The UTF-8 bytes ``count_tokens`` sums for one message: its text, thinking (the replay
    fields) and tool-call inputs."""
    pieces = [message.content, replay_text(message), *(c.arguments for c in message.tool_calls)]
    return sum(len(p.encode("utf-8", "surrogatepass")) for p in pieces)


def _media(message: Message) -> int:
    return len(message.media_parts)


def split_context(
    head: Sequence[Message],
    context: Sequence[Message],
    to_reserve: float,
    counter: TokenCounter | Meter,
    overhead: int = 0,
) -> tuple[list[Message], list[Message], list[Message]]:
    """``_split_context_for_compression``: (messages to compress, messages to keep, what each
    kept message stands for: itself, or the boundary message a kept part was cut from).

    ``head`` is the system prompt and the current summary, counted with every candidate suffix;
    ``overhead`` is the tools' tokens (with a plain counter). The sources let a kept part (a
    turn's tool calls without its text) keep the boundary's trace index, as the release's kept
    blocks stay in the boundary ``Msg``."""
    meter = counter if isinstance(counter, Meter) else PerMessage(counter, overhead)

    def tokens(messages: Sequence[Message]) -> int:
        return meter.tokens([*head, *messages])

    index = len(context) - 1
    while index >= 0:
        if tokens(context[index:]) >= to_reserve:
            break
        index -= 1
    if index < 0:
        return [], list(context), list(context)
    before, boundary, after = list(context[:index]), context[index], list(context[index + 1 :])
    splits = _splits(boundary)
    parts: tuple[Message | None, Message | None]
    if splits is None:
        overshoots = tokens([boundary, *after]) > to_reserve
        parts = (boundary, None) if overshoots else (None, boundary)
    else:
        block_index = len(splits) - 2  # the last block alone
        while block_index >= 0:
            attempt = splits[block_index][1]
            if tokens([*([attempt] if attempt else []), *after]) > to_reserve:
                break
            block_index -= 1
        parts = splits[block_index + 1]
    pieces = [p for p in parts if p is not None]
    joined = [*before, *pieces, *after]
    sources = [*before, *[boundary] * len(pieces), *after]
    cut = results_after_calls(joined, len(before) + (parts[0] is not None))
    return joined[:cut], joined[cut:], sources[cut:]


def _output_tokens(message: Message, blocks: Sequence[Part], counter: TokenCounter) -> int:
    """Tokens of a tool output, counted as AgentScope does: an assistant message of the blocks."""
    text = "\n".join(p.text for p in blocks if p.is_text)
    return counter.count_message(
        Message("assistant", text, parts=tuple(blocks) if message.parts is not None else None)
    )


def split_tool_result(
    message: Message, limit: int, counter: TokenCounter
) -> tuple[Message, list[Part]]:
    """``_split_tool_result_for_compression``: (the kept result, the offloaded blocks).

    No offloaded blocks means the result is within ``limit`` and unchanged."""
    blocks = list(message.parts) if message.parts is not None else [Part("text", message.content)]
    if _output_tokens(message, blocks, counter) <= limit:
        return message, []
    boundary_index = 0
    for i in range(len(blocks) - 1, 0, -1):
        if _output_tokens(message, blocks[:i], counter) < limit:
            boundary_index = i
            break
    reserved = blocks[:boundary_index]
    offloaded = blocks[boundary_index + 1 :]
    boundary = blocks[boundary_index]
    if boundary.is_text:
        text = boundary.text
        current = _output_tokens(message, reserved, counter)
        delta = _output_tokens(message, [*reserved, boundary], counter) - current
        remaining = limit - current
        if delta <= 0:
            keep = len(text) if remaining > 0 else 0
        else:
            keep = int(remaining / delta * len(text))
        keep = max(0, min(len(text), keep))
        if text[:keep]:
            if reserved and reserved[-1].is_text:
                reserved[-1] = replace(reserved[-1], text=reserved[-1].text + text[:keep])
            else:
                reserved.append(replace(boundary, text=text[:keep]))
        if text[keep:]:
            if offloaded and offloaded[0].is_text:
                offloaded[0] = replace(offloaded[0], text=text[keep:] + offloaded[0].text)
            else:
                offloaded.insert(0, replace(boundary, text=text[keep:]))
    else:
        offloaded.insert(0, boundary)
    if not offloaded:
        return message, []
    if message.parts is None:
        return replace(message, content="".join(p.text for p in reserved)), offloaded
    return _with_parts(message, reserved), offloaded


def append_reminder(message: Message, reminder: str) -> Message:
    """Add ``reminder`` to the last text block, or as a new text block."""
    if message.parts is None:
        return replace(message, content=message.content + reminder)
    parts = list(message.parts)
    if parts and parts[-1].is_text:
        parts[-1] = replace(parts[-1], text=parts[-1].text + reminder)
    else:
        parts.append(Part("text", reminder))
    return _with_parts(message, parts)


def _is_image(part: Part) -> bool:
    return part.type in IMAGE_PART_TYPES
