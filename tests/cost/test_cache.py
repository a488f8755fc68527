"""Each provider's prompt cache: what one call reads, writes and pays fresh."""

from __future__ import annotations

import pytest

from ctxbench.cost.cache import (
    ANTHROPIC,
    ANTHROPIC_1H,
    ANTHROPIC_OFF,
    DEEPSEEK,
    GEMINI,
    OPENAI,
    cache_rules,
    provider_for,
)
from ctxbench.errors import ConfigError


def test_anthropic_reads_the_shared_prefix_and_writes_the_rest() -> None:
    split = ANTHROPIC.split(prompt=5_000, shared=3_000)
    assert (split.read, split.write, split.fresh) == (3_000, 2_000, 0)


def test_anthropic_caches_nothing_under_its_minimum_prefix() -> None:
    assert ANTHROPIC.split(prompt=900, shared=800).total == 900
    assert (ANTHROPIC.split(900, 800).read, ANTHROPIC.split(900, 800).write) == (0, 0)


def test_anthropic_cache_expires_after_its_ttl_unless_it_is_the_one_hour_cache() -> None:
    assert ANTHROPIC.split(5_000, 3_000, gap_seconds=301).read == 0
    assert ANTHROPIC.split(5_000, 3_000, gap_seconds=300).read == 3_000
    assert ANTHROPIC_1H.split(5_000, 3_000, gap_seconds=1_800).read == 3_000
    assert ANTHROPIC_1H.one_hour and not ANTHROPIC.one_hour


def test_anthropic_without_caching_bills_everything_fresh() -> None:
    split = ANTHROPIC_OFF.split(5_000, 3_000)
    assert (split.read, split.write, split.fresh) == (0, 0, 5_000)


def test_openai_hits_from_1024_tokens_in_128_token_increments() -> None:
    assert OPENAI.split(5_000, 1_023).read == 0
    assert OPENAI.split(5_000, 1_024).read == 1_024
    assert OPENAI.split(5_000, 1_151).read == 1_024
    assert OPENAI.split(5_000, 1_152).read == 1_152
    split = OPENAI.split(5_000, 4_000)
    assert (split.read, split.write, split.fresh) == (3_968, 0, 1_032)


def test_deepseek_hits_are_whole_64_token_units_and_never_expire() -> None:
    assert DEEPSEEK.split(1_000, 63).read == 0
    assert DEEPSEEK.split(1_000, 700, gap_seconds=86_400).read == 640


def test_gemini_implicit_caching_starts_at_2048_tokens() -> None:
    assert GEMINI.split(9_000, 2_047).read == 0
    assert GEMINI.split(9_000, 4_000).read == 4_000


def test_a_shared_prefix_never_exceeds_the_prompt() -> None:
    assert ANTHROPIC.split(2_000, 5_000).read == 2_000


def test_providers_are_named_by_counter_or_model_and_ttl_is_a_knob() -> None:
    assert provider_for("hf:deepseek-v3.1") == "deepseek"
    assert provider_for("profile:x.json", "claude-opus-4-6") == "anthropic"
    assert provider_for("tiktoken:o200k_base") == "openai"
    assert cache_rules("openai", ttl_seconds=60).ttl_seconds == 60
    with pytest.raises(ConfigError, match="unknown provider"):
        cache_rules("mistral")
