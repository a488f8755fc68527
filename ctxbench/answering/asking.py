"""What the answerer is asked about one replay, and the events its answers become.

- **Probes answered.** At each probe's ask point, the prompt the replay scored (sent as chat
  messages, byte for byte what the scorer read) followed by one user message with the probe's
  question (:data:`QUESTION`). The answer is scored by the probe matching itself
  (:class:`~ctxbench.probes.scoring.PromptScorer` on the answer's text): ``answered`` when it
  holds an accepted answer, ``stale`` when only a superseded value, else ``missed``.
- **Next-action agreement** (``next_action``). At each call where the strategy compacted (and at
  every ``every``-th call when asked), the model's next step twice: after the uncompacted
  history (every recorded message before the call) and after the compacted prompt, with the
  recorded tools offered. They agree when they call the same tool (or both call none) with the
  same naming arguments (:func:`naming_arguments`: paths, ids, names, commands, normalised as
  the probe matching normalises). A trace without tool schemas (DB-GPT's ReAct text) is read
  from the reply's ``Action:`` / ``Action Input:`` lines.

Every request is built before any is sent and sent up to ``concurrency`` at a time; the events
come out in one fixed order whatever finishes first, so they are the same on every run (the
cache makes the answers the same).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ctxbench.answering.cache import Reply
from ctxbench.answering.client import Answerer
from ctxbench.counting.base import tool_schemas
from ctxbench.engine import events as ev
from ctxbench.probes.model import Probe
from ctxbench.probes.scoring import PromptScorer, normalise
from ctxbench.trace import Message, Trace

#: The user message appended to the prompt for a probe (``{question}`` is the probe's).
QUESTION = (
    "Answer from the conversation above only, in a few words: the exact value, name, path or "
    "id. If the conversation does not say, answer: unknown.\nQuestion: {question}"
)
#: An answer longer than this is cut in its event (the verdict reads the whole answer).
ANSWER_CHARS = 2000
#: Argument keys that name things (besides keys ending in one of :data:`NAMING_SUFFIXES`).
NAMING_KEYS = frozenset(
    {
        "path",
        "file",
        "filename",
        "filepath",
        "dir",
        "directory",
        "command",
        "cmd",
        "id",
        "name",
        "url",
        "uri",
        "table",
        "target",
        "query",
        "sql",
        "tool",
        "function",
    }
)
NAMING_SUFFIXES = ("_id", "_path", "_file", "_name", "_url", "_dir", "_command")
VERDICTS = ("answered", "stale", "missed")
_ACTION = re.compile(r"^\s*Action\s*:\s*(.+?)\s*$", re.MULTILINE)
_ACTION_INPUT = re.compile(r"^\s*Action Input\s*:\s*(.*)", re.MULTILINE | re.DOTALL)


def chat_message(message: Message) -> dict[str, Any]:
    """``message`` as a chat-completion message (tool-call arguments as the recorded text;
    the provider's replay fields as they travel back to it)."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["content"] = message.content or None
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    out.update(message.replay)
    return out


def question_body(answerer: Answerer, prompt: Sequence[Message], probe: Probe) -> dict[str, Any]:
    """The request asking ``probe``'s question after ``prompt``."""
    messages = [chat_message(m) for m in prompt]
    messages.append({"role": "user", "content": QUESTION.format(question=probe.question)})
    return answerer.body(messages, [])


def action_body(
    answerer: Answerer, prompt: Sequence[Message], tools: list[dict[str, Any]]
) -> dict[str, Any]:
    """The request for the model's next step after ``prompt`` (the recorded tools offered)."""
    return answerer.body([chat_message(m) for m in prompt], tools)


def verdict(probe: Probe, answer: str) -> str:
    """``answered`` / ``stale`` / ``missed``: the probe matching run on the answer's text."""
    outcome = PromptScorer([Message("assistant", answer)], {}).score(probe)
    return {"in_context": "answered", "stale": "stale"}.get(outcome, "missed")


@dataclass(frozen=True)
class Action:
    """A next step: the tool called ("" for none) and its naming arguments, normalised."""

    tool: str
    naming: Mapping[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "args": dict(self.naming)}


def naming_arguments(arguments: str) -> dict[str, str]:
    """The arguments that name things, their values normalised as probe answers are (case
    kept). Arguments that are not a JSON object count whole, as ``input``."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {"input": normalise(arguments, keep_case=True)} if arguments.strip() else {}
    if not isinstance(value, dict):
        return {"input": normalise(json.dumps(value, ensure_ascii=False), keep_case=True)}
    out = {}
    for key, item in sorted(value.items()):
        low = str(key).lower()
        if low in NAMING_KEYS or low.endswith(NAMING_SUFFIXES):
            text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
            out[str(key)] = normalise(text, keep_case=True)
    return out


def action_of(reply: Reply) -> Action:
    """The next step a reply takes: its first tool call, else a ReAct ``Action:`` line."""
    if reply.tool_calls:
        first = reply.tool_calls[0]
        return Action(first.name.strip(), naming_arguments(first.arguments))
    found = _ACTION.search(reply.content)
    if found is None:
        return Action("", {})
    given = _ACTION_INPUT.search(reply.content, found.end())
    return Action(found.group(1).strip(), naming_arguments(given.group(1) if given else ""))


def next_action_calls(events: Sequence[ev.Event], n_calls: int, every: int) -> list[int]:
    """The calls asked for a next step: where the strategy compacted, and every ``every``-th."""
    calls = {e.call for e in events if isinstance(e, ev.Compaction) and e.call < n_calls}
    if every > 0:
        calls.update(range(0, n_calls, every))
    return sorted(calls)


def answer_events(
    trace: Trace,
    probes: Sequence[Probe],
    prompts: Mapping[int, tuple[Message, ...]],
    events: Sequence[ev.Event],
    answerer: Answerer,
    *,
    next_action: bool = False,
    every: int = 0,
    on_ask: Callable[[int, int], None] | None = None,
) -> list[ev.Event]:
    """The ``probe.answer`` and ``next_action`` events of one replay (see the module
    docstring); ``prompts`` maps a call to the prompt the replay scored there."""
    by_id = {p.id: p for p in probes}
    bodies: list[dict[str, Any]] = []
    asked_probes: list[tuple[ev.ProbeScored, Probe]] = []
    for e in events:
        if isinstance(e, ev.ProbeScored) and e.call in prompts and e.probe_id in by_id:
            probe = by_id[e.probe_id]
            asked_probes.append((e, probe))
            bodies.append(question_body(answerer, prompts[e.call], probe))
    action_calls: list[tuple[int, str]] = []
    if next_action:
        calls = trace.call_indices
        compacted = {e.call for e in events if isinstance(e, ev.Compaction)}
        tools = tool_schemas(trace.tools)
        for k in next_action_calls(events, len(calls), every):
            if k not in prompts:
                continue
            action_calls.append((k, "compaction" if k in compacted else "sample"))
            bodies.append(action_body(answerer, trace.messages[: calls[k]], tools))
            bodies.append(action_body(answerer, prompts[k], tools))
    replies = _ask_all(answerer, bodies, on_ask)
    out: list[ev.Event] = []
    for (e, probe), reply in zip(asked_probes, replies):
        out.append(
            ev.ProbeAnswer(
                call=e.call,
                probe_id=probe.id,
                kind=probe.kind,
                answer=reply.content[:ANSWER_CHARS],
                question=probe.question,
                outcome=e.outcome,
                verdict=verdict(probe, reply.content),
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
            )
        )
    rest = replies[len(asked_probes) :]
    for i, (k, trigger) in enumerate(action_calls):
        full, short = rest[2 * i], rest[2 * i + 1]
        a, b = action_of(full), action_of(short)
        out.append(
            ev.NextAction(
                call=k,
                trigger=trigger,
                agree=a == b,
                uncompacted=a.to_json(),
                compacted=b.to_json(),
                uncompacted_answer=_shown(full),
                compacted_answer=_shown(short),
                prompt_tokens=full.prompt_tokens + short.prompt_tokens,
                completion_tokens=full.completion_tokens + short.completion_tokens,
            )
        )
    step = (events[-1].step + 1) if events else 0  # after the replay's own events
    return [e.stamped(step + i, e.call) for i, e in enumerate(out)]


def _shown(reply: Reply) -> str:
    """A reply as the viewer shows it: its text, then its tool calls."""
    calls = "\n".join(f"{c.name}({c.arguments})" for c in reply.tool_calls)
    return "\n".join(p for p in (reply.content, calls) if p)[:ANSWER_CHARS]


def _ask_all(
    answerer: Answerer,
    bodies: Sequence[dict[str, Any]],
    on_ask: Callable[[int, int], None] | None,
) -> list[Reply]:
    """Every body asked, ``concurrency`` at a time; replies in the bodies' order. The first
    error stops the rest (requests already sent finish, and their answers are cached)."""
    total = len(bodies)
    if not total:
        return []
    done = 0

    def one(body: dict[str, Any]) -> Reply:
        return answerer.ask(body)

    workers = min(answerer.settings.concurrency, total)
    if workers == 1:
        replies = []
        for body in bodies:
            replies.append(one(body))
            done += 1
            if on_ask is not None:
                on_ask(done, total)
        return replies
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(one, body) for body in bodies]
        try:
            replies = []
            for future in futures:
                replies.append(future.result())
                done += 1
                if on_ask is not None:
                    on_ask(done, total)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return replies


__all__ = [
    "QUESTION",
    "Action",
    "action_of",
    "answer_events",
    "chat_message",
    "naming_arguments",
    "next_action_calls",
    "verdict",
]
