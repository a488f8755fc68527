"""Hardening: the tracebacks issue 22 found are one ``error:`` line with exit 2.

``"prices": null`` in ``sweep.json`` on ``run --from-row``; ``params: []`` in a row's spec on
``check`` (it exited 1, the regression code, with an AttributeError); a 10^9 format width in
``summary_template`` (MemoryError); a single-line file over the line limit (MemoryError at
2.1 GB RSS per GB); ``trace_source: /dev/zero`` in a results directory on ``report`` (memory
exhausted). The "a counter that is not a counter" case is in tests/test_registry_hardening.py.
"""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from ctxbench import jsontext
from ctxbench.cell.spec import RunSpec
from ctxbench.formats.canonical import write_traces
from ctxbench.limits import MAX_FORMAT_WIDTH
from ctxbench.results.layout import FINAL_FILES, JOURNAL, SPEC_FILE
from ctxbench.testing import run_sweep, write_baseline
from tests.factories import tool_trace
from tests.hardening import run_main, small_sweep


@pytest.fixture()
def results(tmp_path: Path) -> Path:
    small_sweep(tmp_path)
    return run_sweep(tmp_path / "sweep.toml", tmp_path / "results")


def assert_one_error_line(code: int, err: str, *words: str) -> None:
    assert code == 2, err
    assert err.startswith("error: ") and "Traceback" not in err, err
    for word in words:
        assert word in err.splitlines()[0], (word, err)


def rewrite_rows(results: Path, change: Any) -> str:
    """Apply ``change(spec dict)`` to every journal row, run ids recomputed (as a hand edit
    would); the final files are removed so readers use the journal. Returns a run id."""
    lines = []
    for line in (results / JOURNAL).read_text("utf-8").splitlines():
        record = json.loads(line)
        data = {k: v for k, v in json.loads(record["row"]["spec"]).items() if k != "run_id"}
        change(data)
        try:
            run_id = RunSpec(**data).run_id
        except (TypeError, ValueError):  # no id can be computed: any id will do
            run_id = "0" * 16
        record["row"]["spec"] = json.dumps({**data, "run_id": run_id})
        record["row"]["run_id"] = record["run_id"] = run_id
        lines.append(json.dumps(record, separators=(",", ":")))
    (results / JOURNAL).write_text("\n".join(lines) + "\n", "utf-8")
    for name in FINAL_FILES:
        (results / name).unlink(missing_ok=True)
    return str(json.loads(lines[0])["run_id"])


def set_prices(results: Path, prices: Any) -> None:
    doc = json.loads((results / SPEC_FILE).read_text("utf-8"))
    doc["spec"]["prices"] = prices
    (results / SPEC_FILE).write_text(json.dumps(doc), "utf-8")


def first_run_id(results: Path) -> str:
    return str(json.loads((results / JOURNAL).read_text("utf-8").splitlines()[0])["run_id"])


def test_null_prices_in_sweep_json_rerun_without_prices(results: Path) -> None:
    set_prices(results, None)
    code, err = run_main(["run", "--from-row", str(results), "--run-id", first_run_id(results)])
    assert code == 0 and "reproduces the recorded row" in err, err  # before: TypeError


@pytest.mark.parametrize("prices", ["cheap", [1, 2], {"chars4": "free"}, {"chars4": {"x": 1}}])
def test_prices_that_are_not_tables_are_one_error_line(results: Path, prices: Any) -> None:
    set_prices(results, prices)
    code, err = run_main(["run", "--from-row", str(results), "--run-id", first_run_id(results)])
    assert_one_error_line(code, err, str(results / SPEC_FILE))


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("params", []),
        ("params", "x"),
        ("window", "3000"),
        ("summarizer_params", [1]),
        ("strategy", 7),
    ],
)
def test_a_spec_with_a_wrong_type_is_one_error_line_for_check_and_from_row(
    results: Path, tmp_path: Path, key: str, value: Any
) -> None:
    write_baseline(results, tmp_path / "baseline.json")
    run_id = rewrite_rows(results, lambda spec: spec.__setitem__(key, value))
    code, err = run_main(["check", str(results), "--baseline", str(tmp_path / "baseline.json")])
    assert_one_error_line(code, err, f"{results / JOURNAL}:1", key)  # before: exit 1
    code, err = run_main(["run", "--from-row", str(results), "--run-id", run_id])
    assert_one_error_line(code, err, str(results / JOURNAL), key)


@pytest.mark.parametrize(
    "template",
    [
        "{task_overview:>1000000000}",
        "{task_overview:.999999999}",
        "{task_overview:0999999999}",
        "{task_overview:{next_steps}}",
        "{task_overview.__class__}",
        "{0}",
    ],
)
def test_a_huge_or_hostile_format_template_is_one_error_line(tmp_path: Path, template: str) -> None:
    write_traces(tmp_path / "t.jsonl", [tool_trace(3, trace_id="a")])
    args = ["run", str(tmp_path / "t.jsonl"), "-s", "agentscope", "-w", "3000", "--reserved", "0"]
    code, err = run_main([*args, "--set", f"summary_template={template}"])
    assert_one_error_line(code, err, "summary_template")


def test_a_width_at_the_limit_is_accepted(tmp_path: Path) -> None:
    write_traces(tmp_path / "t.jsonl", [tool_trace(3, trace_id="a")])
    args = ["run", str(tmp_path / "t.jsonl"), "-s", "agentscope", "-w", "3000", "--reserved", "0"]
    code, err = run_main(
        [*args, "--set", f"summary_template={{task_overview:>{MAX_FORMAT_WIDTH}}}"]
    )
    assert code == 0, err


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
@pytest.mark.parametrize("command", ["run", "import", "validate"])
def test_a_line_over_the_limit_is_refused_before_it_is_held_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str, command: str
) -> None:
    """The limit is lowered to 1 MB so the file can be small: a 16 MB single line is refused
    with at most about one limit's worth of memory (before: 2.1 GB RSS per GB of input)."""
    limit = 1024 * 1024
    monkeypatch.setattr(jsontext, "MAX_LINE_CHARS", limit)
    path = tmp_path / f"big{suffix}"
    with path.open("w", encoding="utf-8") as fh:
        fh.write(
            '{"schema": "ctxbench.trace/1", "id": "a", "messages": [{"role": "user", "content": "'
        )
        for _ in range(16):
            fh.write("x" * (1024 * 1024))
        fh.write('"}]}\n')
    argv = {
        "run": ["run", str(path), "-s", "none", "-w", "3000", "--reserved", "0"],
        "import": ["import", str(path), "-o", str(tmp_path / "out.jsonl")],
        "validate": ["validate", str(path)],
    }[command]
    tracemalloc.start()
    try:
        code, err = run_main(argv)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert_one_error_line(code, err, str(path), "longer than 1,048,576 characters")
    assert peak < 8 * limit, peak


def test_a_device_as_trace_source_is_a_note_in_report_and_an_error_for_from_row(
    results: Path,
) -> None:
    run_id = rewrite_rows(results, lambda spec: spec.__setitem__("trace_source", "/dev/zero"))
    code, err = run_main(["report", str(results), "-o", str(results / "r.html"), "-q"])
    assert code == 0, err
    assert "trace not loaded" in err and "device" in err  # before: memory exhausted
    code, err = run_main(["run", "--from-row", str(results), "--run-id", run_id])
    assert_one_error_line(code, err, "/dev/zero", "device")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_device_given_as_traces_is_one_error_line() -> None:
    for argv in (["validate", "/dev/zero"], ["import", "/dev/zero", "-o", "/dev/null"]):
        code, err = run_main(argv)
        assert_one_error_line(code, err, "/dev/zero")


def test_a_journal_planted_as_a_link_is_not_read(results: Path, tmp_path: Path) -> None:
    """A results directory from someone else whose journal links to a device (or any file
    outside it) is refused by every reader, before any byte is read."""
    for name in FINAL_FILES:
        (results / name).unlink(missing_ok=True)
    elsewhere = tmp_path / "elsewhere.jsonl"
    (results / JOURNAL).rename(elsewhere)
    (results / JOURNAL).symlink_to(elsewhere)
    for argv in (
        ["report", str(results), "-o", str(tmp_path / "r.html"), "-q"],
        ["baseline", str(results), "-o", str(tmp_path / "b.json")],
    ):
        code, err = run_main(argv)
        assert_one_error_line(code, err, str(results / JOURNAL), "symbolic link")
