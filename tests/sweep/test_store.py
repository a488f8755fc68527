"""The sweep's writer: ``finalize`` reads back the journal lines it appended in this process
without checking their shape again, and checks any line whose bytes changed since."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.engine.events import Event, event_line
from ctxbench.errors import ResultsError
from ctxbench.results import journal
from ctxbench.results.journal import record_line
from ctxbench.results.layout import EVENTS, JOURNAL
from ctxbench.sweep.store import ResultsWriter
from tests.factories import tool_trace


def _cell() -> tuple[str, str, list[dict[str, object]]]:
    trace = tool_trace(6)
    spec = resolve_spec(
        RunSpec(trace_id=trace.id, trace_hash=trace.content_hash, strategy="none", window=8000)
    )
    output = run_spec(spec, trace)
    events = [e.to_dict() for e in output.events]
    return spec.run_id, record_line(output.result, events), events


def test_a_line_read_back_as_written_is_not_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id, record, events = _cell()
    with ResultsWriter(tmp_path, resume=False) as writer:
        writer.append([(run_id, record, {})])

        def check(_: object) -> str:
            raise AssertionError("an intact line of this writer was checked again")

        monkeypatch.setattr(journal, "_record_problem", check)
        assert writer.finalize([run_id]) == 0
    lines = (tmp_path / EVENTS).read_text(encoding="utf-8").splitlines()
    assert lines == [event_line(Event.from_dict(e), run_id=run_id) for e in events]


def test_a_line_changed_on_disk_since_it_was_written_is_checked(tmp_path: Path) -> None:
    run_id, record, _ = _cell()
    with ResultsWriter(tmp_path, resume=False) as writer:
        writer.append([(run_id, record, {})])
        path = tmp_path / JOURNAL
        data = path.read_bytes()
        assert json.loads(data)["events"][0]["call"] == 0
        path.write_bytes(data.replace(b'"call":', b'"cal!":', 1))  # still JSON, not a record
        with pytest.raises(ResultsError, match="corrupt journal line") as info:
            writer.finalize([run_id])
    assert info.value.line == 1
