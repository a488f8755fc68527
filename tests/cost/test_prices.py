"""Price tables: built in with their page and date, overridden from a file with clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxbench.cost.prices import BUILTIN, builtin, load_price_tables
from ctxbench.errors import ConfigError


def test_every_built_in_table_names_its_page_and_the_date_it_was_read() -> None:
    for name, table in BUILTIN.items():
        assert table.source.startswith("https://"), name
        assert table.read_on == "2026-12-05", name
        assert table.cache_read_per_mtok < table.input_per_mtok, name


def test_anthropic_writes_and_reads_are_the_published_multiples_of_input() -> None:
    for name in ("anthropic", "anthropic-opus"):
        t = builtin(name)
        assert t.write_price(one_hour=False) == pytest.approx(1.25 * t.input_per_mtok)
        assert t.write_price(one_hour=True) == pytest.approx(2.0 * t.input_per_mtok)
        assert t.cache_read_per_mtok == pytest.approx(0.1 * t.input_per_mtok)


def test_providers_without_a_write_charge_bill_writes_as_input() -> None:
    assert builtin("openai").write_price(one_hour=False) == builtin("openai").input_per_mtok


def test_a_file_overrides_some_keys_and_keeps_the_others(tmp_path: Path) -> None:
    path = tmp_path / "prices.toml"
    path.write_text('[deepseek]\ncache_read_per_mtok = 0.006\nread_on = "2026-12-06"\n')
    tables = load_price_tables(path)
    assert tables["deepseek"].cache_read_per_mtok == 0.006
    assert tables["deepseek"].input_per_mtok == BUILTIN["deepseek"].input_per_mtok
    assert tables["openai"] == BUILTIN["openai"]


def test_a_bad_key_names_the_file_and_the_table(tmp_path: Path) -> None:
    path = tmp_path / "prices.toml"
    path.write_text("[openai]\ninput_per_mtk = 1.0\n")
    with pytest.raises(ConfigError) as caught:
        load_price_tables(path)
    assert str(path) in str(caught.value) and "openai" in str(caught.value)


def test_an_unknown_built_in_table_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="anthropic-opus"):
        builtin("mistral")
