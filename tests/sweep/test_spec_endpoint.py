"""A sweep file is data (issue 22): a summarizer endpoint or key variable it names is refused
with one error line, before any request, unless the command line gives the same ones.

The endpoint is a real OpenAI-compatible HTTP server on 127.0.0.1 that records every request
it receives (path and Authorization header)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.formats.canonical import write_traces
from ctxbench.trace import Message, ToolCall, Trace
from tests.hardening import run_main
from tests.summarizers.fake_endpoint import Endpoint, serve
from tests.summarizers.fake_endpoint import endpoint as new_endpoint

KEY_ENV = "CTXBENCH_GAPS_SWEEP_KEY"
SECRET = "sk-gaps-0123456789abcdefghij"


@pytest.fixture()
def server() -> Iterator[Endpoint]:
    found = new_endpoint()
    yield from (found for _ in serve(found))


def _trace() -> Trace:
    msgs = [Message("system", "You are an agent."), Message("user", "Fix the bug.")]
    for i in range(40):
        call = ToolCall(f"c{i}", "bash", json.dumps({"cmd": f"step {i}"}))
        msgs += [
            Message("assistant", f"step {i}", tool_calls=(call,)),
            Message("tool", f"out {i} " + "x" * 400, tool_call_id=call.id, name="bash"),
        ]
    return Trace("t", (*msgs, Message("assistant", "Done.")))


def _sweep(tmp_path: Path, params: str) -> Path:
    write_traces(tmp_path / "t.jsonl", [_trace()])
    path = tmp_path / "s.toml"
    path.write_text(
        "windows = [4096]\nreserved = [512]\n"
        f'summarizer = "openai"\nsummarizer_params = {{ {params} }}\n'
        '[[traces]]\npath = "t.jsonl"\n[[strategies]]\nname = "summarize_half"\n',
        encoding="utf-8",
    )
    return path


def _params(url: str, tmp_path: Path) -> str:
    return (
        f'model = "m", base_url = "{url}", api_key_env = "{KEY_ENV}", '
        f'cache_dir = "{tmp_path / "cache"}", max_retries = 0'
    )


@pytest.mark.parametrize(
    "given",
    [
        [],
        ["--summarizer-set", "base_url=http://127.0.0.1:9/v1"],
        ["--summarizer-set", f"api_key_env={KEY_ENV}"],
    ],
)
def test_an_endpoint_named_by_the_sweep_file_is_refused_and_nothing_is_sent(
    server: Endpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: list[str]
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    url = f"http://127.0.0.1:{server.server_port}/v1"
    sweep_file = _sweep(tmp_path, _params(url, tmp_path))
    for extra in ([], ["--dry-run"]):
        code, err = run_main(
            ["sweep", str(sweep_file), "-o", str(tmp_path / "out"), *given, *extra]
        )
        assert code == 2, err
        lines = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(lines) == 1 and "Traceback" not in err, err
        assert str(sweep_file) in lines[0] and "summarizer_params." in lines[0]
        assert f"--summarizer-set base_url={url}" in err
        assert f"--summarizer-set api_key_env={KEY_ENV}" in err
        assert SECRET not in err
    assert server.requests == []
    assert not (tmp_path / "out" / "cells.jsonl").exists()


def test_the_same_endpoint_on_the_command_line_allows_it(
    server: Endpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    url = f"http://127.0.0.1:{server.server_port}/v1"
    sweep_file = _sweep(tmp_path, _params(url, tmp_path))
    allow = ["--summarizer-set", f"base_url={url}", "--summarizer-set", f"api_key_env={KEY_ENV}"]
    result = CliRunner().invoke(
        cli, ["sweep", str(sweep_file), "-o", str(tmp_path / "out"), "-j", "1", "-q", *allow]
    )
    assert result.exit_code == 0, result.output
    assert server.requests, "the allowed sweep summarised through the endpoint"
    assert set(server.requests) == {("/v1/chat/completions", f"Bearer {SECRET}", "")}


def test_only_endpoint_parameters_come_from_the_sweep_command_line(tmp_path: Path) -> None:
    sweep_file = _sweep(tmp_path, 'model = "m"')
    code, err = run_main(["sweep", str(sweep_file), "--dry-run", "--summarizer-set", "model=other"])
    assert code == 2
    assert "not an endpoint parameter" in err


def test_the_python_api_refuses_the_same_unless_given_the_endpoint(
    server: Endpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxbench.errors import ConfigError
    from ctxbench.testing import run_sweep

    monkeypatch.setenv(KEY_ENV, SECRET)
    url = f"http://127.0.0.1:{server.server_port}/v1"
    sweep_file = _sweep(tmp_path, _params(url, tmp_path))
    with pytest.raises(ConfigError, match="the sweep file names the summarizer's base_url"):
        run_sweep(sweep_file, tmp_path / "out")
    assert server.requests == []
    run_sweep(
        sweep_file, tmp_path / "out", summarizer_endpoint={"base_url": url, "api_key_env": KEY_ENV}
    )
    assert server.requests
