"""Reading a results directory for the report: rows, events reduced per run, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxbench.cell.spec import RunSpec
from ctxbench.engine.events import Event
from ctxbench.errors import CtxbenchError
from ctxbench.report.results import digest_events, load_results
from tests.report_data import result_row


def test_events_reduce_to_calls_compactions_probes_and_summary_tokens_per_run() -> None:
    events: list[dict[str, object]] = [
        {"run_id": "r", "type": "context.status", "call": 0, "step": 0, "used": 1},
        {
            "run_id": "r",
            "type": "provider.call",
            "call": 0,
            "step": 1,
            "attempt": 0,
            "estimated_tokens": 80,
            "true_tokens": 120,
            "limit": 100,
            "ok": False,
        },
        {"run_id": "r", "type": "compaction", "call": 0, "step": 2, "layer": "layer4"},
        {
            "run_id": "r",
            "type": "summary",
            "call": 0,
            "step": 3,
            "input_tokens": 500,
            "output_tokens": 40,
        },
        {
            "run_id": "s",
            "type": "probe",
            "call": 3,
            "step": 0,
            "probe_id": "p",
            "kind": "recall",
            "outcome": "lost",
        },
    ]
    digest = digest_events((str(e.pop("run_id")), Event.from_dict(e)) for e in events)
    assert digest["r"].calls[0].true == 120 and not digest["r"].calls[0].ok
    assert digest["r"].compactions == ((0, "layer4"),)
    assert (digest["r"].summary_input_tokens, digest["r"].summary_output_tokens) == (500, 40)
    assert digest["s"].probes[0].outcome == "lost"


def _row(trace_hash: str) -> dict[str, object]:
    """A row whose spec is a real run spec (the reader checks it); its run id is the spec's."""
    spec = RunSpec("t", trace_hash, "none", {}, 10)
    row = result_row(
        run_id=spec.run_id,
        trace_id="t",
        strategy="none",
        window=10,
        spec=json.dumps(spec.to_dict()),
    )
    return {**row.to_row(), "retention": float("nan")}


def test_a_folder_of_jsonl_rows_and_events_reads_back(tmp_path: Path) -> None:
    a, b = sorted((_row("h1"), _row("h2")), key=lambda r: str(r["run_id"]))
    (tmp_path / "results.jsonl").write_text(
        json.dumps(b).replace("NaN", "null") + "\n" + json.dumps(a).replace("NaN", "null") + "\n"
    )
    (tmp_path / "events.jsonl").write_text(
        f'{{"run_id":"{a["run_id"]}","type":"context.status","call":0,"step":0}}\n'
        f'{{"run_id":"{a["run_id"]}","type":"provider.call","call":0,"step":1,"attempt":0,'
        '"estimated_tokens":1,"true_tokens":2,"limit":9,"ok":true}\n'
    )
    results = load_results(tmp_path)
    assert [r.run_id for r in results.rows] == [a["run_id"], b["run_id"]]
    assert results.rows[0].retention is None
    assert results.has_events and len(results.run_events(str(a["run_id"])).calls) == 1
    assert results.run_events(str(b["run_id"])).calls == ()


def test_a_corrupt_events_line_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "results.jsonl").write_text(json.dumps(_row("h")).replace("NaN", "null") + "\n")
    (tmp_path / "events.jsonl").write_text('{"run_id":"a","type":"probe"\n')
    with pytest.raises(CtxbenchError, match=r"events.jsonl:1: malformed JSON"):
        load_results(tmp_path)


def test_a_folder_without_results_says_how_to_make_them(tmp_path: Path) -> None:
    with pytest.raises(CtxbenchError, match="ctxbench sweep"):
        load_results(tmp_path)
    with pytest.raises(CtxbenchError, match="not a results directory"):
        load_results(tmp_path / "missing")


def test_rows_that_are_not_ctxbench_rows_are_refused(tmp_path: Path) -> None:
    (tmp_path / "results.jsonl").write_text('{"name": "x"}\n')
    with pytest.raises(CtxbenchError, match="row 1 has no run_id"):
        load_results(tmp_path)


def test_a_row_missing_a_column_is_one_error_naming_it(tmp_path: Path) -> None:
    row = _row("h")
    del row["calls"]
    (tmp_path / "results.jsonl").write_text(json.dumps(row).replace("NaN", "null") + "\n")
    with pytest.raises(CtxbenchError, match="a row has no column 'calls'"):
        load_results(tmp_path)
