"""The registry: lazy names, "did you mean", plug-ins by import path."""

from __future__ import annotations

import pytest

from ctxbench.errors import UnknownNameError
from ctxbench.registry import Registry, import_path


def make() -> Registry:
    reg = Registry("strategy")
    reg.add("sliding_window", "ctxbench.strategies.sliding_window:SlidingWindow", "window")
    reg.add("tiktoken:o200k_base", "ctxbench.counting.estimators:Chars4Counter", "x")
    return reg


def test_registered_names_load_their_target() -> None:
    from ctxbench.strategies.sliding_window import SlidingWindow

    assert make().load("sliding_window") is SlidingWindow


def test_unknown_name_suggests_close_matches() -> None:
    with pytest.raises(UnknownNameError) as info:
        make().load("sliding_windw")
    assert "did you mean 'sliding_window'" in str(info.value)


def test_a_typo_in_a_registered_prefix_is_not_treated_as_a_plugin() -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'tiktoken:o200k_base'"):
        make().load("tiktoken:o200k")


def test_plugins_load_by_import_path() -> None:
    assert make().load("ctxbench.strategies.none:NoCompaction").name == "none"


def test_bad_import_paths_are_clear_errors() -> None:
    with pytest.raises(UnknownNameError, match="cannot import module"):
        import_path("no_such_pkg.mod:Thing")
    with pytest.raises(UnknownNameError, match="has no attribute"):
        import_path("ctxbench.strategies.none:Missing")


def test_names_are_registered_once() -> None:
    reg = make()
    with pytest.raises(ValueError):
        reg.add("sliding_window", "x:y", "dup")
