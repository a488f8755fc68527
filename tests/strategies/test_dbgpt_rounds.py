"""Layers 1 and 2 keep and cut whole rounds, as the manager's rounds segment them, whichever way
the rounds are found."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.strategies import build_strategy
from ctxbench.strategies.dbgpt import DbgptStrategy, manager_rounds
from ctxbench.trace import Message
from tests.factories import replay_context
from tests.strategies.dbgpt_cases import (
    histories,
)

# -- the layers as rounds define them, whichever way the rounds are found ---------------------------


def _layer1_by_rounds(
    strat: DbgptStrategy, msgs: tuple[Message, ...], current: int
) -> list[Message]:
    """Layer 1 as written: every message of a round older than the cutoff, cut."""
    out = list(msgs)
    for r, indices in enumerate(manager_rounds(msgs, strat.rules)):
        if r < current - strat.cfg.max_observation_age_rounds:
            for i in indices:
                out[i] = strat._cuts(out[i])
    return out


def _layer2_by_rounds(strat: DbgptStrategy, msgs: tuple[Message, ...], ctx: Any) -> list[Message]:
    """Layer 2 as written: walk back over whole rounds until both floors are kept."""
    system = [m for m in msgs if m.role == "system"]
    conv = [m for m in msgs if m.role != "system"]
    segs = manager_rounds(conv, strat.rules)
    if not conv or len(segs) <= strat.cfg.min_keep_recent_rounds:
        return list(msgs)
    keep_from, kept = len(segs) - strat.cfg.min_keep_recent_rounds, 0
    for r in range(len(segs) - 1, -1, -1):
        kept += sum(strat._counts([conv[i]], ctx)[0] for i in segs[r])
        if r < keep_from and kept >= strat.cfg.min_keep_tokens:
            break
        keep_from = min(keep_from, r)
    if keep_from <= 0:
        return list(msgs)
    keep = {i for seg in segs[keep_from:] for i in seg}
    return system + [m for i, m in enumerate(conv) if i in keep]


@settings(max_examples=300, deadline=None)
@given(
    histories(),
    st.sampled_from(["0.8.2", "design"]),
    st.integers(0, 4),
    st.integers(0, 12),
    st.sampled_from([0, 150, 600]),
)
def test_layers_1_and_2_keep_and_cut_whole_rounds_as_manager_rounds_segments_them(
    msgs: tuple[Message, ...], release: str, keep_rounds: int, current: int, keep_tokens: int
) -> None:
    strat = build_strategy(
        "dbgpt",
        {
            "release": release,
            "min_keep_recent_rounds": keep_rounds,
            "max_observation_age_rounds": 2,
            "min_keep_tokens": keep_tokens,
            "truncated_observation_max_chars": 40,
        },
    )
    assert isinstance(strat, DbgptStrategy)
    ctx = replay_context()
    assert strat._round_ends(msgs) == [r[-1] for r in manager_rounds(msgs, strat.rules)]
    assert strat.layer1(msgs, current) == _layer1_by_rounds(strat, msgs, current)
    assert strat.layer2(msgs, ctx) == _layer2_by_rounds(strat, msgs, ctx)
