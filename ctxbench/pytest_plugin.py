"""The pytest plugin (registered as ``ctxbench`` in the ``pytest11`` entry points, so installing
ctxbench is enough): the ``ctxbench_retention`` fixture replays a strategy or a plain compactor
over traces or embedded scenarios and fails the test when a probe kind keeps less than asked,
listing each probe lost with the call where it was lost and the answer missing::

    def test_my_compactor_keeps_safety_rules(ctxbench_retention):
        ctxbench_retention(my_module.compact, scenarios=["coding_agent"], window=16000,
                           min_kind={"safety": 1.0, "constraint": 1.0})

It is :func:`ctxbench.testing.assert_retention` (same arguments, returns its
:class:`~ctxbench.testing.Retention`), with the failure shown without a traceback. Nothing is
imported until a test asks for the fixture.
"""

from __future__ import annotations

from typing import Any, Protocol

import pytest


class RetentionCheck(Protocol):
    def __call__(self, strategy: Any, traces: Any = (), **options: Any) -> Any: ...


def _check(strategy: Any, traces: Any = (), **options: Any) -> Any:
    from ctxbench.testing import assert_retention

    failure = ""
    try:
        return assert_retention(strategy, traces, **options)
    except AssertionError as exc:
        failure = str(exc)
    pytest.fail(failure, pytrace=False)  # outside the except: no chained traceback


@pytest.fixture
def ctxbench_retention() -> RetentionCheck:
    """Replay a compactor and assert per-kind retention (:func:`ctxbench.testing.assert_retention`)."""
    return _check
