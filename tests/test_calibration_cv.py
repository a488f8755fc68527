"""Calibration that generalises: cross-validated profiles, per-model runs, `--counter auto`,
profiles with a scale and a reasoning rule, and `profile:` counters in sweep files."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.calibration import CallSample, cross_validate, fit_framing, folds
from ctxbench.cli import cli
from ctxbench.counting import get_counter
from ctxbench.counting.profile import Profile, ProfileCounter, load_profile, save_profile
from ctxbench.errors import ConfigError
from ctxbench.formats.canonical import write_traces
from ctxbench.sweep.spec import load_sweep
from ctxbench.trace import Message, ToolCall, Trace, Usage


def sample_calls(traces: int, calls: int, *, seed: int = 7) -> list[CallSample]:
    """Calls whose provider adds 4 per message, 20 per tool call and 300 per request, with
    a little noise (so a fit on one set of calls is not exact on another)."""
    rng = random.Random(seed)
    out = []
    for t in range(traces):
        for c in range(calls):
            counted = 1000 + 400 * c + rng.randrange(0, 50)
            messages, tool_calls = 2 + 2 * c, c
            noise = rng.randrange(-15, 16)
            recorded = counted + 4 * messages + 20 * tool_calls + 300 + noise
            out.append(CallSample(f"t{t}", c, recorded, counted, messages, tool_calls))
    return out


def test_folds_hold_whole_traces_when_there_are_enough() -> None:
    calls = sample_calls(7, 6)
    by, assignment = folds(calls, 3)
    assert by == "trace"
    per_trace = {
        s.trace_id: {f for s2, f in zip(calls, assignment) if s2.trace_id == s.trace_id}
        for s in calls
    }
    assert all(len(f) == 1 for f in per_trace.values())
    assert set(assignment) == {0, 1, 2}


def test_fewer_traces_than_folds_split_each_trace_into_blocks_of_calls() -> None:
    calls = sample_calls(1, 20)
    by, assignment = folds(calls, 5)
    assert (
        by == "call block" and assignment == sorted(assignment) and set(assignment) == set(range(5))
    )


@pytest.mark.parametrize(("traces", "calls", "k"), [(6, 8, 3), (1, 30, 5), (2, 12, 4)])
def test_a_cross_validated_profile_never_scores_on_its_fitting_calls(
    traces: int, calls: int, k: int
) -> None:
    data = sample_calls(traces, calls)
    cv = cross_validate(data, k)
    keys = [(s.trace_id, s.call) for s in data]
    held = [set(h) for h in cv.held_back]
    # the held-back folds partition the calls, and each fold's framing is the fit of the others
    assert sorted(k2 for h in cv.held_back for k2 in h) == sorted(keys)
    assert all(not (a & b) for i, a in enumerate(held) for b in held[i + 1 :])
    for framing, test in zip(cv.folds, held):
        train = [s for s in data if (s.trace_id, s.call) not in test]
        assert framing == fit_framing(train)
    assert cv.errors.calls == len(data)


def test_cross_validation_is_worse_than_the_in_sample_fit_of_noisy_calls() -> None:
    data = sample_calls(6, 8)
    in_sample = fit_framing(data).errors.median_abs_rel_error
    assert cross_validate(data, 3).errors.median_abs_rel_error >= in_sample


def test_a_scale_is_fitted_for_a_stand_in_tokenizer() -> None:
    rng = random.Random(3)
    data = []
    for c in range(40):
        counted = 2000 + rng.randrange(0, 30000)  # not collinear with the message count
        data.append(CallSample("t", c, round(1.07 * counted) + 50, counted, 2 + c, 0))
    fitted = fit_framing(data, fit_scale=True)
    assert abs(fitted.scale - 1.07) <= 0.002 and fitted.errors.p90_abs_rel_error < 0.001
    assert fit_framing(data).errors.p90_abs_rel_error > 0.01


def test_a_profile_with_scale_and_reasoning_counts_as_fitted(tmp_path: Path) -> None:
    path = tmp_path / "claude.json"
    save_profile(
        path,
        Profile("tiktoken:o200k_base", "claude", 1, 60, 3800, scale=1.05, reasoning="current_turn"),
    )
    assert load_profile(path).reasoning == "current_turn"
    counter = get_counter(f"profile:{path}")
    assert isinstance(counter, ProfileCounter) and counter.tokenizer_name == "tiktoken:o200k_base"
    thinking = {"thinking_blocks": [{"type": "thinking", "thinking": "plan the call carefully"}]}
    msgs = [
        Message("user", "Book a flight to Oslo, please."),
        Message("assistant", "", tool_calls=(ToolCall("c", "book", "{}"),), replay=thinking),
        Message("tool", "booked", tool_call_id="c"),
    ]
    base = get_counter("tiktoken:o200k_base")
    stripped = [
        Message(m.role, m.content, tool_calls=m.tool_calls, tool_call_id=m.tool_call_id)
        for m in msgs
    ]
    expected = round(1.05 * (base.count_prompt(stripped) + base.count("plan the call carefully")))
    assert counter.count_prompt(msgs) == expected + 3 * 1 + 60 + 3800
    (tmp_path / "bad.json").write_text(
        json.dumps({"schema": "ctxbench.profile/1", "base": "chars4", "reasoning": "sometimes"})
    )
    with pytest.raises(ConfigError, match="reasoning"):
        get_counter(f"profile:{tmp_path / 'bad.json'}")


def test_profile_counters_are_accepted_in_sweep_files(tmp_path: Path) -> None:
    profile = tmp_path / "p.json"
    save_profile(profile, Profile("chars4", per_message=1))
    sweep = tmp_path / "s.toml"
    body = 'name = "p"\nwindows = [32768]\ncounters = ["profile:{}"]\n'
    body += '[[traces]]\nscenario = "coding_agent"\n[[strategies]]\nname = "none"\n'
    sweep.write_text(body.format(profile))
    assert load_sweep(sweep).counters == (f"profile:{profile}",)
    sweep.write_text(body.format(tmp_path / "missing.json"))
    with pytest.raises(ConfigError, match="no such profile file"):
        load_sweep(sweep)


def recorded_trace(trace_id: str, model: str, hidden: int) -> Trace:
    """A trace of ``model`` whose provider billed chars4's count plus ``hidden`` + 3 per message."""
    chars4 = get_counter("chars4")
    msgs: list[Message] = [Message("system", "s" * 400), Message("user", "u" * 800)]
    for i in range(6):
        billed = chars4.count_prompt(msgs) + hidden + 3 * len(msgs)
        call = ToolCall(f"{trace_id}{i}", "ls", "{}")
        msgs.append(Message("assistant", "a" * 60, tool_calls=(call,), usage=Usage(billed, 5)))
        msgs.append(Message("tool", "r" * (300 + 170 * i), tool_call_id=call.id))
    return Trace(trace_id, tuple(msgs), meta={"model": model})


@pytest.fixture
def two_models(tmp_path: Path) -> list[Path]:
    a = tmp_path / "gpt.jsonl"
    b = tmp_path / "ds.jsonl"
    write_traces(a, [recorded_trace(f"g{i}", "gpt-4o", 700 + i) for i in range(4)])
    write_traces(b, [recorded_trace(f"d{i}", "deepseek-chat", 200 + i) for i in range(3)])
    return [a, b]


def test_auto_says_what_it_picked_and_reports_mixed_models_per_model(
    two_models: list[Path],
) -> None:
    """Several models are calibrated apart by default (issue 40): one pooled number hides a
    group that is far off, so it comes last, as one line."""
    result = CliRunner().invoke(cli, ["calibrate", *map(str, two_models), "-c", "auto", "--json"])
    assert result.exit_code == 0, result.output
    assert "auto: gpt-4o -> tiktoken:o200k_base" in result.stderr
    data = json.loads(result.stdout)
    assert [m["model"] for m in data["models"]] == ["gpt-4o", "deepseek-chat"]
    assert data["pooled"]["name"] == "all 2 models pooled"
    assert sum(m["calls"] for m in data["models"]) == 42


def test_by_model_calibrates_each_model_apart_with_its_own_counter(
    two_models: list[Path], tmp_path: Path
) -> None:
    base = tmp_path / "prof.json"
    args = ["calibrate", *map(str, two_models), "-c", "auto", "--by-model", "--cv", "3"]
    result = CliRunner().invoke(cli, [*args, "--json", "--save-profile", str(base), "-q"])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr and "auto:" not in result.stderr
    models = {m["model"]: m for m in json.loads(result.stdout)["models"]}
    assert models["gpt-4o"]["counter_spec"] == "tiktoken:o200k_base"
    assert models["deepseek-chat"]["counter_spec"] == "hf:deepseek-v3.1"
    assert models["deepseek-chat"]["reasoning"] == "tool_turns"
    assert models["gpt-4o"]["cv"]["folds_by"] == "trace" and models["gpt-4o"]["cv"]["calls"] == 24
    assert load_profile(tmp_path / "prof.gpt-4o.json").base == "tiktoken:o200k_base"
    assert load_profile(tmp_path / "prof.deepseek-chat.json").reasoning == "tool_turns"


def test_the_per_trace_constant_is_not_shown_where_it_makes_p90_worse(
    two_models: list[Path],
) -> None:
    """chars4 + a per-trace constant is exact on these traces except the 3-per-message growth;
    the text table shows +c only where p90 drops."""
    result = CliRunner().invoke(cli, ["calibrate", str(two_models[0]), "-c", "chars4"])
    data = json.loads(
        CliRunner().invoke(cli, ["calibrate", str(two_models[0]), "-c", "chars4", "--json"]).stdout
    )
    row = next(line for line in result.output.splitlines() if line.startswith("chars4"))
    helps = data["counter"]["constant_helps"]
    assert helps == (
        data["counter"]["with_constant"]["p90_abs_rel_error"] < data["counter"]["p90_abs_rel_error"]
    )
    assert (row.split("|")[1].split()[0] == "-") == (not helps)


def test_the_progress_bar_is_silent_when_stderr_is_not_a_terminal(two_models: list[Path]) -> None:
    result = CliRunner().invoke(cli, ["calibrate", str(two_models[0]), "-c", "chars4", "--json"])
    assert "calibrate [" not in result.stderr
