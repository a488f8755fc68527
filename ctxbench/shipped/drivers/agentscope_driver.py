"""Driver for AgentScope 2.0.11: the released ``Agent.reply()`` loop, fed the recorded turns.

Run with the python of the ``agentscope==2.0.11`` environment; it imports nothing from ctxbench.

The framework's code (the installed wheel, unmodified): ``Agent`` (``agent/_agent.py``): the
reply loop ``_reply_impl`` with ``_next_action`` and ``ReActConfig.max_iters``, the context
compression (``compress_context`` -> ``_compress_context_impl``: ``_limit_context_images``,
the trigger at ``trigger_ratio * context_size``, ``_split_context_for_compression`` with its
tool-pairing loop, the compression request and its overflow retry, the truncation fallback,
the summary template, the empty-context ``RuntimeError``), ``_inject_runtime_state`` (time
after a compression, the context-length pre-warning at the first iteration of a reply),
``_execute_tool_call`` with ``_split_tool_result_for_compression`` and its reminder,
``_prepare_model_input`` (system prompt, summary, context, tool schemas), ``ContextConfig`` /
``InjectionConfig`` / ``ReActConfig`` and their validation, ``ChatModelBase.count_tokens``
(the whole request once, ``model/_base.py:379-465``) and ``generate_structured_output`` with
its forced ``generate_structured_output`` tool call, ``Toolkit`` (registration, schemas,
``call_tool``), the permission engine.

Emulated:

- the model: a ``ChatModelBase`` whose ``_call_api`` hands the prompt to ctxbench and answers
  with the recorded assistant turn (its provider replay fields as a ``ThinkingBlock``, its text,
  its tool calls; ``max_retries`` 0, the ``OpenAIChatFormatter``'s media types); recorded images
  are ``DataBlock``s (their http(s) URL, else an inline image without its bytes: the protocol
  carries only the count, and ``count_tokens`` prices every data block alike); the structured
  compression call
  is answered by ctxbench's summarizer (``wire.ask_summary``), its text parsed by ctxbench
  into the ``SummarySchema`` fields as the reproduction parses it;
- the tools: one per declared tool (its recorded schema, ALLOW permission) plus a hidden one
  for each called name the trace does not declare; each returns the recorded output of its
  call id. Validation of the recorded arguments runs against a schema without required
  fields, and arguments that are no JSON object (a Codex freeform ``apply_patch`` patch)
  parse as ``{}`` instead of failing with the ``ToolJSONDecodeError`` reminder as the call's
  result (the recorded call happened; its output is what the trace says);
- the clock: ``datetime.now`` in ``agent/_agent.py`` returns the ``current_time`` knob, so
  the runtime-state time and the compression prompt's ``{current_time}`` are reproducible (the
  0.5 h ``time_interval`` never elapses within a replay);
- the turn structure: a recorded user message starts a new ``reply()``; a recorded turn
  arriving when the agent's reply is over (a text answer then another assistant turn, the
  max-iteration exit) continues with ``reply(None)``; recorded user input arriving while the
  agent would still act ends that reply with an empty answer first (nothing is saved).
- an exception the agent raises out of ``reply()`` (the empty-context ``RuntimeError``, a
  provider overflow: 2.0.11 has no reactive compaction and ``ModelConfig.max_retries`` is 0)
  fails the call; the rest of that recorded reply fails too, until the next user message.
"""

from __future__ import annotations

import asyncio
import copy
import datetime as _datetime
import json
import re
from typing import Any

import agentscope.agent._agent as agent_module
import agentscope.tool._toolkit as toolkit_module
import wire
from agentscope.agent import Agent, ContextConfig, InjectionConfig, ReActConfig
from agentscope.exception import ToolJSONDecodeError
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import (
    Base64Source,
    DataBlock,
    HintBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultState,
    URLSource,
)
from agentscope.model import ChatModelBase, ChatResponse
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, ToolChunk, Toolkit

VERSION = wire.installed_version("agentscope", "2.0.11")

STRUCTURED_TOOL = "generate_structured_output"
AGENT_NAME = "assistant"
#: the knobs that are ``ContextConfig`` fields; the others configure the agent around it
CONTEXT_FIELDS = (
    "trigger_ratio",
    "reserve_ratio",
    "context_buffer_ratio",
    "tool_result_limit",
    "compression_fallback_to_truncation",
    "compression_tool_enabled",
    "max_image_num",
    "compression_prompt",
    "summary_template",
)


class ReplayClock(_datetime.datetime):
    """``datetime`` in ``agent/_agent.py`` with ``now`` fixed at the replay's clock."""

    fixed: _datetime.datetime = _datetime.datetime(1970, 1, 1)

    @classmethod
    def now(cls, tz: Any = None) -> Any:
        return cls.fixed.replace(tzinfo=tz)


agent_module.datetime = ReplayClock
_release_json_loads = agent_module._json_loads_with_repair


def _recorded_arguments(json_str: str, schema: Any = None) -> dict:
    """``_json_loads_with_repair`` where a recorded call is parsed (``Agent._execute_tool_call``,
    ``Toolkit.call_tool``): arguments the release cannot read as a dict are none, so the tool
    still answers with the recorded output."""
    try:
        return _release_json_loads(json_str, schema)
    except ToolJSONDecodeError:
        return {}


agent_module._json_loads_with_repair = _recorded_arguments
toolkit_module._json_loads_with_repair = _recorded_arguments


def _text_of(blocks: Any, sep: str = "") -> str:
    if isinstance(blocks, str):
        return blocks
    return sep.join(b.text for b in blocks if isinstance(b, TextBlock))


def _images(message: dict) -> list:
    """The message's images as data blocks: its http(s) URL, else an inline (data URL) image
    whose bytes the protocol does not carry (``count_tokens`` prices any data block alike)."""
    urls = list(message.get("image_urls") or [""] * int(message.get("images") or 0))
    return [
        DataBlock(source=URLSource(url=url, media_type="image/png"))
        if url
        else DataBlock(source=Base64Source(data="", media_type="image/png"))
        for url in urls
    ]


class ReplayModel(ChatModelBase):
    """A chat model whose answers are the recorded assistant turns."""

    def __init__(self, replay: Replay, context_size: int) -> None:
        super().__init__(
            credential=None,
            model="replayed-model",
            parameters=None,
            stream=False,
            max_retries=0,
            context_size=context_size,
        )
        self.replay = replay
        #: what ``_handle_incoming_messages`` reads the supported media types from
        self.formatter = OpenAIChatFormatter()

    async def _call_api(
        self, model_name: str, messages: list, tools: Any = None, tool_choice: Any = None,
        **kwargs: Any,
    ) -> ChatResponse:  # fmt: skip
        if tools and tools[0].get("function", {}).get("name") == STRUCTURED_TOOL:
            return self.replay.summary_response(messages, tools[0]["function"]["parameters"])
        return await self.replay.model_call(messages, tools)


class Replay:
    """One replay: the agent, the recorded history by id, and the reply running on a loop."""

    def __init__(self, request: dict) -> None:
        self.cfg = dict(request["config"])
        self.window = int(request["window"])
        self.tools = list(request["tools"])
        ReplayClock.fixed = _datetime.datetime.strptime(
            self.cfg["current_time"], self.cfg["time_format"]
        )
        self.loop = asyncio.new_event_loop()
        self.agent: ReplayAgent | None = None
        self.system_ids: list[int] = []
        self.system_text: list[str] = []
        self.hid_of_block: dict[str, int] = {}
        self.hid_of_msg: dict[str, int] = {}
        self.tool_hid: dict[str, int] = {}
        self.calls_of: dict[int, list[str]] = {}  # history id -> its recorded call ids
        self.thinking: set[int] = set()  # history ids answered with a ThinkingBlock
        self.original: dict[int, str] = {}
        self.outputs: dict[str, list] = {}
        self.reported_truncations: set[int] = set()
        self.reply: asyncio.Task | None = None
        self.pending: asyncio.Future | None = None  # the model call awaiting its response
        self.prompt: asyncio.Future | None = None  # set when the agent calls the model
        self.reply_ended: str | None = None  # the exception that ended the current reply
        self.steps: list[dict] = []
        self.base: list[dict] | None = None
        self.last_tokens = 0
        self.summaries = 0

    # -- building the agent -------------------------------------------------------------------
    def _build(self) -> ReplayAgent:
        c = self.cfg
        context = {k: c[k] for k in CONTEXT_FIELDS if c.get(k) is not None}
        size = c["context_size"] if c.get("context_size") is not None else self.window
        toolkit = ReplayToolkit(self)
        for spec in self.tools:
            self.loop.run_until_complete(toolkit.add_tool(toolkit.stub(spec)))
        return ReplayAgent(
            self,
            name=AGENT_NAME,
            system_prompt="\n".join(self.system_text),
            model=ReplayModel(self, size),
            toolkit=toolkit,
            context_config=ContextConfig(**context),
            react_config=ReActConfig(max_iters=c["max_iters"]),
            injection_config=InjectionConfig(
                inject_runtime_state=c["inject_runtime_state"],
                timezone=c["timezone"],
                time_format=c["time_format"],
            ),
        )

    # -- the history and the prompt in protocol terms ----------------------------------------------
    def items(self, messages: list) -> list[dict]:
        """The prompt the agent assembled, as protocol messages (history refs where it can)."""
        out: list[dict] = []
        for msg in messages:
            if msg.role == "system":
                out += [{"ref": i} for i in self.system_ids]
            elif msg.role == "user":
                hid = self.hid_of_msg.get(msg.id)
                out.append(self._item(hid, _text_of(msg.content, "\n"), "user"))
            else:
                out += self._assistant_items(msg)
        return out

    def _item(self, hid: int | None, text: str, role: str) -> dict:
        if hid is None:
            return {"role": role, "content": text}
        if text == self.original[hid]:
            return {"ref": hid}
        return {"ref": hid, "content": text}

    def _assistant_items(self, msg: Msg) -> list[dict]:
        out: list[dict] = []
        group: list[Any] = []  # [hid, texts, call ids, its ThinkingBlock kept]

        def flush() -> None:
            if group:
                item = self._item(group[0], "\n".join(group[1]), "assistant")
                if group[2] != self.calls_of.get(group[0], []):
                    item = {"ref": group[0], "content": "\n".join(group[1]), "tool_calls": group[2]}
                if group[0] in self.thinking and not group[3]:  # the compression cut it off
                    item = {
                        "ref": group[0],
                        "content": "\n".join(group[1]),
                        **item,
                        "replay": False,
                    }
                out.append(item)
                group.clear()

        for block in msg.content:
            if isinstance(block, HintBlock):
                flush()
                out.append({"role": "user", "content": _text_of(block.hint)})
            elif isinstance(block, ToolResultBlock):
                flush()
                hid = self.tool_hid.get(block.id)
                if hid is not None:
                    out.append(self._item(hid, _text_of(block.output), "user"))
            else:
                hid = self.hid_of_block.get(block.id)
                if hid is None:
                    continue
                if not group or group[0] != hid:
                    flush()
                    group.extend([hid, [], [], False])
                if isinstance(block, TextBlock) and block.text:
                    group[1].append(block.text)
                elif isinstance(block, ToolCallBlock):
                    group[2].append(block.id)
                elif isinstance(block, ThinkingBlock):
                    group[3] = True
        flush()
        return out

    async def snapshot(self) -> list[dict]:
        assert self.agent is not None
        kwargs = await self.agent._prepare_model_input()
        return self.items(kwargs["messages"])

    def record(self, layer: str, before: list[dict], after: list[dict], note: str = "") -> None:
        if after != before:
            if self.base is None and not self.steps:
                self.base = before
            self.steps.append({"layer": layer, "messages": after, "note": note})

    def truncations(self, items: list[dict]) -> list[dict]:
        """Report tool results truncated since the last call (``_execute_tool_call``) as a
        step; returns the prompt with them as recorded (the base they were cut from)."""
        fresh = [
            i for i, item in enumerate(items)
            if "ref" in item and "content" in item and item["ref"] in self.tool_hid.values()
            and item["ref"] not in self.reported_truncations
        ]  # fmt: skip
        if not fresh:
            return items
        base = [({"ref": item["ref"]} if i in fresh else item) for i, item in enumerate(items)]
        self.reported_truncations.update(items[i]["ref"] for i in fresh)
        self.base = base
        self.steps.append(
            {"layer": "tool_result_limit", "messages": items, "note": f"{len(fresh)} result(s)"}
        )
        return base

    # -- the model's side ---------------------------------------------------------------------------
    async def model_call(self, messages: list, tools: Any) -> ChatResponse:
        assert self.agent is not None
        self.last_tokens = await self.agent.model.count_tokens(messages, tools)
        self.pending = self.loop.create_future()
        if self.prompt is not None and not self.prompt.done():
            self.prompt.set_result(self.items(messages))
        response: ChatResponse = await self.pending
        return response

    def summary_response(self, messages: list, schema: dict) -> ChatResponse:
        summary = self.summary_before(messages)
        compressed = messages[2 if summary is not None else 1 : -1]
        items = [item for msg in compressed for item in self.items([msg])]
        prompt = "\n\n".join(f"{m.role}: {_text_of(m.content)}" for m in messages)
        titles = [str(p.get("title", n)) for n, p in (schema.get("properties") or {}).items()]
        reply = wire.ask_summary(
            "compression", prompt, messages=items, sections=titles,
            max_tokens=max(1, round((1 - self.agent.context_config.trigger_ratio)  # type: ignore[union-attr]
                                    * self.agent.model.context_size)),  # type: ignore[union-attr]
            previous_summary=summary,
        )  # fmt: skip
        self.summaries += 1
        if not reply.get("ok"):
            raise RuntimeError(str(reply.get("error") or "summary failed"))
        call = ToolCallBlock(
            id=f"summary-{self.summaries}",
            name=STRUCTURED_TOOL,
            input=json.dumps(reply.get("fields") or {}, ensure_ascii=False),
        )
        return ChatResponse(content=[call], is_last=True)

    def summary_before(self, messages: list) -> str | None:
        if (
            len(messages) > 1
            and messages[1].role == "user"
            and messages[1].id not in self.hid_of_msg
        ):
            text = _text_of(messages[1].content)
            return text if self.agent and text == self.agent.state.summary else None
        return None

    def response_of(self, message: dict) -> ChatResponse:
        """The recorded assistant turn as the model's response."""
        hid = message["id"]
        self.original[hid] = message.get("content") or ""
        blocks: list[Any] = []
        if message.get("replay_text"):
            thinking = ThinkingBlock(thinking=message["replay_text"])
            self.hid_of_block[thinking.id] = hid
            self.thinking.add(hid)
            blocks.append(thinking)
        if message.get("content"):
            text = TextBlock(text=message["content"])
            self.hid_of_block[text.id] = hid
            blocks.append(text)
        for call in message.get("tool_calls") or ():
            ident = call["id"] or f"call-{hid}-{len(blocks)}"
            self.hid_of_block[ident] = hid
            self.calls_of.setdefault(hid, []).append(ident)
            blocks.append(
                ToolCallBlock(id=ident, name=call["name"], input=call["arguments"] or "{}")
            )
            assert self.agent is not None
            toolkit = self.agent.toolkit
            assert isinstance(toolkit, ReplayToolkit)
            if call["name"] not in toolkit.declared:
                self.loop.run_until_complete(toolkit.hidden(call["name"]))
        return ChatResponse(content=blocks, is_last=True)

    # -- the protocol's side ------------------------------------------------------------------------
    def call(self, request: dict) -> dict:
        self.steps, self.base = [], None
        appended = list(request["append"])
        users: list[Msg] = []
        response: dict | None = None
        for message in appended:
            role, hid = message["role"], message["id"]
            if role == "system":
                self.system_ids.append(hid)
                self.system_text.append(message["content"])
                self.original[hid] = message["content"]
                if self.agent is not None:
                    self.agent._system_prompt = "\n".join(self.system_text)
            elif role == "tool":
                self.original[hid] = message["content"]
                if message.get("tool_call_id"):
                    self.tool_hid[message["tool_call_id"]] = hid
                    self.outputs[message["tool_call_id"]] = [
                        TextBlock(text=message["content"]),
                        *_images(message),
                    ]
            elif role == "assistant" and response is None and not users:
                response = message
            else:  # user turns (and any further assistant turn, stored as input)
                self.original[hid] = message["content"]
                blocks = [TextBlock(text=message["content"]), *_images(message)]
                msg = Msg(name="user", role="user", content=blocks)
                self.hid_of_msg[msg.id] = hid
                users.append(msg)
        if self.agent is None:
            self.agent = self._build()
        exception = self._advance(response, users)
        prompt = self.items(self.loop.run_until_complete(self._model_input()))
        reply: dict = {"op": "prompt", "steps": self.steps, "base": self.base, "info": self.info()}
        if not self.steps:
            reply["base"] = prompt
        if exception:
            reply["exception"] = exception
        return reply

    async def _model_input(self) -> list:
        assert self.agent is not None
        kwargs = await self.agent._prepare_model_input()
        return list(kwargs["messages"])

    def _advance(self, response: dict | None, users: list[Msg]) -> str | None:
        """Answer the pending model call with ``response`` and run the agent to its next model
        call; recorded user input starts a new reply. Returns the exception that failed the
        call, if any."""
        if response is not None and self.pending is not None:
            self.pending.set_result(self.response_of(response))
            self.pending = None
            result = self._run_until_prompt(answer_empty=bool(users))
            if result == "prompt":
                return None
            if result != "ended" and not users:
                return result
        elif response is not None and self.reply_ended is not None and not users:
            return f"the reply ended at the exception above ({self.reply_ended})"
        self.reply_ended = None
        self.reply = self.loop.create_task(self.agent.reply(users or None))  # type: ignore[union-attr]
        result = self._run_until_prompt()
        return None if result in ("prompt", "ended") else result

    def _run_until_prompt(self, answer_empty: bool = False) -> str:
        """Run the reply until it calls the model ("prompt"), ends ("ended") or raises."""
        assert self.reply is not None
        while True:
            self.prompt = self.loop.create_future()
            self.loop.run_until_complete(asyncio.wait([self.prompt, self.reply],
                                                      return_when=asyncio.FIRST_COMPLETED))  # fmt: skip
            if self.prompt.done() and not answer_empty:
                return "prompt"
            if self.prompt.done():  # answer with nothing: the reply ends, the user speaks
                assert self.pending is not None
                self.pending.set_result(ChatResponse(content=[], is_last=True))
                self.pending = None
                continue
            error = self.reply.exception()
            if error is None:
                return "ended"
            self.reply_ended = wire.exception_text(error)
            return self.reply_ended

    def overflow(self, request: dict) -> dict:
        """2.0.11 has no reactive compaction: the provider's error ends the reply."""
        if self.pending is None:
            return {"op": "prompt", "steps": [], "retry": False, "info": self.info()}
        self.pending.set_exception(RuntimeError(str(request.get("error", "context overflow"))))
        self.pending = None
        assert self.reply is not None
        self.loop.run_until_complete(asyncio.wait([self.reply]))
        error = self.reply.exception()
        self.reply_ended = wire.exception_text(error) if error else "the reply ended"
        return {"op": "prompt", "steps": [], "retry": False, "info": self.info()}

    def info(self) -> dict:
        agent = self.agent
        return {
            "agentscope_tokens": self.last_tokens,
            "context_messages": len(agent.state.context) if agent else 0,
            "summary_chars": len(agent.state.summary or "") if agent else 0,
            "cur_iter": agent.state.cur_iter if agent else 0,
            "summaries": self.summaries,
        }


class ReplayAgent(Agent):
    """``Agent`` with its compression and injection steps observed (both run unchanged)."""

    def __init__(self, replay: Replay, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.replay = replay

    async def compress_context(self, context_config: Any = None, instructions: Any = None) -> None:
        before = self.replay.truncations(await self.replay.snapshot())
        summary, n = self.state.summary, len(self.state.context)
        try:
            await super().compress_context(context_config, instructions)
        finally:
            after = await self.replay.snapshot()
            compressed = self.state.summary != summary or len(self.state.context) != n
            previous = self.replay.steps[-1]["messages"] if self.replay.steps else before
            note = f"{len(self.state.context)} message(s) kept" if compressed else ""
            self.replay.record(
                "compression" if compressed else "image_limit", previous, after, note
            )

    async def _inject_runtime_state(self) -> Any:
        before = await self.replay.snapshot()
        async for event in super()._inject_runtime_state():
            yield event
        last = self.state.context[-1].content[-1] if self.state.context else None
        keys = (
            re.findall(r"<([a-z-]+)>", _text_of(last.hint)) if isinstance(last, HintBlock) else []
        )
        note = ", ".join(k for k in keys if k != "system-reminder")
        self.replay.record("runtime_state", before, await self.replay.snapshot(), note)


class ReplayToolkit(Toolkit):
    """The toolkit of the recorded tools: the declared ones as the prompt's schemas, hidden
    ones for names the trace calls without declaring; outputs are the recorded ones."""

    def __init__(self, replay: Replay) -> None:
        super().__init__()
        self.replay = replay
        self.declared: set[str] = set()
        self.current = ""

    def stub(self, spec: dict) -> FunctionTool:
        params = spec.get("parameters") or {}
        if not (params.get("type") == "object" and isinstance(params.get("properties"), dict)):
            params = {"type": "object", "properties": {}}
        self.declared.add(spec["name"])
        return self._tool(spec["name"], spec.get("description") or "", params)

    async def hidden(self, name: str) -> None:
        await self.add_tool(self._tool(name, "", {"type": "object", "properties": {}}))

    def _tool(self, name: str, description: str, schema: dict) -> FunctionTool:
        async def recorded_output(**_: Any) -> ToolChunk:
            blocks = self.replay.outputs.get(self.current) or [TextBlock(text="")]
            return ToolChunk(content=copy.deepcopy(blocks), state=ToolResultState.SUCCESS)

        return FunctionTool(
            recorded_output,
            name=name,
            description=description,
            input_schema=copy.deepcopy(schema),
            is_concurrency_safe=False,
            is_read_only=True,
            permission=PermissionDecision(
                behavior=PermissionBehavior.ALLOW, message="a recorded call"
            ),
        )

    async def get_tool_schemas(self, groups: list[str] | None = None) -> list[dict]:
        schemas = await super().get_tool_schemas(groups)
        return [s for s in schemas if s["function"]["name"] in self.declared]

    async def check_tool_available(self, tool_name: str, activated_groups: list[str]) -> Any:
        tool = await super().check_tool_available(tool_name, activated_groups)
        lenient = copy.copy(tool)
        lenient.input_schema = {"type": "object", "properties": {}}
        return lenient

    async def call_tool(self, tool_call: ToolCallBlock, state: Any) -> Any:
        self.current = tool_call.id
        async for chunk in super().call_tool(tool_call, state):
            yield chunk


if __name__ == "__main__":
    wire.serve_replays(Replay, "agentscope", VERSION)
