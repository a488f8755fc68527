"""Windows by model name: ``--window claude-sonnet-4-5``, ``gpt-4o``, ``deepseek-chat``.

A table of documented context windows and output limits, each with its source and the date it
was read, usable wherever a window is (``run``, ``recorded``, ``report``, sweep files). A
window may also be written as a size (``32768``, ``32k``: :mod:`ctxbench.sizes`, where
``k`` = 1,024); a ``k`` size within 3% of a known model's decimal window gets a warning
(``200k`` is 204,800, 2.4% more than Claude's 200,000): :func:`window_warning`.

Model names match without provider prefixes and date suffixes
(``litellm_proxy/anthropic/claude-haiku-4-5-20251001`` -> ``claude-haiku-4-5``), longest
name first.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from ctxbench.errors import ConfigError

#: The date the sources below were read.
READ = "2026-12-05"

_ANTHROPIC = (
    "https://docs.anthropic.com/en/docs/build-with-claude/context-windows (200k for every model "
    "without the 1M-context option) and .../about-claude/models/overview (max output)"
)
_OPENAI = "https://platform.openai.com/docs/models/{}"
_DEEPSEEK = (
    "https://api-docs.deepseek.com/quick_start/pricing (128K, max output); the API's own limit "
    "is 131,072 (its error 'maximum context length is 131072 tokens', quoted in "
    "github.com/evalstate/fast-agent/issues/621, 2026-01-19)"
)
_QWEN = (
    "https://huggingface.co/Qwen/Qwen2.5-32B-Instruct (config.json max_position_embeddings "
    "32,768; 131,072 only with YaRN; generates up to 8,192)"
)
_LLAMA = "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct (128K = 131,072 positions)"


@dataclass(frozen=True)
class ModelWindow:
    """A model's documented context window and output limit (None: not documented here)."""

    model: str
    window: int
    max_output: int | None
    source: str
    read: str = READ


def _claude(model: str, out: int | None) -> ModelWindow:
    return ModelWindow(model, 200_000, out, _ANTHROPIC)


MODEL_WINDOWS: tuple[ModelWindow, ...] = (
    # Claude Code 2.1.39 sessions of Opus 4.6 compact at 200,000 - 33,000 (marot/spotter records)
    _claude("claude-opus-4-6", None),
    _claude("claude-opus-4-5", 64_000),
    _claude("claude-opus-4-1", 32_000),
    _claude("claude-opus-4", 32_000),
    _claude("claude-sonnet-4-5", 64_000),
    _claude("claude-sonnet-4", 64_000),
    _claude("claude-haiku-4-5", 64_000),
    _claude("claude-3-7-sonnet", 64_000),
    _claude("claude-3-5-sonnet", 8_192),
    _claude("claude-3-5-haiku", 8_192),
    ModelWindow("gpt-4o", 128_000, 16_384, _OPENAI.format("gpt-4o")),
    ModelWindow("gpt-4o-mini", 128_000, 16_384, _OPENAI.format("gpt-4o-mini")),
    ModelWindow("gpt-4.1", 1_047_576, 32_768, _OPENAI.format("gpt-4.1")),
    ModelWindow("gpt-4.1-mini", 1_047_576, 32_768, _OPENAI.format("gpt-4.1-mini")),
    ModelWindow("gpt-5", 400_000, 128_000, _OPENAI.format("gpt-5")),
    ModelWindow("o3", 200_000, 100_000, _OPENAI.format("o3")),
    ModelWindow("o4-mini", 200_000, 100_000, _OPENAI.format("o4-mini")),
    ModelWindow("deepseek-chat", 131_072, 8_192, _DEEPSEEK),
    ModelWindow("deepseek-reasoner", 131_072, 65_536, _DEEPSEEK),
    ModelWindow("qwen2.5-32b", 32_768, 8_192, _QWEN),
    ModelWindow("qwen2.5-72b", 32_768, 8_192, _QWEN.replace("32B", "72B")),
    ModelWindow("qwen2.5-coder-32b", 32_768, 8_192, _QWEN.replace("2.5-32B", "2.5-Coder-32B")),
    ModelWindow("llama-3.1-8b", 131_072, None, _LLAMA),
    ModelWindow("llama-3.1-70b", 131_072, None, _LLAMA.replace("8B", "70B")),
    ModelWindow("llama-3.3-70b", 131_072, None, _LLAMA.replace("3.1-8B", "3.3-70B")),
)
_BY_NAME = {w.model: w for w in MODEL_WINDOWS}
#: A ``k`` size this close to a decimal window (relative) is probably that window.
NEAR = 0.03
_DATE = re.compile(r"[-@](\d{8}|\d{4}-\d{2}-\d{2})$")
_SUFFIX = re.compile(r"-(instruct|latest|chat-hf|hf)$")


def bare_name(model: str) -> str:
    """``model`` without provider prefixes, date or ``-instruct`` suffixes, in lower case."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    name = _DATE.sub("", name)
    return _SUFFIX.sub("", name)


def model_window(model: str | None) -> ModelWindow | None:
    """The documented window of ``model`` (None when the table has no such model)."""
    if not model:
        return None
    name = bare_name(model)
    if name in _BY_NAME:
        return _BY_NAME[name]
    # a dated or point release of a listed model: claude-sonnet-4-5-thinking, gpt-4o-2024-08-06
    prefixes = sorted((n for n in _BY_NAME if name.startswith(n + "-")), key=len, reverse=True)
    return _BY_NAME[prefixes[0]] if prefixes else None


def parse_window(value: int | str, *, key: str | None = "window") -> int:
    """A window from an int, a size (``32k``) or a model name from :data:`MODEL_WINDOWS`."""
    from ctxbench.sizes import HELP, is_size, parse_tokens

    if isinstance(value, int) or is_size(str(value)):
        return parse_tokens(value, key=key)
    found = model_window(str(value))
    if found is not None:
        return found.window
    close = difflib.get_close_matches(bare_name(str(value)), list(_BY_NAME), n=1)
    raise ConfigError(
        f"not a token count nor a model whose window ctxbench knows: {value!r}",
        key=key,
        hint=(f"did you mean {close[0]!r}? " if close else "")
        + f"give {HELP}, or a model name (`ctxbench windows` lists them)",
    )


def window_warning(value: int | str) -> str | None:
    """A warning when a ``k`` size is within 3% of (and not equal to) a model's decimal
    window: ``200k`` is 204,800 tokens, Claude's window is 200,000."""
    from ctxbench.sizes import is_size, parse_tokens

    text = str(value).strip().lower()
    if isinstance(value, int) or not is_size(text) or not text.endswith(("k", "m")):
        return None
    tokens = parse_tokens(text)
    near = sorted(
        {
            w.window: w
            for w in MODEL_WINDOWS
            if w.window % 1000 == 0
            and w.window != tokens
            and abs(tokens - w.window) <= NEAR * w.window
        }.values(),
        key=lambda w: abs(tokens - w.window),
    )
    if not near:
        return None
    window = near[0].window
    models = ", ".join(w.model for w in MODEL_WINDOWS if w.window == window)
    return (
        f"{value} is {tokens:,} tokens (k = 1,024), {(tokens - window) / window:+.1%} from the "
        f"{window:,}-token window of {models}: write {window} or the model name if you meant it"
    )
