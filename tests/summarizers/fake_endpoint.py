"""A real OpenAI-compatible endpoint on 127.0.0.1 for tests: it records every request
(path, Authorization, Proxy-Authorization) and answers with a chat completion, or with a
redirect when ``redirect`` is set."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SUMMARY = "the summary"


class Endpoint(ThreadingHTTPServer):
    requests: list[tuple[str, str, str]]  # (path, Authorization, Proxy-Authorization)
    redirect: str


class Handler(BaseHTTPRequestHandler):
    server: Endpoint

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.requests.append(
            (
                self.path,
                self.headers.get("Authorization") or "",
                self.headers.get("Proxy-Authorization") or "",
            )
        )
        if self.server.redirect:
            self.send_response(307)
            self.send_header("Location", self.server.redirect)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps({"choices": [{"message": {"content": SUMMARY}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def serve(server: ThreadingHTTPServer) -> Iterator[None]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield
    server.shutdown()
    server.server_close()


def endpoint(context: ssl.SSLContext | None = None) -> Endpoint:
    server = Endpoint(("127.0.0.1", 0), Handler)
    server.requests, server.redirect = [], ""
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    return server
