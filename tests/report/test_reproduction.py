"""The report's "reproduction vs release" section: pairs found by release, compared from the
recorded events with parity's functions, on a real results directory holding ``hermes``
(release 0.19.0) and ``shipped:hermes@0.19.0``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxbench.engine.result import RunResult
from ctxbench.report.reproduction import release_of, release_pairs
from ctxbench.shipped.releases import HERMES
from tests.report_data import result_row
from tests.shipped_cases import needs, scenario_trace


def _row(run_id: str, strategy: str, **changes: Any) -> RunResult:
    fields: dict[str, Any] = {
        "trace_id": "t",
        "window": 16384,
        "reserved": 4096,
        "counter": "o200k",
    }
    fields.update(changes)
    return result_row(run_id=run_id, strategy=strategy, **fields)


def test_pairs_are_a_reproduction_and_its_release_on_the_same_trace_window_and_counter() -> None:
    ours = json.dumps({"release": "0.8.2"})
    rows = [
        _row("a", "dbgpt", params=ours),
        _row("b", "shipped:dbgpt@0.8.2"),
        _row("c", "shipped:dbgpt@0.8.2", window=32768),  # another window: no pair
        _row("d", "dbgpt", params=json.dumps({"release": "design"})),  # another release
        _row("e", "shipped:hermes@0.19.0"),  # another framework
        _row("f", "dbgpt", params=ours, error="boom"),  # raised: left out
        _row("g", "dbgpt", params=ours, counter="qwen"),  # another counter
    ]
    assert release_of(rows[0]) == release_of(rows[1]) == ("dbgpt", "0.8.2")
    assert release_of(_row("x", "none")) is None
    pairs = release_pairs(rows)
    assert [(p.reproduction_run, p.shipped_run) for p in pairs] == [("a", "b")]


@needs(HERMES)
def test_a_results_directory_with_both_gets_the_section(tmp_path: Path) -> None:
    from ctxbench.cell.spec import RunSpec
    from ctxbench.decisions.verdict import Verdict
    from ctxbench.engine import events as ev
    from ctxbench.formats.canonical import write_traces
    from ctxbench.report.results import load_results
    from ctxbench.report.write import compare_releases, write_report
    from ctxbench.results import ResultsDir
    from ctxbench.shipped import process
    from ctxbench.sweep import run_sweep
    from ctxbench.sweep.spec import StrategyGrid, SweepSpec, TraceSource

    traces = tmp_path / "traces.jsonl"
    write_traces(traces, [scenario_trace("coding_agent", 40, seed=1)])
    spec = SweepSpec(
        traces=(TraceSource(path=str(traces)),),
        strategies=(
            StrategyGrid("hermes", {"release": "0.19.0"}),
            StrategyGrid("shipped:hermes@0.19.0"),
        ),
        windows=(16384,),
        reserved=(RunSpec.reserved,),
        keep_files="none",
    )
    try:
        run_sweep(spec, tmp_path / "out")
    finally:
        process.shutdown()
    (compared,) = compare_releases(load_results(tmp_path / "out"))
    p = compared.parity
    # the counts against the events read directly: the calls failed on one side only
    store = ResultsDir(tmp_path / "out")
    failed = {
        run: {e.call for _, e in store.typed_events(run) if e.type == ev.CALL_FAILED}
        for run in (compared.pair.reproduction_run, compared.pair.shipped_run)
    }
    # a call is compared when both sides made it: sent, or failed before sending (aborted)
    called = [
        {e.call for _, e in store.typed_events(run) if e.type == ev.PROVIDER_CALL} | failed[run]
        for run in failed
    ]
    both = called[0] & called[1]
    ours, theirs = (failed[run] & both for run in failed)
    assert p.calls == len(both) > 0
    assert p.same_failed == len(both) - len(ours ^ theirs)
    assert p.same_kept == p.calls  # not in the events: never counted as a difference
    written = write_report(tmp_path / "out", tmp_path / "report.html", **Verdict().report_args())
    page = (tmp_path / "report.html").read_text("utf-8")
    assert 'id="reproduction-vs-release"' in page and "hermes@0.19.0" in page
    assert written.bytes > 0
    if p.first_divergence is not None:
        assert f"call {p.first_divergence['call']}:" in page


@pytest.mark.parametrize("name", ["shipped:agentscope@2.0.11"])
def test_a_shipped_name_names_its_reproduction_and_release(name: str) -> None:
    assert release_of(_row("s", name)) == ("agentscope", "2.0.11")
