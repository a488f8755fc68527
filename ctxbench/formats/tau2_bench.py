"""tau2-bench simulation results: ``{timestamp, info, tasks, simulations: [{id, messages, ...}]}``.

Each simulation becomes one trace seen from the *agent's* side, because that is the context a
compaction strategy manages:

- the system message is the agent's prompt, rebuilt as tau2's ``LLMAgent`` builds it from the
  domain policy in ``info.environment_info.policy``;
- tool-call arguments (recorded as objects) become the JSON text tau2 sends back
  (``json.dumps(arguments)``);
- ``usage`` of each agent message is the provider's count for that call (from the Anthropic
  response in ``raw_data`` when the message has none);
- ``raw_data.thinking_blocks`` (Anthropic extended thinking, with signatures) become the
  ``thinking_blocks`` replay field;
- the user simulator's own tool calls (telecom: the user operates the phone) and their results
  never reach the agent, so they are folded into the ``meta`` of the next user message the
  agent does see (``user_tool_activity``), with the simulator's usage and cost kept as recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ctxbench.formats import openai_chat
from ctxbench.formats.document import Document
from ctxbench.formats.importer import Importer, ImportOptions
from ctxbench.formats.location import At, rest
from ctxbench.trace import Message, ToolCall, ToolSpec, Trace

NAME = "tau2_bench"

# The system prompt of tau2's LLMAgent (sierra-research/tau2-bench, src/tau2/agent/llm_agent.py,
# MIT licence), needed to rebuild the prompt the recorded usage counts.
AGENT_INSTRUCTION = (
    "You are a customer service agent that helps the user according to the <policy> provided below.\n"
    "In each turn you can either:\n"
    "- Send a message to the user.\n"
    "- Make a tool call.\n"
    "You cannot do both at the same time.\n"
    "\n"
    "Try to be helpful and always follow the policy. Always make sure you generate valid JSON only."
)
SYSTEM_TEMPLATE = "<instructions>\n{instruction}\n</instructions>\n<policy>\n{policy}\n</policy>"
KNOWN_AGENT = "llm_agent"


def detect(doc: Document) -> bool:
    head = doc.head
    return isinstance(head, dict) and isinstance(head.get("simulations"), list) and "info" in head


def system_prompt(info: dict[str, Any], at: At) -> tuple[str | None, str | None]:
    """The agent's system prompt and, when it had to be approximated, why."""
    env = info.get("environment_info")
    policy = (
        at.key("environment_info.policy").opt_text(env.get("policy"))
        if isinstance(env, dict)
        else None
    )
    if policy is None:
        return None, "the file records no domain policy, so the agent's system prompt is missing"
    agent = info.get("agent_info")
    implementation = agent.get("implementation") if isinstance(agent, dict) else None
    if implementation != KNOWN_AGENT:
        return (
            policy,
            f"agent {implementation!r} has its own prompt template; the system message holds the policy only",
        )
    return SYSTEM_TEMPLATE.format(instruction=AGENT_INSTRUCTION, policy=policy), None


def _tools(info: dict[str, Any], at: At) -> tuple[ToolSpec, ...]:
    env = info.get("environment_info")
    defs = env.get("tool_defs") if isinstance(env, dict) else None
    if defs is None:
        return ()
    defs_at = at.key("environment_info.tool_defs")
    items = list(defs.values()) if isinstance(defs, dict) else defs_at.arr(defs)
    return tuple(openai_chat.tool_spec(t, defs_at.index(i)) for i, t in enumerate(items))


def _call(value: Any, at: At) -> ToolCall:
    data = at.obj(value)
    args = data.get("arguments")
    arguments = (
        args
        if isinstance(args, str)
        else json.dumps(at.key("arguments").obj(args) if args is not None else {})
    )
    return ToolCall(
        id=at.key("id").ident(at.need(data, "id")),
        name=at.key("name").text(at.need(data, "name")),
        arguments=arguments,
        meta=rest(data, ("id", "name", "arguments")),
    )


def _assistant(data: dict[str, Any], at: At) -> Message:
    calls_at = at.key("tool_calls")
    calls = tuple(
        _call(c, calls_at.index(i)) for i, c in enumerate(calls_at.opt_arr(data.get("tool_calls")))
    )
    meta = rest(data, ("role", "content", "tool_calls", "usage"))
    replay: dict[str, Any] = {}
    raw = data.get("raw_data")
    usage = openai_chat.usage(data.get("usage"), at.key("usage"))
    if isinstance(raw, dict):
        raw_at = at.key("raw_data")
        blocks = raw_at.key("thinking_blocks").opt_arr(raw.get("thinking_blocks"))
        if blocks:  # Anthropic extended thinking: the blocks go back to the model
            replay["thinking_blocks"] = blocks
            meta["raw_data"] = rest(raw, ("thinking_blocks",))
        if usage is None and raw.get("usage") is not None:
            usage = openai_chat.usage(raw["usage"], raw_at.key("usage"))
    return Message(
        role="assistant",
        content=at.key("content").opt_text(data.get("content")) or "",
        tool_calls=calls,
        usage=usage,
        replay=replay,
        meta=meta,
    )


def agent_view(raw_messages: Any, at: At) -> tuple[list[Message], list[dict[str, Any]]]:
    """The messages the agent saw, and user-side tool activity left after the last of them."""
    out: list[Message] = []
    pending: list[dict[str, Any]] = []
    for i, raw in enumerate(at.arr(raw_messages)):
        m_at = at.index(i)
        data = m_at.obj(raw)
        role = m_at.key("role").text(m_at.need(data, "role"))
        text = m_at.key("content").opt_text(data.get("content")) or ""
        if role == "assistant":
            out.append(_assistant(data, m_at))
        elif role == "user":
            if m_at.key("tool_calls").opt_arr(data.get("tool_calls")):
                pending.append(data)
                continue
            meta = rest(data, ("role", "content", "tool_calls"))
            if pending:
                meta["user_tool_activity"], pending = pending, []
            out.append(Message("user", text, meta=meta))
        elif role == "tool":
            if data.get("requestor", "assistant") == "user":
                pending.append(data)
                continue
            call_id = m_at.key("id").ident(m_at.need(data, "id"))
            out.append(
                Message(
                    "tool", text, tool_call_id=call_id, meta=rest(data, ("role", "content", "id"))
                )
            )
        elif role == "system":
            out.append(Message("system", text, meta=rest(data, ("role", "content"))))
        else:
            raise m_at.key("role").error(
                f"unknown role {role!r}", hint="tau2 messages are assistant, user, tool or system"
            )
    return out, pending


def read(doc: Document, options: ImportOptions) -> Iterator[Trace]:
    at = At.start(doc.path, format=NAME)
    data = at.obj(doc.head)
    info = at.key("info").obj(at.need(data, "info"))
    prompt, prompt_note = system_prompt(info, at.key("info"))
    tools = _tools(info, at.key("info"))
    tasks_at = at.key("tasks")
    tasks = {
        t["id"]: t
        for t in tasks_at.opt_arr(data.get("tasks"))
        if isinstance(t, dict) and isinstance(t.get("id"), str)
    }
    agent = info.get("agent_info")
    model = agent.get("llm") if isinstance(agent, dict) else None
    env = info.get("environment_info")
    file_info = dict(info)
    if isinstance(env, dict) and "policy" in env:
        file_info["environment_info"] = rest(env, ("policy",))  # mapped into the system message
    sims_at = at.key("simulations")
    for i, raw in enumerate(sims_at.arr(at.need(data, "simulations"))):
        s_at = sims_at.index(i)
        sim = s_at.obj(raw)
        msgs, trailing = agent_view(s_at.need(sim, "messages"), s_at.key("messages"))
        if prompt is not None:
            msgs.insert(0, Message("system", prompt))
        meta: dict[str, Any] = {"model": model, **rest(sim, ("id", "messages"))}
        task_id = sim.get("task_id")
        if isinstance(task_id, str) and task_id in tasks:
            meta["task"] = tasks[task_id]
        meta["info"] = file_info
        meta.update(rest(data, ("info", "tasks", "simulations")))
        if trailing:
            meta["trailing_user_tool_activity"] = trailing
        if prompt_note:
            meta["system_prompt_note"] = prompt_note
        sim_id = s_at.key("id").ident(sim["id"]) if sim.get("id") is not None else f"simulation-{i}"
        yield Trace(sim_id, tuple(msgs), tools=tools, meta=meta)


IMPORTER = Importer(
    name=NAME,
    expects="a tau2-bench results object {info, tasks, simulations: [{id, messages}]}",
    detect=detect,
    read=read,
)
