"""The DB-GPT 0.8.2 ledger: Layers 1 and 2 from running sums give what they give on the lists."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxbench.strategies import build_strategy
from ctxbench.strategies.dbgpt import DbgptStrategy
from ctxbench.strategies.dbgpt.ledger import Shape
from ctxbench.strategies.dbgpt.memory import task_progress, with_progress
from ctxbench.trace import Message
from tests.factories import replay_context
from tests.strategies.dbgpt_cases import KINDS, histories

#: 0.8.2 memory: now and then a system message, mostly questions, turns and results
TURNS = histories(kinds=[*KINDS[1:] * 4, "system"], bodies=(10, 200, 900), most=14)


@settings(max_examples=300, deadline=None)
@given(
    st.booleans(),
    st.lists(TURNS, min_size=1, max_size=4),
    st.sampled_from([0.05, 0.3, 0.6]),
    st.integers(0, 3),
    st.integers(0, 3),
    st.sampled_from([0, 300, 2000]),
    st.sampled_from([20, 60, 500]),
    st.integers(0, 12),
)
def test_ledger_layers_are_the_list_layers_of_each_rebuilt_prompt(
    system_first: bool,
    stretches: list[tuple[Message, ...]],
    warning: float,
    keep_rounds: int,
    max_age: int,
    keep_tokens: int,
    max_chars: int,
    call: int,
) -> None:
    strat = build_strategy(
        "dbgpt",
        {
            "release": "0.8.2",
            "warning_threshold": warning,
            "error_threshold": 0.95,
            "critical_threshold": 0.97,
            "min_keep_recent_rounds": keep_rounds,
            "max_observation_age_rounds": max_age,
            "min_keep_tokens": keep_tokens,
            "truncated_observation_max_chars": max_chars,
        },
    )
    assert isinstance(strat, DbgptStrategy)
    ctx = replay_context()
    ctx.call = call
    ledger = strat._ledger_of(ctx)
    history: list[Message] = [Message("system", "You are an agent.")] if system_first else []
    answered = 0
    for k, stretch in enumerate(stretches):
        history += stretch
        ledger.extend(stretch) if k else ledger.reset(history)
        progress = task_progress([f"step {i}" for i in range(k)])
        prompt = with_progress(history, progress)
        shape = strat._shape_of(prompt, history)
        if not prompt:
            assert shape is None
            continue
        assert isinstance(shape, Shape)
        from_ledger = strat._ledger_layers(prompt, shape, ctx)
        assert ledger.messages == history
        if from_ledger is None:  # a system message the head does not stand for, or no history
            assert any(m.role == "system" for m in history[shape.skip :]) or (
                len(history) - shape.question <= shape.skip
            )
            continue
        answered += 1
        strat._last_count = ((), 0)  # the list layers count for themselves
        # the ledger's prompts are the process's Prompt tuples: compared message for message
        assert [(layer, list(p)) for layer, p in from_ledger] == strat._list_layers(prompt, ctx)
    assert answered or any(m.role == "system" for s in stretches for m in s) or len(history) < 3


def test_the_ledger_stands_down_when_a_system_message_sits_inside_the_history() -> None:
    strat = build_strategy("dbgpt", {"release": "0.8.2", "warning_threshold": 0.01})
    assert isinstance(strat, DbgptStrategy)
    ctx = replay_context()
    history = [Message("user", "q"), Message("system", "late"), Message("user", "Observation: x")]
    strat._ledger_of(ctx).reset(history)
    prompt = with_progress(history, task_progress(["step 1"]))
    shape = strat._shape_of(prompt, history)
    assert shape is not None
    assert strat._ledger_layers(prompt, shape, ctx) is None
    assert strat._cheap_layers(prompt, ctx, shape) == strat._list_layers(prompt, ctx)


def test_a_cut_that_is_no_longer_an_observation_leaves_the_layers_to_the_lists() -> None:
    """Cut to 5 characters, ``Observation: ...`` no longer ends a round: the rounds the
    ledger keeps would be wrong, so it does not answer and the lists decide."""
    strat = build_strategy(
        "dbgpt",
        {
            "release": "0.8.2",
            "warning_threshold": 0.01,
            "max_observation_age_rounds": 0,
            "truncated_observation_max_chars": 5,
        },
    )
    assert isinstance(strat, DbgptStrategy)
    ctx = replay_context()
    ctx.call = 3
    history = [Message("user", "q")] + [
        Message("user", f"Observation: {i} " + "x" * 200) for i in range(4)
    ]
    strat._ledger_of(ctx).reset(history)
    shape = strat._shape_of(history, history)
    assert shape is not None
    assert strat._ledger_layers(history, shape, ctx) is None
    assert strat._cheap_layers(history, ctx, shape) == strat._list_layers(history, ctx)
