"""tau-bench (v1) results: ``[{task_id, reward, info, traj, trial}, ...]``.

``traj`` is the agent's OpenAI chat history (system policy, user, assistant with tool calls,
tool results). v1 records no per-call usage and no tool schemas. One trace per episode,
id ``task<task_id>-trial<trial>``; reward, info and any other key go to the trace's meta.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ctxbench.formats import openai_chat
from ctxbench.formats.document import Document
from ctxbench.formats.importer import Importer, ImportOptions
from ctxbench.formats.location import At, rest
from ctxbench.trace import Trace

NAME = "tau_bench"
EPISODE_KEYS = ("traj",)


def _is_episode(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("traj"), list) and "task_id" in value


def detect(doc: Document) -> bool:
    head = doc.head
    if doc.layout == "jsonl":
        return _is_episode(head)
    return isinstance(head, list) and bool(head) and _is_episode(head[0])


def episode(value: Any, at: At) -> Trace:
    data = at.obj(value)
    task_id = at.key("task_id").ident(at.need(data, "task_id"))
    trial = data.get("trial")
    trace_id = (
        f"task{task_id}" if trial is None else f"task{task_id}-trial{at.key('trial').ident(trial)}"
    )
    return Trace(
        id=trace_id,
        messages=openai_chat.messages(at.need(data, "traj"), at.key("traj")),
        meta=rest(data, EPISODE_KEYS),
    )


def read(doc: Document, options: ImportOptions) -> Iterator[Trace]:
    if doc.layout == "jsonl":
        for line, value in doc.records():
            yield episode(value, At.start(doc.path, line=line, format=NAME))
        return
    at = At.start(doc.path, format=NAME)
    for i, value in enumerate(at.arr(doc.head)):
        yield episode(value, at.index(i))


IMPORTER = Importer(
    name=NAME,
    expects="a JSON list of tau-bench episodes [{task_id, reward, info, traj, trial}]",
    detect=detect,
    read=read,
)
