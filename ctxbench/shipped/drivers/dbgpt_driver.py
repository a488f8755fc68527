"""Driver for DB-GPT 0.8.2: the released ``ContextManager`` and ``thinking()``, call by call.

Run with the python of the ``dbgpt==0.8.2`` environment (``ctxbench shipped install
dbgpt==0.8.2``); it imports nothing from ctxbench.

The framework's code (the installed wheel, unmodified):

- ``ContextManager`` (``agent/core/context/manager.py``) built as ``init_context_management``
  builds it (``base_agent.py:71-112``): a ``ContextBudgetConfig`` of the run's knobs,
  ``model_name`` for the tokenizer, an LLM client, a status callback. ``manage_context`` runs
  on every call, so its token counting (``ProxyTokenizerWrapper``: cl100k_base unless the
  model name maps elsewhere), states, the circuit breaker, Layers 1-3 and the ``model_name``
  defect of Layer 3 (``manager.py:160``) are the release's own;
- Layer 4's path: on a provider overflow the real ``ConversableAgent.thinking``
  (``base_agent.py:780-823``) runs with an LLM client that raises ``LLMChatError`` with the
  provider's text, retries 3 times and raises ``ValueError``; then the ``except LLMChatError``
  clause of ``generate_reply`` (``base_agent.py:603-628``) is applied to what came out, so an
  overflow fails the call (Layer 4 unreachable) exactly as the release does.

Emulated (no agent, no memory store, no model):

- the ReAct agent's message assembly (``react_agent.py:274-365``, ``base_agent.py:1400-1451``):
  every call the messages are rebuilt from the recorded history ("memory") and the manager runs
  on that fresh list, so compaction serves one call only; the current user question is
  appended after ``manage_context`` as ``_load_thinking_messages`` appends ``user_prompt``;
  ``current_round`` is ``current_retry_counter``, the number of model calls since the last
  user message;
- native tool calls are given as the ReAct agent stores them: an assistant turn becomes
  ``Thought: ...`` / ``Action: name`` / ``Action Input: args`` text and each tool result a
  human ``Observation: ...`` message (``notes`` says so); text-ReAct traces go in as recorded;
- ``write_memories`` / ``read_memories`` (``role.py:282-403``, ``react_agent.py:274-365``) for
  every tool result (one the trace marks failed is a failed step: kept as its observation,
  no persistence, snapshot or progress line): the tool action's persistence runs first
  (``tool_action.py:204-222``: the release's own ``ToolResultStorage.maybe_persist`` with the
  config's threshold, ``read_file`` pinned, files under a temporary working directory); the
  step's snapshot path is ``{conv_id}/step_{retry counter + 1:03d}_{action}.json``
  (``_write_op_snapshot``, ``role.py:405-470``, with an empty ``output_dir``: no file is
  written), kept in the message's ``context["snapshot_path"]`` and, unless the result was
  persisted, appended as ``\n[Full detail available at: PATH]`` (a persisted result is
  a ``persist`` step of the call it arrives for: the recorded result, then the preview); the
  step joins the agent's
  ``_task_progress``, and the release's own ``Role.task_progress_summary`` (``role.py:212-240``)
  with the two lines ``_REACT_SYSTEM_TEMPLATE`` adds after it is appended to the recorded
  system prompt (the agent renders its own template there; the recorded prompt stands in);
- the ``asyncio.sleep(10)`` between ``thinking()`` retries is skipped (no wall clock);
- the tokenizer's ``count_token`` is memoised per text (the counts are the release's own;
  re-encoding the whole history at every call made long traces take minutes).

Summary requests (Layer 3, never reached in 0.8.2 because of the defect) go to ctxbench.
"""

from __future__ import annotations

# wire takes the protocol's stdout over: it must be imported before any framework module,
# which may print (dbgpt.configs prints "Setting random seed to 42" on stdout)
import wire  # isort: skip

# isort: split
import asyncio
import logging
import os
import re
import tempfile
import types
from typing import Any

import dbgpt
from dbgpt.agent.core import base_agent
from dbgpt.agent.core.agent import AgentMessage
from dbgpt.agent.core.base_agent import ConversableAgent
from dbgpt.agent.core.context import ContextBudgetConfig, ContextManager
from dbgpt.agent.core.context.storage import ToolResultStorage
from dbgpt.agent.core.role import Role
from dbgpt.core import ModelMessageRoleType
from dbgpt.util.error_types import LLMChatError

VERSION = getattr(dbgpt, "__version__", "0.8.2")
_ROLE = {
    "system": ModelMessageRoleType.SYSTEM,
    "user": ModelMessageRoleType.HUMAN,
    "tool": ModelMessageRoleType.HUMAN,
    "assistant": ModelMessageRoleType.AI,
}


class _NoSleepAsyncio(types.ModuleType):
    """``base_agent``'s view of asyncio with the retry sleep skipped (no wall clock)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    @staticmethod
    async def sleep(delay: float, result: Any = None) -> Any:
        return result


base_agent.asyncio = _NoSleepAsyncio("asyncio")

#: the lines ``_REACT_SYSTEM_TEMPLATE`` renders after ``{{ task_progress }}`` (react_agent.py:69-73)
PROGRESS_TAIL = (
    "You MUST NOT repeat any action already listed above as \u2705 completed.\n"
    "Pick the NEXT action that has NOT been done yet to make progress toward the final goal."
)
_ACTION_LINE = re.compile(r"^[ \t]*Action:\s*(.+)$", re.M)
# persisted results go under the working directory: a fresh one per driver process
os.chdir(tempfile.mkdtemp(prefix="ctxbench-dbgpt-"))


class _MemoCount:
    """The tracker's ``ProxyTokenizerWrapper`` with each text counted once (same counts)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cache: dict[tuple[str, str | None], int] = {}

    def count_token(self, messages: Any, model_name: str | None = None) -> int:
        if not isinstance(messages, str):
            return int(self.inner.count_token(messages, model_name))
        key = (messages, model_name)
        if key not in self.cache:
            self.cache[key] = int(self.inner.count_token(messages, model_name))
        return self.cache[key]


class _Layer3Log(logging.Handler):
    """Collects the exceptions ``manage_context`` logs for failed Layer-3 attempts."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.failures: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.failures.append(wire.exception_text(record.exc_info[1]))


_LAYER3_LOG = _Layer3Log()
logging.getLogger("dbgpt.agent.core.context.manager").addHandler(_LAYER3_LOG)


class SummaryClient:
    """The ``AIWrapper`` Layer 3 calls: answered by ctxbench's summarizer. Like the real
    client it swallows a failed call and returns "" (docs/sources.md: an empty summary counts as
    a success)."""

    async def generate_text(self, prompt: str, llm_model: str | None = None, **kw: Any) -> str:
        reply = wire.ask_summary("layer3", prompt, max_tokens=kw.get("max_new_tokens"))
        return str(reply.get("text") or "") if reply.get("ok") else ""


class OverflowingClient:
    """The LLM client ``thinking()`` calls while the provider rejects the prompt."""

    def __init__(self, error: str) -> None:
        self.error = error
        self.calls = 0

    async def create(self, **kwargs: Any) -> str:
        self.calls += 1
        raise LLMChatError(self.error)


def _react_text(message: dict[str, Any]) -> str:
    """An assistant turn with native tool calls as the ReAct agent stores it."""
    lines = []
    if message.get("content"):
        lines.append(f"Thought: {message['content']}")
    for call in message.get("tool_calls") or []:
        lines.append(f"Action: {call['name']}")
        lines.append(f"Action Input: {call['arguments']}")
    return "\n".join(lines)


class Replay:
    """One trace: the memory, the manager, the task progress and the ReAct loop counter."""

    def __init__(self, request: dict[str, Any]) -> None:
        cfg = dict(request["config"])
        window, reserved = int(request["window"]), int(request["reserved"])
        max_context = cfg.pop("max_context_tokens")
        reserved_tokens = cfg.pop("reserved_tokens")
        self.model_name: str | None = cfg.pop("model_name")
        self.budget_config = ContextBudgetConfig(
            max_context_tokens=window if max_context is None else max_context,
            reserved_tokens=reserved if reserved_tokens is None else reserved_tokens,
            **cfg,
        )
        self.statuses: list[dict[str, Any]] = []
        self.manager = ContextManager(
            config=self.budget_config,
            model_name=self.model_name,
            llm_client=SummaryClient(),
            on_status_event=self._on_status,
        )
        self.manager.tracker._tokenizer = _MemoCount(self.manager.tracker._tokenizer)
        self.conv_id = str(request.get("trace_id") or "")
        # base_agent._init_tool_result_storage with output_dir "" (the working directory)
        self.storage = ToolResultStorage(
            storage_dir=os.path.join("persisted_results", self.conv_id),
            default_threshold=self.budget_config.tool_result_threshold,
            preview_size=self.budget_config.preview_size,
            tool_overrides=self.budget_config.tool_overrides,
        )
        #: (id, dbgpt role, text in memory, native tool result, content ctxbench sent, context)
        self.memory: list[tuple[int, str, str, bool, str, dict[str, Any] | None]] = []
        self.by_id: dict[int, tuple[int, str, str, bool, str, dict[str, Any] | None]] = {}
        self._task_progress: list[dict[str, Any]] = []
        self.calls: dict[str, str] = {}  # tool call id -> action of the last assistant turn
        self.persisted_now: set[int] = (
            set()
        )  # results the tool action persisted since the last call
        self.next_id = -1
        self.last_action = ""
        self.retry_counter = 0
        self.react_converted = False
        self.prompt: list[AgentMessage] = []
        self.ids: dict[int, tuple[int, bool]] = {}

    async def _on_status(self, status: dict[str, Any]) -> None:
        self.statuses.append(status)

    def remember(self, messages: list[dict[str, Any]]) -> None:
        for message in messages:
            role, text = message["role"], message.get("content") or ""
            context = None
            if role == "assistant":
                calls = message.get("tool_calls") or []
                self.calls = {c["id"]: c["name"] for c in calls}
                found = _ACTION_LINE.search(text)
                self.last_action = found.group(1).strip() if found else "action"
                if calls:
                    text = _react_text(message)
                    self.react_converted = True
            elif role == "tool" or (role == "user" and text.lstrip().startswith("Observation:")):
                self.next_id = message["id"]
                call_id = message.get("tool_call_id") or ""
                native = self.calls.get(call_id) or message.get("name") or "tool"
                action = native if role == "tool" else self.last_action
                if message.get("failed"):  # check_pass is False: no snapshot, no progress
                    text = f"Observation: {text}" if role == "tool" else text
                else:
                    text, context = self._observe(role == "tool", text, action, call_id)
                self.react_converted |= role == "tool"
            elif role == "user":
                self.retry_counter = 0  # a new user turn: generate_reply starts counting again
            sent = message.get("content") or ""
            entry = (message["id"], _ROLE[role], text, role == "tool", sent, context)
            self.memory.append(entry)
            self.by_id[message["id"]] = entry

    def _observe(
        self, native: bool, text: str, action: str, call_id: str
    ) -> tuple[str, dict[str, Any]]:
        """A tool result through the tool action and ``write_memories``, as ``read_memories``
        gives it back: (the Observation text, its context). The persisted file is named by the
        recorded call id (the release's ``{name}_{id(result):x}`` is an address)."""
        prefix = "Observation: "
        observation = text if native else text.lstrip()[len("Observation:") :].lstrip()
        stem = call_id or f"{action}_{len(self._task_progress) + 1:03d}"
        replacement, persisted = self.storage.maybe_persist(observation, action, stem)
        if persisted:
            text = prefix + replacement
        elif native:
            text = prefix + text
        step = self.retry_counter  # the counter of the call that chose this action, + 1
        safe_action = "".join(c if c.isalnum() or c in "-_" else "_" for c in action)
        snapshot = os.path.join(self.conv_id, f"step_{step:03d}_{safe_action}.json")
        self._task_progress.append(
            {"step": step, "action": action, "status": "done", "snapshot_file": snapshot}
        )
        context: dict[str, Any] = {"snapshot_path": snapshot}
        if persisted:
            context["persisted_path"] = persisted
            self.persisted_now.add(self.next_id)
            return text, context
        return f"{text}\n[Full detail available at: {snapshot}]", context

    def rebuild(self) -> tuple[list[AgentMessage], list[AgentMessage]]:
        """Fresh AgentMessages from memory: (what the manager sees, appended after it)."""
        self.ids = {}
        fresh = []
        progress = Role.task_progress_summary.fget(self)
        for ident, role, text, native_tool, _, context in self.memory:
            if progress and role == ModelMessageRoleType.SYSTEM:
                text, progress = f"{text}\n{progress}\n{PROGRESS_TAIL}", None
            msg = AgentMessage(content=text, role=role, context=context)
            self.ids[id(msg)] = (ident, native_tool)
            fresh.append(msg)
        if progress:  # no recorded system prompt: the agent's own carries the progress
            fresh.insert(
                0,
                AgentMessage(
                    content=f"{progress}\n{PROGRESS_TAIL}", role=ModelMessageRoleType.SYSTEM
                ),
            )
        tail: list[AgentMessage] = []
        if fresh and fresh[-1].role == ModelMessageRoleType.HUMAN:
            last = fresh[-1].content or ""
            if not last.lstrip().startswith("Observation:"):
                tail = [fresh.pop()]
        return fresh, tail

    def items(self, messages: list[AgentMessage]) -> list[dict[str, Any]]:
        """Messages as protocol items: history references (rewritten ones with their text)."""
        out: list[dict[str, Any]] = []
        for msg in messages:
            ident = self.ids.get(id(msg))
            if ident is None:
                role = {"system": "system", "ai": "assistant"}.get(str(msg.role), "user")
                out.append({"role": role, "content": msg.content or ""})
                continue
            content = msg.content or ""
            if ident[1] and content.startswith("Observation: "):
                content = content[len("Observation: ") :]
            entry = self.by_id[ident[0]]
            if entry[1] == ModelMessageRoleType.AI or content == entry[4]:
                out.append({"ref": ident[0]})  # an assistant turn is the recorded turn
            else:
                out.append({"ref": ident[0], "content": content})
        return out

    def info(self, **extra: Any) -> dict[str, Any]:
        tracker = self.manager.tracker
        out = {
            "statuses": self.statuses,
            "compact_failures": tracker._compact_failure_count,
            "breaker_tripped": tracker.circuit_breaker_tripped,
            "current_round": self.retry_counter,
            "layer3_failures": list(_LAYER3_LOG.failures),
        }
        out.update(extra)
        return out

    async def call(self, request: dict[str, Any]) -> dict[str, Any]:
        self.remember(request["append"])
        self.statuses = []
        _LAYER3_LOG.failures = []
        managed, tail = self.rebuild()
        base = self.items(managed + tail)
        steps: list[dict[str, Any]] = []
        if self.persisted_now:  # the tool action replaced these results before memory kept them
            steps.append({"layer": "persist", "messages": base})
            base = [{"ref": i["ref"]} if i.get("ref") in self.persisted_now else i for i in base]
            self.persisted_now = set()
        for layer in ("layer1", "layer2", "layer3"):
            self._record_layer(layer, steps, tail)
        managed = await self.manager.manage_context(
            messages=managed, current_round=self.retry_counter, task_progress=None
        )
        self.prompt = managed + tail
        self.retry_counter += 1
        return {"op": "prompt", "base": base, "steps": steps, "info": self.info()}

    def _record_layer(self, layer: str, steps: list[dict[str, Any]], tail: list[Any]) -> None:
        """Wrap a layer's ``compact`` so each layer's output becomes a step (no behaviour
        change: the wrapper returns what the layer returned)."""
        obj = getattr(self.manager, f"_{layer}")
        original = type(obj).compact

        if asyncio.iscoroutinefunction(original):

            async def compact_async(*args: Any, **kwargs: Any) -> Any:
                result = await original(obj, *args, **kwargs)
                steps.append({"layer": layer, "messages": self.items(result + tail)})
                return result

            obj.compact = compact_async
        else:

            def compact(*args: Any, **kwargs: Any) -> Any:
                result = original(obj, *args, **kwargs)
                steps.append({"layer": layer, "messages": self.items(result + tail)})
                return result

            obj.compact = compact

    async def overflow(self, request: dict[str, Any]) -> dict[str, Any]:
        client = OverflowingClient(str(request["error"]))
        agent = _ThinkingSelf(client)
        messages = self.prompt
        steps: list[dict[str, Any]] = []
        try:
            try:
                await ConversableAgent.thinking(agent, messages)
            except LLMChatError as e:  # generate_reply's Layer-4 clause, base_agent.py:608
                err_str = str(e).lower()
                if (
                    "context_too_long" in err_str
                    or "context_length_exceeded" in err_str
                    or "maximum context length" in err_str
                ):
                    messages = await self.manager.reactive_compact(messages)
                    steps.append({"layer": "layer4", "messages": self.items(messages)})
                    self.prompt = messages
                    return {
                        "op": "prompt",
                        "steps": steps,
                        "retry": True,
                        "info": self.info(thinking_attempts=client.calls),
                    }
                raise
        except Exception as exc:  # generate_reply's outer except: the reply fails
            return {
                "op": "prompt",
                "steps": steps,
                "retry": False,
                "exception": wire.exception_text(exc),
                "info": self.info(thinking_attempts=client.calls),
            }
        return {"op": "prompt", "steps": steps, "retry": True, "info": self.info()}


class _ThinkingSelf:
    """The attributes ``ConversableAgent.thinking`` reads from its agent."""

    def __init__(self, client: OverflowingClient) -> None:
        self.llm_client = client
        self.not_null_agent_context = types.SimpleNamespace(
            max_new_tokens=2048, temperature=0.5, verbose=False, conv_id="ctxbench"
        )
        self.memory = types.SimpleNamespace(gpts_memory=None)
        self.stream_out = False

    async def _a_select_llm_model(self, excluded: Any = None) -> str:
        return "replayed-model"


class Driver:
    def __init__(self) -> None:
        self.replay: Replay | None = None
        self.loop = asyncio.new_event_loop()

    def start(self, request: dict[str, Any]) -> dict[str, Any]:
        self.replay = Replay(request)
        return {
            "op": "ready",
            "framework": "dbgpt",
            "version": VERSION,
            "notes": ["native tool calls are given as ReAct text (Thought/Action/Observation)"],
        }

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.replay is not None
        reply = self.loop.run_until_complete(self.replay.call(request))
        reply["info"]["react_text"] = self.replay.react_converted
        return reply

    def overflow(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.replay is not None
        return self.loop.run_until_complete(self.replay.overflow(request))


if __name__ == "__main__":
    logging.basicConfig(level=logging.ERROR)
    driver = Driver()
    wire.serve({"start": driver.start, "call": driver.call, "overflow": driver.overflow})
