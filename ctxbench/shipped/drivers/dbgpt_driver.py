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
- the ``asyncio.sleep(10)`` between ``thinking()`` retries is skipped (no wall clock);
- not modelled: the task-progress line the system prompt gains per step, snapshot files and
  the ``run_tool`` persistence of results over 100,000 characters.

Summary requests (Layer 3, never reached in 0.8.2 because of the defect) go to ctxbench.
"""

from __future__ import annotations

# wire takes the protocol's stdout over: it must be imported before any framework module,
# which may print (dbgpt.configs prints "Setting random seed to 42" on stdout)
import wire  # isort: skip

# isort: split
import asyncio
import logging
import types
from typing import Any

import dbgpt
from dbgpt.agent.core import base_agent
from dbgpt.agent.core.agent import AgentMessage
from dbgpt.agent.core.base_agent import ConversableAgent
from dbgpt.agent.core.context import ContextBudgetConfig, ContextManager
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
    client it swallows a failed call and returns "" (RELEASES.md: an empty summary counts as
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
    """One trace: the memory, the manager and the ReAct loop counter."""

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
        self.memory: list[tuple[int, str, str, bool]] = []  # (id, dbgpt role, text, native tool)
        self.retry_counter = 0
        self.react_converted = False
        self.prompt: list[AgentMessage] = []
        self.ids: dict[int, tuple[int, bool]] = {}

    async def _on_status(self, status: dict[str, Any]) -> None:
        self.statuses.append(status)

    def remember(self, messages: list[dict[str, Any]]) -> None:
        for message in messages:
            role, text = message["role"], message.get("content") or ""
            if role == "assistant" and message.get("tool_calls"):
                text = _react_text(message)
                self.react_converted = True
            elif role == "tool":
                text = f"Observation: {text}"
                self.react_converted = True
            elif role == "user" and not text.lstrip().startswith("Observation:"):
                self.retry_counter = 0  # a new user turn: generate_reply starts counting again
            self.memory.append((message["id"], _ROLE[role], text, role == "tool"))

    def rebuild(self) -> tuple[list[AgentMessage], list[AgentMessage]]:
        """Fresh AgentMessages from memory: (what the manager sees, appended after it)."""
        self.ids = {}
        fresh = []
        for ident, role, text, native_tool in self.memory:
            msg = AgentMessage(content=text, role=role)
            self.ids[id(msg)] = (ident, native_tool)
            fresh.append(msg)
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
            original = next(text for i, _, text, _ in self.memory if i == ident[0])
            content = msg.content or ""
            if content == original:
                out.append({"ref": ident[0]})
            elif ident[1] and content.startswith("Observation: "):
                out.append({"ref": ident[0], "content": content[len("Observation: ") :]})
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
