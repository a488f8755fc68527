"""``ctxbench view --serve`` over real HTTP on 127.0.0.1 (issue 38, items 5, 6 and 9): data as
JSON behind a random token, the Host header checked, no listing, no hidden file, no link,
``nosniff`` everywhere, trace files as sandboxed downloads, a port in use as one error."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxbench.errors import ConfigError
from ctxbench.view import build
from ctxbench.view.serve import HOST, ViewerServer, make_server
from tests.hardening import run_main
from tests.viewing import two_runs


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("serve") / "viewer"
    build(two_runs().rows_file, folder)
    run_id = two_runs().rows[0]["run_id"]
    planted = folder / "files" / run_id / "evil.html"
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text("<script>alert(1)</script>", "utf-8")
    (folder / "secret.txt").write_text("not the viewer's", "utf-8")
    (folder / "files" / run_id / "link").symlink_to(folder / "secret.txt")
    return folder


@pytest.fixture(scope="module")
def server(viewer: Path) -> Iterator[ViewerServer]:
    server = make_server(viewer, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def get(
    server: ViewerServer, path: str, host: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection(HOST, server.port, timeout=10)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", f"{HOST}:{server.port}" if host is None else host)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_everything_lives_under_a_random_token(server: ViewerServer) -> None:
    token = f"/{server.token}/"
    assert len(server.token) >= 20 and server.url == f"http://{HOST}:{server.port}{token}"
    assert make_server(server.root, port=0).token != server.token  # drawn per run
    status, headers, body = get(server, token)
    assert status == 200 and b"viewer.js" in body
    assert headers["Content-Type"].startswith("text/html")
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    for path in ("/", "/index.html", "/data/index.js", "/data/index.json", "/viewer.js"):
        assert get(server, path)[0] == 404, path


def test_data_are_json_never_script(server: ViewerServer) -> None:
    status, headers, body = get(server, f"/{server.token}/data/index.json")
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    assert headers["X-Content-Type-Options"] == "nosniff"
    index = json.loads(body)
    assert {r["run_id"] for r in index["runs"]} == {r["run_id"] for r in two_runs().rows}
    assert get(server, f"/{server.token}/data/index.js")[0] == 404
    run = index["runs"][0]["id"]
    status, _, body = get(server, f"/{server.token}/data/{run}/run.json")
    assert status == 200 and json.loads(body)["run_id"] == run


def test_the_host_header_must_name_the_bound_address(server: ViewerServer) -> None:
    path = f"/{server.token}/data/index.json"
    for host in ("attacker.example", f"attacker.example:{server.port}", f"{HOST}:1", ""):
        assert get(server, path, host=host)[0] == 421, host
    assert get(server, path, host=f"localhost:{server.port}")[0] == 200


def test_no_listing_no_hidden_file_no_link_no_escape(server: ViewerServer) -> None:
    run_id = two_runs().rows[0]["run_id"]
    for path in (
        "data/",
        "data",
        "files/",
        f"files/{run_id}/",
        ".ctxbench-viewer",
        "secret.txt",
        f"files/{run_id}/link",
        "../secret.txt",
        "%2e%2e/secret.txt",
        f"files/{run_id}/..%2f..%2fsecret.txt",
    ):
        status, headers, _ = get(server, f"/{server.token}/{path}")
        assert status == 404, path
        assert headers["X-Content-Type-Options"] == "nosniff"


def test_files_from_traces_are_sandboxed_downloads(server: ViewerServer) -> None:
    run_id = two_runs().rows[0]["run_id"]
    status, headers, body = get(server, f"/{server.token}/files/{run_id}/evil.html")
    assert status == 200 and body == b"<script>alert(1)</script>"
    assert headers["Content-Type"] == "application/octet-stream"
    assert headers["Content-Disposition"] == 'attachment; filename="evil.html"'
    assert headers["Content-Security-Policy"].startswith("sandbox")
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_a_port_in_use_is_one_error(viewer: Path) -> None:
    with socket.socket() as taken:
        taken.bind((HOST, 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"port {port} on {HOST} is in use"):
            make_server(viewer, port=port)
        code, err = run_main(["view", str(two_runs().rows_file), "--serve", "--port", str(port)])
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err, err
    assert "--port" in err
