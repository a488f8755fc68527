"""What ported upstream tests share: a replay context holding a prompt, so a strategy's hook can
run on an upstream test's messages exactly as the framework's function would."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ctxbench.counting import get_counter
from ctxbench.counting.base import TokenCounter
from ctxbench.engine.context import ReplayContext
from ctxbench.engine.recorder import recorder_of
from ctxbench.strategies.base import Strategy
from ctxbench.summarizers.base import Summarizer
from ctxbench.trace import Message


def release(name: str) -> pytest.MarkDecorator:
    """Mark a ported test with the release it holds for (``pytest -m upstream``)."""
    return pytest.mark.upstream(release=name)


def context_with(
    strategy: Strategy,
    messages: Sequence[Message],
    *,
    window: int,
    reserved: int = 0,
    estimator: TokenCounter | None = None,
    summarizer: Summarizer | None = None,
    call: int = 0,
) -> ReplayContext:
    """A replay context whose view is ``messages``, at model call ``call``."""
    counter = estimator or get_counter(type(strategy).default_estimator)
    ctx = ReplayContext(
        trace_id="upstream",
        strategy=strategy,
        estimator=counter,
        true_counter=counter,
        window=window,
        reserved=reserved,
        tools=(),
        n_calls=call + 1,
        summarizer=summarizer,
        seed=0,
    )
    for message in messages:
        recorder_of(ctx).remember_system(message)
        recorder_of(ctx).append_recorded(message, None)
    ctx.call = call
    return ctx
