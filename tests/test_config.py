"""Typed config: TOML and --set values become frozen dataclasses, never guessed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from ctxbench.config import build, describe_fields, load_toml, parse_set, to_params
from ctxbench.errors import ConfigError


@dataclass(frozen=True)
class Knobs:
    ratio: float = 0.7
    rounds: int = 3
    enabled: bool = True
    name: str = "x"
    limit: int | None = None
    mode: Literal["a", "b"] = "a"
    tools: tuple[str, ...] = ()


def test_values_are_converted_by_the_declared_field_type() -> None:
    cfg = build(
        Knobs,
        parse_set(
            ["ratio=0.5", "rounds=7", "enabled=false", "limit=none", "mode=b", 'tools=["x","y"]']
        ),
    )
    assert cfg == Knobs(ratio=0.5, rounds=7, enabled=False, limit=None, mode="b", tools=("x", "y"))


def test_falsy_values_are_values_not_unset() -> None:
    cfg = build(Knobs, {"ratio": 0.0, "rounds": 0, "name": "", "enabled": False})
    assert (cfg.ratio, cfg.rounds, cfg.name, cfg.enabled) == (0.0, 0, "", False)


def test_unknown_key_names_the_key_the_source_and_the_valid_keys() -> None:
    with pytest.raises(ConfigError) as info:
        build(Knobs, {"ratoi": 1}, source="cfg.toml")
    text = str(info.value)
    assert "cfg.toml" in text and "ratoi" in text and "ratio (float, default 0.7)" in text
    assert "did you mean 'ratio'" in text


@pytest.mark.parametrize(
    "key,value",
    [
        ("rounds", "3.5"),
        ("ratio", "abc"),
        ("enabled", "maybe"),
        ("mode", "c"),
        ("rounds", True),
        ("ratio", "nan"),
    ],
)
def test_bad_values_are_errors_naming_the_key(key: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        build(Knobs, {key: value})
    assert info.value.key == key


def test_a_boolean_given_for_a_choice_is_shown_as_the_file_wrote_it() -> None:
    with pytest.raises(ConfigError) as info:
        build(Knobs, {"mode": False}, source="sweep.toml")
    assert info.value.message == "expected one of 'a', 'b', got false"


def test_set_requires_key_equals_value() -> None:
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        parse_set(["novalue"])


def test_params_round_trip_through_to_params() -> None:
    cfg = Knobs(ratio=0.25, tools=("a",))
    assert build(Knobs, to_params(cfg)) == cfg


def test_describe_fields_lists_types_and_defaults() -> None:
    rows = {d["name"]: d for d in describe_fields(Knobs)}
    assert rows["ratio"]["default"] == 0.7 and rows["ratio"]["type"] == "float"


def test_toml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text("a = 1\nb = = 2\n", "utf-8")
    with pytest.raises(ConfigError) as info:
        load_toml(path)
    assert info.value.path == str(path) and info.value.line == 2
