"""The released frameworks' driver processes are pooled per worker; each test module of the
shipped strategies stops them when it ends, so no driver outlives the module that used it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ctxbench.shipped import process


@pytest.fixture(scope="module", autouse=True)
def _stop_drivers() -> Iterator[None]:
    yield
    process.shutdown()
