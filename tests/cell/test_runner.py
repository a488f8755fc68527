"""The single replay: one front door for trace files (canonical or recorded, auto-detected),
and one runner whose row is computed once, after the clock reading."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.cell.traces import CANONICAL, load_trace, open_traces
from ctxbench.errors import TraceFormatError
from ctxbench.formats.canonical import write_traces
from ctxbench.sweep.spec import SweepSpec
from tests.factories import tool_trace
from tests.hardening import run_main

TAU2 = "tau2-bench/2025-08-10T02-44-06.496849_telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.json"


def test_canonical_and_recorded_files_open_through_one_door(
    shared_traces: Path, tmp_path: Path
) -> None:
    canonical = tmp_path / "t.jsonl"
    write_traces(canonical, [tool_trace(3)])
    opened = open_traces(canonical)
    assert opened.format == CANONICAL and opened.detected
    assert [t.id for t in opened.traces()] == ["t"]
    recorded = open_traces(shared_traces / TAU2)
    assert recorded.format == "tau2_bench" and recorded.detected
    first = next(recorded.traces())
    assert load_trace(recorded.address, first.id).content_hash == first.content_hash


def test_a_recorded_file_asked_for_as_canonical_names_its_format_and_the_import_command(
    shared_traces: Path,
) -> None:
    with pytest.raises(TraceFormatError) as info:
        open_traces(shared_traces / TAU2, CANONICAL)
    text = str(info.value)
    assert "tau2_bench" in text and "ctxbench import" in text and len(text.splitlines()) <= 2


def test_run_replays_a_recorded_file_and_its_row_reruns(
    shared_traces: Path, tmp_path: Path
) -> None:
    local = tmp_path / "tau2.json"
    shutil.copy(shared_traces / TAU2, local)
    rows = tmp_path / "rows.jsonl"
    code, err = run_main(["run", str(local), "-s", "none", "-w", "32768", "--out", str(rows)])
    assert code == 0, err
    first = json.loads(rows.read_text("utf-8").splitlines()[0])
    assert "format=tau2_bench" in json.loads(first["spec"])["trace_source"]
    (tmp_path / "one.jsonl").write_text(json.dumps(first) + "\n", "utf-8")
    code, err = run_main(["run", "--from-row", str(tmp_path / "one.jsonl")])
    assert code == 0 and "reproduces" in err, err


def test_the_row_is_computed_once_with_the_clock_reading() -> None:
    trace = tool_trace(4)
    spec = resolve_spec(
        RunSpec(trace_id=trace.id, trace_hash=trace.content_hash, strategy="none", window=9000)
    )
    output = run_spec(spec, trace)
    assert "result" not in output.__dict__  # not computed yet: nothing read it
    assert output.result.replay_seconds == output.replay_seconds > 0
    assert output.result is output.result


def test_sweep_defaults_are_the_single_replays() -> None:
    spec = RunSpec(trace_id="t", trace_hash="h", strategy="none")
    fields = SweepSpec.__dataclass_fields__
    assert fields["reserved"].default == (spec.reserved,) == (RunSpec.reserved,)
    assert fields["counters"].default == (spec.counter,) == (RunSpec.counter,)
    assert fields["summarizer"].default == spec.summarizer
    assert fields["error_style"].default == spec.error_style
    assert fields["seed"].default == spec.seed
