"""Serve a written viewer on 127.0.0.1 only (never another interface), until Ctrl-C.

It serves the viewer's page to the viewer's page and to nothing else (issue 38):

- everything lives under ``/TOKEN/``, a random token drawn per run (printed with the address):
  another page cannot guess where the data are;
- the data are JSON (``data/KEY.json``, unwrapped from the ``data/KEY.js`` files a page opened
  from ``file://`` loads), never script, so ``<script src>`` from another origin reads nothing;
- the ``Host`` header must name the bound address (``127.0.0.1:PORT`` or ``localhost:PORT``):
  a DNS-rebound name is answered 421;
- only the page's three files, ``data/`` and ``files/`` are served; no directory listing, no
  hidden file (the marker), no link, no FIFO or device; every answer says
  ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``;
- files a strategy wrote from trace content (``files/``) are downloads
  (``Content-Disposition: attachment``, ``application/octet-stream``) under
  ``Content-Security-Policy: sandbox; default-src 'none'``: a file named ``.html`` never runs
  as a page of the viewer's origin.
"""

from __future__ import annotations

import contextlib
import errno
import http.server
import json
import os
import secrets
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

import click

from ctxbench.errors import ConfigError
from ctxbench.guard import special_kind

HOST = "127.0.0.1"
#: The page's own files, with their types.
PAGE_FILES = {
    "index.html": "text/html; charset=utf-8",
    "viewer.js": "text/javascript; charset=utf-8",
    "viewer.css": "text/css; charset=utf-8",
}
PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
FILE_POLICY = "sandbox; default-src 'none'"
_LOADER = "ctxbenchLoad("


class ViewerServer(http.server.ThreadingHTTPServer):
    """A viewer folder served under a random token (see the module doc)."""

    daemon_threads = True

    def __init__(self, root: Path, port: int) -> None:
        self.root = root.resolve()
        self.token = secrets.token_urlsafe(18)
        super().__init__((HOST, port), _Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        """The viewer's address (the only one answered)."""
        return f"http://{HOST}:{self.port}/{self.token}/"

    def hosts(self) -> frozenset[str]:
        return frozenset({f"{HOST}:{self.port}", f"localhost:{self.port}"})


class _Handler(http.server.BaseHTTPRequestHandler):
    server: ViewerServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _answer(self, *, body: bool) -> None:
        if self.headers.get("Host", "").lower() not in self.server.hosts():
            self._fail(421, "misdirected request: this server answers only its own address")
            return
        path = unquote(urlsplit(self.path).path)
        prefix = f"/{self.server.token}"
        if path == prefix:
            self._redirect(prefix + "/")
            return
        if not path.startswith(prefix + "/"):
            self._fail(404, "not found")
            return
        relative = path[len(prefix) + 1 :] or "index.html"
        parts = relative.split("/")
        if any(p in ("", ".", "..") or p.startswith(".") or "\\" in p or "\0" in p for p in parts):
            self._fail(404, "not found")
            return
        if len(parts) == 1 and parts[0] in PAGE_FILES:
            self._file(parts, PAGE_FILES[parts[0]], body=body, policy=PAGE_POLICY)
        elif parts[0] == "data" and len(parts) > 1 and parts[-1].endswith(".json"):
            self._data(parts, body=body)
        elif parts[0] == "files" and len(parts) > 2:
            self._file(parts, "application/octet-stream", body=body, download=True)
        else:
            self._fail(404, "not found")

    def _target(self, parts: list[str]) -> Path | None:
        """The regular file at ``parts`` under the root, reached through no link."""
        target = self.server.root.joinpath(*parts)
        if Path(os.path.realpath(target)) != target or special_kind(target) is not None:
            return None
        return target if target.is_file() else None

    def _data(self, parts: list[str], *, body: bool) -> None:
        key = "/".join(parts[1:])[: -len(".json")]
        target = self._target(["data", *parts[1:-1], parts[-1][: -len(".json")] + ".js"])
        head = f"{_LOADER}{json.dumps(key)},"
        try:
            text = target.read_text("utf-8") if target is not None else ""
        except OSError:
            text = ""
        if not (text.startswith(head) and text.endswith(");\n")):
            self._fail(404, "not found")
            return
        payload = text[len(head) : -len(");\n")].encode("utf-8")
        self._start(200, "application/json; charset=utf-8", len(payload), policy=FILE_POLICY)
        if body:
            self.wfile.write(payload)

    def _file(
        self,
        parts: list[str],
        content_type: str,
        *,
        body: bool,
        policy: str = FILE_POLICY,
        download: bool = False,
    ) -> None:
        target = self._target(parts)
        try:
            fh = target.open("rb") if target is not None else None
        except OSError:
            fh = None
        if target is None or fh is None:
            self._fail(404, "not found")
            return
        with fh:
            size = os.fstat(fh.fileno()).st_size
            extra = {}
            if download:
                name = parts[-1].replace('"', "")
                extra["Content-Disposition"] = f'attachment; filename="{name}"'
            self._start(200, content_type, size, policy=policy, extra=extra)
            if body:
                shutil.copyfileobj(fh, self.wfile)

    def _start(
        self,
        code: int,
        content_type: str,
        length: int,
        *,
        policy: str = FILE_POLICY,
        extra: dict[str, str] | None = None,
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", policy)
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()

    def _redirect(self, location: str) -> None:
        self._start(301, "text/plain; charset=utf-8", 0, extra={"Location": location})

    def _fail(self, code: int, message: str) -> None:
        data = (message + "\n").encode("utf-8")
        self._start(code, "text/plain; charset=utf-8", len(data))
        if self.command != "HEAD":
            self.wfile.write(data)


def make_server(directory: str | Path, *, port: int = 0) -> ViewerServer:
    """A server for the viewer in ``directory``, bound to 127.0.0.1 (port 0: a free port);
    a port in use is one clear error."""
    try:
        return ViewerServer(Path(directory), port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} on {HOST} is in use",
                hint="give another --port, or leave --port out for a free one",
            ) from None
        raise ConfigError(
            f"cannot listen on {HOST}:{port}: {exc.strerror or exc}",
            hint="give another --port, or leave --port out for a free one",
        ) from None


def serve_forever(server: ViewerServer) -> None:
    """Print the viewer's address and serve it until Ctrl-C."""
    click.echo(f"serving {server.url} (Ctrl-C stops)")
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


def serve_directory(directory: str | Path, *, port: int = 0) -> None:
    server = make_server(directory, port=port)
    try:
        serve_forever(server)
    finally:
        server.server_close()
