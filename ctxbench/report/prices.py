"""Price tables for the report's cost column: USD per million tokens, by true counter.

The file is the ``[prices]`` part of a sweep file, or the same tables at top level::

    [prices."tiktoken:o200k_base"]      # the model family the simulated provider stands for
    input_per_mtok = 2.50
    cached_input_per_mtok = 1.25
    output_per_mtok = 10.0

    [prices.default]                    # any other counter (optional)
    input_per_mtok = 1.0

Summary calls are priced as calls: their prompt as input, their text as output.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxbench import config as configuration
from ctxbench.engine.result import Prices
from ctxbench.errors import ConfigError

DEFAULT = "default"


@dataclass(frozen=True)
class PriceTable:
    """Prices by true counter spec, with an optional ``default``."""

    by_counter: Mapping[str, Prices]

    def for_counter(self, counter: str) -> Prices | None:
        return self.by_counter.get(counter) or self.by_counter.get(DEFAULT)

    def cost(
        self, counter: str, input_tokens: int, cached_tokens: int, summary_in: int, summary_out: int
    ) -> float | None:
        """USD of one run, or None when the table has no price for its counter."""
        prices = self.for_counter(counter)
        if prices is None:
            return None
        return prices.cost(input_tokens, cached_tokens, summary_in, summary_out)


def price_table(data: Mapping[str, Any], *, source: str) -> PriceTable:
    """Build from parsed TOML (``[prices.X]`` tables, or ``[X]`` tables at top level)."""
    tables = data.get("prices", data)
    if not isinstance(tables, Mapping) or not tables:
        raise ConfigError(
            "no price tables",
            path=source,
            hint='write [prices."tiktoken:o200k_base"] with input_per_mtok = ...',
        )
    out = {}
    for counter, table in tables.items():
        if not isinstance(table, Mapping):
            raise ConfigError(
                "expected a table of prices",
                path=source,
                key=f"prices.{counter}",
                hint="input_per_mtok, cached_input_per_mtok, output_per_mtok",
            )
        try:
            out[str(counter)] = configuration.build(Prices, table, source=source)
        except ConfigError as exc:
            raise ConfigError(
                exc.message,
                path=source,
                key=f"prices.{counter}.{exc.key or ''}".rstrip("."),
                hint=exc.hint,
            ) from None
    return PriceTable(out)


def load_prices(path: str | Path) -> PriceTable:
    return price_table(configuration.load_toml(path), source=str(path))
