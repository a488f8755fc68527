"""Importing recorded files: every shared trace imports, validates and round-trips; detection
says what it chose; bad input is always a clear ctxbench error (fuzzed)."""

from __future__ import annotations

import copy
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxbench.errors import CtxbenchError, TraceFormatError, UnknownNameError
from ctxbench.formats.canonical import read_traces, trace_line, write_traces
from ctxbench.formats.document import open_document
from ctxbench.formats.importing import (
    ImportReport,
    detect_format,
    import_file,
    open_source,
    unique_call_ids,
    unique_ids,
)
from ctxbench.trace import Message, ToolCall, Trace
from ctxbench.validation import validate
from tests.hardening import paths

#: Folder of the shared traces -> the format auto-detection must choose.
EXPECTED_FORMAT = {
    "tau-bench": "tau_bench",
    "tau2-bench": "tau2_bench",
    "mini-swe-agent": "mini_swe_agent",
    "swe-agent": "swe_agent",
    "openhands-benchmarks": "openhands",
    "marot+spotter": "claude_code",
    "codemie-ai+codemie-code": "codex",
    "OpenHands+software-agent-sdk": "openhands_completions",
    "sierra-research+tau2-bench": "tau2_bench",
}
#: Files of the shared folder that are not traces (notes, licence texts kept beside the data).
NOT_TRACES = ("SOURCES.md", "LICENSE")


def recorded_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name not in NOT_TRACES)


def test_every_shared_trace_folder_has_an_expected_format(shared_traces: Path) -> None:
    folders = {p.relative_to(shared_traces).parts[0] for p in recorded_files(shared_traces)}
    assert folders == set(EXPECTED_FORMAT)


def test_shared_traces_import_validate_and_round_trip(shared_traces: Path, tmp_path: Path) -> None:
    for path in recorded_files(shared_traces):
        traces, report = import_file(path)
        assert report.format == EXPECTED_FORMAT[path.relative_to(shared_traces).parts[0]], path
        assert report.detected and report.traces == len(traces) > 0
        for trace in traces:
            # A run that ended on a call without a result is complete, not a problem.
            assert validate(trace) == [], (path, trace.id)
        out = tmp_path / f"{path.name}.jsonl"
        assert write_traces(out, traces) == len(traces)
        assert list(read_traces(out)) == traces, path


def test_report_counts_what_the_traces_hold(shared_traces: Path) -> None:
    path = next(shared_traces.glob("tau2-bench/*.json"))
    traces, report = import_file(path)
    assert report.messages == sum(len(t.messages) for t in traces)
    assert report.model_calls == sum(len(t.call_indices) for t in traces)
    assert report.calls_with_usage == sum(
        1
        for t in traces
        for m in t.messages
        if m.role == "assistant" and m.usage and m.usage.prompt_tokens
    )
    assert report.unmapped["trace.task_id"] == report.traces  # source keys kept, and counted
    assert "trace.imported_from" not in report.unmapped  # the importer's own key is not "unmapped"


def test_report_to_dict_is_json_and_complete() -> None:
    report = ImportReport(
        "f", "openai_chat", True, 1, 2, 1, 0, {"message.x": 1}, {"missing_tool_result": 1}
    )
    data = json.loads(json.dumps(report.to_dict()))
    assert data["problems"] == {"missing_tool_result": 1} and data["unmapped"] == {"message.x": 1}
    assert report.problem_count == 1


def test_imported_traces_record_their_format_and_file(shared_traces: Path) -> None:
    path = next(shared_traces.glob("mini-swe-agent/*"))
    traces, _ = import_file(path)
    assert traces[0].meta["imported_from"] == {"format": "mini_swe_agent", "file": path.name}


def test_canonical_files_import_unchanged(tmp_path: Path) -> None:
    trace = Trace("t1", (Message("user", "hi"), Message("assistant", "yo")))
    path = tmp_path / "c.jsonl"
    write_traces(path, [trace])
    traces, report = import_file(path)
    assert report.format == "canonical" and traces == [trace]


# -- detection and clear errors ----------------------------------------------------------------


def test_unknown_shape_names_the_file_and_the_formats_it_expected(tmp_path: Path) -> None:
    path = tmp_path / "weird.json"
    path.write_text(json.dumps({"rows": [1, 2]}))
    with pytest.raises(TraceFormatError) as err:
        detect_format(open_document(path))
    text = str(err.value)
    assert str(path) in text and "keys rows" in text
    for name in ("tau2_bench", "openai_chat", "openhands", "--format"):
        assert name in text


def test_truncated_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text('[\n  {"role": "user",\n  "content": "hi"\n')
    with pytest.raises(TraceFormatError) as err:
        open_source(path)
    assert err.value.line is not None and "malformed JSON" in str(err.value)


def test_bad_jsonl_line_is_reported_with_its_number(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text('{"role": "user", "content": "a"}\n{"role": "assistant", "content": \n')
    with pytest.raises(TraceFormatError) as err:
        import_file(path)
    assert err.value.line == 2


def test_wrong_format_given_fails_with_the_json_path(shared_traces: Path) -> None:
    path = next(shared_traces.glob("mini-swe-agent/*"))
    with pytest.raises(TraceFormatError) as err:
        import_file(path, "tau_bench")
    assert err.value.key == "$" and "tau_bench" in str(err.value)


def test_unknown_format_name_suggests_the_close_one(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("[]")
    with pytest.raises(UnknownNameError) as err:
        open_source(path, "tau2bench")
    assert "tau2_bench" in str(err.value)


def test_missing_file_and_directory_and_empty_file_are_clear(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("  \n")
    for path, words in (
        (tmp_path / "nope.json", "no such file"),
        (tmp_path, "directory"),
        (empty, "empty"),
    ):
        with pytest.raises(TraceFormatError, match=words):
            open_source(path)


def test_non_utf8_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "latin.json"
    path.write_bytes(b'{"messages": [{"role": "user", "content": "caf\xe9"}]}')
    with pytest.raises(TraceFormatError, match="UTF-8"):
        open_source(path)


# -- ids ---------------------------------------------------------------------------------------


def test_reused_call_ids_are_made_unique_with_their_results() -> None:
    msgs = (
        Message("assistant", "", tool_calls=(ToolCall("c", "a"),)),
        Message("tool", "1", tool_call_id="c"),
        Message("assistant", "", tool_calls=(ToolCall("c", "b"), ToolCall("d", "b"))),
        Message("tool", "2", tool_call_id="c"),
        Message("tool", "3", tool_call_id="d"),
    )
    before = Trace("t", msgs)
    assert {p.code for p in validate(before)} == {"duplicate_call_id", "orphan_tool_result"}
    after = unique_call_ids(before)
    assert validate(after) == []
    assert after.messages[2].tool_calls[0].id == after.messages[3].tool_call_id == "c~2"
    assert after.messages[2].tool_calls[0].meta["recorded_id"] == "c"
    assert after.messages[4].tool_call_id == "d"
    assert unique_call_ids(after) is after  # nothing to repair: the same object


def test_trace_ids_are_made_unique_across_files_and_renames_reported() -> None:
    seen: set[str] = set()
    renamed: list[tuple[str, str]] = []
    first = list(unique_ids([Trace("a", ()), Trace("a", ())], seen, renamed))
    second = list(unique_ids([Trace("a", ())], seen, renamed))
    assert [t.id for t in first + second] == ["a", "a~2", "a~3"]
    assert renamed == [("a", "a~2"), ("a", "a~3")]


# -- fuzzing: truncated, mistyped and mutated real shapes ------------------------------------------


def _sample_tau2(root: Path) -> Any:
    data = json.loads(next(root.glob("tau2-bench/*.json")).read_text())
    data["simulations"] = [
        dict(data["simulations"][0], messages=data["simulations"][0]["messages"][:16])
    ]
    data["tasks"] = data["tasks"][:1]
    data["info"]["environment_info"]["policy"] = "Be kind."
    return data


def _sample_tau(root: Path) -> Any:
    data = json.loads(next(root.glob("tau-bench/*.json")).read_text())
    return [dict(data[0], traj=data[0]["traj"][:9], info={})]


def _sample_mini(root: Path) -> Any:
    data = json.loads(next(root.glob("mini-swe-agent/*")).read_text())
    return dict(
        data, messages=data["messages"][:6] + data["messages"][-1:], info={"mini_version": "2"}
    )


def _sample_swe(root: Path) -> Any:
    path = next(root.rglob("*function_calling__install-1/*.traj"))
    data = json.loads(path.read_text())
    return dict(
        data, history=data["history"][:7], trajectory=data["trajectory"][:1], replay_config={}
    )


def _sample_openhands(root: Path) -> Any:
    for line in next(root.glob("openhands-benchmarks/*.jsonl")).read_text().splitlines():
        record = json.loads(line)
        ids = [e.get("llm_response_id") for e in record["history"] if e["kind"] == "ActionEvent"]
        if len(ids) != len(set(ids)):  # a record with parallel calls
            return dict(record, history=record["history"][:8], instance={}, metadata={})
    raise AssertionError("no OpenHands record with parallel calls")


def _sample_chat(root: Path) -> Any:
    return {
        "id": "c1",
        "tools": [
            {"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}
        ],
        "messages": [
            {"role": "system", "content": "s"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "hi"},
                    {"type": "image_url", "image_url": {"url": "u"}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "reasoning_content": "think",
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
                ],
                "usage": {
                    "prompt_tokens": 10,
                    "completion_tokens": 2,
                    "prompt_tokens_details": {"cached_tokens": 4},
                },
            },
            {"role": "tool", "tool_call_id": "a", "content": "x"},
        ],
    }


SAMPLES: dict[str, Callable[[Path], Any]] = {
    "tau2_bench": _sample_tau2,
    "tau_bench": _sample_tau,
    "mini_swe_agent": _sample_mini,
    "swe_agent": _sample_swe,
    "openhands": _sample_openhands,
    "openai_chat": _sample_chat,
}


class Samples(dict[str, Any]):
    """Small real excerpts per format (short repr: hypothesis prints test arguments)."""

    def __repr__(self) -> str:
        return f"<samples of {', '.join(self)}>"


@pytest.fixture(scope="module")
def samples(shared_traces: Path) -> Samples:
    return Samples({name: build(shared_traces) for name, build in SAMPLES.items()})


def test_fuzz_samples_import_cleanly_before_mutation(samples: dict[str, Any]) -> None:
    for name, doc in samples.items():
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "sample.json"
            path.write_text(json.dumps(doc))
            traces, report = import_file(path)
            assert report.format == name and traces


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=5,
)


@st.composite
def mutations(draw: st.DrawFn, doc: Any) -> Any:
    """``doc`` with one to three nodes replaced by random JSON, deleted, or emptied."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths(doc)))
        action = draw(st.sampled_from(["replace", "delete", "empty"]))
        if not path:
            doc = draw(JSON_VALUES) if action == "replace" else ({} if action == "empty" else [])
            continue
        parent = doc
        try:
            for step in path[:-1]:
                parent = parent[step]
            if action == "delete":
                del parent[path[-1]]
            else:
                parent[path[-1]] = (
                    draw(JSON_VALUES) if action == "replace" else type(parent[path[-1]])()
                )
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed this path
    return doc


def _import_or_clear_error(path: Path, fmt: str) -> None:
    """Either the file imports (and round-trips), or the error is a CtxbenchError naming it."""
    try:
        traces, _ = import_file(path, fmt)
    except CtxbenchError as exc:
        assert exc.path == str(path), exc
        assert exc.key is not None or exc.line is not None, exc  # it says where
        assert "unexpected shape" not in str(exc), exc  # a located error, not the safety net
        return
    out = path.with_suffix(".out.jsonl")
    write_traces(out, traces)
    assert list(read_traces(out)) == traces


@pytest.mark.parametrize("name", list(SAMPLES))
@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_fuzzed_inputs_give_a_ctxbench_error_never_another_exception(
    name: str, samples: dict[str, Any], data: st.DataObject
) -> None:
    doc = data.draw(mutations(samples[name]))
    fmt = data.draw(st.sampled_from(["auto", name]))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzzed.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        _import_or_clear_error(path, fmt)


@pytest.mark.parametrize("name", list(SAMPLES))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_truncated_files_give_a_ctxbench_error(
    name: str, samples: dict[str, Any], data: st.DataObject
) -> None:
    text = json.dumps(samples[name], indent=1)
    cut = data.draw(st.integers(0, len(text) - 1))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cut.json"
        path.write_text(text[:cut], encoding="utf-8")
        with pytest.raises(CtxbenchError) as err:
            import_file(path, data.draw(st.sampled_from(["auto", name])))
        assert err.value.path == str(path)


# -- hardening: damaged bytes and extreme values (see tests/hardening.py) --------------------------


@pytest.mark.parametrize("name", list(SAMPLES))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_bytes_import_or_name_the_file_and_fix(
    name: str, samples: dict[str, Any], data: st.DataObject
) -> None:
    from tests.hardening import assert_names_the_problem, damaged

    text = json.dumps(samples[name], indent=1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / data.draw(st.sampled_from(["damaged.json", "damaged.jsonl"]))
        path.write_bytes(data.draw(damaged(text)))
        try:
            import_file(path, data.draw(st.sampled_from(["auto", name])))
        except CtxbenchError as exc:
            assert_names_the_problem(exc, path)


@pytest.mark.parametrize("name", list(SAMPLES))
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_extreme_values_import_or_name_their_json_path(
    name: str, samples: dict[str, Any], data: st.DataObject
) -> None:
    from tests.hardening import assert_names_the_problem, dumps, mutated

    doc = data.draw(mutated(samples[name]))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "extreme.json"
        path.write_text(dumps(doc), encoding="utf-8")
        try:
            traces, _ = import_file(path, data.draw(st.sampled_from(["auto", name])))
        except CtxbenchError as exc:
            assert_names_the_problem(exc, path)
            assert "unexpected shape" not in str(exc), exc  # a located error, not the safety net
            return
        out = path.with_suffix(".out.jsonl")
        write_traces(out, traces)
        assert [trace_line(t) for t in read_traces(out)] == [trace_line(t) for t in traces]
