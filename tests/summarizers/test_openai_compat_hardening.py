"""Hardening: the OpenAI-compatible summarizer against hostile endpoints (issue 22).

Every server here is a real HTTP server on 127.0.0.1 (loopback only), scripted per request,
answering a bounded number of requests. What must hold: a redirect to another origin is not
followed and the key never reaches that origin; ``timeout`` bounds a whole request even when
the server trickles bytes; a reply over the size cap is refused while it is read (memory stays
flat, nothing is cached); a key with surrounding whitespace is stripped, one with whitespace or
control characters inside is refused before any request; echoes of the key, whole, partial (8+
characters) or JSON-escaped, never reach an error, an event or a cache entry.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ctxbench.counting import get_counter
from ctxbench.errors import SummarizerError
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.summarizers.openai_compat import MAX_RESPONSE_BYTES, OpenAISummarizer
from ctxbench.summarizers.secret import FRAGMENT, Secret

CHARS4 = get_counter("chars4")
KEY_ENV = "CTXBENCH_ENDPOINT_TEST_KEY"
SECRET = "sk-test/0123456789abcdefghijKLMNOPQRST"
#: Requests a scripted server answers before it stops (no test loops without end).
MAX_REQUESTS = 8

Script = Callable[[socket.socket, bytes], None]


@dataclass
class Server:
    """A loopback server: each connection's request (raw bytes) is recorded, then answered by
    ``script``."""

    port: int = 0
    requests: list[bytes] = field(default_factory=list)
    script: Script | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def read_request(conn: socket.socket) -> bytes:
    """The request's head and body (by its Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


@pytest.fixture()
def servers() -> Iterator[Callable[[Script], Server]]:
    """Start loopback servers; each serves at most MAX_REQUESTS connections."""
    started: list[threading.Thread] = []
    stop = threading.Event()

    def start(script: Script) -> Server:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.settimeout(0.05)
        state = Server(listener.getsockname()[1], script=script)

        def serve() -> None:
            served = 0
            while served < MAX_REQUESTS and not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                served += 1
                conn.settimeout(30)
                with conn:
                    try:
                        request = read_request(conn)
                        state.requests.append(request)
                        assert state.script is not None
                        state.script(conn, request)
                    except OSError:
                        pass
            listener.close()  # later requests are refused, never left waiting

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        started.append(thread)
        return state

    yield start
    stop.set()
    for thread in started:
        thread.join(timeout=5)


def respond(body: bytes, status: str = "200 OK", headers: str = "") -> Script:
    def script(conn: socket.socket, request: bytes) -> None:
        conn.sendall(
            f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{headers}Connection: close\r\n\r\n".encode()
            + body
        )

    return script


def chat(content: str) -> bytes:
    return json.dumps(
        {"choices": [{"message": {"role": "assistant", "content": content}}]}
    ).encode()


def request(prompt: str = "summarise this") -> SummaryRequest:
    return SummaryRequest("t", "layer", prompt, (), ("Summary",))


@pytest.fixture()
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return KEY_ENV


def client(url: str, tmp_path: Path, **kw: Any) -> OpenAISummarizer:
    kw.setdefault("max_retries", 0)
    kw.setdefault("backoff", 0.0)
    return OpenAISummarizer(
        base_url=url, model="m", api_key_env=KEY_ENV, cache_dir=str(tmp_path / "cache"), **kw
    )


def cache_text(tmp_path: Path) -> str:
    return "".join(p.read_text("utf-8") for p in (tmp_path / "cache").rglob("*.json"))


def fragments(secret: str) -> list[str]:
    return [secret[i : i + FRAGMENT] for i in range(len(secret) - FRAGMENT + 1)]


def assert_no_piece_of_the_key(text: str) -> None:
    escaped = json.dumps(SECRET)[1:-1].replace("/", "\\/")
    for form in (SECRET, escaped):
        for piece in fragments(form):
            assert piece not in text, (piece, text)


# -- redirects -----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["301 Moved Permanently", "302 Found", "307 Temporary", "308 P"])
def test_a_redirect_to_another_origin_is_not_followed_and_gets_no_key(
    servers: Callable[[Script], Server], tmp_path: Path, key: str, status: str
) -> None:
    elsewhere = servers(respond(chat("from elsewhere")))
    redirector = servers(
        respond(b"", status, headers=f"Location: {elsewhere.url}/chat/completions?k=1\r\n")
    )
    with pytest.raises(SummarizerError) as error:
        client(redirector.url, tmp_path).summarize(request(), CHARS4)
    assert error.value.kind == "http" and "redirects are not followed" in error.value.message
    assert f"127.0.0.1:{elsewhere.port}" in error.value.message  # where it pointed, no path
    assert "k=1" not in error.value.message
    assert len(redirector.requests) == 1 and not elsewhere.requests
    assert SECRET.encode() in redirector.requests[0]  # the endpoint itself got the key
    assert not (tmp_path / "cache").exists()


# -- a total deadline ------------------------------------------------------------------------------


def trickle(every: float, total: int) -> Script:
    """Headers at once, then one byte of body every ``every`` seconds."""

    def script(conn: socket.socket, request: bytes) -> None:
        body = chat("x" * total)
        conn.sendall(
            f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        )
        for byte in body:
            conn.sendall(bytes([byte]))
            time.sleep(every)

    return script


def trickle_headers(every: float) -> Script:
    """The status line and headers, one byte every ``every`` seconds (never finishing)."""

    def script(conn: socket.socket, request: bytes) -> None:
        for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 200:
            conn.sendall(bytes([byte]))
            time.sleep(every)

    return script


@pytest.mark.parametrize("script", [trickle(0.1, 200), trickle_headers(0.1)], ids=["body", "head"])
def test_timeout_bounds_the_whole_request_of_a_trickling_server(
    servers: Callable[[Script], Server], tmp_path: Path, key: str, script: Script
) -> None:
    slow = servers(script)
    started = time.monotonic()
    with pytest.raises(SummarizerError) as error:
        client(slow.url, tmp_path, timeout=0.5, max_retries=1).summarize(request(), CHARS4)
    elapsed = time.monotonic() - started
    assert error.value.kind == "timeout", error.value
    assert len(slow.requests) == 2
    assert elapsed < 2 * 0.5 + 1.0, elapsed  # two attempts of 0.5 s; each byte came in 0.1 s


# -- a size cap ------------------------------------------------------------------------------------


def huge(declared: bool) -> Script:
    """A reply of 3x the cap: with its length declared, or streamed without one."""
    size = 3 * MAX_RESPONSE_BYTES

    def script(conn: socket.socket, request: bytes) -> None:
        length = f"Content-Length: {size + 64}\r\n" if declared else ""
        conn.sendall(f"HTTP/1.1 200 OK\r\n{length}Connection: close\r\n\r\n".encode())
        conn.sendall(b'{"choices": [{"message": {"content": "')
        chunk = b"y" * 65536
        with_sent = 0
        while with_sent < size:
            conn.sendall(chunk)
            with_sent += len(chunk)

    return script


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "streamed"])
def test_a_reply_over_the_size_cap_is_refused_and_not_cached(
    servers: Callable[[Script], Server], tmp_path: Path, key: str, declared: bool
) -> None:
    big = servers(huge(declared))
    with pytest.raises(SummarizerError) as error:
        client(big.url, tmp_path).summarize(request(), CHARS4)
    assert error.value.kind == "too_large"
    assert f"{MAX_RESPONSE_BYTES:,}" in error.value.message
    assert not (tmp_path / "cache").exists() or not cache_text(tmp_path)


# -- keys ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("padding", ["\r", "\n", " ", "\r\n", "\t"])
def test_a_key_with_surrounding_whitespace_is_stripped(
    servers: Callable[[Script], Server],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    padding: str,
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET + padding)
    ok = servers(respond(chat("fine")))
    assert client(ok.url, tmp_path).summarize(request(), CHARS4) == "fine"
    assert f"Authorization: Bearer {SECRET}\r\n".encode() in ok.requests[0]


@pytest.mark.parametrize("bad", ["sk-a\rb-0123456789", "sk with space 12345", "sk-é-0123456789"])
def test_a_key_with_whitespace_control_or_non_ascii_inside_is_refused_before_any_request(
    servers: Callable[[Script], Server],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bad: str,
) -> None:
    monkeypatch.setenv(KEY_ENV, bad)
    ok = servers(respond(chat("fine")))
    with pytest.raises(SummarizerError) as error:
        client(ok.url, tmp_path).summarize(request(), CHARS4)
    assert error.value.kind == "auth" and KEY_ENV in error.value.message
    assert not any(piece in error.value.message for piece in fragments(bad))
    assert not ok.requests


# -- scrubbing -------------------------------------------------------------------------------------


def echoes() -> dict[str, str]:
    """How a server may echo the key back."""
    escaped = SECRET.replace("/", "\\/")
    return {
        "whole": SECRET,
        "json-escaped": escaped,
        "partial-23": SECRET[5:28],
        "partial-8": SECRET[10 : 10 + FRAGMENT],
        "escaped-partial": escaped[3:20],
        "twice": SECRET[:12] + " and " + SECRET[-12:],
    }


@pytest.mark.parametrize("echo", list(echoes()))
@pytest.mark.parametrize("where", ["401 body", "summary", "malformed body"])
def test_echoes_of_the_key_are_scrubbed_from_errors_and_the_cache(
    servers: Callable[[Script], Server], tmp_path: Path, key: str, echo: str, where: str
) -> None:
    text = echoes()[echo]
    if where == "401 body":
        script = respond(json.dumps({"error": f"bad key {text}"}).encode(), "401 Unauthorized")
    elif where == "summary":
        script = respond(chat(f"the summary, and your key: {text}"))
    else:
        script = respond(f"<html>{text}</html>".encode())
    echoing = servers(script)
    summarizer = client(echoing.url, tmp_path)
    try:
        out = summarizer.summarize(request(), CHARS4)
    except SummarizerError as exc:
        out = exc.message
        assert where != "summary"
    assert "***" in out
    assert_no_piece_of_the_key(out)
    assert_no_piece_of_the_key(cache_text(tmp_path) if (tmp_path / "cache").exists() else "")


def test_a_key_ending_in_cr_never_reaches_events_or_rows_of_a_replay(
    servers: Callable[[Script], Server], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Windows ``.env`` case: before, 13 events and the row held an "Invalid header value"
    error with the whole key. Now the key is stripped, sent, and echoes are scrubbed."""
    from ctxbench.engine.provider import SimulatedProvider
    from ctxbench.engine.replay import replay
    from ctxbench.strategies import build_strategy
    from tests.factories import tool_trace

    monkeypatch.setenv(KEY_ENV, SECRET + "\r")
    echoing = servers(respond(json.dumps({"error": f"no: {SECRET}"}).encode(), "400 Bad"))
    trace = tool_trace(60, output="log line with numbers 12345 " * 110)
    out = replay(
        trace,
        build_strategy("hermes"),
        SimulatedProvider(6000, 0),
        true_counter=CHARS4,
        estimator=CHARS4,
        summarizer=client(echoing.url, tmp_path, timeout=2.0),
    )
    dumped = json.dumps([e.to_dict() for e in out.events])
    summaries = [e for e in out.events if e.type == "summary"]
    assert summaries and all(not e.data["ok"] for e in summaries)
    assert "Invalid header" not in dumped
    assert_no_piece_of_the_key(dumped)
    assert 1 <= len(echoing.requests) <= MAX_REQUESTS


def test_scrub_masks_every_fragment_and_leaves_other_text() -> None:
    secret = Secret(SECRET)
    assert secret.scrub("nothing here") == "nothing here"
    assert (
        secret.scrub(f"a {SECRET[3 : 3 + FRAGMENT - 1]} b") == f"a {SECRET[3 : 3 + FRAGMENT - 1]} b"
    )
    assert secret.scrub(f"a {SECRET} b") == "a *** b"
    assert secret.scrub(f"{SECRET[:9]}|{SECRET[20:]}") == "***|***"
    assert Secret("").scrub("text") == "text"
    assert Secret("short").scrub("a short b") == "a *** b"
