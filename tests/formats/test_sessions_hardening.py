"""Bad recorded sessions: Claude Code and Codex JSON Lines, OpenHands completion logs, tau2
results with Claude thinking.

Fuzzed from the committed excerpts (``tests/golden/sessions``) in the style of
``tests/formats/test_inputs_hardening.py``: truncated lines, values replaced or deleted, ids removed, message
ids written again after another call, entry types nobody knows, damaged bytes. Either the file
imports (and round-trips), or the error is ctxbench's own naming the file, the line or JSON path
and the fix: never a traceback, never the importer's catch-all "unexpected shape".
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

from ctxbench.errors import CtxbenchError
from ctxbench.formats.canonical import read_traces, trace_line, write_traces
from ctxbench.formats.importing import ImportReport, import_file
from tests import GOLDEN
from tests.hardening import assert_cli_reports, assert_names_the_problem, damaged, dumps, mutated

SESSIONS = GOLDEN / "sessions"
JSONL: dict[str, Path] = {
    "claude_code": SESSIONS / "claude_code_session.jsonl",
    "codex": SESSIONS / "codex_rollout.jsonl",
}
JSON: dict[str, Path] = {
    "openhands_completions": sorted((SESSIONS / "openhands_logs").glob("*.json"))[0],
    "tau2_bench": SESSIONS / "tau2_claude_thinking.json",
}
#: JSON path of the id each format needs on a line, and the entries that carry it
IDS = {
    "claude_code": (("message", "id"), "assistant"),
    "codex": (("payload", "call_id"), "response_item"),
}
FUZZ = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def lines_of(name: str) -> list[str]:
    return JSONL[name].read_text("utf-8").splitlines()


def imports_or_explains(path: Path, fmt: str) -> ImportReport | None:
    """The import's report (after checking the traces round-trip), or None after checking the
    error names the file, where in it, and the fix."""
    try:
        traces, report = import_file(path, fmt)
    except CtxbenchError as exc:
        assert_names_the_problem(exc, path)
        assert "unexpected shape" not in str(exc), exc  # a located error, not the safety net
        return None
    out = path.with_suffix(".out.jsonl")
    write_traces(out, traces)
    assert [trace_line(t) for t in read_traces(out)] == [trace_line(t) for t in traces]
    return report


def write_lines(folder: Path, name: str, lines: list[str]) -> Path:
    path = folder / f"{name}.jsonl"
    path.write_text("".join(line + "\n" for line in lines), "utf-8")
    return path


def test_the_excerpts_import_cleanly(scratch: Path) -> None:
    for name, path in {**JSONL, **JSON}.items():
        report = imports_or_explains(path, "auto")
        assert report is not None and report.format == name and report.model_calls > 0


@pytest.mark.parametrize("name", list(JSONL))
@FUZZ
@given(data=st.data())
def test_a_truncated_line_is_named(name: str, scratch: Path, data: st.DataObject) -> None:
    lines = lines_of(name)
    i = data.draw(st.integers(0, len(lines) - 1))
    cut = data.draw(st.integers(1, len(lines[i]) - 1))
    path = write_lines(scratch, name, [*lines[:i], lines[i][:cut], *lines[i + 1 :]])
    with pytest.raises(CtxbenchError) as err:
        import_file(path, data.draw(st.sampled_from(["auto", name])))
    assert_names_the_problem(err.value, path)
    assert err.value.line == i + 1 or (i == 0 and "cannot tell the format" in err.value.message)


@pytest.mark.parametrize("name", list(JSONL))
@FUZZ
@given(data=st.data())
def test_values_of_one_line_replaced_or_deleted_import_or_name_the_line(
    name: str, scratch: Path, data: st.DataObject
) -> None:
    lines = lines_of(name)
    i = data.draw(st.integers(1, len(lines) - 1))  # the first line decides the format
    value = data.draw(mutated(json.loads(lines[i])))
    path = write_lines(scratch, name, [*lines[:i], dumps(value), *lines[i + 1 :]])
    imports_or_explains(path, data.draw(st.sampled_from(["auto", name])))


@pytest.mark.parametrize("name", list(JSONL))
@FUZZ
@given(data=st.data())
def test_a_missing_id_names_its_line_and_key(name: str, scratch: Path, data: st.DataObject) -> None:
    (parent, key), kind = IDS[name]
    lines = lines_of(name)
    carriers = [
        i
        for i, line in enumerate(lines)
        if json.loads(line).get("type") == kind and key in json.loads(line).get(parent, {})
    ]
    i = data.draw(st.sampled_from(carriers))
    entry = json.loads(lines[i])
    del entry[parent][key]
    path = write_lines(scratch, name, [*lines[:i], json.dumps(entry), *lines[i + 1 :]])
    with pytest.raises(CtxbenchError) as err:
        import_file(path, name)
    assert_names_the_problem(err.value, path)
    assert err.value.line == i + 1 and err.value.key is not None
    assert key in err.value.key or repr(key) in err.value.message


@FUZZ
@given(data=st.data())
def test_a_message_id_written_again_later_is_named_or_merged(
    scratch: Path, data: st.DataObject
) -> None:
    lines = lines_of("claude_code")
    entries = [json.loads(line) for line in lines]
    assistants = [i for i, e in enumerate(entries) if e["type"] == "assistant"]
    source = data.draw(st.sampled_from(assistants))
    at = data.draw(st.integers(source + 1, len(lines)))
    path = write_lines(scratch, "claude_code", [*lines[:at], lines[source], *lines[at:]])
    try:
        import_file(path, "claude_code")
    except CtxbenchError as exc:
        assert_names_the_problem(exc, path)
        assert exc.line == at + 1 and "appears again" in exc.message, exc
        return
    # accepted only when the copy joins its own call (no other call started in between)
    own = entries[source]["message"]["id"]
    between = [entries[j]["message"]["id"] for j in assistants if source < j < at]
    assert all(mid == own for mid in between)


@pytest.mark.parametrize("name", list(JSONL))
@FUZZ
@given(data=st.data(), kind=st.text(min_size=1, max_size=12))
def test_unknown_entry_types_are_counted_or_named(
    name: str, scratch: Path, data: st.DataObject, kind: str
) -> None:
    lines = lines_of(name)
    i = data.draw(st.integers(1, len(lines) - 1))
    entry: dict[str, Any] = json.loads(lines[i])
    known = {"user", "assistant", "system", "progress", "file-history-snapshot", "summary"}
    known |= {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
    if kind in known:
        return
    entry["type"] = kind
    path = write_lines(scratch, name, [*lines[:i], json.dumps(entry), *lines[i + 1 :]])
    report = imports_or_explains(path, name)
    if report is not None:
        assert report.unmapped_entries.get(kind, 0) >= 1


@pytest.mark.parametrize("name", [*JSONL, *JSON])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_bytes_import_or_name_the_file_and_fix(
    name: str, scratch: Path, data: st.DataObject
) -> None:
    source = {**JSONL, **JSON}[name]
    path = scratch / f"damaged{source.suffix}"
    path.write_bytes(data.draw(damaged(source.read_text("utf-8"))))
    try:
        import_file(path, data.draw(st.sampled_from(["auto", name])))
    except CtxbenchError as exc:
        assert_names_the_problem(exc, path)


@pytest.mark.parametrize("name", list(JSON))
@FUZZ
@given(data=st.data())
def test_json_logs_with_values_replaced_import_or_name_their_json_path(
    name: str, scratch: Path, data: st.DataObject
) -> None:
    value = data.draw(mutated(json.loads(JSON[name].read_text("utf-8"))))
    folder = scratch / "logs"
    folder.mkdir(exist_ok=True)
    path = folder / JSON[name].name  # the name keeps the log's <model>-<timestamp> shape
    path.write_text(dumps(value), "utf-8")
    imports_or_explains(path, data.draw(st.sampled_from(["auto", name])))


def test_the_import_command_reports_a_bad_session_line_without_a_traceback(tmp_path: Path) -> None:
    lines = lines_of("claude_code")
    path = write_lines(tmp_path, "session", [*lines[:5], lines[5][:40], *lines[6:]])
    assert_cli_reports(["import", str(path), "-o", str(tmp_path / "out.jsonl")], path)
    assert_cli_reports(["recorded", str(path)], path)
