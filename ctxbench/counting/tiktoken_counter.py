"""OpenAI counters: tiktoken encodings built from the vendored files, with OpenAI's chat framing.

The encodings are ``tiktoken.Encoding`` objects built from ``tokenizers/openai/*.tiktoken.xz``
with the parameters of tiktoken's own ``tiktoken_ext/openai_public.py`` (tiktoken 0.14.0), so
token ids equal ``tiktoken.get_encoding(name)``; nothing is downloaded and tiktoken's file cache
(``TIKTOKEN_CACHE_DIR``) is never touched.

Chat framing follows OpenAI's published rule (the cookbook's ``num_tokens_from_messages``):
3 tokens per message plus the tokens of the role, 1 more for a ``name`` (plus its tokens), and 3
to prime the reply. OpenAI does not publish how tool calls and tool schemas are rendered, so
they are approximated, and ``ctxbench calibrate`` measures the gap on recorded usage:

- each tool call: 3 tokens plus the tokens of its name and of its JSON arguments (ids are not
  counted: they are not shown to the model);
- a tool result: like any message (its ``tool_call_id`` is not counted);
- tool schemas: the tokens of the compact JSON of the OpenAI ``tools`` field;
- replay fields (``reasoning_content``...): their text; images: 765 each (a 1024x1024 image
  at high detail).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import tiktoken

from ctxbench.counting.base import Framing, TokenCounter, replay_text, tool_schemas_json
from ctxbench.counting.chunking import CHUNK_CHARS, LINES_FROM, chunks, count_in_segments
from ctxbench.counting.vendored import read_vendored
from ctxbench.trace import Message, ToolSpec

_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""


#: OpenAI's published numbers (the Framing defaults).
OPENAI_FRAMING = Framing()


@dataclass(frozen=True)
class EncodingSpec:
    """What tiktoken needs besides the ranks file (copied from ``tiktoken_ext.openai_public``)."""

    name: str
    file: str
    pattern: str
    special_tokens: Mapping[str, int] = field(default_factory=dict)


ENCODINGS: dict[str, EncodingSpec] = {
    "cl100k_base": EncodingSpec(
        "cl100k_base",
        "openai/cl100k_base.tiktoken.xz",
        _CL100K_PATTERN,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": EncodingSpec(
        "o200k_base",
        "openai/o200k_base.tiktoken.xz",
        _O200K_PATTERN,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
}


def parse_tiktoken_ranks(data: bytes) -> dict[bytes, int]:
    """A ``.tiktoken`` file (``base64-token rank`` per line) as mergeable ranks, as tiktoken reads it."""
    return {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }


class _Encoding(tiktoken.Encoding):
    """A vendored encoding that does not keep its ranks in Python: tiktoken's ``Encoding``
    holds the rank dict after building its Rust BPE from it, only to pickle it (o200k and
    cl100k: 36 MB); one of these pickles as its name and is loaded again."""

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return load_encoding, (self.name,)


def load_encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken encoding ``name`` built from its vendored, verified file."""
    spec = ENCODINGS[name]
    ranks = parse_tiktoken_ranks(read_vendored(spec.file))
    encoding = _Encoding(
        name=spec.name,
        pat_str=spec.pattern,
        mergeable_ranks=ranks,
        special_tokens=dict(spec.special_tokens),
    )
    encoding._mergeable_ranks = {}  # the Rust BPE has them
    return encoding


class TiktokenCounter(TokenCounter):
    """An OpenAI encoding with OpenAI's chat framing (see the module docstring)."""

    kind = "exact"

    def __init__(
        self, name: str, encoding: tiktoken.Encoding, source: str, framing: Framing = OPENAI_FRAMING
    ) -> None:
        super().__init__(name, source)
        self.encoding = encoding
        self.framing = framing

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` as plain text (special-token strings are not special)."""
        return [t for piece in chunks(text) for t in self.encoding.encode_ordinary(piece)]

    def count(self, text: str) -> int:
        if not text:
            return 0
        return count_in_segments(text, self._count_each, self._segments, LINES_FROM)

    def _count_each(self, texts: list[str]) -> list[int]:
        """Each text's count, whole."""
        encode = self.encoding.encode_ordinary
        return [
            len(encode(text))
            if len(text) <= CHUNK_CHARS
            else sum(len(encode(piece)) for piece in chunks(text))
            for text in texts
        ]

    def message_tokens(self, message: Message) -> int:
        f = self.framing
        tokens = f.per_message + self.count(message.content) + self.count(replay_text(message))
        if f.role_tokens:
            tokens += self.count(message.role)
        if message.name:
            tokens += f.per_name + self.count(message.name)
        for call in message.tool_calls:
            tokens += f.per_tool_call + self.count(call.name) + self.count(call.arguments)
        if message.role == "tool":
            tokens += f.per_tool_result
        return tokens + f.per_image * len(message.media_parts)

    def prompt_overhead(self, tools: Sequence[ToolSpec] = ()) -> int:
        f = self.framing
        tokens = f.per_prompt
        if tools:
            tokens += self.count(tool_schemas_json(tools)) + f.per_tool_schema * len(tools)
        return tokens


def _counter(name: str) -> TiktokenCounter:
    spec = ENCODINGS[name]
    source = f"tiktoken {name} from tokenizers/{spec.file} (litellm==1.110.2), OpenAI chat framing"
    return TiktokenCounter(f"tiktoken:{name}", load_encoding(name), source)


def cl100k_base() -> TiktokenCounter:
    """``tiktoken:cl100k_base`` (GPT-4, GPT-3.5-turbo, text-embedding-3)."""
    return _counter("cl100k_base")


def o200k_base() -> TiktokenCounter:
    """``tiktoken:o200k_base`` (GPT-4o, GPT-4.1, o-series)."""
    return _counter("o200k_base")
