"""Hardening: files are data, never code, and never choose where a key goes (issue 22).

Before: a row re-run with ``--from-row`` sent ``Bearer $AWS_SECRET_ACCESS_KEY`` to the address
its spec named; ``report`` called ``os:abort`` named as a counter in ``cells.jsonl``, imported
``this`` named as a strategy, and ran a ``ctxbench_plugins.py`` shipped inside the results
directory it was run from. Now a plug-in named by a file runs only when the command line names
it too, or with ``ctxbench --allow-plugins``; a row's endpoint is never called unless the
command line gives the endpoint and the key variable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ctxbench.cell.spec import RunSpec
from ctxbench.formats.canonical import write_traces
from ctxbench.results.layout import FINAL_FILES, JOURNAL
from ctxbench.testing import run_sweep
from tests.factories import tool_trace
from tests.hardening import run_main, small_sweep

REPO = Path(__file__).resolve().parents[1]
CANARY = "sk-canary-aws-0123456789abcdef"
#: A plug-in module that leaves a mark when imported, and a strategy in it.
PLUGIN = """
from pathlib import Path
from ctxbench.strategies.none import NoCompaction

Path(__file__).with_name("IMPORTED").write_text("imported")


class Strategy(NoCompaction):
    name = "planted"
"""


@pytest.fixture()
def endpoint() -> Iterator[dict[str, Any]]:
    """A loopback chat endpoint recording the Authorization headers it got."""
    state: dict[str, Any] = {"auth": []}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state["auth"].append(self.headers.get("Authorization", ""))
            content = json.dumps({"summary": "a summary of src/app.py"})
            body = json.dumps({"choices": [{"message": {"content": content}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    state["url"] = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield state
    httpd.shutdown()
    httpd.server_close()


def hostile_row(tmp_path: Path, **spec_changes: Any) -> Path:
    """A result row of a real replay whose spec was rewritten (run id recomputed, as an
    attacker would)."""
    traces = tmp_path / "traces.jsonl"
    write_traces(traces, [tool_trace(40, output="log line 12345 " * 120, trace_id="t")])
    rows = tmp_path / "rows.jsonl"
    run = ["run", str(traces), "-s", "hermes", "-w", "6000", "--reserved", "0", "-c", "chars4"]
    code, err = run_main([*run, "--out", str(rows)])
    assert code == 0, err
    row = json.loads(rows.read_text("utf-8").splitlines()[0])
    data = {k: v for k, v in json.loads(row["spec"]).items() if k != "run_id"}
    spec = RunSpec.from_dict({**data, **spec_changes})
    row["spec"] = json.dumps(spec.to_dict())
    row["run_id"] = spec.run_id
    out = tmp_path / "hostile.jsonl"
    out.write_text(json.dumps(row) + "\n", "utf-8")
    return out


def openai_params(url: str, tmp_path: Path) -> dict[str, Any]:
    return {
        "base_url": url,
        "model": "m",
        "api_key_env": "AWS_SECRET_ACCESS_KEY",
        "cache_dir": str(tmp_path / "cache"),
        "max_retries": 0,
    }


def test_from_row_never_sends_a_key_to_the_endpoint_a_row_names(
    endpoint: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CANARY)
    row = hostile_row(
        tmp_path, summarizer="openai", summarizer_params=openai_params(endpoint["url"], tmp_path)
    )
    code, err = run_main(["run", "--from-row", str(row)])
    assert code == 2, err
    first = err.splitlines()[0]
    assert first.startswith("error: ") and endpoint["url"] in first and str(row) in first
    assert "--summarizer-set base_url=URL" in err and "Traceback" not in err
    assert endpoint["auth"] == []  # before: 13 requests with Bearer <the secret>
    assert CANARY not in err


def test_from_row_calls_the_endpoint_the_command_line_gives(
    endpoint: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXBENCH_MY_KEY", CANARY)
    row = hostile_row(
        tmp_path,
        summarizer="openai",
        summarizer_params=openai_params("http://192.0.2.1/v1", tmp_path),
    )
    given = [f"base_url={endpoint['url']}", "api_key_env=CTXBENCH_MY_KEY"]
    code, err = run_main(
        ["run", "--from-row", str(row), *[a for g in given for a in ("--summarizer-set", g)]]
    )
    assert code in (0, 1), err  # it ran (and differs: another endpoint, another cell)
    assert endpoint["auth"] and set(endpoint["auth"]) == {f"Bearer {CANARY}"}


def test_from_row_serves_a_recorded_endpoint_from_the_cache_without_the_key(
    endpoint: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CANARY)
    params = openai_params(endpoint["url"], tmp_path)
    row = hostile_row(tmp_path, summarizer="openai", summarizer_params=params)
    sets = [f"{k}={v}" for k, v in params.items()]
    code, err = run_main(
        ["run", "--from-row", str(row), *[a for s in sets for a in ("--summarizer-set", s)]]
    )
    assert code in (0, 1), err
    calls = len(endpoint["auth"])
    assert calls > 0
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    code, err = run_main(["run", "--from-row", str(row)])  # cached now: offline, no key
    assert code in (0, 1), err
    assert len(endpoint["auth"]) == calls


@pytest.fixture()
def results(tmp_path: Path) -> Path:
    """A finished sweep's results directory."""
    small_sweep(tmp_path)
    return run_sweep(tmp_path / "sweep.toml", tmp_path / "results")


def plant(results: Path, **row_changes: str) -> None:
    """Rewrite every journal row and its spec, run ids recomputed (the final files removed,
    so readers use the journal)."""
    journal = results / JOURNAL
    lines = []
    for line in journal.read_text("utf-8").splitlines():
        record = json.loads(line)
        row = record["row"]
        data = {k: v for k, v in json.loads(row["spec"]).items() if k != "run_id"}
        spec = RunSpec.from_dict({**data, **row_changes})
        row.update(row_changes, spec=json.dumps(spec.to_dict()), run_id=spec.run_id)
        record["run_id"] = spec.run_id
        lines.append(json.dumps(record, separators=(",", ":")))
    journal.write_text("\n".join(lines) + "\n", "utf-8")
    for name in FINAL_FILES:
        (results / name).unlink(missing_ok=True)


def ctxbench(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """ctxbench in a subprocess (an abort would otherwise kill the test run)."""
    environ = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ctxbench", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("column", "value"),
    [("counter", "os:abort"), ("counter", "os:fork"), ("strategy", "this:s")],
)
def test_report_does_not_import_or_call_what_results_name(
    results: Path, column: str, value: str
) -> None:
    plant(results, **{column: value})
    done = ctxbench("report", str(results), "-o", str(results / "r.html"), "-q", cwd=results)
    assert done.returncode in (0, 2), done  # before: SIGABRT (-6)
    assert "Beautiful is better than ugly" not in done.stdout  # `import this` prints the Zen
    assert "Traceback" not in done.stderr


def test_a_plugin_shipped_inside_a_results_directory_is_not_run(results: Path) -> None:
    (results / "ctxbench_plugins.py").write_text(PLUGIN, "utf-8")
    plant(results, strategy="ctxbench_plugins:Strategy")
    for command in (["report", ".", "-o", "r.html", "-q"], ["baseline", ".", "-o", "b.json"]):
        done = ctxbench(*command, cwd=results)
        assert "Traceback" not in done.stderr, done.stderr
        assert not (results / "IMPORTED").exists(), command
    run_id = json.loads((results / JOURNAL).read_text("utf-8").splitlines()[0])["run_id"]
    done = ctxbench("run", "--from-row", ".", "--run-id", run_id, cwd=results)
    assert done.returncode == 2 and not (results / "IMPORTED").exists()
    (line,) = [s for s in done.stderr.splitlines() if s.startswith("error: ")]
    assert "ctxbench_plugins:Strategy" in line and "--allow-plugins" in done.stderr


def test_report_says_which_plug_in_runs_it_left_out_and_how_to_include_them(
    results: Path,
) -> None:
    (results / "ctxbench_plugins.py").write_text(PLUGIN, "utf-8")
    plant(results, strategy="ctxbench_plugins:Strategy")
    runs = len((results / JOURNAL).read_text("utf-8").splitlines())
    done = ctxbench("report", ".", "-o", "r.html", "-q", cwd=results)
    assert done.returncode == 0 and not (results / "IMPORTED").exists()
    assert (
        f"note: the timelines leave out the {runs} runs of plug-in ctxbench_plugins:Strategy"
        in done.stderr
    )
    assert "add --allow-plugins to include them" in done.stderr
    allowed = ctxbench("report", ".", "-o", "r.html", "-q", "--allow-plugins", cwd=results)
    assert allowed.returncode == 0 and "leave out" not in allowed.stderr


def test_allow_plugins_runs_a_plugin_a_file_names(results: Path) -> None:
    (results / "ctxbench_plugins.py").write_text(PLUGIN, "utf-8")
    plant(results, strategy="ctxbench_plugins:Strategy")
    done = ctxbench("--allow-plugins", "report", ".", "-o", "r.html", "-q", cwd=results)
    assert done.returncode == 0, done.stderr
    assert (results / "IMPORTED").exists()


def test_a_sweep_file_naming_a_plugin_needs_it_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "my_plugins.py").write_text(PLUGIN, "utf-8")
    small_sweep(tmp_path, "my_plugins:Strategy")
    env = {"PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}"}
    done = ctxbench("sweep", "sweep.toml", "-o", "out", "-q", "-j", "1", cwd=tmp_path, env=env)
    assert done.returncode == 2 and not (tmp_path / "IMPORTED").exists()
    (line,) = done.stderr.splitlines()[:1]
    assert line.startswith("error: ") and "my_plugins:Strategy" in line, done.stderr
    assert "ctxbench sweep FILE -o DIR --allow-plugins" in done.stderr
    # the flag is accepted after the command too (where a user adds it to the line they ran)
    done = ctxbench(
        "sweep",
        "sweep.toml",
        "-o",
        "out",
        "-q",
        "-j",
        "1",
        "--allow-plugins",
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "IMPORTED").exists()


def test_a_plugin_given_on_the_command_line_runs(tmp_path: Path) -> None:
    (tmp_path / "my_plugins.py").write_text(PLUGIN, "utf-8")
    write_traces(tmp_path / "traces.jsonl", [tool_trace(6, output="x" * 800, trace_id="a")])
    env = {"PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}"}
    done = ctxbench(
        "run", "traces.jsonl", "-s", "my_plugins:Strategy", "-w", "3000", "--reserved", "0",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "IMPORTED").exists()


@pytest.mark.parametrize("command", ["run", "count", "drift"])
@pytest.mark.parametrize("counter", ["os:getpid", "os:sep", "os.path:join"])
def test_a_counter_plugin_that_is_not_a_counter_is_one_error_line(
    tmp_path: Path, command: str, counter: str
) -> None:
    write_traces(tmp_path / "t.jsonl", [tool_trace(3, trace_id="a")])
    args = {
        "run": ["run", str(tmp_path / "t.jsonl"), "-s", "none", "-w", "3000", "-c", counter],
        "count": ["count", str(tmp_path / "t.jsonl"), "--counter", counter],
        "drift": ["drift", str(tmp_path / "t.jsonl"), "-c", counter, "-o", str(tmp_path / "d")],
    }[command]
    code, err = run_main(args)
    assert code == 2, err
    assert err.startswith(f"error: {counter!r} is not a counter") and "Traceback" not in err
