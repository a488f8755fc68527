"""Fuzzing the files issue 22 names as data: ``sweep.json``, the ``spec`` inside rows, and rows
naming plug-ins.

Each case damages one document (one to three nodes replaced by an extreme or random value, or
deleted: tests/hardening.py ``mutated``), writes it where ctxbench reads it, and runs the
commands that read it through the console entry point. Whatever the damage, the command exits
0, 1 (a differing re-run, a regression) or 2 with one ``error:`` line, never a traceback; a
plug-in named by the data is never imported. ``CASES`` counts the cases per input path; the
last test prints the counts (run with ``-s`` to see them).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxbench.cell.spec import RunSpec
from ctxbench.results.layout import FINAL_FILES, JOURNAL, SPEC_FILE
from ctxbench.testing import run_sweep, write_baseline
from tests.hardening import dumps, mutated, run_main, small_sweep

#: Plug-in paths a hostile row may name: harmless to call, but each must not be imported or
#: called at all (``this`` prints on import; ``ctxbench_plugins`` is planted beside the data).
PLUGINS = (
    "this:s",
    "ctxbench_plugins:Strategy",
    "json:loads",
    "os:getpid",
    "builtins:print",
    "tests.hardening:run_main",
    "ctxbench.cli:main",
)
PLANTED = """
from pathlib import Path
Path(__file__).with_name("IMPORTED").write_text("imported")
"""
SPEC_FIELDS = ("strategy", "counter", "estimator", "summarizer")
CASES: Counter[str] = Counter()
TRACEBACKS: Counter[str] = Counter()
FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def finished() -> Iterator[Path]:
    """A finished sweep (with prices) and its baseline, to damage copies of."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        small_sweep(root, extra="[prices.chars4]\ninput_per_mtok = 1.0\n")
        run_sweep(root / "sweep.toml", root / "results")
        write_baseline(root / "results", root / "baseline.json")
        yield root


def fresh_copy(finished: Path) -> Path:
    target = finished / "case"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(finished / "results", target)
    return target


def run_ok(path: str, argv: Sequence[str]) -> int:
    """Run ctxbench; the exit code, after checking it is 0, 1 or one error line with 2."""
    CASES[path] += 1
    try:
        code, err = run_main(argv)
    except BaseException:
        TRACEBACKS[path] += 1
        raise
    if "Traceback" in err or code not in (0, 1, 2):
        TRACEBACKS[path] += 1
    assert "Traceback" not in err, err
    assert code in (0, 1, 2), (code, err)
    if code == 2:
        assert err.startswith("error: ") and "hint: " in err, err
    return code


def first_run_id(results: Path) -> str:
    return str(json.loads((results / JOURNAL).read_text("utf-8").splitlines()[0])["run_id"])


@FUZZ
@given(data=st.data())
def test_fuzzed_sweep_json(finished: Path, data: st.DataObject) -> None:
    results = fresh_copy(finished)
    doc = json.loads((results / SPEC_FILE).read_text("utf-8"))
    (results / SPEC_FILE).write_text(dumps(data.draw(mutated(doc))), "utf-8")
    run_id = first_run_id(results)
    run_ok("sweep.json: run --from-row", ["run", "--from-row", str(results), "--run-id", run_id])
    if data.draw(st.integers(0, 3)) == 0:  # the slow reader, a quarter of the cases
        out = str(finished / "r.html")
        run_ok("sweep.json: report", ["report", str(results), "-o", out, "-q"])
    argv = ["sweep", str(finished / "sweep.toml"), "-o", str(results), "-q", "-j", "1", "--resume"]
    run_ok("sweep.json: sweep --resume", argv)


def with_spec(results: Path, change: Any) -> str:
    """Rewrite the first journal row's spec with ``change(spec)``, its run id recomputed when
    one can be (as a careful forger would); final files removed. Returns the run id."""
    lines = (results / JOURNAL).read_text("utf-8").splitlines()
    record = json.loads(lines[0])
    spec = change(json.loads(record["row"]["spec"]))
    try:
        run_id = RunSpec.from_dict({k: v for k, v in spec.items() if k != "run_id"}).run_id
        spec["run_id"] = run_id
    except Exception:  # any damage the spec reader refuses: keep the recorded id
        run_id = record["run_id"]
    record["row"]["spec"] = dumps(spec)
    record["row"]["run_id"] = record["run_id"] = run_id
    lines[0] = json.dumps(record, separators=(",", ":"), allow_nan=True)
    (results / JOURNAL).write_text("\n".join(lines) + "\n", "utf-8")
    for name in FINAL_FILES:
        (results / name).unlink(missing_ok=True)
    return str(run_id)


@FUZZ
@given(data=st.data())
def test_fuzzed_spec_inside_rows(finished: Path, data: st.DataObject) -> None:
    results = fresh_copy(finished)
    run_id = with_spec(results, lambda spec: data.draw(mutated(spec)))
    run_ok("row spec: run --from-row", ["run", "--from-row", str(results), "--run-id", run_id])
    baseline = str(finished / "baseline.json")
    run_ok("row spec: check", ["check", str(results), "--baseline", baseline])
    run_ok("row spec: baseline", ["baseline", str(results), "-o", str(finished / "b.json")])
    rows = finished / "rows.jsonl"
    row = json.loads((results / JOURNAL).read_text("utf-8").splitlines()[0])["row"]
    rows.write_text(json.dumps(row, allow_nan=True) + "\n", "utf-8")
    run_ok("row spec: run --from-row FILE", ["run", "--from-row", str(rows)])


@FUZZ
@given(
    field=st.sampled_from(SPEC_FIELDS),
    plugin=st.sampled_from(PLUGINS),
    command=st.sampled_from(["from-row", "report", "check", "baseline"]),
)
def test_rows_naming_plugins_never_import_them(
    finished: Path, field: str, plugin: str, command: str
) -> None:
    results = fresh_copy(finished)
    (results / "ctxbench_plugins.py").write_text(PLANTED, "utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(results))  # as `python -m` from inside the directory
        plugin_case(finished, results, field, plugin, command)


def plugin_case(finished: Path, results: Path, field: str, plugin: str, command: str) -> None:
    before = set(sys.modules)

    def name_plugin(spec: dict[str, Any]) -> dict[str, Any]:
        spec[field] = plugin
        return spec

    run_id = with_spec(results, name_plugin)
    journal = results / JOURNAL
    lines = journal.read_text("utf-8").splitlines()
    record = json.loads(lines[0])
    record["row"][field] = plugin  # the row's own column names it too
    journal.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n", "utf-8")
    argv = {
        "from-row": ["run", "--from-row", str(results), "--run-id", run_id],
        "report": ["report", str(results), "-o", str(finished / "r.html"), "-q"],
        "check": ["check", str(results), "--baseline", str(finished / "baseline.json")],
        "baseline": ["baseline", str(results), "-o", str(finished / "b.json")],
    }[command]
    code = run_ok(f"plug-in in a row: {command}", argv)
    assert not (results / "IMPORTED").exists()
    assert {"this", "ctxbench_plugins"}.isdisjoint(set(sys.modules) - before)
    if command == "from-row":
        assert code == 2


def test_zz_fuzz_counts() -> None:
    """Every input path ran cases, none raised a traceback (the counts are printed)."""
    for path, count in sorted(CASES.items()):
        print(f"fuzz {path}: {count} cases, {TRACEBACKS[path]} tracebacks")
    expected = {
        "sweep.json: run --from-row",
        "sweep.json: sweep --resume",
        "row spec: run --from-row",
        "row spec: check",
        "row spec: baseline",
        "row spec: run --from-row FILE",
    }
    if CASES:  # the fuzz tests ran in this session (not deselected)
        assert expected <= set(CASES)
        assert sum(TRACEBACKS.values()) == 0
