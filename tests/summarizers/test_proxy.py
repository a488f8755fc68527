"""The summarizer client honours HTTP(S)_PROXY / NO_PROXY (issue 22): a CONNECT tunnel for an
https endpoint (the proxy relays TLS and never sees the key), an absolute-form request for an
http one, the hosts NO_PROXY lists reached directly, and the key never sent to an origin other
than the endpoint's. Every server is real and on 127.0.0.1: an OpenAI-compatible endpoint
(plain, or TLS with a certificate made by ``openssl`` for the test) and a tiny proxy."""

from __future__ import annotations

import base64
import contextlib
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ctxbench.counting import get_counter
from ctxbench.errors import SummarizerError
from ctxbench.summarizers.base import SummaryRequest
from ctxbench.summarizers.openai_compat import OpenAISummarizer
from tests.summarizers.fake_endpoint import Endpoint, serve
from tests.summarizers.fake_endpoint import endpoint as new_endpoint

KEY_ENV = "CTXBENCH_PROXY_TEST_KEY"
SECRET = "sk-proxy-0123456789abcdefghijKLMN"
PROXY_VARS = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")


@pytest.fixture()
def endpoint() -> Iterator[Endpoint]:
    server = new_endpoint()
    yield from (server for _ in serve(server))


@pytest.fixture()
def other() -> Iterator[Endpoint]:
    server = new_endpoint()
    yield from (server for _ in serve(server))


@pytest.fixture()
def tls_endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Endpoint]:
    """A TLS endpoint whose self-signed certificate the client trusts (SSL_CERT_FILE)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = new_endpoint(context)
    yield from (server for _ in serve(server))


@dataclass
class Proxy:
    """A tiny forward proxy: CONNECT tunnels, and absolute-form HTTP requests it forwards in
    origin form (without Proxy-Authorization). It records what it received."""

    sock: socket.socket
    heads: list[bytes] = field(default_factory=list)
    relayed: bytearray = field(default_factory=bytearray)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                conn.close()
                return
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        self.heads.append(head)
        method, target, _ = head.split(b"\r\n")[0].split(b" ")
        if method == b"CONNECT":
            host, port = target.decode().rsplit(":", 1)
            upstream = socket.create_connection((host, int(port)))
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            pump = threading.Thread(target=self._pump, args=(upstream, conn, False), daemon=True)
            pump.start()
            self._pump(conn, upstream, True)
            pump.join(5)
            return
        url = target.decode()
        hostport, _, path = url.split("://", 1)[1].partition("/")
        host, port = hostport.rsplit(":", 1)
        lines = [f"{method.decode()} /{path} HTTP/1.1".encode()] + [
            h for h in head.split(b"\r\n")[1:] if not h.lower().startswith(b"proxy-")
        ]
        upstream = socket.create_connection((host, int(port)))
        upstream.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + rest)
        length = next(
            (int(h.split(b":")[1]) for h in lines if h.lower().startswith(b"content-length")), 0
        )
        sent = len(rest)
        while sent < length:
            chunk = conn.recv(65536)
            upstream.sendall(chunk)
            sent += len(chunk)
        self._pump(upstream, conn, False)

    def _pump(self, src: socket.socket, dst: socket.socket, record: bool) -> None:
        try:
            while chunk := src.recv(65536):
                if record:
                    self.relayed.extend(chunk)
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_WR)


@pytest.fixture()
def proxy() -> Iterator[Proxy]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    found = Proxy(sock)
    threading.Thread(target=found.serve, daemon=True).start()
    yield found
    sock.close()


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(KEY_ENV, SECRET)


def _summarise(base_url: str, tmp_path: Path) -> str:
    client = OpenAISummarizer(
        base_url=base_url,
        model="m",
        api_key_env=KEY_ENV,
        cache_dir=str(tmp_path / "cache"),
        max_retries=0,
        timeout=10,
    )
    request = SummaryRequest("t", "layer", "summarise this", (), ("Summary",))
    return client.summarize(request, get_counter("chars4"))


def test_an_http_endpoint_is_asked_for_in_absolute_form_through_http_proxy(
    endpoint: Endpoint, proxy: Proxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = f"{proxy.url.replace('http://', 'http://alice:s3cret@')}"
    monkeypatch.setenv("HTTP_PROXY", user)
    url = f"http://127.0.0.1:{endpoint.server_port}/v1"
    assert _summarise(url, tmp_path) == "the summary"
    [head] = proxy.heads
    assert head.split(b"\r\n")[0] == f"POST {url}/chat/completions HTTP/1.1".encode()
    basic = base64.b64encode(b"alice:s3cret").decode()
    assert f"Proxy-Authorization: Basic {basic}".encode() in head
    assert endpoint.requests == [("/v1/chat/completions", f"Bearer {SECRET}", "")]


def test_an_https_endpoint_is_reached_through_a_connect_tunnel_the_proxy_cannot_read(
    tls_endpoint: Endpoint, proxy: Proxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("https_proxy", proxy.url)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # not for https
    port = tls_endpoint.server_port
    assert _summarise(f"https://127.0.0.1:{port}/v1", tmp_path) == "the summary"
    [head] = proxy.heads
    assert head.split(b"\r\n")[0].startswith(f"CONNECT 127.0.0.1:{port} HTTP/1.".encode())
    assert SECRET.encode() not in head and SECRET.encode() not in bytes(proxy.relayed)
    assert proxy.relayed  # the request went through the tunnel, encrypted
    assert tls_endpoint.requests == [("/v1/chat/completions", f"Bearer {SECRET}", "")]


def test_no_proxy_hosts_are_reached_directly(
    endpoint: Endpoint, proxy: Proxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "example.org, 127.0.0.1")
    assert _summarise(f"http://127.0.0.1:{endpoint.server_port}/v1", tmp_path) == "the summary"
    assert proxy.heads == [] and len(endpoint.requests) == 1


def test_a_redirect_through_the_proxy_is_not_followed_and_the_key_stays_home(
    endpoint: Endpoint,
    other: Endpoint,
    proxy: Proxy,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    endpoint.redirect = f"http://127.0.0.1:{other.server_port}/v1/chat/completions"
    with pytest.raises(SummarizerError, match="redirects are not followed"):
        _summarise(f"http://127.0.0.1:{endpoint.server_port}/v1", tmp_path)
    assert other.requests == [] and len(proxy.heads) == 1


def test_an_unusable_proxy_setting_is_an_error_that_names_no_credentials(
    endpoint: Endpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"http://127.0.0.1:{endpoint.server_port}/v1"
    monkeypatch.setenv("HTTP_PROXY", "https://bob:hunter22@127.0.0.1:3128")
    with pytest.raises(SummarizerError, match="not an http://host:port proxy") as info:
        _summarise(url, tmp_path)
    assert "hunter22" not in info.value.message and "bob" not in info.value.message
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there
    monkeypatch.setenv("HTTP_PROXY", f"http://bob:hunter22@127.0.0.1:{port}")
    with pytest.raises(SummarizerError) as refused:
        _summarise(url, tmp_path)
    assert refused.value.kind == "connection"
    assert f"via proxy http://127.0.0.1:{port}" in refused.value.message
    assert "hunter22" not in refused.value.message
    assert endpoint.requests == []
