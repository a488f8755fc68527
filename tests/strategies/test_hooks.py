"""The hooks a strategy class declares what it takes from outside with, read by the registry's
helpers (``ctxbench.strategies``), and its Config built once per cell and carried to the replay."""

from __future__ import annotations

import pickle

import pytest

from ctxbench.cell.runner import build_parts, resolve_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.errors import ConfigError
from ctxbench.strategies import (
    BASELINE,
    STRATEGIES,
    config_file_params,
    registered,
    reproducing,
    starters,
    strategy_class,
)

DBGPT_FILE = {"service": {"web": {"agent_context": {"warning_threshold": 0.6}}}}


def test_a_native_section_gives_its_strategy_the_knobs_it_holds() -> None:
    owner = next(cls for cls in registered() if cls.native_section)
    assert config_file_params(owner.name, DBGPT_FILE, "f.toml") == {"warning_threshold": 0.6}


def test_another_strategys_native_section_is_an_error_naming_its_owner() -> None:
    owner = next(cls for cls in registered() if cls.native_section)
    with pytest.raises(ConfigError) as caught:
        config_file_params("sliding_window", DBGPT_FILE, "f.toml")
    assert f"configures {owner.name}, but --strategy is 'sliding_window'" in caught.value.message
    assert caught.value.hint == (
        f"use --strategy {owner.name}, or put the strategy's knobs at top level"
    )


def test_a_native_section_that_is_not_a_table_is_an_error() -> None:
    owner = next(cls for cls in registered() if cls.native_section)
    data = {"service": {"web": {"agent_context": 3}}}
    with pytest.raises(ConfigError, match="expected a table"):
        config_file_params(owner.name, data, "f.toml")


def test_without_a_native_section_the_top_level_keys_are_the_knobs() -> None:
    assert config_file_params("sliding_window", {"keep_rounds": 3}, "f.toml") == {"keep_rounds": 3}


def test_the_strategy_reproducing_a_format_is_the_one_that_declares_it() -> None:
    for cls in registered():
        for fmt in cls.reproduces:
            assert reproducing({"imported_from": {"format": fmt}}) == cls.name
            assert cls.reproduces_why, f"{cls.name} says why it reproduces {fmt}"
    assert reproducing({"imported_from": {"format": "nobody"}}, default="x") == "x"
    assert reproducing({}) is None


def test_the_starter_proposes_the_baseline_first_then_by_rank() -> None:
    found = starters()
    assert found[0][0] == BASELINE
    ranks = [starter.rank for _, starter in found]
    assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks)
    assert all(name in STRATEGIES for name, _ in found)


def test_every_recorded_summary_request_is_keyed_by_its_layer_and_call() -> None:
    from ctxbench.trace import Message

    history = (Message("system", "s"), Message("user", "do x"), Message("assistant", "done"))
    made = 0
    for cls in registered():
        request = cls.recorded_summary_request(history, trace_id="t", call=7, first=True)
        if request is None:
            continue
        made += 1
        assert request.strategy == cls.name
        assert request.key == f"t:7:{request.layer}:0"
        assert all(m.role != "system" for m in request.messages)
    assert made >= 3  # Claude Code, Codex, OpenHands


def _spec(**params: object) -> RunSpec:
    return RunSpec(
        trace_id="t", trace_hash="h", strategy="sliding_window", params=params, window=8192
    )


def test_the_config_is_built_once_and_carried_to_the_replay() -> None:
    spec = resolve_spec(_spec(keep_rounds=3))
    cls = strategy_class("sliding_window")
    assert isinstance(spec.config, cls.Config) and spec.config.keep_rounds == 3
    assert resolve_spec(spec).config is spec.config
    assert build_parts(spec).strategy.config is spec.config


def test_the_carried_config_is_no_part_of_the_cell() -> None:
    spec = resolve_spec(_spec(keep_rounds=3))
    bare = spec.with_(config=None)
    assert spec == bare and spec.run_id == bare.run_id
    assert "config" not in spec.to_dict()
    with pytest.raises(ConfigError, match="unknown run spec keys"):
        RunSpec.from_dict({**spec.to_dict(), "config": {}})


def test_new_params_drop_the_carried_config_and_a_pickle_leaves_it_behind() -> None:
    spec = resolve_spec(_spec(keep_rounds=3))
    assert spec.with_(window=4096).config is spec.config
    assert spec.with_(params=dict(spec.params)).config is spec.config
    assert spec.with_(params={**spec.params, "keep_rounds": 4}).config is None
    copy = pickle.loads(pickle.dumps(spec))
    assert copy == spec and copy.config is None
    assert resolve_spec(copy).config == spec.config
