"""Bad configuration: ``--set`` values for every strategy, strategy config files, scenario and
sweep TOML files.

Values are typed by the field they set, so NaN, infinities, numbers past 64 bits, 5,000-digit
integers, deep JSON and wrong types are errors naming the key (and the file, or ``--set``)
with a hint. A configuration that builds must also run: a short replay, a generated trace,
an expanded sweep.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxbench.cli.running import strategy_params
from ctxbench.config import load_toml, parse_set
from ctxbench.engine import events as ev
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import replay
from ctxbench.errors import ConfigError, CtxbenchError
from ctxbench.formats.canonical import write_traces
from ctxbench.strategies import STRATEGIES, build_strategy, strategy_class
from ctxbench.summarizers.extractive import ExtractiveSummarizer
from ctxbench.sweep.spec import load_sweep, sweep_from_dict
from ctxbench.synth.generator import generate
from ctxbench.synth.scenario_file import load_scenario, parse_scenario, scenario_dir
from tests.factories import react_trace, tool_trace
from tests.hardening import (
    DEEP,
    HUGE_DIGITS,
    assert_cli_reports,
    assert_names_the_problem,
    damaged,
    mutated,
)
from tests.replaying import CHARS4

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: Value strings a user might type after ``--set KEY=``, the nasty ones first.
VALUE_TEXTS = st.sampled_from(
    [
        "nan",
        "NaN",
        "inf",
        "-inf",
        "Infinity",
        "1e308",
        "-1e308",
        "1e309",
        str(10**40),
        "-" + str(10**40),
        "9" * HUGE_DIGITS,
        "[" * DEEP + "]" * DEEP,
        '{"m": NaN}',
        '{"m": 1e999}',
        "[1, [2]]",
        "",
        "none",
        "true",
        "0",
        "-1",
        "1",
        "0.5",
        "0.99",
        "1_000",
        "0x10",
        "[]",
        "{}",
        "\x00",
        "é",
    ]
) | st.text(max_size=8)


@st.composite
def set_arguments(draw: st.DrawFn, name: str) -> list[str]:
    """One to three ``KEY=VALUE`` arguments: the strategy's own keys or random ones."""
    fields = [f.name for f in dataclasses.fields(strategy_class(name).Config)]
    keys = st.text(min_size=1, max_size=6).filter(
        lambda k: "=" not in k and k.strip() == k and k.strip()
    )
    if fields:
        keys = st.sampled_from(fields) | keys
    return [f"{draw(keys)}={draw(VALUE_TEXTS)}" for _ in range(draw(st.integers(1, 3)))]


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), name=st.sampled_from(STRATEGIES.names()))
def test_set_values_build_and_replay_or_name_the_key_and_fix(
    name: str, data: st.DataObject
) -> None:
    sets = data.draw(set_arguments(name))
    try:
        strategy = build_strategy(name, parse_set(sets), source="--set")
    except ConfigError as exc:
        assert exc.path == "--set" and exc.key is not None and exc.hint, exc
        return
    for field in dataclasses.fields(strategy.config):
        value = getattr(strategy.config, field.name)
        assert not (isinstance(value, float) and not math.isfinite(value)), field.name
    trace = data.draw(st.sampled_from([tool_trace(6, output="x" * 900), react_trace(6)]))
    window = data.draw(st.sampled_from([700, 3000, 50_000]))
    out = replay(
        trace,
        strategy,
        SimulatedProvider(window, 100),
        true_counter=CHARS4,
        estimator=CHARS4,
        summarizer=ExtractiveSummarizer(),
    )
    # every recorded call was replayed: sent to the provider, or ended before it by the
    # strategy (Hermes aborts the turn after a call it could not compress: ``aborted``)
    sent = {e.call for e in out.events if isinstance(e, ev.ProviderCall)}
    aborted = {e.call for e in out.events if isinstance(e, ev.CallFailed) and e.kind == ev.ABORTED}
    assert out.result.calls == len(sent) and not sent & aborted
    assert sent | aborted == set(range(len(trace.call_indices)))


def test_a_turn_hermes_aborts_counts_its_calls_as_ended_not_sent() -> None:
    # the example hypothesis found: Hermes at a 700-token window cannot compress call 3 and
    # ends the turn, so calls 4-6 are ``aborted`` before the provider: 4 calls sent of 7
    trace = tool_trace(6, output="x" * 900)
    out = replay(
        trace,
        build_strategy("hermes", parse_set(["model=nan"]), source="--set"),
        SimulatedProvider(700, 100),
        true_counter=CHARS4,
        estimator=CHARS4,
        summarizer=ExtractiveSummarizer(),
    )
    failed = {e.call: e.kind for e in out.events if isinstance(e, ev.CallFailed)}
    assert (out.result.calls, len(trace.call_indices)) == (4, 7)
    assert failed == {3: ev.OVERFLOW, 4: ev.ABORTED, 5: ev.ABORTED, 6: ev.ABORTED}


@pytest.mark.parametrize(
    "sets,key",
    [
        (["warning_threshold=nan"], "warning_threshold"),
        (["warning_threshold=inf"], "warning_threshold"),
        (["max_context_tokens=" + str(10**40)], "max_context_tokens"),
        (["min_keep_tokens=" + "9" * HUGE_DIGITS], "min_keep_tokens"),
        (["error_threshold=0.5"], "error_threshold"),  # below the default warning threshold
        (["warning_thresold=0.6"], "warning_thresold"),
    ],
)
def test_set_errors_name_the_key(sets: list[str], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        build_strategy("dbgpt", parse_set(sets), source="--set")
    assert err.value.key == key and err.value.hint


# -- strategy config files (`ctxbench run --config FILE`) --------------------------------------------


def toml_value(value: Any) -> str:
    """TOML text of a JSON-like value (NaN and infinities included; null has no TOML form)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value if v is not None) + "]"
    if isinstance(value, dict):
        items = (f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items() if v is not None)
        return "{" + ", ".join(items) + "}"
    return json.dumps(value)  # a TOML basic string


def toml_text(table: dict[str, Any]) -> str:
    return "".join(
        f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in table.items() if v is not None
    )


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


DBGPT_CONFIG = {"warning_threshold": 0.6, "min_keep_recent_rounds": 2, "snapshots": True}


@FUZZ
@given(data=st.data())
def test_strategy_config_values_build_or_name_the_file_and_key(
    scratch: Path, data: st.DataObject
) -> None:
    table = data.draw(mutated(DBGPT_CONFIG))
    path = scratch / "dbgpt.toml"
    path.write_text(toml_text(table) if isinstance(table, dict) else "x = 1\n", "utf-8")
    try:
        params = strategy_params("dbgpt", str(path), [])
    except CtxbenchError as exc:
        assert_names_the_problem(exc, path)
        return
    build_strategy("dbgpt", params)


@FUZZ
@given(data=st.data())
def test_damaged_toml_files_parse_or_name_the_file_line_and_fix(
    scratch: Path, data: st.DataObject
) -> None:
    path = scratch / "damaged.toml"
    path.write_bytes(data.draw(damaged(toml_text(DBGPT_CONFIG))))
    try:
        load_toml(path)
    except ConfigError as exc:
        assert_names_the_problem(exc, path)


def test_a_config_file_error_names_the_file_and_a_set_error_names_set(tmp_path: Path) -> None:
    path = tmp_path / "dbgpt.toml"
    path.write_text("[service.web.agent_context]\nwarning_threshold = nan\n", "utf-8")
    with pytest.raises(ConfigError) as err:
        strategy_params("dbgpt", str(path), [])
    assert err.value.path == str(path) and err.value.key == "warning_threshold"
    path.write_text("[service.web.agent_context]\nwarning_threshold = 0.6\n", "utf-8")
    with pytest.raises(ConfigError) as err:
        strategy_params("dbgpt", str(path), ["error_threshold=0.5"])
    assert err.value.path == "--set" and err.value.key in ("warning_threshold", "error_threshold")


# -- scenario and sweep files ------------------------------------------------------------------


def embedded(name: str) -> dict[str, Any]:
    return load_toml(scenario_dir() / f"{name}.toml")


@FUZZ
@given(data=st.data(), name=st.sampled_from(["coding_agent", "sql_agent", "cjk_agent"]))
def test_scenario_values_generate_or_name_the_key_and_fix(
    scratch: Path, data: st.DataObject, name: str
) -> None:
    source = scratch / "scenario.toml"
    doc = data.draw(mutated(embedded(name)))
    try:
        spec = parse_scenario(doc if isinstance(doc, dict) else {"rounds": doc}, source=source)
    except CtxbenchError as exc:
        assert_names_the_problem(exc, source)
        return
    spec = dataclasses.replace(spec, rounds=min(spec.rounds, 20))  # keep the example fast
    (trace,) = generate(spec, 0, 1)
    assert trace.messages


@FUZZ
@given(data=st.data())
def test_damaged_scenario_files_load_or_name_the_file_and_fix(
    scratch: Path, data: st.DataObject
) -> None:
    path = scratch / "scenario.toml"
    path.write_bytes(data.draw(damaged((scenario_dir() / "sql_agent.toml").read_text("utf-8"))))
    try:
        load_scenario(path)
    except CtxbenchError as exc:
        assert_names_the_problem(exc, path)


@pytest.fixture(scope="module")
def sweep_doc(scratch: Path) -> dict[str, Any]:
    write_traces(scratch / "t.jsonl", [tool_trace(3)])
    doc = embedded("quickstart")
    doc["traces"] = [{"path": "t.jsonl"}, {"scenario": "coding_agent", "seeds": [0, 1]}]
    return doc


@FUZZ
@given(data=st.data())
def test_sweep_values_expand_or_name_the_key_and_fix(
    scratch: Path, sweep_doc: dict[str, Any], data: st.DataObject
) -> None:
    source = scratch / "sweep.toml"
    doc = data.draw(mutated(sweep_doc))
    try:
        spec = sweep_from_dict(doc if isinstance(doc, dict) else {"windows": doc}, source=source)
    except CtxbenchError as exc:
        assert_names_the_problem(exc, source)
        return
    assert spec.configs()


@FUZZ
@given(data=st.data())
def test_damaged_sweep_files_load_or_name_the_file_and_fix(
    scratch: Path, sweep_doc: dict[str, Any], data: st.DataObject
) -> None:
    path = scratch / "sweep.toml"
    path.write_bytes(data.draw(damaged((scenario_dir() / "quickstart.toml").read_text("utf-8"))))
    try:
        load_sweep(path)
    except CtxbenchError as exc:
        assert_names_the_problem(exc, path)


def test_scenarios_too_big_to_generate_are_refused_by_key(tmp_path: Path) -> None:
    source = tmp_path / "big.toml"
    for key, value in (("rounds", 10**12), ("large", {"probability": 0.5, "sigma": 50.0})):
        with pytest.raises(ConfigError) as err:
            parse_scenario({**embedded("coding_agent"), key: value}, source=source)
        assert err.value.key is not None and err.value.key.startswith(key)


# -- the command line --------------------------------------------------------------------------


def test_bad_config_on_the_command_line_exits_2_naming_it(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    write_traces(traces, [tool_trace(2)])
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"warning_threshold = nan\nkeep = [[[" + b"\xff")
    run_args = ["run", str(traces), "-s", "dbgpt", "-w", "4000", "-c", "chars4"]
    for argv in (
        [*run_args, "--config", str(bad)],
        ["gen", str(bad), "-o", str(tmp_path / "out.jsonl")],
        ["sweep", str(bad), "--dry-run"],
    ):
        assert_cli_reports(argv, bad)
    assert_cli_reports([*run_args, "--set", "warning_threshold=nan"], "--set")
