"""Bad input files: canonical traces, probe files, baselines, events files and profiles.

Each is fuzzed twice from a valid file ctxbench wrote itself: its bytes damaged (truncated,
flipped, re-encoded, emptied, nested past any parser) and its parsed values replaced (NaN,
infinities, huge numbers, deep nesting, wrong types). Either the file still reads, and what
it reads works downstream, or the error is ctxbench's own, naming the file, the line / key /
JSON path and the fix. The recorded formats' importers are fuzzed the same way in
``tests/formats/test_importing.py``; ``--set`` values and TOML files in ``tests/test_config_hardening.py``;
results directories in ``tests/results/test_reader_hardening.py``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxbench.counting import COUNTERS, get_counter
from ctxbench.counting.profile import Profile
from ctxbench.divergence import first_divergence, read_events, render
from ctxbench.engine.events import event_line
from ctxbench.engine.result import RunResult
from ctxbench.errors import CtxbenchError
from ctxbench.formats.canonical import read_traces, trace_line, write_traces
from ctxbench.gate.baseline import load_baseline, make_baseline
from ctxbench.gate.check import Tolerances, check
from ctxbench.probes.model import Probe
from ctxbench.probes.probe_file import load_probes, probe_lines
from ctxbench.strategies import STRATEGIES
from ctxbench.trace import Message, Part, ToolCall, Trace, Usage
from ctxbench.validation import validate
from tests.hardening import (
    assert_cli_reports,
    assert_names_the_problem,
    damaged,
    dumps,
    mutated,
    run_main,
)
from tests.replaying import run

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def sample_trace() -> Trace:
    """A small trace using every part of the format: tools, parallel calls, usage, parts,
    replay fields, a text-ReAct observation and probes."""
    msgs = (
        Message("system", "You are careful. Never delete data."),
        Message.from_parts(
            "user",
            (Part("text", "Fix src/app.py"), Part("image_url", data={"image_url": {"url": "u"}})),
        ),
        Message(
            "assistant",
            "",
            tool_calls=(ToolCall("c1", "bash", '{"cmd": "ls"}'), ToolCall("c2", "read", "{}")),
            usage=Usage(120, 8, 40),
            replay={"reasoning_content": "look first"},
        ),
        Message("tool", "src/app.py\ntests/test_app.py", tool_call_id="c1", name="bash"),
        Message("tool", "def main(): ...", tool_call_id="c2", name="read"),
        Message("assistant", "Thought: run it\nAction: sql\nAction Input: SELECT 1"),
        Message("user", "Observation: 1 row"),
        Message("assistant", "Done: fixed src/app.py"),
    )
    probe = Probe("p1", "artifact", "Which file?", ("src/app.py",), evidence=(3,), ask_at=None)
    return Trace("t-1", msgs, probes=(probe,), meta={"source": "test"})


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    """One folder for the module: hypothesis examples overwrite their file in it."""
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def write(folder: Path, name: str, data: bytes | str) -> Path:
    path = folder / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    return path


# -- canonical traces ----------------------------------------------------------------------------


def read_or_explain(path: Path) -> list[Trace]:
    """The traces of ``path``, or [] after checking the error explains itself."""
    try:
        return list(read_traces(path))
    except CtxbenchError as exc:
        assert_names_the_problem(exc, path)
        return []


@FUZZ
@given(data=st.data(), suffix=st.sampled_from([".jsonl", ".json"]))
def test_damaged_trace_files_read_or_name_the_file_line_and_fix(
    scratch: Path, data: st.DataObject, suffix: str
) -> None:
    text = trace_line(sample_trace()) + "\n" + trace_line(sample_trace()) * (suffix == ".jsonl")
    path = write(scratch, "damaged" + suffix, data.draw(damaged(text)))
    for trace in read_or_explain(path):
        validate(trace)  # whatever reads, validates


@FUZZ
@given(data=st.data())
def test_trace_values_of_every_type_read_and_round_trip_or_name_their_json_path(
    scratch: Path, data: st.DataObject
) -> None:
    doc = data.draw(mutated(sample_trace().to_dict()))
    path = write(scratch, "mutated.jsonl", dumps(doc) + "\n")
    traces = read_or_explain(path)
    if traces:
        out = scratch / "round-trip.jsonl"
        write_traces(out, traces)
        assert [trace_line(t) for t in read_traces(out)] == [trace_line(t) for t in traces]


def test_the_utf8_byte_order_mark_of_windows_editors_is_read_like_the_file(tmp_path: Path) -> None:
    text = trace_line(sample_trace()) + "\n"
    plain = write(tmp_path, "plain.jsonl", text)
    marked = write(tmp_path, "marked.jsonl", b"\xef\xbb\xbf" + text.encode())
    assert list(read_traces(marked)) == list(read_traces(plain))


@pytest.mark.parametrize(
    "content,words",
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"id": "x", "messages": [], "meta": {"n": ' + "9" * 5000 + "}}", "too many digits"),
        ('{"id": "x", "messages": [{"role": "user", "content": 3}]}', "$.messages[0]"),
        ('{"id": "x", "messages": [{"role": "user"', "malformed JSON"),
    ],
)
def test_trace_file_errors_say_what_and_where(tmp_path: Path, content: str, words: str) -> None:
    path = write(tmp_path, "t.jsonl", content + "\n")
    with pytest.raises(CtxbenchError) as err:
        list(read_traces(path))
    assert words in str(err.value)
    assert_names_the_problem(err.value, path)


def test_empty_traces_validate_count_and_replay_through_every_strategy(tmp_path: Path) -> None:
    traces = [
        Trace("empty", ()),
        Trace("system-only", (Message("system", "s"),)),
        Trace("user-only", (Message("user", "u"),)),
    ]
    path = tmp_path / "empty.jsonl"
    write_traces(path, traces)
    assert [p.code for p in validate(traces[0])] == ["empty_trace"]
    assert run_main(["count", str(path), "--counter", "chars4"])[0] == 0
    for trace in traces:
        for name in STRATEGIES.names():
            out = run(trace, name, 1000, reserved=100)
            assert out.result.calls == 0 and out.result.error is None, name


# -- probe files ----------------------------------------------------------------------------------


def probe_file_text() -> str:
    return "".join(line + "\n" for line in probe_lines([sample_trace()]))


@FUZZ
@given(data=st.data())
def test_damaged_probe_files_load_or_name_the_file_line_and_fix(
    scratch: Path, data: st.DataObject
) -> None:
    path = write(scratch, "probes.jsonl", data.draw(damaged(probe_file_text())))
    try:
        load_probes(path)
    except CtxbenchError as exc:
        assert_names_the_problem(exc, path)


@FUZZ
@given(data=st.data())
def test_probe_values_of_every_type_load_or_name_their_json_path(
    scratch: Path, data: st.DataObject
) -> None:
    doc = data.draw(mutated(json.loads(probe_file_text())))
    path = write(scratch, "probes.jsonl", dumps(doc) + "\n")
    try:
        probes = load_probes(path)
    except CtxbenchError as exc:
        assert_names_the_problem(exc, path)
        return
    for trace_id, found in probes.items():
        validate(Trace(trace_id, sample_trace().messages, probes=found))


# -- baselines ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rows() -> list[RunResult]:
    return [run(sample_trace(), name, 2000).result for name in ("none", "dbgpt")]


def baseline_or_explain(path: Path, rows: list[RunResult]) -> None:
    """Load the baseline and check rows against it, or check the error explains itself."""
    try:
        baseline = load_baseline(path)
    except CtxbenchError as exc:
        assert_names_the_problem(exc, path)
        return
    check(rows, baseline, Tolerances())


@FUZZ
@given(data=st.data())
def test_damaged_baselines_load_or_name_the_file_and_fix(
    scratch: Path, rows: list[RunResult], data: st.DataObject
) -> None:
    text = make_baseline(rows).text()
    baseline_or_explain(write(scratch, "baseline.json", data.draw(damaged(text))), rows)


@FUZZ
@given(data=st.data())
def test_baseline_values_of_every_type_check_or_name_their_key(
    scratch: Path, rows: list[RunResult], data: st.DataObject
) -> None:
    doc = data.draw(mutated(make_baseline(rows).to_dict()))
    baseline_or_explain(write(scratch, "baseline.json", dumps(doc)), rows)


def test_a_baseline_metric_of_the_wrong_type_names_its_cell(
    tmp_path: Path, rows: list[RunResult]
) -> None:
    doc = make_baseline(rows).to_dict()
    doc["cells"][1]["retention"] = "high"
    path = write(tmp_path, "b.json", json.dumps(doc))
    with pytest.raises(CtxbenchError) as err:
        load_baseline(path)
    assert err.value.key == "cells[1].retention"
    assert_names_the_problem(err.value, path)


# -- events files -------------------------------------------------------------------------------


def events_text() -> str:
    out = run(sample_trace(), "dbgpt", 600, reserved=50)
    return "".join(event_line(e, run_id="r1") + "\n" for e in out.events)


@FUZZ
@given(data=st.data())
def test_damaged_events_files_diff_or_name_the_file_line_and_fix(
    scratch: Path, data: st.DataObject
) -> None:
    path = write(scratch, "events.jsonl", data.draw(damaged(events_text())))
    try:
        _, events = read_events(path)
    except CtxbenchError as exc:
        assert_names_the_problem(exc, path)
        return
    render(first_divergence(events, events[:-1]), "a", "b")


@FUZZ
@given(data=st.data())
def test_event_values_of_every_type_diff_or_name_their_line(
    scratch: Path, data: st.DataObject
) -> None:
    lines = [json.loads(line) for line in events_text().splitlines()]
    lines = data.draw(mutated(lines))
    lines = lines if isinstance(lines, list) else [lines]
    path = write(scratch, "events.jsonl", "".join(dumps(e) + "\n" for e in lines))
    try:
        _, events = read_events(path)
    except CtxbenchError as exc:
        assert_names_the_problem(exc, path)
        return
    render(first_divergence(events, events[1:]), "a", "b")


# -- profile files ---------------------------------------------------------------------------------


def profile_doc() -> dict[str, Any]:
    return Profile("chars4", "gpt-4o", 3, 7, 12, {"calls": 10}).to_dict()


def profile_or_explain(path: Path) -> None:
    """Count with ``profile:PATH``, or check the error explains itself."""
    get_counter.cache_clear()  # the profile file changes between examples
    try:
        counter = get_counter(f"profile:{path}")
    except CtxbenchError as exc:
        assert_names_the_problem(exc, path)
        return
    assert counter.count_message(sample_trace().messages[2]) >= 0


@FUZZ
@given(data=st.data())
def test_damaged_profiles_load_or_name_the_file_and_fix(scratch: Path, data: st.DataObject) -> None:
    profile_or_explain(write(scratch, "p.json", data.draw(damaged(json.dumps(profile_doc())))))


@FUZZ
@given(data=st.data())
def test_profile_values_of_every_type_count_or_name_their_key(
    scratch: Path, data: st.DataObject
) -> None:
    profile_or_explain(write(scratch, "p.json", dumps(data.draw(mutated(profile_doc())))))


# -- the command line --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "damage", [b"\xff\xfe{", b'{"schema": "ctxbench.trace/1", "id": ', b"[" * 100_000]
)
def test_commands_reading_bad_files_exit_2_with_one_error_and_no_traceback(
    tmp_path: Path, damage: bytes
) -> None:
    bad = write(tmp_path, "bad.jsonl", damage)
    good = tmp_path / "good.jsonl"
    write_traces(good, [sample_trace()])
    run_args = [str(good), "-s", "none", "-w", "4000", "--reserved", "100", "-c", "chars4"]
    for argv in (
        ["validate", str(bad)],
        ["count", str(bad), "--counter", "chars4"],
        ["run", str(bad), *run_args[1:]],
        ["run", *run_args, "--probes", str(bad)],
        ["run", *run_args, "--counter", f"profile:{bad}"],
        ["diff", str(bad), str(bad)],
        ["probes", "mine", str(bad), "-o", str(tmp_path / "out.jsonl")],
        ["import", str(bad), "-o", str(tmp_path / "out.jsonl")],
    ):
        assert_cli_reports(argv, bad)


# -- pathological text inside valid files ------------------------------------------------------


@pytest.mark.parametrize("counter", COUNTERS.names())
def test_every_counter_counts_text_no_tokenizer_expects(counter: str) -> None:
    """A lone surrogate (a ``\\ud83d`` escape left by an emoji cut in half), NUL bytes, control
    and combining characters: counted, never a tokenizer's TypeError or panic."""
    texts = ("a\ud83db" * 50, "\x00" * 300, "\x1b[31m\x7f" * 50, "e\u0301" * 300, "\u202e" * 99)
    count = get_counter(counter)
    for text in texts:
        message = Message("tool", text, tool_call_id="c1", name="bash")
        assert count.count(text) >= 0 and count.count_message(message) > 0


def test_a_lone_surrogate_escape_reads_as_the_replacement_character_and_every_command_runs(
    tmp_path: Path,
) -> None:
    """Half an emoji (``\\ud83d``) left by a recorder that cuts UTF-16 strings: read as U+FFFD,
    like Go's encoding/json, so printing, hashing, tokenizing and writing never meet it."""
    doc = sample_trace().to_dict()
    doc["id"] = "t\ud83d"
    doc["messages"][4]["content"] = "cut emoji: \ud83d"
    path = write(tmp_path, "cut.jsonl", json.dumps(doc) + "\n")  # ensure_ascii: a \\ud83d escape
    (trace,) = read_traces(path)
    assert trace.id == "t\ufffd" and trace.messages[4].content == "cut emoji: \ufffd"
    events = tmp_path / "events.jsonl"
    for argv in (
        ["validate", str(path)],
        ["count", str(path), "--counter", "chars4", "--counter", "hf:qwen2.5"],
        ["run", str(path), "-s", "dbgpt", "-w", "4000", "--reserved", "100", "-c", "chars4"],
        ["run", str(path), "-s", "none", "-w", "9000", "-c", "chars4", "--events", str(events)],
        ["diff", str(events), str(events)],
        ["import", str(path), "-o", str(tmp_path / "imported.jsonl")],
    ):
        code, err = run_main(argv)
        assert code == 0 and "Traceback" not in err, (argv, err)
