"""Shared test set-up: the network is blocked (only loopback, for the Dask cluster and the
browser test, is allowed), tokenizer hubs are offline, and the shared trace folder is found
through ``CTXBENCH_TRACES``."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# CI replays the same examples every run (the project's determinism rule: a red CI is a real
# regression, never a new random draw); developers' runs keep exploring with random examples.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CTXBENCH_CI") == "1" or os.environ.get("CI") == "true":
    settings.load_profile("ci")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The summarizer client follows the proxy variables as urllib does; the tests talk to servers
# on loopback, so a proxy a CI machine sets for the package registries must not catch them
# (the proxy tests set their own).
for _name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
    os.environ.pop(_name, None)

REPO = Path(__file__).resolve().parents[1]
LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0", ""}

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _guard(address: object) -> None:
    if isinstance(address, tuple) and address and str(address[0]) not in LOOPBACK:
        raise OSError(f"network access blocked in tests: {address!r}")


def _blocked_connect(self: socket.socket, address: object) -> None:
    _guard(address)
    _real_connect(self, address)  # type: ignore[arg-type]


def _blocked_connect_ex(self: socket.socket, address: object) -> int:
    _guard(address)
    return _real_connect_ex(self, address)  # type: ignore[arg-type]


socket.socket.connect = _blocked_connect  # type: ignore[method-assign,assignment]
socket.socket.connect_ex = _blocked_connect_ex  # type: ignore[method-assign,assignment]


def in_ci() -> bool:
    return os.environ.get("CTXBENCH_CI") == "1" or os.environ.get("CI") == "true"


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    """The folder of real recorded traces (``CTXBENCH_TRACES``, default ``../shared/traces``).

    Missing: the test fails under CI and is skipped on a developer machine."""
    path = Path(os.environ.get("CTXBENCH_TRACES", REPO.parent / "shared" / "traces"))
    if not path.is_dir():
        if in_ci():
            pytest.fail(f"shared traces folder {path} is missing (set CTXBENCH_TRACES)")
        pytest.skip(f"shared traces folder {path} is missing")
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's headless Chromium through Playwright, for the report and viewer tests: skipped
    on a developer machine without it, a failure under CI (``.ci/run`` installs both)."""
    from ctxbench.report.screenshot import chromium_path, launch

    def unavailable(reason: str) -> None:
        if in_ci():
            pytest.fail(f"{reason} (required in CI: .ci/run installs it)")
        pytest.skip(reason)

    if chromium_path() is None:
        unavailable("Chromium is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed (pip install ctxbench[browser])")
    with sync_playwright() as p:
        chromium = launch(p)
        yield chromium
        chromium.close()
