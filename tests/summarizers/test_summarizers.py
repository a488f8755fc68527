"""Summarizers: the offline extractive and lossy ones, the fault injector, and the OpenAI-compatible
client against a real local HTTP server (retries, cache, timeouts, errors, the key never stored)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.counting import get_counter
from ctxbench.engine.events import event_line
from ctxbench.errors import ConfigError, SummarizerError
from ctxbench.results.files import write_files
from ctxbench.strategies.agentscope import SUMMARY_SECTIONS as AGENTSCOPE_SECTIONS
from ctxbench.strategies.dbgpt import SUMMARY_SECTIONS as DBGPT_SECTIONS
from ctxbench.strategies.hermes import SUMMARY_SECTIONS as HERMES_SECTIONS
from ctxbench.summarizers import SUMMARIZERS, build_summarizer
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.summarizers.extractive import ExtractiveSummarizer, LossySummarizer
from ctxbench.summarizers.failing import FailingSummarizer
from ctxbench.summarizers.openai_compat import OpenAISummarizer
from ctxbench.trace import Message, ToolCall
from tests.factories import tool_trace

CHARS4 = get_counter("chars4")
SECRET = "sk-test-0123456789-SECRET-value"

MESSAGES = (
    Message("user", "Migrate the orders table. You must never drop data."),
    Message(
        "assistant",
        "I will use pg_dump because it keeps constraints. Next I will run the migration.",
        tool_calls=(
            ToolCall("c1", "bash", '{"cmd": "pg_dump orders > /backups/orders-2024.sql"}'),
        ),
    ),
    Message("tool", "Error: permission denied for /backups", tool_call_id="c1"),
    Message("assistant", "The ticket id is ORD-4471 and the table has 12,500 rows."),
)


def request(sections: tuple[str, ...], **kw: Any) -> SummaryRequest:
    return SummaryRequest("test", "layer", "prompt", MESSAGES, sections, key="k", **kw)


def section(text: str, heading: str) -> list[str]:
    body = text.split(f"## {heading}\n", 1)[1].split("\n\n## ", 1)[0]
    return body.splitlines()


# -- extractive ----------------------------------------------------------------------------------------


def test_extractive_is_deterministic() -> None:
    s = ExtractiveSummarizer()
    assert s.summarize(request(HERMES_SECTIONS), CHARS4) == s.summarize(
        request(HERMES_SECTIONS), CHARS4
    )


def test_extractive_lays_out_the_five_agentscope_fields() -> None:
    text = ExtractiveSummarizer().summarize(request(AGENTSCOPE_SECTIONS), CHARS4)
    assert [line[3:] for line in text.splitlines() if line.startswith("## ")] == list(
        AGENTSCOPE_SECTIONS
    )
    assert "- /backups/orders-2024.sql" in section(text, "Current State")
    assert "- Error: permission denied for /backups" in section(text, "Important Discoveries")
    assert "- Next I will run the migration." in section(text, "Next Steps")
    assert "- You must never drop data." in section(text, "Context to Preserve")


def test_extractive_lays_out_the_hermes_headings() -> None:
    text = ExtractiveSummarizer().summarize(request(HERMES_SECTIONS), CHARS4)
    assert [line[3:] for line in text.splitlines() if line.startswith("## ")] == list(
        HERMES_SECTIONS
    )
    assert "- Migrate the orders table. You must never drop data." in section(text, "Goal")
    assert "- /backups/orders-2024.sql" in section(text, "Relevant Files")
    assert "- ORD-4471" in section(text, "Critical Context")
    assert "- I will use pg_dump because it keeps constraints." in section(text, "Key Decisions")
    assert "- Error: permission denied for /backups" in section(text, "Blocked")


def test_extractive_lays_out_the_six_dbgpt_headings() -> None:
    text = ExtractiveSummarizer().summarize(request(DBGPT_SECTIONS), CHARS4)
    assert "- 12,500" in section(text, "4. Key Data")
    assert "- Error: permission denied for /backups" in section(text, "5. Errors Encountered")
    assert any(line.startswith("- bash(") for line in section(text, "2. Completed Steps"))


def test_extractive_stays_within_the_token_budget_dropping_the_lowest_priority_facts() -> None:
    full = ExtractiveSummarizer().summarize(request(HERMES_SECTIONS), CHARS4)
    text = ExtractiveSummarizer().summarize(request(HERMES_SECTIONS, max_tokens=150), CHARS4)
    assert CHARS4.count(full) > 150 >= CHARS4.count(text)
    assert "Migrate the orders table" in text and "/backups/orders-2024.sql" in text
    assert "bash(" in full and "bash(" not in text  # actions rank last


def test_extractive_never_invents_text() -> None:
    text = ExtractiveSummarizer().summarize(request(HERMES_SECTIONS), CHARS4)
    source = "\n".join(
        m.content + "".join(c.name + "(" + c.arguments for c in m.tool_calls) for m in MESSAGES
    )
    for line in text.splitlines():
        if line.startswith("- ") and line != "- None":
            assert line[2:].rstrip(")") in source


def test_extractive_carries_the_previous_summary_under_its_headings_first() -> None:
    previous = "## Relevant Files\n- /etc/app.conf\n\n## Blocked\n- None"
    text = ExtractiveSummarizer().summarize(
        request(HERMES_SECTIONS, previous_summary=previous), CHARS4
    )
    assert section(text, "Relevant Files")[:2] == ["- /etc/app.conf", "- /backups/orders-2024.sql"]


def test_extractive_carries_a_summary_message_instead_of_mining_it() -> None:
    old = Message(
        "user", "[Context Summary of 9 earlier messages]\n\n## 4. Key Data\n- table=orders_v2"
    )
    req = SummaryRequest("dbgpt", "layer3", "p", (old, *MESSAGES), DBGPT_SECTIONS)
    text = ExtractiveSummarizer().summarize(req, CHARS4)
    assert section(text, "4. Key Data")[0] == "- table=orders_v2"
    assert "[Context Summary" not in text


# -- lossy ---------------------------------------------------------------------------------------------


def test_lossy_drops_the_same_facts_for_the_same_seed_and_key() -> None:
    a = LossySummarizer(0.5, seed=1).summarize(request(HERMES_SECTIONS), CHARS4)
    assert a == LossySummarizer(0.5, seed=1).summarize(request(HERMES_SECTIONS), CHARS4)
    assert a != LossySummarizer(0.5, seed=2).summarize(request(HERMES_SECTIONS), CHARS4)


def test_lossy_with_no_drops_is_extractive_and_with_all_drops_is_empty() -> None:
    full = ExtractiveSummarizer().summarize(request(HERMES_SECTIONS), CHARS4)
    assert LossySummarizer(0.0).summarize(request(HERMES_SECTIONS), CHARS4) == full
    empty = LossySummarizer(1.0).summarize(request(HERMES_SECTIONS), CHARS4)
    assert all(line == "- None" for line in empty.splitlines() if line.startswith("- "))
    with pytest.raises(ConfigError, match="drop_rate"):
        LossySummarizer(1.5)


# -- failing -------------------------------------------------------------------------------------------


def test_failing_raises_fail_times_times_then_summarises() -> None:
    s = FailingSummarizer(fail_times=2, kind="timeout")
    for _ in range(2):
        with pytest.raises(SummarizerError) as error:
            s.summarize(request(HERMES_SECTIONS), CHARS4)
        assert error.value.kind == "timeout"
    assert s.summarize(request(HERMES_SECTIONS), CHARS4).startswith("## Historical Task Snapshot")
    assert s.params() == {"fail_times": 2, "kind": "timeout"}


def test_failing_with_a_negative_count_always_fails_and_rejects_unknown_kinds() -> None:
    s = FailingSummarizer()
    for _ in range(5):
        with pytest.raises(SummarizerError):
            s.summarize(request(HERMES_SECTIONS), CHARS4)
    with pytest.raises(ConfigError, match="kind"):
        FailingSummarizer(kind="bogus")


def test_every_summarizer_is_registered() -> None:
    assert {"extractive", "lossy", "openai", "failing"} <= set(SUMMARIZERS.names())
    assert isinstance(build_summarizer("failing", {"fail_times": 1}), FailingSummarizer)


# -- openai: a real local endpoint ---------------------------------------------------------------------


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    delay: float = 0.0


@dataclass
class Endpoint:
    url: str
    script: list[Reply] = field(default_factory=list)
    seen: list[dict[str, Any]] = field(default_factory=list)


def chat(content: Any) -> bytes:
    return json.dumps(
        {"choices": [{"message": {"role": "assistant", "content": content}}]}
    ).encode()


@pytest.fixture()
def endpoint() -> Iterator[Endpoint]:
    state = Endpoint(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            state.seen.append(
                {
                    "path": self.path,
                    "headers": dict(self.headers),
                    "body": json.loads(self.rfile.read(length)),
                }
            )
            reply = state.script.pop(0) if state.script else Reply(body=chat("default summary"))
            if reply.delay:
                time.sleep(reply.delay)
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture()
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CTXBENCH_TEST_KEY", SECRET)
    return "CTXBENCH_TEST_KEY"


def client(endpoint: Endpoint, tmp_path: Path, key: str, **kw: Any) -> OpenAISummarizer:
    kw.setdefault("backoff", 0.0)
    return OpenAISummarizer(
        base_url=endpoint.url, model="m-1", api_key_env=key, cache_dir=str(tmp_path / "cache"), **kw
    )


def test_openai_sends_the_prompt_with_the_key_from_the_environment(
    endpoint: Endpoint, tmp_path: Path, key: str
) -> None:
    endpoint.script.append(Reply(body=chat("the summary")))
    text = client(endpoint, tmp_path, key).summarize(
        request(HERMES_SECTIONS, max_tokens=300), CHARS4
    )
    assert text == "the summary"
    (seen,) = endpoint.seen
    assert seen["path"] == "/v1/chat/completions"
    assert seen["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert seen["body"] == {
        "model": "m-1",
        "messages": [{"role": "user", "content": "prompt"}],
        "temperature": 0.0,
        "max_tokens": 300,
    }


def test_openai_sends_no_token_cap_when_the_real_system_sends_none(
    endpoint: Endpoint, tmp_path: Path, key: str
) -> None:
    client(endpoint, tmp_path, key).summarize(
        request(HERMES_SECTIONS, max_tokens=300, send_max_tokens=False), CHARS4
    )
    assert "max_tokens" not in endpoint.seen[0]["body"]


def test_openai_answers_a_repeated_request_from_the_disk_cache(
    endpoint: Endpoint, tmp_path: Path, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint.script.append(Reply(body=chat("cached summary")))
    first = client(endpoint, tmp_path, key).summarize(request(HERMES_SECTIONS), CHARS4)
    monkeypatch.delenv(key)  # a cache hit needs neither the key nor the server
    again = client(endpoint, tmp_path, key)
    assert again.summarize(request(HERMES_SECTIONS), CHARS4) == first == "cached summary"
    assert len(endpoint.seen) == 1 and again.requests_sent == 0


def test_openai_cache_is_keyed_by_endpoint_model_and_prompt(
    endpoint: Endpoint, tmp_path: Path, key: str
) -> None:
    s = client(endpoint, tmp_path, key)
    base = s.cache_key(s.body(request(HERMES_SECTIONS)))
    other_prompt = SummaryRequest("t", "l", "other", (), HERMES_SECTIONS)
    assert base != s.cache_key(s.body(other_prompt))
    other_model = OpenAISummarizer(base_url=endpoint.url, model="m-2", api_key_env=key)
    assert base != other_model.cache_key(other_model.body(request(HERMES_SECTIONS)))
    other_url = OpenAISummarizer(base_url=endpoint.url + "/x", model="m-1", api_key_env=key)
    assert base != other_url.cache_key(other_url.body(request(HERMES_SECTIONS)))


def test_openai_retries_server_errors_with_exponential_backoff(
    endpoint: Endpoint, tmp_path: Path, key: str
) -> None:
    endpoint.script += [Reply(500, b"busy"), Reply(503, b"busy"), Reply(body=chat("third time"))]
    sleeps: list[float] = []
    s = client(endpoint, tmp_path, key, backoff=0.5, max_retries=2, sleep=sleeps.append)
    assert s.summarize(request(HERMES_SECTIONS), CHARS4) == "third time"
    assert len(endpoint.seen) == 3 and sleeps == [0.5, 1.0]


def test_openai_reports_http_500_after_the_last_retry(
    endpoint: Endpoint, tmp_path: Path, key: str
) -> None:
    endpoint.script += [Reply(500, b"down")] * 3
    with pytest.raises(SummarizerError) as error:
        client(endpoint, tmp_path, key, max_retries=2).summarize(request(HERMES_SECTIONS), CHARS4)
    assert error.value.kind == "http" and "HTTP 500" in error.value.message
    assert len(endpoint.seen) == 3


def test_openai_does_not_retry_a_client_error(endpoint: Endpoint, tmp_path: Path, key: str) -> None:
    endpoint.script.append(Reply(400, b'{"error": "bad request"}'))
    with pytest.raises(SummarizerError) as error:
        client(endpoint, tmp_path, key).summarize(request(HERMES_SECTIONS), CHARS4)
    assert error.value.kind == "http" and len(endpoint.seen) == 1


def test_openai_reports_401_as_an_auth_failure_without_echoing_the_key(
    endpoint: Endpoint, tmp_path: Path, key: str
) -> None:
    endpoint.script.append(Reply(401, f"invalid key {SECRET}".encode()))
    with pytest.raises(SummarizerError) as error:
        client(endpoint, tmp_path, key).summarize(request(HERMES_SECTIONS), CHARS4)
    assert (
        error.value.kind == "auth" and SECRET not in str(error.value) and "***" in str(error.value)
    )


def test_openai_times_out(endpoint: Endpoint, tmp_path: Path, key: str) -> None:
    endpoint.script += [Reply(body=chat("late"), delay=0.6)] * 2
    with pytest.raises(SummarizerError) as error:
        client(endpoint, tmp_path, key, timeout=0.2, max_retries=1).summarize(
            request(HERMES_SECTIONS), CHARS4
        )
    assert error.value.kind == "timeout" and len(endpoint.seen) == 2


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (chat(""), "empty"),
        (chat("   \n"), "empty"),
        (b"<html>502 Bad Gateway</html>", "malformed"),
        (json.dumps({"choices": []}).encode(), "malformed"),
        (json.dumps({"result": "x"}).encode(), "malformed"),
    ],
)
def test_openai_rejects_empty_and_malformed_responses(
    endpoint: Endpoint, tmp_path: Path, key: str, body: bytes, kind: str
) -> None:
    endpoint.script.append(Reply(body=body))
    with pytest.raises(SummarizerError) as error:
        client(endpoint, tmp_path, key).summarize(request(HERMES_SECTIONS), CHARS4)
    assert error.value.kind == kind
    assert not list((tmp_path / "cache").rglob("*.json"))  # failures are never cached


def test_openai_reports_an_unreachable_endpoint_as_a_connection_failure(
    tmp_path: Path, key: str
) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    s = OpenAISummarizer(
        base_url=f"http://127.0.0.1:{port}/v1",
        model="m",
        api_key_env=key,
        cache_dir=str(tmp_path),
        max_retries=0,
    )
    with pytest.raises(SummarizerError) as error:
        s.summarize(request(HERMES_SECTIONS), CHARS4)
    assert error.value.kind == "connection"


def test_openai_without_its_key_variable_fails_before_any_request(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    s = OpenAISummarizer(
        base_url=endpoint.url,
        model="m",
        api_key_env="CTXBENCH_UNSET_KEY_VAR",
        cache_dir=str(tmp_path),
    )
    with pytest.raises(SummarizerError) as error:
        s.summarize(request(HERMES_SECTIONS), CHARS4)
    assert error.value.kind == "auth" and "CTXBENCH_UNSET_KEY_VAR" in error.value.message
    assert not endpoint.seen


def test_openai_needs_a_model_and_an_http_url() -> None:
    with pytest.raises(ConfigError, match="model"):
        OpenAISummarizer()
    with pytest.raises(ConfigError, match="base_url"):
        OpenAISummarizer(base_url="ftp://x", model="m")


def test_the_key_never_reaches_params_cache_files_events_or_rows(
    endpoint: Endpoint, tmp_path: Path, key: str
) -> None:
    fields = {
        name: f"{name} of the work"
        for name in (
            "task_overview",
            "current_state",
            "important_discoveries",
            "next_steps",
            "context_to_preserve",
        )
    }
    endpoint.script += [Reply(401, f"bad {SECRET}".encode())] + [
        Reply(body=chat(json.dumps(fields)))
    ] * 50
    trace = tool_trace(80, output="r" * 400)
    params = {
        "base_url": endpoint.url,
        "model": "m-1",
        "api_key_env": key,
        "cache_dir": str(tmp_path / "cache"),
        "backoff": 0.0,
    }
    spec = resolve_spec(
        RunSpec(
            trace_id=trace.id,
            trace_hash=trace.content_hash,
            strategy="agentscope",
            params={"context_size": 4000},
            window=20_000,
            reserved=0,
            counter="chars4",
            summarizer="openai",
            summarizer_params=params,
        )
    )
    output = run_spec(spec, trace)
    assert any(e.type == "summary" and e["ok"] for e in output.events)
    assert any(
        e.type == "summary" and not e["ok"] and e["error"].startswith("auth: HTTP 401")
        for e in output.events
    )
    write_files(tmp_path / "files", output.files)
    (tmp_path / "events.jsonl").write_text(
        "\n".join(event_line(e, run_id=spec.run_id) for e in output.events)
    )
    (tmp_path / "row.json").write_text(
        json.dumps(output.result.to_row()) + json.dumps(spec.to_dict())
    )
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".json" and "cache" in p.parts for p in written)
    for path in written:
        assert SECRET not in path.read_text("utf-8", errors="replace"), path
    assert SECRET not in json.dumps(build_summarizer("openai", params).params())
