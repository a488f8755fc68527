"""The results package: one writer (``run --out`` and sweeps share the Arrow schema), one
reader raising ResultsError with the file, line and fix, and typed rows and events."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ctxbench.engine.events import Event
from ctxbench.engine.result import RunResult
from ctxbench.errors import ResultsError
from ctxbench.formats.canonical import write_traces
from ctxbench.results import ResultsDir, read_results
from ctxbench.results.layout import EVENTS, JOURNAL, RESULTS
from ctxbench.testing import run_sweep
from tests.factories import tool_trace
from tests.hardening import run_main
from tests.results.test_reader_hardening import SWEEP  # the same small sweep, damaged there


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("swept")
    write_traces(root / "traces.jsonl", [tool_trace(6, output="x" * 800, trace_id="a")])
    (root / "sweep.toml").write_text(SWEEP, "utf-8")
    run_sweep(root / "sweep.toml", root / "results")
    return root


def test_run_out_parquet_has_the_sweeps_schema(swept: Path) -> None:
    out = swept / "run.parquet"
    code, err = run_main(
        ["run", str(swept / "traces.jsonl"), "-s", "sliding_window", "--set", "keep_rounds=2",
         "-w", "3000", "--reserved", "200", "-c", "chars4", "--out", str(out)]
    )  # fmt: skip
    assert code == 0, err
    assert pq.read_schema(out).equals(pq.read_schema(swept / "results" / RESULTS))
    swept_ids = {r.run_id for r in ResultsDir(swept / "results").results()}
    assert read_results(out)[0].run_id in swept_ids  # the same cell, by id


def test_rows_and_events_read_back_typed(swept: Path) -> None:
    store = ResultsDir(swept / "results")
    results = store.results()
    assert [r.run_id for r in results] == [r.run_id for r in store.results()]
    assert all(isinstance(r, RunResult) for r in results)
    typed = list(store.typed_events(results[0].run_id))
    assert typed and all(isinstance(e, Event) and rid == results[0].run_id for rid, e in typed)
    assert sum(e.type == "provider.call" for _, e in typed) >= results[0].calls


@pytest.mark.parametrize("damaged", [JOURNAL, EVENTS])
def test_every_read_failure_is_one_results_error_with_file_line_and_fix(
    swept: Path, tmp_path: Path, damaged: str
) -> None:
    import shutil

    results = tmp_path / "results"
    shutil.copytree(swept / "results", results)
    if damaged == JOURNAL:
        (results / RESULTS).unlink()
        (results / EVENTS).unlink()
    target = results / damaged
    target.write_text('{"run_id":"zz", "row": \n' + target.read_text("utf-8"), "utf-8")
    with pytest.raises(ResultsError) as info:
        store = ResultsDir(results)
        store.results()
        list(store.typed_events())
    assert info.value.path == str(target) and info.value.line == 1 and info.value.hint
