"""The result row's prompt-cache columns, computed from the events like every other metric."""

from __future__ import annotations

import pytest

from ctxbench.engine.result import Identity, RunResult, result_from_events
from tests.cost.test_ledger import _events


def test_a_row_carries_the_cache_split_cost_and_unpaid_compactions() -> None:
    row = result_from_events(_events(10), Identity(counter="profile:claude.json"))
    assert row.cache_provider == "anthropic"
    # calls 0-2 as worked in test_ledger, then calls 3-12 each read 1k less than they send
    assert row.cache_read_tokens == 10_000 + 2_000 + sum(6_000 + 1_000 * n for n in range(10))
    assert row.cache_write_tokens == 10_000 + 10_000 + 4_000 + 10 * 1_000
    assert row.cache_cost_usd == pytest.approx(
        (row.cache_read_tokens * 0.30 + row.cache_write_tokens * 3.75) / 1e6 + 0.075
    )
    assert row.compactions_never_paid_back == 1  # 10 later calls save too little


def test_rows_written_before_the_cache_columns_read_back_with_defaults() -> None:
    row = result_from_events(_events(0), Identity(counter="tiktoken:o200k_base")).to_row()
    for name in RunResult.column_defaults():
        if name.startswith("cache_") or name == "compactions_never_paid_back":
            del row[name]
    old = RunResult.from_row(row)
    assert old.cache_provider == "" and old.cache_cost_usd is None
