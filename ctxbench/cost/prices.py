"""Provider price tables for the cache-aware cost model: USD per million tokens, with the page
each price was read from and the date it was read.

A table prices one provider's model: fresh (uncached) input, cache reads, cache writes (the
5-minute and 1-hour writes where the provider charges for them), and output. The built-in
tables below are what the providers' pages said when read; a TOML file overrides or adds
tables (``--prices FILE``)::

    [anthropic]                 # a provider name of ctxbench.cost.cache.PROVIDERS
    model = "claude-sonnet-4-5"
    input_per_mtok = 3.0
    cache_read_per_mtok = 0.30
    cache_write_per_mtok = 3.75      # 5-minute write (1.25x input)
    cache_write_1h_per_mtok = 6.0    # 1-hour write (2x input)
    output_per_mtok = 15.0
    source = "https://docs.anthropic.com/en/docs/about-claude/pricing"
    read_on = "2026-12-05"

Keys left out keep the built-in value of that provider.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxbench import config as configuration
from ctxbench.errors import ConfigError


@dataclass(frozen=True)
class ModelPrices:
    """One provider model's prices, USD per million tokens, and where they come from."""

    model: str
    input_per_mtok: float
    cache_read_per_mtok: float
    output_per_mtok: float
    #: a cache write (Anthropic's 5-minute write); providers that do not bill writes: the input price
    cache_write_per_mtok: float | None = None
    #: Anthropic's 1-hour write (2x input); None: as the 5-minute write
    cache_write_1h_per_mtok: float | None = None
    source: str = ""
    read_on: str = ""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float | int) and not isinstance(value, bool) and value < 0:
                raise ValueError(f"{f.name} must be >= 0, not {value}")

    def write_price(self, one_hour: bool) -> float:
        """USD per million tokens written to the cache (5-minute or 1-hour)."""
        five = self.cache_write_per_mtok if self.cache_write_per_mtok is not None else None
        if one_hour and self.cache_write_1h_per_mtok is not None:
            return self.cache_write_1h_per_mtok
        return five if five is not None else self.input_per_mtok

    def describe(self) -> str:
        """``model, read DATE from URL`` for tables and the report."""
        return f"{self.model} (prices read {self.read_on or '?'} from {self.source or '?'})"


#: The built-in tables, read 2026-12-05 from the stored copies of the providers' pages named in
#: ``source`` (verify before budgeting: providers change prices).
BUILTIN: dict[str, ModelPrices] = {
    # Claude Sonnet 4 / 4.5 row: $3 base input, $3.75 5m writes, $6 1h writes, $0.30 hits, $15 out.
    "anthropic": ModelPrices(
        model="claude-sonnet-4",
        input_per_mtok=3.0,
        cache_read_per_mtok=0.30,
        cache_write_per_mtok=3.75,
        cache_write_1h_per_mtok=6.0,
        output_per_mtok=15.0,
        source="https://docs.anthropic.com/en/docs/about-claude/pricing",
        read_on="2026-12-05",
    ),
    # Opus 4.5/4.6 base $5 in / $25 out; writes and hits by the page's multipliers
    # (5m write 1.25x, 1h write 2x, hit 0.1x of base input).
    "anthropic-opus": ModelPrices(
        model="claude-opus-4-6",
        input_per_mtok=5.0,
        cache_read_per_mtok=0.50,
        cache_write_per_mtok=6.25,
        cache_write_1h_per_mtok=10.0,
        output_per_mtok=25.0,
        source="https://docs.anthropic.com/en/docs/about-claude/pricing",
        read_on="2026-12-05",
    ),
    # gpt-4o: $2.50 input, $1.25 cached input, $10 output (o200k_base is its tokenizer).
    "openai": ModelPrices(
        model="gpt-4o",
        input_per_mtok=2.50,
        cache_read_per_mtok=1.25,
        output_per_mtok=10.0,
        source="https://developers.openai.com/api/docs/pricing",
        read_on="2026-12-05",
    ),
    # gpt-5: $1.25 input, $0.125 cached input, $10 output.
    "openai-gpt5": ModelPrices(
        model="gpt-5",
        input_per_mtok=1.25,
        cache_read_per_mtok=0.125,
        output_per_mtok=10.0,
        source="https://developers.openai.com/api/docs/pricing",
        read_on="2026-12-05",
    ),
    # deepseek-v4-flash: $0.0028 cache hit (1/10 of launch price from 2026-04-26), $0.14 miss, $0.28 out.
    "deepseek": ModelPrices(
        model="deepseek-v4-flash",
        input_per_mtok=0.14,
        cache_read_per_mtok=0.0028,
        output_per_mtok=0.28,
        source="https://api-docs.deepseek.com/quick_start/pricing",
        read_on="2026-12-05",
    ),
    # Gemini 2.5 Flash: $0.30 input (text), $0.03 cached (implicit hits at the caching price), $2.50 out.
    "gemini": ModelPrices(
        model="gemini-2.5-flash",
        input_per_mtok=0.30,
        cache_read_per_mtok=0.03,
        output_per_mtok=2.50,
        source="https://ai.google.dev/gemini-api/docs/pricing",
        read_on="2026-12-05",
    ),
}


def builtin(name: str) -> ModelPrices:
    try:
        return BUILTIN[name]
    except KeyError:
        raise ConfigError(
            f"no built-in price table {name!r}",
            key="prices",
            hint=f"use one of {', '.join(sorted(BUILTIN))}, or give --prices FILE",
        ) from None


def price_tables(data: Mapping[str, Any], *, source: str) -> dict[str, ModelPrices]:
    """The built-in tables with ``data``'s tables (parsed TOML) laid over them."""
    out = dict(BUILTIN)
    for name, table in data.items():
        if not isinstance(table, Mapping):
            raise ConfigError(
                "expected a table of prices",
                path=source,
                key=str(name),
                hint="input_per_mtok, cache_read_per_mtok, cache_write_per_mtok, output_per_mtok",
            )
        base = configuration.to_params(out[name]) if name in out else {}
        try:
            out[str(name)] = configuration.build(ModelPrices, {**base, **table}, source=source)
        except ConfigError as exc:
            raise ConfigError(
                exc.message,
                path=source,
                key=f"{name}.{exc.key or ''}".rstrip("."),
                hint=exc.hint,
            ) from None
    return out


def load_price_tables(path: str | Path | None) -> dict[str, ModelPrices]:
    """The built-in tables, overridden by the TOML file at ``path`` when given."""
    if path is None:
        return dict(BUILTIN)
    return price_tables(configuration.load_toml(path), source=str(path))
