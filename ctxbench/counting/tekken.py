"""``mistral:tekken``: Mistral's tekken tokenizer (Mistral NeMo, ``tekken_240718.json``).

The tokenizer is rebuilt the way ``mistral-common`` 1.13.1 builds it (``Tekkenizer``): a
``tiktoken.Encoding`` over the first ``default_vocab_size - default_num_special_tokens`` vocab
entries (base64 token bytes, ranked in file order), with the file's own regex pattern and no
special tokens; the control tokens take ids ``0 .. default_num_special_tokens - 1``, so a text
token's id is its rank plus that offset. Counts equal ``mistral-common``'s
``tokenizer.encode(text, bos=False, eos=False)``.

Mistral ships no Jinja template; its chat encoding is code (``InstructTokenizerV3``), which
this counter follows, one control token each for ``<s>``, ``[INST]`` ... ``[/INST]``,
``[TOOL_CALLS]``, ``[TOOL_RESULTS]`` ... ``[/TOOL_RESULTS]``, ``[AVAILABLE_TOOLS]`` ...
``[/AVAILABLE_TOOLS]`` and ``</s>``:

- the request: ``<s>``, and ``[AVAILABLE_TOOLS]{tools JSON}[/AVAILABLE_TOOLS]`` when tools are
  given (mistral-common writes them before the last user message);
- user: ``[INST]{content}[/INST]``; system: its text plus ``"\\n\\n"`` (mistral-common prepends
  the system prompt to the last user message);
- assistant: ``{content}</s>``, or ``[TOOL_CALLS]{JSON list of name, arguments, id}</s>``
  (mistral-common refuses text and calls in one message; ctxbench counts both);
- tool: ``[TOOL_RESULTS]{"content": ..., "call_id": ...}[/TOOL_RESULTS]``, the content parsed as
  JSON when it is JSON, as mistral-common does;
- replay fields are counted as text; images cost the default framing's 765 tokens.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

import tiktoken

from ctxbench.counting.base import Framing, TokenCounter, replay_text, tool_schemas
from ctxbench.counting.chunking import chunks, count_in_segments
from ctxbench.counting.hf_counter import json_value
from ctxbench.counting.vendored import read_vendored
from ctxbench.trace import Message, ToolSpec

TEKKEN_FILE = "mistral/tekken_240718.json.xz"


def load_tekken(relpath: str = TEKKEN_FILE) -> tuple[tiktoken.Encoding, int]:
    """The tekken encoding and its number of special tokens (the id offset of text tokens)."""
    data = json.loads(read_vendored(relpath))
    config = data["config"]
    num_special = int(config["default_num_special_tokens"])
    inner_vocab = int(config["default_vocab_size"]) - num_special
    ranks = {
        base64.b64decode(entry["token_bytes"]): int(entry["rank"])
        for entry in data["vocab"][:inner_vocab]
    }
    encoding = tiktoken.Encoding(
        name=relpath.rsplit("/", 1)[-1].removesuffix(".json.xz"),
        pat_str=config["pattern"],
        mergeable_ranks=ranks,
        special_tokens={},
    )
    return encoding, num_special


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class TekkenCounter(TokenCounter):
    """Mistral tekken with mistral-common's v3 chat encoding (see the module docstring)."""

    kind = "exact"

    def __init__(self, encoding: tiktoken.Encoding, num_special: int, source: str) -> None:
        super().__init__("mistral:tekken", source)
        self.encoding = encoding
        self.num_special = num_special
        self.framing = Framing()

    def encode(self, text: str) -> list[int]:
        """Token ids as mistral-common numbers them (ranks offset by the special tokens)."""
        return [
            t + self.num_special
            for piece in chunks(text)
            for t in self.encoding.encode_ordinary(piece)
        ]

    def count(self, text: str) -> int:
        if not text:
            return 0
        return count_in_segments(text, self._count_each, self._segments)

    def _count_each(self, texts: list[str]) -> list[int]:
        """Each text's count, whole."""
        encode = self.encoding.encode_ordinary
        return [sum(len(encode(piece)) for piece in chunks(text)) for text in texts]

    def message_tokens(self, message: Message) -> int:
        text = message.content + replay_text(message)
        images = self.framing.per_image * len(message.media_parts)
        if message.role == "system":
            return self.count(text + "\n\n") + images
        if message.role == "assistant":
            tokens = 1 + self.count(text.rstrip(" "))  # </s>
            if message.tool_calls:
                calls = [
                    {
                        "name": call.name,
                        "arguments": json_value(call.arguments),
                        "id": call.id,
                    }
                    for call in message.tool_calls
                ]
                tokens += 1 + self.count(_dumps(calls))  # [TOOL_CALLS]
            return tokens + images
        if message.role == "tool":
            result = {"content": json_value(text), "call_id": message.tool_call_id}
            return 2 + self.count(_dumps(result)) + images
        return 2 + self.count(text) + images  # [INST] ... [/INST]

    def prompt_overhead(self, tools: Sequence[ToolSpec] = ()) -> int:
        if not tools:
            return 1  # <s>
        return 3 + self.count(_dumps(tool_schemas(tools)))


def tekken() -> TekkenCounter:
    """``mistral:tekken``: Mistral NeMo's tekken tokenizer (Apache-2.0)."""
    encoding, num_special = load_tekken()
    source = "Mistral tekken_240718.json from tokenizers/mistral (mistral-common==1.13.1), mistral-common v3 chat encoding"
    return TekkenCounter(encoding, num_special, source)
