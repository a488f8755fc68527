"""Fitted framing profiles: the file, and the `profile:FILE` counter built on a base counter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxbench.calibration import calibrate, fit_framing
from ctxbench.counting import get_counter
from ctxbench.counting.profile import Profile, ProfileCounter, load_profile, save_profile
from ctxbench.errors import ConfigError
from ctxbench.formats.importing import import_file
from ctxbench.trace import Message, ToolCall, ToolSpec


def test_profile_file_round_trips(tmp_path: Path) -> None:
    profile = Profile("chars4", "gpt-4o", 2, 9, 1000, {"calls": 3})
    save_profile(tmp_path / "p.json", profile)
    assert load_profile(tmp_path / "p.json") == profile


def test_profile_counter_adds_the_framing_to_the_base_count() -> None:
    base = get_counter("chars4")
    counter = ProfileCounter(
        "p", base, Profile("chars4", per_message=2, per_tool_call=9, constant=100)
    )
    msgs = [
        Message("user", "x" * 40),
        Message("assistant", "", tool_calls=(ToolCall("a", "ls", "{}"),) * 1),
    ]
    tools = (ToolSpec("ls", "list", {"type": "object"}),)
    assert counter.count_prompt(msgs, tools) == base.count_prompt(msgs, tools) + 2 * 2 + 9 + 100
    assert counter.count("abcdefgh") == base.count("abcdefgh")


def test_profile_spec_loads_through_get_counter(tmp_path: Path) -> None:
    path = tmp_path / "fam.json"
    save_profile(path, Profile("chars4", constant=7))
    counter = get_counter(f"profile:{path}")
    assert isinstance(counter, ProfileCounter) and counter.name == f"profile:{path}"
    assert counter.describe()["profile"]["constant"] == 7


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, "no such profile file"),
        ("{not json", "malformed JSON"),
        (json.dumps({"base": "chars4", "per_mesage": 1}), "unknown key 'per_mesage'"),
        (json.dumps({"base": "chars4", "constant": "big"}), "integer"),
        (json.dumps({"base": "chars4", "schema": "other/1"}), "schema"),
        (json.dumps({"base": "profile:x.json"}), "cannot wrap another profile"),
    ],
)
def test_bad_profile_files_are_config_errors_naming_the_file(
    tmp_path: Path, content: str | None, words: str
) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError) as err:
        get_counter(f"profile:{path}")
    assert words in str(err.value) and str(path) in str(err.value)


def test_a_profile_fitted_on_tau2_reproduces_its_usage_without_a_per_trace_constant(
    shared_traces: Path, tmp_path: Path
) -> None:
    traces, _ = import_file(next(shared_traces.glob("tau2-bench/*.json")))
    base = calibrate(traces, get_counter("tiktoken:o200k_base"))
    framing = fit_framing(base.samples)
    path = tmp_path / "gpt-4o.json"
    save_profile(
        path,
        Profile(
            "tiktoken:o200k_base",
            "gpt-4o",
            framing.per_message,
            framing.per_tool_call,
            framing.constant,
        ),
    )
    raw = calibrate(traces, get_counter(f"profile:{path}")).counter.raw
    assert raw.median_abs_rel_error <= 0.01 and raw.p90_abs_rel_error <= 0.03
    assert raw.median_abs_rel_error < base.counter.raw.median_abs_rel_error / 10
