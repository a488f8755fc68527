"""Serve a written viewer on 127.0.0.1 only (never another interface), until Ctrl-C."""

from __future__ import annotations

import functools
import http.server
from pathlib import Path

import click

HOST = "127.0.0.1"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """Static files, without a log line per request."""

    def log_message(self, format: str, *args: object) -> None:
        return


def make_server(directory: str | Path, *, port: int = 0) -> http.server.ThreadingHTTPServer:
    """A server for ``directory`` bound to 127.0.0.1 (port 0: any free port)."""
    handler = functools.partial(_Quiet, directory=str(directory))
    return http.server.ThreadingHTTPServer((HOST, port), handler)


def serve_directory(directory: str | Path, *, port: int) -> None:
    server = make_server(directory, port=port)
    click.echo(f"serving http://{HOST}:{server.server_address[1]}/ (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
