"""DB-GPT's own context tests, ported to ``dbgpt`` at ``release="0.8.2"``.

From eosphoros-ai/DB-GPT ``packages/dbgpt-core/src/dbgpt/agent/core/context/tests/``
(``test_compact.py``, ``test_manager.py``, ``test_budget.py``) at 651fc13e6, whose
``manager.py``, ``compact.py``, ``budget.py`` and ``storage.py`` are byte-identical to the
``dbgpt==0.8.2`` wheel (the repository has no 0.8.2 tag). Same messages, same assertions; DB-GPT's
``HUMAN``/``AI`` roles are ``user``/``assistant``. Tests of DB-GPT internals with no counterpart
here (the ``TokenState`` operators, ``token_history``, the tracker's own tokenizer) are not ported.
"""

from __future__ import annotations

from typing import Any

from ctxbench.counting import get_counter
from ctxbench.strategies import build_strategy
from ctxbench.strategies.dbgpt import (
    DEFAULT_MAX_CONTEXT_TOKENS,
    RELEASES,
    DbgptStrategy,
    manager_rounds,
)
from ctxbench.trace import Message
from tests.upstream.helpers import context_with, release

pytestmark = release("dbgpt==0.8.2")
RULES = RELEASES["0.8.2"]


def _sys(content: str) -> Message:
    return Message("system", content)


def _human(content: str) -> Message:
    return Message("user", content)


def _ai(content: str) -> Message:
    return Message("assistant", content)


def _obs(content: str) -> Message:
    return Message("user", f"Observation: {content}")


def _strategy(**params: Any) -> DbgptStrategy:
    strategy = build_strategy("dbgpt", {"release": "0.8.2", **params})
    assert isinstance(strategy, DbgptStrategy)
    return strategy


def _build_long_conversation(num_rounds: int, obs_size: int = 5000) -> list[Message]:
    msgs = [_sys("You are a helpful assistant.")]
    for i in range(num_rounds):
        msgs.append(_ai(f"Thought: step {i}"))
        msgs.append(_human(f"Action: action_{i}"))
        msgs.append(_obs("x" * obs_size))
    return msgs


# -- test_compact.py ------------------------------------------------------------------------------


class TestHelpers:
    def test_is_system_message(self) -> None:
        assert _sys("x").role == "system"
        assert _human("x").role != "system"

    def test_is_observation_message(self) -> None:
        assert _obs("data").is_observation
        assert not _human("Question: what").is_observation
        assert not _ai("Thought: think").is_observation

    def test_detect_round_boundaries(self) -> None:
        msgs = [
            _sys("system prompt"),
            _ai("Thought: step 1"),
            _human("Action: do something"),
            _obs("result 1"),
            _ai("Thought: step 2"),
            _human("Action: do more"),
            _obs("result 2"),
        ]
        rounds = manager_rounds(msgs, RULES)
        assert len(rounds) == 2
        assert len(rounds[0]) == 3
        assert len(rounds[1]) == 3

    def test_detect_round_incomplete_round(self) -> None:
        msgs = [_ai("Thought: thinking"), _human("Action: act")]
        assert len(manager_rounds(msgs, RULES)) == 1


class TestObservationMicroCompact:
    def test_truncates_old_observations(self) -> None:
        strategy = _strategy(max_observation_age_rounds=2, truncated_observation_max_chars=50)
        long_content = "x" * 5000
        msgs = (
            _sys("system"),
            _ai("Thought: 1"),
            _human("Action: a"),
            _obs(long_content),
            _ai("Thought: 2"),
            _human("Action: b"),
            _obs(long_content),
            _ai("Thought: 3"),
            _human("Action: c"),
            _obs(long_content),
        )
        result = strategy.layer1(msgs, current_round=5)
        obs0 = result[3]
        assert len(obs0.content) < 300
        assert "[truncated]" in obs0.content

    def test_preserves_recent_observations(self) -> None:
        strategy = _strategy(max_observation_age_rounds=5, truncated_observation_max_chars=50)
        msgs = (_ai("Thought: 1"), _human("Action: a"), _obs("short result"))
        result = strategy.layer1(msgs, current_round=2)
        assert result[2].content == "Observation: short result"


class TestSessionMemoryCompact:
    @staticmethod
    def _layer2(msgs: list[Message], **params: Any) -> list[Message]:
        strategy = _strategy(**params)
        ctx = context_with(strategy, msgs, window=120_000)
        return strategy.layer2(tuple(msgs), ctx)

    def test_drops_old_rounds(self) -> None:
        msgs = [
            _sys("system"),
            _ai("Thought: old"),
            _human("Action: old"),
            _obs("old result"),
            _ai("Thought: old2"),
            _human("Action: old2"),
            _obs("old result2"),
            _ai("Thought: recent"),
            _human("Action: recent"),
            _obs("recent result"),
        ]
        result = self._layer2(msgs, min_keep_recent_rounds=1, min_keep_tokens=0)
        assert result[0].content == "system"
        assert len(result) < len(msgs)
        assert any("recent" in m.content for m in result)

    def test_preserves_minimum_rounds(self) -> None:
        msgs = [_sys("system"), _ai("Thought: 1"), _human("Action: a"), _obs("result")]
        result = self._layer2(msgs, min_keep_recent_rounds=5)
        assert len(result) == len(msgs)

    def test_triplet_integrity(self) -> None:
        msgs = [
            _sys("system"),
            _ai("T1"),
            _human("A1"),
            _obs("O1"),
            _ai("T2"),
            _human("A2"),
            _obs("O2"),
        ]
        result = self._layer2(msgs, min_keep_recent_rounds=1, min_keep_tokens=0)
        non_sys = [m for m in result if m.role != "system"]
        assert len(non_sys) % 3 == 0


class TestReactiveCompact:
    def test_emergency_keeps_last_2_rounds(self) -> None:
        msgs = (
            _sys("system"),
            _ai("T1"),
            _human("A1"),
            _obs("O1"),
            _ai("T2"),
            _human("A2"),
            _obs("O2"),
            _ai("T3"),
            _human("A3"),
            _obs("O3"),
        )
        result = _strategy().layer4(msgs)
        assert result[0].content == "system"
        assert len(result) == 7

    def test_noop_if_few_rounds(self) -> None:
        msgs = (_sys("sys"), _ai("T"), _human("A"), _obs("O"))
        assert len(_strategy().layer4(msgs)) == len(msgs)


# -- test_manager.py ------------------------------------------------------------------------------


def _manage(msgs: list[Message], *, current_round: int, **params: Any) -> tuple[Message, ...]:
    """``ContextManager.manage_context(msgs, current_round)``: one before_call at that round of
    the reply (the loop counter is the call index within it)."""
    strategy = _strategy(**params)
    ctx = context_with(strategy, msgs, window=params.get("max_context_tokens", 120_000))
    ctx.call = current_round
    strategy.before_call(ctx)
    return ctx.view.messages


class TestContextManagerNormal:
    def test_normal_state_passthrough(self) -> None:
        msgs = [_sys("system"), _ai("T"), _human("A"), _obs("short")]
        result = _manage(msgs, current_round=0, max_context_tokens=1_000_000, reserved_tokens=0)
        assert len(result) == len(msgs)


class TestContextManagerCompaction:
    def test_layer1_and_layer2_triggered(self) -> None:
        msgs = _build_long_conversation(num_rounds=5, obs_size=200)
        result = _manage(
            msgs,
            current_round=5,
            max_context_tokens=500,
            reserved_tokens=0,
            warning_threshold=0.10,
            min_keep_recent_rounds=1,
            min_keep_tokens=0,
            max_observation_age_rounds=2,
            truncated_observation_max_chars=50,
        )
        assert len(result) < len(msgs)

    def test_circuit_breaker_skips_compaction(self) -> None:
        strategy = _strategy(
            max_context_tokens=100,
            reserved_tokens=0,
            warning_threshold=0.01,
            max_compact_failures=2,
        )
        strategy.compact_failures = 2
        assert strategy.breaker_tripped
        msgs = _build_long_conversation(num_rounds=3)
        ctx = context_with(strategy, msgs, window=100)
        strategy.before_call(ctx)
        assert len(ctx.view) == len(msgs)


class TestManagerReactiveCompact:
    def test_reactive_compact_reduces_messages(self) -> None:
        msgs = _build_long_conversation(num_rounds=10)
        assert len(_strategy().layer4(tuple(msgs))) == 1 + 2 * 3


# -- test_budget.py -------------------------------------------------------------------------------


class TestContextBudgetConfig:
    def test_defaults(self) -> None:
        cfg = _strategy().cfg
        assert cfg.warning_threshold == 0.70
        assert cfg.error_threshold == 0.90

    def test_effective_budget(self) -> None:
        strategy = _strategy(max_context_tokens=100_000, reserved_tokens=5000)
        assert strategy.budget(context_with(strategy, [], window=8_000)) == 95_000

    def test_non_positive_max_context_tokens_falls_back_to_default(self) -> None:
        for value in (0, -1):
            strategy = _strategy(max_context_tokens=value)
            assert (
                strategy.max_context(context_with(strategy, [], window=8_000))
                == DEFAULT_MAX_CONTEXT_TOKENS
            )


class TestContextBudgetTracker:
    def test_count_messages(self) -> None:
        counter = get_counter("dbgpt")
        assert counter.count_prompt([_human("hello world"), _human("test")]) > 0

    def test_get_state(self) -> None:
        strategy = _strategy()
        budget = 10_000
        states = [
            strategy.state_of(used / budget, budget) for used in (1000, 7500, 9200, 9600, 10_000)
        ]
        assert states == ["normal", "warning", "error", "critical", "overflow"]

    def test_circuit_breaker(self) -> None:
        strategy = _strategy()
        assert not strategy.breaker_tripped
        strategy.compact_failures = 3
        assert strategy.breaker_tripped


# -- what the release adds to its own tests (docs/sources.md) ---------------------------------------


def test_layer3_fails_on_the_model_name_defect_and_trips_the_breaker() -> None:
    """manager.py:160: every Layer-3 attempt raises AttributeError inside the try."""
    from ctxbench.summarizers.extractive import ExtractiveSummarizer

    strategy = _strategy(max_context_tokens=500, reserved_tokens=0, min_keep_tokens=100_000)
    msgs = _build_long_conversation(num_rounds=3, obs_size=2000)
    ctx = context_with(strategy, msgs, window=500, summarizer=ExtractiveSummarizer())
    for _ in range(4):
        strategy.before_call(ctx)
    errors = [e for e in ctx.events if e.type == "strategy.error"]
    assert len(errors) == 3 and "model_name" in errors[0]["error"]
    assert strategy.breaker_tripped and not [e for e in ctx.events if e.type == "summary"]
