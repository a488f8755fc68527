"""Which part of each prompt a provider serves from its prompt cache, writes to it, or bills fresh.

A replay knows, for every accepted call, the prompt's true tokens and the prefix it shares with
the previous accepted prompt (``provider.call``'s ``cached_tokens``). A :class:`CacheRules`
turns that pair, and the time since the previous call, into a :class:`Split` of cache reads,
cache writes and fresh tokens, by the provider's documented rules:

- ``anthropic``: explicit caching with a breakpoint at the end of each prompt (as Claude Code
  and most agents set it). The shared prefix is read (0.1x input), the rest of the prompt is
  written (1.25x for the 5-minute TTL, 2x for the 1-hour TTL); a prefix under the model's
  minimum cacheable length (1,024 tokens for Sonnet/Opus 4) is neither read nor written; a read
  refreshes the TTL, so the cache expires only when the gap between calls exceeds it.
  https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching (read 2026-12-05).
- ``anthropic-off``: the same model with caching not enabled (every token fresh), as in the
  tau2 Claude run, whose recorded cache reads and writes are all 0.
- ``openai``: automatic caching of prompts of 1,024 tokens or more, hits in increments of 128
  tokens; no write charge; cached prefixes are kept for 5-10 minutes of inactivity (600 s
  here). https://developers.openai.com/api/docs/guides/prompt-caching and the Prompt Caching
  201 cookbook ("1024 tokens or more, with cache hits occurring in increments of 128 tokens").
- ``deepseek``: context caching on disk in 64-token units, with the reply of the previous call
  part of the cached prefix (the replay's DeepSeek counters already count it); hits and misses
  billed apart; no write charge; kept "hours to days" (no expiry here).
  https://api-docs.deepseek.com/guides/kv_cache.
- ``gemini``: implicit caching for Gemini 2.5 and newer, from 2,048 tokens (2.5 Flash/Pro);
  no write charge; no documented TTL (3,600 s here, the explicit caches' default).
  https://ai.google.dev/gemini-api/docs/caching (read 2026-12-05).

Where a trace records timestamps (Claude Code sessions: ``meta.timestamp`` of each assistant
message), the gap between calls comes from them; otherwise from the ``gap_seconds`` knob.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ctxbench.errors import ConfigError


@dataclass(frozen=True)
class Split:
    """Tokens of one call's prompt: read from the cache, written to it, billed fresh."""

    read: int
    write: int
    fresh: int

    @property
    def total(self) -> int:
        return self.read + self.write + self.fresh


@dataclass(frozen=True)
class CacheRules:
    """A provider's prompt cache: what it reads, writes and bills fresh for one call."""

    provider: str
    #: the shortest prefix the provider caches (tokens)
    minimum: int = 0
    #: hits are whole multiples of this (after ``minimum`` for OpenAI: 1024 + 128k)
    block: int = 1
    #: whether the provider bills the uncached rest of a prompt as a cache write
    writes: bool = False
    #: the write is a 1-hour write (Anthropic ``ttl: "1h"``, 2x input) rather than a 5-minute one
    one_hour: bool = False
    #: seconds a cached prefix lives without being read; None: never expires
    ttl_seconds: float | None = None
    #: whether caching is on at all
    enabled: bool = True

    def split(self, prompt: int, shared: int, gap_seconds: float | None = None) -> Split:
        """The split of a ``prompt``-token call whose first ``shared`` tokens were the previous
        prompt's, ``gap_seconds`` after the previous call (None: unknown, the cache is warm)."""
        prompt = max(prompt, 0)
        shared = min(max(shared, 0), prompt)
        expired = (
            gap_seconds is not None
            and self.ttl_seconds is not None
            and gap_seconds > self.ttl_seconds
        )
        if not self.enabled:
            return Split(0, 0, prompt)
        read = 0 if expired else self.hit(shared)
        write = prompt - read if self.writes and prompt >= max(self.minimum, 1) else 0
        return Split(read, write, prompt - read - write)

    def hit(self, shared: int) -> int:
        """The cache-hit tokens of a shared prefix of ``shared`` tokens."""
        if shared < max(self.minimum, 1):
            return 0
        return shared // self.block * self.block


ANTHROPIC = CacheRules("anthropic", minimum=1024, writes=True, ttl_seconds=300.0)
ANTHROPIC_1H = replace(ANTHROPIC, provider="anthropic-1h", one_hour=True, ttl_seconds=3600.0)
ANTHROPIC_OFF = replace(ANTHROPIC, provider="anthropic-off", enabled=False)
OPENAI = CacheRules("openai", minimum=1024, block=128, ttl_seconds=600.0)
DEEPSEEK = CacheRules("deepseek", minimum=64, block=64)
GEMINI = CacheRules("gemini", minimum=2048, ttl_seconds=3600.0)

#: provider name -> its cache rules
PROVIDERS: dict[str, CacheRules] = {
    r.provider: r for r in (ANTHROPIC, ANTHROPIC_1H, ANTHROPIC_OFF, OPENAI, DEEPSEEK, GEMINI)
}

#: provider -> the built-in price table it is priced with by default (ctxbench.cost.prices)
DEFAULT_PRICES: dict[str, str] = {
    "anthropic": "anthropic",
    "anthropic-1h": "anthropic",
    "anthropic-off": "anthropic",
    "openai": "openai",
    "deepseek": "deepseek",
    "gemini": "gemini",
}


def cache_rules(provider: str, *, ttl_seconds: float | None = None) -> CacheRules:
    """The rules of ``provider`` (a name of :data:`PROVIDERS`), with its TTL overridden."""
    try:
        rules = PROVIDERS[provider]
    except KeyError:
        raise ConfigError(
            f"unknown provider {provider!r}",
            key="--provider",
            hint=f"use one of {', '.join(PROVIDERS)}",
        ) from None
    return rules if ttl_seconds is None else replace(rules, ttl_seconds=ttl_seconds)


def provider_for(counter: str, model: str = "") -> str:
    """The provider a run's true counter (or the trace's model) stands for; ``openai`` when
    neither names one (the report says what each row was priced as)."""
    text = f"{counter} {model}".lower()
    if "deepseek" in text:
        return "deepseek"
    if "claude" in text or "anthropic" in text:
        return "anthropic"
    if "gemini" in text or "gemma" in text:
        return "gemini"
    return "openai"
