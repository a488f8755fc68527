"""A plain compactor as a strategy: a function or a class with ``compact`` on OpenAI-style
dicts, its knobs typed from its signature, what it is given each call, and its faults named."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import pytest

from ctxbench.engine.result import Identity
from ctxbench.errors import ConfigError, PluginError, UnknownNameError
from ctxbench.probes.model import Probe
from ctxbench.strategies import build_strategy, strategy_class
from ctxbench.trace import Message, Trace
from tests.factories import tool_trace
from tests.replaying import compactions, run

_names = itertools.count()

KEEP_LAST = '''
def compact(messages: list[dict], budget: int, *, keep_last: int = 4, ratio: float = 0.5) -> list[dict]:
    """Keep the first two messages and the last ones, never starting at a tool result."""
    size = sum(len(str(m["content"])) for m in messages) // 4
    if size < ratio * budget:
        return messages
    tail = messages[2:][-keep_last:]
    while tail and tail[0]["role"] == "tool":
        tail = tail[1:]
    return messages[:2] + tail
'''


@pytest.fixture()
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    return folder


def module(plugins: Path, source: str) -> str:
    """Write ``source`` as a new module on the path; its import name."""
    name = f"compactor_{next(_names)}"
    (plugins / f"{name}.py").write_text(textwrap.dedent(source))
    return name


def long_trace() -> Trace:
    return tool_trace(20, output="build log line " * 30)


def test_a_function_on_openai_dicts_compacts_and_keeps_the_messages_it_returns_unchanged(
    plugins: Path,
) -> None:
    path = module(plugins, KEEP_LAST) + ":compact"
    trace = long_trace()
    out = run(trace, path, 4_000)
    events = compactions(out)
    assert events and all(e["layer"] == "compact" for e in events)
    # every message the function kept is the recorded message itself: nothing is "added"
    assert all(e["added"] == 0 and e["changed"] == 0 for e in events)
    assert sum(e["dropped"] for e in events) > 0
    assert out.result.pairing_violations == 0 and out.result.failed_calls == 0


def test_the_knobs_are_the_keyword_parameters_typed_by_their_annotations(plugins: Path) -> None:
    path = module(plugins, KEEP_LAST) + ":compact"
    cls = strategy_class(path)
    assert cls.name == path and cls.summary.startswith("Keep the first two messages")
    config = build_strategy(path, {"keep_last": "6", "ratio": "0.25"}).config
    assert (config.keep_last, config.ratio) == (6, 0.25)
    with pytest.raises(ConfigError, match="expected an integer"):
        build_strategy(path, {"keep_last": "many"})
    with pytest.raises(ConfigError, match="unknown key 'keep'"):
        build_strategy(path, {"keep": 3})


def test_a_knob_without_a_default_is_refused_when_loaded(plugins: Path) -> None:
    path = module(plugins, "def compact(messages, budget, keep_last):\n    return messages\n")
    with pytest.raises(UnknownNameError, match="knob 'keep_last' has no default"):
        strategy_class(path + ":compact")


def test_the_function_sees_the_prompt_as_it_stands_or_the_full_history_when_it_asks(
    plugins: Path,
) -> None:
    name = module(
        plugins,
        """
        SEEN = {"prompt": [], "history": []}

        def drop_middle(messages, budget):
            SEEN["prompt"].append(len(messages))
            return messages[:2] + messages[-1:] if len(messages) > 6 else messages

        def rebuild(messages, budget):
            SEEN["history"].append(len(messages))
            return messages[:2] + messages[-1:] if len(messages) > 6 else messages

        rebuild.sees = "history"
        """,
    )
    trace = tool_trace(6)  # user, then 6 x (assistant, tool), then the final answer
    run(trace, f"{name}:drop_middle", 100_000)
    run(trace, f"{name}:rebuild", 100_000)
    seen = __import__(name).SEEN
    # the history grows by a round each call; the prompt is cut back to 3 messages past 6
    assert seen["history"] == [2, 4, 6, 8, 10, 12, 14]
    assert seen["prompt"] == [2, 4, 6, 8, 5, 7, 5]


def test_a_class_compactor_is_built_once_per_replay_with_its_knobs(plugins: Path) -> None:
    name = module(
        plugins,
        """
        class Counting:
            def __init__(self, *, every: int = 2) -> None:
                self.every, self.calls = every, 0

            def compact(self, messages, budget):
                self.calls += 1
                if self.calls % self.every:
                    return messages
                return [m for m in messages if m["role"] != "tool" or m is messages[-1]]
        """,
    )
    strategy = build_strategy(f"{name}:Counting", {"every": 3})
    assert strategy.config.every == 3
    trace = tool_trace(1, calls=1)
    assert len(trace.call_indices) == 2
    out = run(trace, f"{name}:Counting", 100_000, every=1)
    assert len(compactions(out)) == 0  # nothing to drop in a 1-round trace...
    out = run(tool_trace(6), f"{name}:Counting", 100_000, every=2)
    assert len(compactions(out)) > 0


def test_a_function_that_returns_nothing_is_one_error_naming_it_the_trace_and_the_call(
    plugins: Path,
) -> None:
    name = module(plugins, "def compact(messages, budget):\n    pass\n")
    with pytest.raises(PluginError) as info:
        run(long_trace(), f"{name}:compact", 100_000)
    text = str(info.value)
    assert f"{name}:compact: compact got None, expected a list of OpenAI-style message" in text
    assert "(trace 't', model call 0)" in text and "missing `return`" in text


def test_a_dict_that_is_not_a_message_is_named_by_its_index_and_key(plugins: Path) -> None:
    name = module(
        plugins,
        """
        def compact(messages, budget):
            return messages + [{"role": "user", "content": 3}] if len(messages) > 4 else messages
        """,
    )
    with pytest.raises(PluginError, match=r"at index \d+ \(content\): expected a string"):
        run(long_trace(), f"{name}:compact", 100_000)


def test_an_exception_in_the_function_shows_its_own_frames_not_ctxbenchs(plugins: Path) -> None:
    name = module(
        plugins,
        """
        def compact(messages, budget):
            return [call(m) for m in messages]

        def call(message):
            return message["tool_calls"]
        """,
    )
    with pytest.raises(PluginError) as info:
        run(long_trace(), f"{name}:compact", 100_000)
    text = str(info.value)
    first = text.splitlines()[0]
    assert (
        first == f"{name}:compact: compact raised KeyError: 'tool_calls' (trace 't', model call 0)"
    )
    assert f"{name}.py" in text and "in call" in text and "ctxbench/" not in text


CLASS_PLUGIN = """
from ctxbench import Strategy

class GivesDicts(Strategy):
    name = "gives_dicts"

    def before_call(self, ctx):
        if ctx.call == 2:
            ctx.apply("mine", [{"role": "user", "content": "hi"}])

class Raises(Strategy):
    name = "raises"

    def before_call(self, ctx):
        if ctx.call == 3:
            self.helper()

    def helper(self):
        raise RuntimeError("boom")
"""


def test_openai_dicts_given_to_ctx_apply_are_one_error_naming_the_layer_and_the_call(
    plugins: Path,
) -> None:
    name = module(plugins, CLASS_PLUGIN)
    with pytest.raises(PluginError) as info:
        run(long_trace(), f"{name}:GivesDicts", 100_000)
    text = str(info.value)
    assert "ctx.apply('mine', ...) got a dict, expected a ctxbench.Message at index 0" in text
    assert "(trace 't', model call 2)" in text and "ctxbench.from_openai" in text


def test_an_exception_in_a_class_plugin_names_the_hook_the_engine_called(plugins: Path) -> None:
    from ctxbench.counting import get_counter
    from ctxbench.engine.provider import SimulatedProvider
    from ctxbench.engine.replay import replay

    name = module(plugins, CLASS_PLUGIN)
    chars4 = get_counter("chars4")
    with pytest.raises(PluginError) as info:
        replay(
            long_trace(),
            build_strategy(f"{name}:Raises"),
            SimulatedProvider(100_000, 0),
            true_counter=chars4,
            estimator=chars4,
            identity=Identity(trace_id="t", strategy=f"{name}:Raises"),
        )
    lines = str(info.value).splitlines()
    assert lines[0] == (
        f"strategy {name}:Raises: before_call raised RuntimeError: boom (trace 't', model call 3)"
    )
    assert any("in helper" in line for line in lines)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_a_probe_at_the_end_calls_the_function_once_more_after_the_last_call(
    plugins: Path,
) -> None:
    name = module(
        plugins,
        """
        CALLS = []

        def compact(messages, budget):
            CALLS.append(messages[-1]["role"])
            return messages
        """,
    )
    base = tool_trace(3)
    trace = Trace("t", base.messages, probes=(Probe("p", "task", "q", ("Fix",)),))
    run(trace, f"{name}:compact", 100_000)
    calls = __import__(name).CALLS
    assert len(calls) == len(trace.call_indices) + 1 and calls[-1] == "assistant"
    assert isinstance(trace.messages[-1], Message)
