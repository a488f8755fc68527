"""Message shapes: small seeded traces of the message layouts that frameworks map differently,
for parity (``benchmarks/parity_table.py``, ``tests/parity/``).

Each shape is one layout a recorded source has and the embedded scenarios do not:

- ``text_actions``: the action is text in the assistant message (a fenced ``bash`` block, as
  mini-swe-agent and SWE-agent's text-action runs write it) and every observation is a user
  message (``<returncode>``/``<output>``); no tool calls, no tool results.
- ``consecutive_users``: native tool calls; the run starts with two user messages (the task,
  then more of it) and some rounds end with two user messages in a row (an interjection, then
  a reminder) before the next assistant turn.
- ``preamble_user``: the first user message is not the task (an ``<environment_context>``
  block, as Codex and Claude Code sessions open); the task is the second user message.
- ``reasoning_empty``: assistant turns carry a provider replay field (``reasoning_content``)
  and empty content with their tool calls; some turns are reasoning only (empty content, no
  tool call), answered by a user message that asks to go on.

``shape_trace(name, seed)`` is deterministic: the same name and seed give the same trace
(``random.Random(seed)``; no clock, no hash order). Sizes are chosen so the runs cross 8k-32k
windows (about 35-45k ``o200k_base`` tokens each) with observations of very different sizes.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from ctxbench.trace import Message, ToolCall, ToolSpec, Trace

#: words the generated text is drawn from (code-ish and prose-ish, so counters differ)
_VOCABULARY = (
    "def class return import self value index table column query result error warning path "
    "file line test assert model units quantity separable matrix compound left right nested "
    "the a of to in is that for with as on by this be are from at or which it not an all "
    "0 1 2 3 42 100 x y z i j k _ = == ( ) [ ] { } : , . -> # ' \" / \\ + - * < >"
)
_WORDS = tuple(_VOCABULARY.split())

TASK = (
    "Please solve this issue: the separability matrix is wrong for nested compound models.\n"
    "You can execute bash commands and edit files to implement the necessary changes.\n"
)
SYSTEM = "You are a helpful assistant that can interact with a computer to solve tasks."
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
BASH = ToolSpec(
    "bash",
    "Run a bash command.",
    {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)


def _text(rng: random.Random, chars: int, width: int = 88) -> str:
    """About ``chars`` characters of lines of random words."""
    lines: list[str] = []
    size = 0
    while size < chars:
        line = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, width // 5)))
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _output_size(rng: random.Random) -> int:
    """Observation sizes as coding agents see them: mostly short, some files, a few huge."""
    roll = rng.random()
    if roll < 0.5:
        return rng.randint(40, 600)
    if roll < 0.85:
        return rng.randint(1_500, 6_000)
    return rng.randint(9_000, 16_000)


def _command(rng: random.Random, i: int) -> str:
    verb = rng.choice(("cat", "grep -n", "sed -n '1,80p'", "python", "ls -la", "git diff"))
    return f"{verb} astropy/modeling/file_{i % 7}.py"


def text_actions(seed: int = 0, rounds: int = 40) -> Trace:
    """mini-swe-agent / SWE-agent text actions: assistant text with a ``bash`` block, user
    observations."""
    rng = random.Random(seed)
    msgs = [Message("system", SYSTEM), Message("user", TASK + _text(rng, 3_000))]
    for i in range(rounds):
        thought = _text(rng, rng.randint(80, 900))
        msgs.append(Message("assistant", f"THOUGHT: {thought}\n\n```bash\n{_command(rng, i)}\n```"))
        output = _text(rng, _output_size(rng))
        code = 0 if rng.random() < 0.85 else 1
        msgs.append(
            Message("user", f"<returncode>{code}</returncode>\n<output>\n{output}\n</output>")
        )
    msgs.append(Message("assistant", f"THOUGHT: done.\n\n```bash\n{SUBMIT}\n```"))
    return Trace(f"shape-text_actions-s{seed}", tuple(msgs), meta={"shape": "text_actions"})


def _tool_round(
    rng: random.Random, i: int, *, text: str = "", replay: dict[str, str] | None = None
) -> list[Message]:
    call = ToolCall(f"call_{i}", "bash", json.dumps({"command": _command(rng, i)}))
    calls: tuple[ToolCall, ...] = (call,)
    if rng.random() < 0.2:  # parallel calls
        calls += (ToolCall(f"call_{i}b", "bash", json.dumps({"command": _command(rng, i + 1)})),)
    out = [Message("assistant", text, tool_calls=calls, replay=replay or {})]
    out += [
        Message("tool", _text(rng, _output_size(rng)), tool_call_id=c.id, name="bash")
        for c in calls
    ]
    return out


def consecutive_users(seed: int = 0, rounds: int = 36) -> Trace:
    """Two user messages open the run, and some rounds end on two user messages in a row."""
    rng = random.Random(seed)
    msgs = [
        Message("system", SYSTEM),
        Message("user", TASK),
        Message("user", "More context for the task:\n" + _text(rng, 2_000)),
    ]
    for i in range(rounds):
        msgs += _tool_round(rng, i, text=_text(rng, rng.randint(0, 400)))
        if i % 6 == 5:
            msgs.append(Message("user", "Also check the tests: " + _text(rng, 300)))
            msgs.append(Message("user", f"<reminder>{rounds - i - 1} steps left</reminder>"))
    msgs.append(Message("assistant", "The fix is in place and the tests pass."))
    return Trace(f"shape-consecutive_users-s{seed}", tuple(msgs), tools=(BASH,),
                 meta={"shape": "consecutive_users"})  # fmt: skip


def preamble_user(seed: int = 0, rounds: int = 36) -> Trace:
    """The first user message is environment context, not the task."""
    rng = random.Random(seed)
    context = (
        "<environment_context>\n  <cwd>/testbed</cwd>\n  <shell>bash</shell>\n"
        f"{_text(rng, 1_200)}\n</environment_context>"
    )
    msgs = [Message("system", SYSTEM), Message("user", context), Message("user", TASK)]
    for i in range(rounds):
        msgs += _tool_round(rng, i, text=_text(rng, rng.randint(0, 400)))
    msgs.append(Message("assistant", "The fix is in place."))
    return Trace(f"shape-preamble_user-s{seed}", tuple(msgs), tools=(BASH,),
                 meta={"shape": "preamble_user"})  # fmt: skip


def reasoning_empty(seed: int = 0, rounds: int = 36) -> Trace:
    """Reasoning fields with empty content: on tool-call turns, and on reasoning-only turns
    that a user message answers."""
    rng = random.Random(seed)
    msgs = [Message("system", SYSTEM), Message("user", TASK + _text(rng, 1_500))]
    for i in range(rounds):
        reasoning = {"reasoning_content": _text(rng, rng.randint(200, 2_500))}
        text = "" if rng.random() < 0.7 else _text(rng, rng.randint(40, 300))
        msgs += _tool_round(rng, i, text=text, replay=reasoning)
        if i % 9 == 8:
            thinking = {"reasoning_content": _text(rng, rng.randint(100, 800))}
            msgs.append(Message("assistant", "", replay=thinking))
            msgs.append(Message("user", "Please continue."))
    final = {"reasoning_content": _text(rng, 300)}
    msgs.append(Message("assistant", "Done: the fix is in place.", replay=final))
    return Trace(f"shape-reasoning_empty-s{seed}", tuple(msgs), tools=(BASH,),
                 meta={"shape": "reasoning_empty"})  # fmt: skip


SHAPES: dict[str, Callable[[int], Trace]] = {
    "text_actions": text_actions,
    "consecutive_users": consecutive_users,
    "preamble_user": preamble_user,
    "reasoning_empty": reasoning_empty,
}


def shape_names() -> list[str]:
    return list(SHAPES)


def shape_trace(name: str, seed: int = 0) -> Trace:
    """The trace of shape ``name`` (one of :func:`shape_names`) for ``seed``."""
    try:
        make = SHAPES[name]
    except KeyError:
        raise ValueError(f"unknown message shape {name!r}; known: {', '.join(SHAPES)}") from None
    return make(seed)
