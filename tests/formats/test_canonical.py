"""Reading and writing the canonical ctxbench.trace/1 format."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ctxbench.errors import TraceFormatError
from ctxbench.formats.canonical import read_traces, schema, write_traces
from tests.factories import react_trace, tool_trace


def test_jsonl_round_trip_gives_equal_traces(tmp_path: Path) -> None:
    traces = [tool_trace(3, calls=2, trace_id="a"), react_trace(2, trace_id="b")]
    path = tmp_path / "t.jsonl"
    assert write_traces(path, traces) == 2
    assert list(read_traces(path)) == traces


def test_gzip_and_single_json_files_are_read(tmp_path: Path) -> None:
    trace = tool_trace(1)
    write_traces(tmp_path / "t.jsonl.gz", [trace])
    assert list(read_traces(tmp_path / "t.jsonl.gz")) == [trace]
    (tmp_path / "one.json").write_text(json.dumps(trace.to_dict(), indent=2), "utf-8")
    assert list(read_traces(tmp_path / "one.json")) == [trace]


def test_writing_is_deterministic(tmp_path: Path) -> None:
    trace = tool_trace(5)
    write_traces(tmp_path / "a.jsonl.gz", [trace])
    write_traces(tmp_path / "b.jsonl.gz", [trace])
    assert (tmp_path / "a.jsonl.gz").read_bytes() == (tmp_path / "b.jsonl.gz").read_bytes()


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = json.dumps(tool_trace(1).to_dict())
    path.write_text(good + "\n" + good[:40] + "\n", "utf-8")
    with pytest.raises(TraceFormatError) as info:
        list(read_traces(path))
    assert info.value.path == str(path) and info.value.line == 2
    assert "malformed JSON" in str(info.value) and "bad.jsonl:2" in str(info.value)


def test_wrong_shape_names_the_json_path(tmp_path: Path) -> None:
    data = tool_trace(1).to_dict()
    data["messages"][2]["tool_calls"] = "not a list"
    path = tmp_path / "shape.jsonl"
    path.write_text(json.dumps(data) + "\n", "utf-8")
    with pytest.raises(TraceFormatError) as info:
        list(read_traces(path))
    assert info.value.key == "$.messages[2]" and info.value.line == 1


def test_other_schema_is_refused_with_the_import_hint(tmp_path: Path) -> None:
    path = tmp_path / "other.jsonl"
    path.write_text(
        json.dumps({"schema": "something/2", "id": "x", "messages": []}) + "\n", "utf-8"
    )
    with pytest.raises(TraceFormatError, match="ctxbench import"):
        list(read_traces(path))


def test_non_utf8_and_truncated_gzip_give_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "latin.jsonl").write_bytes(b'{"id": "\xe9"}\n')
    with pytest.raises(TraceFormatError, match="UTF-8"):
        list(read_traces(tmp_path / "latin.jsonl"))
    blob = gzip.compress(json.dumps(tool_trace(2).to_dict()).encode())
    (tmp_path / "cut.jsonl.gz").write_bytes(blob[: len(blob) // 2])
    with pytest.raises(TraceFormatError):
        list(read_traces(tmp_path / "cut.jsonl.gz"))


def test_missing_file_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="no such file"):
        list(read_traces(tmp_path / "nope.jsonl"))


def test_shipped_schema_accepts_written_traces() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    doc = schema()
    jsonschema.validate(tool_trace(2, calls=2).to_dict(), doc)
    jsonschema.validate(react_trace(2).to_dict(), doc)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"id": "x", "messages": [{"role": "robot"}]}, doc)
