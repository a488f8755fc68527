"""Hardening: what ctxbench writes stays where it belongs, and keeps no secrets (issue 10).

1. Snapshot, offload and cold-store file names come from trace ids, tool names and call ids
   (untrusted): however hostile (``../../etc/passwd``, absolute paths, NUL, newlines, very long,
   unicode, Windows separators), every file lands under the run's output folder, under the name
   its event cites, and two different names never share a file; ``write_files`` refuses a
   crafted escaping path.
2. API keys and values of environment variables named as secrets never reach events, rows,
   tables, the journal, snapshot files, the report, the response cache or error messages, even
   when the endpoint echoes the key back (in a 401 body or in the summary itself).

The report's escaping of trace content is tested in the browser (tests/report/test_browser.py).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ctxbench.cli import main
from ctxbench.counting import get_counter
from ctxbench.engine import events as ev
from ctxbench.engine.provider import SimulatedProvider
from ctxbench.engine.replay import replay
from ctxbench.errors import OutputError
from ctxbench.formats.canonical import write_traces
from ctxbench.results.files import write_files
from ctxbench.strategies import STRATEGIES, build_strategy
from ctxbench.sweep import ResultsDir, load_sweep, run_sweep
from ctxbench.trace import Message, ToolCall, Trace

CHARS4 = get_counter("chars4")
WINDOW = 4000

#: Names a trace may carry as its id, a tool name or a call id.
HOSTILE: tuple[str, ...] = (
    "../../etc/passwd",
    "/abs/path",
    "..",
    ".",
    "",
    "a\x00b",
    "line\nbreak",
    "x" * 300,
    "файл/名前.json",
    "..\\..\\windows\\x",
    "C:\\Windows\\System32",
    "~",
    ".hidden",
    "a/b",
    "a_b",
)


def hostile_trace(trace_id: str, shift: int) -> Trace:
    """Rounds whose tool names and call ids are the hostile names; results large enough to be
    persisted (DB-GPT), offloaded (AgentScope) and evicted (hierarchical)."""
    msgs = [Message("system", "You are an agent."), Message("user", "Fix the bug in src/app.py")]
    for i, name in enumerate(HOSTILE[shift:] + HOSTILE[:shift]):
        call = ToolCall(name, name, json.dumps({"path": name}))
        size = 9000 if i % 3 == 0 else 900
        msgs.append(Message("assistant", f"step {i}", tool_calls=(call,)))
        msgs.append(Message("tool", f"result {i} " + "z" * size, tool_call_id=call.id, name=name))
    msgs.append(Message("assistant", "done"))
    return Trace(trace_id, tuple(msgs))


TRACES = tuple(hostile_trace(name, i) for i, name in enumerate(HOSTILE))
#: AgentScope offloads results over ``tool_result_limit`` tokens (default 50,000) when an
#: offloader is attached (2.0.11 has none by default).
EXTRA_CONFIGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("agentscope", {"tool_result_limit": 200, "offload": True}),
)


def file_writers() -> list[tuple[str, dict[str, Any]]]:
    """Every registered strategy (and extra config) that writes files on the hostile traces."""
    found = []
    for name, params in [(n, {}) for n in STRATEGIES.names()] + list(EXTRA_CONFIGS):
        out = replay(
            TRACES[0],
            build_strategy(name, params),
            SimulatedProvider(WINDOW, 0),
            true_counter=CHARS4,
            estimator=CHARS4,
        )
        if out.files:
            found.append((name, params))
    return found


WRITERS = file_writers()


def listing(root: Path) -> set[Path]:
    """The files (and symlinks) under ``root``; folders do not count."""
    return {p for p in root.rglob("*") if not p.is_dir() or p.is_symlink()}


@pytest.fixture()
def outside(tmp_path: Path) -> Iterator[set[Path]]:
    """Everything under the session's temporary root (this test's folder included) before the
    test; afterwards, nothing may have appeared at the absolute targets either."""
    passwd = Path("/etc/passwd")
    before = passwd.stat() if passwd.exists() else None
    existed = Path("/abs").exists()
    yield listing(tmp_path.parent)
    assert (passwd.stat() if passwd.exists() else None) == before
    assert Path("/abs").exists() == existed


def assert_only_under(new: set[Path], *roots: Path) -> None:
    for path in new:
        assert any(path.resolve().is_relative_to(r.resolve()) for r in roots), path


def assert_files_match_events(events: list[dict[str, Any]], files_of: Any) -> int:
    """Each snapshot event cites a relative, clean path whose file holds what it says; names
    derived from different call ids never collide. Returns how many such names were seen."""
    by_run: dict[str, dict[str, str]] = {}
    per_call: dict[str, list[str]] = {}
    for e in events:
        if e["type"] != ev.SNAPSHOT:
            continue
        path = Path(e["path"])
        assert not path.is_absolute() and ".." not in path.parts and "\\" not in e["path"]
        assert all(part and len(part) <= 64 and part.isprintable() for part in path.parts)
        by_run.setdefault(e["run_id"], {})[e["path"]] = e["sha256"]
        if "persisted_results/" in e["path"] or "tool_result-" in e["path"]:
            per_call.setdefault(e["run_id"], []).append(e["path"])
    assert by_run, "no snapshot events"
    for run_id, digests in by_run.items():
        for relative, digest in digests.items():  # the last write of each path is on disk
            data = (files_of(run_id) / relative).read_bytes()
            assert hashlib.sha256(data).hexdigest() == digest
    for cited in per_call.values():
        assert len(cited) == len(set(cited)), "two call ids share a file"
    return sum(len(cited) for cited in per_call.values())


def test_the_strategies_that_write_files_are_found() -> None:
    names = {name for name, _ in WRITERS}
    assert {"dbgpt", "agentscope", "hierarchical"} <= names


@pytest.mark.parametrize(
    ("name", "params"),
    WRITERS,
    ids=[" ".join([n, *(f"{k}={v}" for k, v in p.items())]) for n, p in WRITERS],
)
def test_ctxbench_run_writes_every_file_under_files_dir(
    name: str,
    params: dict[str, Any],
    tmp_path: Path,
    outside: set[Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    work = tmp_path / "work" / "deep"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    write_traces(tmp_path / "hostile.jsonl", TRACES)
    files_dir, events = work / "files", tmp_path / "events.jsonl"
    sets = [arg for key, value in params.items() for arg in ("--set", f"{key}={value}")]
    args = ["run", str(tmp_path / "hostile.jsonl"), "-s", name, *sets, "-w", str(WINDOW)]
    args += ["--reserved", "0", "-c", "chars4", "--files-dir", str(files_dir)]
    assert main_exit([*args, "--events", str(events), "--json"]) == 0

    created = listing(tmp_path.parent) - outside
    assert_only_under(created - {events, tmp_path / "hostile.jsonl"}, files_dir)
    lines = [json.loads(line) for line in events.read_text("utf-8").splitlines()]
    assert_files_match_events(lines, lambda run_id: files_dir / run_id)


def test_a_sweep_writes_every_file_under_its_results_dir(
    tmp_path: Path, outside: set[Path]
) -> None:
    write_traces(tmp_path / "hostile.jsonl", TRACES)
    tables = ""
    for name, params in WRITERS:
        inline = ", ".join(f"{k} = {json.dumps(v)}" for k, v in params.items())
        tables += f'\n[[strategies]]\nname = "{name}"\nparams = {{ {inline} }}\n'
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        f'windows = [{WINDOW}]\nreserved = [0]\ncounters = ["chars4"]\n\n'
        f'[[traces]]\npath = "hostile.jsonl"\n{tables}',
        encoding="utf-8",
    )
    out = tmp_path / "results"
    summary = run_sweep(load_sweep(sweep), out)
    assert summary.failed == 0 and summary.cells == len(TRACES) * len(WRITERS)

    created = listing(tmp_path.parent) - outside
    assert_only_under(created - {tmp_path / "hostile.jsonl", sweep}, out)
    results = ResultsDir(out)
    assert (
        assert_files_match_events(
            [{"run_id": r, **e.to_dict()} for r, e in results.typed_events()], results.files_dir
        )
        > 0
    )


@pytest.mark.parametrize(
    "crafted",
    ["../escape.txt", "/abs/escape.txt", "a/../../escape.txt", "a/\x00/b.txt", "", ".", "link/x"],
)
def test_write_files_refuses_a_path_that_escapes_its_root(
    crafted: str, tmp_path: Path, outside: set[Path]
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(OutputError, match="refusing to write"):
        write_files(root, {"ok/fine.txt": b"kept", crafted: b"escaped"})
    assert listing(tmp_path.parent) - outside == {root / "link"}  # nothing was written


# -- secrets -----------------------------------------------------------------------------------------


@dataclass
class Endpoint:
    """A local chat endpoint that accepts one key and echoes the Authorization header it got:
    in its 401 body (where an error excerpt would cut it), and inside every summary (a proxy
    that reflects the request)."""

    url: str = ""
    key: str = ""
    headers_seen: list[str] = field(default_factory=list)


FIELDS = ("task_overview", "current_state", "important_discoveries", "next_steps")


@pytest.fixture()
def endpoint() -> Iterator[Endpoint]:
    state = Endpoint()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            auth = self.headers.get("Authorization", "")
            state.headers_seen.append(auth)
            if auth != f"Bearer {state.key}":  # the key lands across the 300-char excerpt
                status, body = 401, "." * 260 + f" invalid key {auth}"
            else:
                summary = {name: f"{name} of src/app.py" for name in FIELDS}
                summary["context_to_preserve"] = f"request had {auth}"
                content = json.dumps(summary)
                status = 200
                body = json.dumps({"choices": [{"message": {"content": content}}]})
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield state
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture()
def canaries(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Random secret values in variables named as secrets: the two keys ctxbench is told to
    use, a wrong key, and one it never uses."""
    values = {
        name: f"sk-canary-{secrets.token_hex(12)}"
        for name in (
            "OPENAI_API_KEY",
            "CTXBENCH_TEST_SECRET",
            "CTXBENCH_WRONG_KEY",
            "AWS_SECRET_ACCESS_KEY",
        )
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def readable(path: Path) -> str:
    """A file's text as a grep would need it: parquet tables decoded, gzip inflated."""
    data = path.read_bytes()
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        data += json.dumps(pq.read_table(path).to_pylist(), ensure_ascii=False).encode()
    elif path.suffix == ".gz":
        data += gzip.decompress(data)
    return data.decode("utf-8", "replace")


def assert_no_canary(root: Path, values: dict[str, str], *texts: str) -> list[Path]:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    for path in files:
        text = readable(path)
        for name, value in values.items():
            assert value not in text and value[:16] not in text, f"{name} leaked into {path}"
    for text in texts:
        for name, value in values.items():
            assert value[:16] not in text, f"{name} leaked into the command's output"
    return files


def summarizer_sets(endpoint: Endpoint, cache: Path, key_env: str | None) -> list[str]:
    sets = [f"base_url={endpoint.url}", "model=m-1", f"cache_dir={cache}", "max_retries=0"]
    sets += [f"api_key_env={key_env}"] if key_env else []
    return [arg for value in sets for arg in ("--summarizer-set", value)]


def test_keys_never_reach_any_output_of_run_sweep_report_or_the_cache(
    endpoint: Endpoint,
    canaries: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    endpoint.key = canaries["OPENAI_API_KEY"]
    traces = tmp_path / "traces.jsonl"
    write_traces(traces, TRACES[:2])
    cache = tmp_path / "cache"
    run = ["run", str(traces), "-w", str(WINDOW), "--reserved", "0", "-c", "chars4"]
    run += ["--summarizer", "openai", *summarizer_sets(endpoint, cache / "run", None)]
    for strategy in ("agentscope", "dbgpt", "hermes"):
        assert main_exit([*run, "-s", strategy, "--files-dir", "files", "--json"]) == 0
    assert main_exit([*run, "-s", "agentscope", "--events", "ev.jsonl", "--out", "rows.csv"]) == 0

    endpoint.key = canaries["CTXBENCH_TEST_SECRET"]
    sweep = tmp_path / "sweep.toml"
    params = f'base_url = "{endpoint.url}", model = "m-1", cache_dir = "{cache / "sweep"}", '
    params += 'api_key_env = "CTXBENCH_TEST_SECRET", max_retries = 0'
    sweep.write_text(
        f'windows = [{WINDOW}]\nreserved = [0]\ncounters = ["chars4"]\nsummarizer = "openai"\n'
        f"summarizer_params = {{ {params} }}\n\n"
        '[[traces]]\npath = "traces.jsonl"\n\n'
        '[[strategies]]\nname = "agentscope"\n\n[[strategies]]\nname = "dbgpt"\n\n'
        '[[strategies]]\nname = "claude_code"\n',
        encoding="utf-8",
    )
    allow = ["--summarizer-set", f"base_url={endpoint.url}"]  # a file names no endpoint alone
    allow += ["--summarizer-set", "api_key_env=CTXBENCH_TEST_SECRET"]
    assert main_exit(["sweep", str(sweep), "-o", "results", "-q", "-j", "1", "--csv", *allow]) == 0
    assert main_exit(["report", "results", "-o", "results/report.html", "-q"]) == 0
    assert main_exit(["baseline", "results", "-o", "results/baseline.json"]) == 0
    assert main_exit(["run", "--from-row", "results", "--run-id", first_run(tmp_path)]) == 0

    sent = {f"Bearer {canaries['OPENAI_API_KEY']}", f"Bearer {canaries['CTXBENCH_TEST_SECRET']}"}
    assert sent <= set(endpoint.headers_seen)  # the keys were read and sent
    rows = ResultsDir(tmp_path / "results").results()
    assert rows and all(r.error is None for r in rows)
    assert all(r.summary_calls > 0 for r in rows if r.strategy != "dbgpt")
    output = capsys.readouterr()
    files = assert_no_canary(tmp_path, canaries, output.out, output.err)
    names = {p.name for p in files}
    assert {"events.jsonl", "cells.jsonl", "results.parquet", "results.csv", "sweep.json"} <= names
    assert {"ev.jsonl", "rows.csv", "report.html", "baseline.json"} <= names
    assert any(p.is_relative_to(tmp_path / "files") for p in files)
    assert any(p.is_relative_to(tmp_path / "results" / "files") for p in files)
    cached = [p for p in files if p.is_relative_to(cache)]
    assert cached and all("request had Bearer ***" in p.read_text("utf-8") for p in cached)


def test_a_rejected_key_is_not_echoed_in_errors_events_or_output(
    endpoint: Endpoint,
    canaries: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    endpoint.key = canaries["OPENAI_API_KEY"]  # the run sends CTXBENCH_WRONG_KEY: 401
    traces = tmp_path / "traces.jsonl"
    write_traces(traces, TRACES[:1])
    args = ["run", str(traces), "-s", "claude_code", "-w", str(WINDOW), "--reserved", "0"]
    args += ["-c", "chars4", "--summarizer", "openai", "--events", "ev.jsonl", "--json"]
    args += summarizer_sets(endpoint, tmp_path / "cache", "CTXBENCH_WRONG_KEY")
    assert main_exit(args) == 0
    assert f"Bearer {canaries['CTXBENCH_WRONG_KEY']}" in endpoint.headers_seen
    events = [json.loads(line) for line in (tmp_path / "ev.jsonl").read_text().splitlines()]
    errors = [e["error"] for e in events if e["type"] == ev.SUMMARY]
    assert errors and all(e.startswith("auth: HTTP 401") and "Bearer ***" in e for e in errors)
    output = capsys.readouterr()
    assert_no_canary(tmp_path, canaries, output.out, output.err)
    assert not list((tmp_path / "cache").rglob("*.json"))


def first_run(folder: Path) -> str:
    return str(ResultsDir(folder / "results").results()[0].run_id)


def main_exit(args: list[str]) -> int:
    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0
