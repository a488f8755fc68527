"""Driver for Hermes Agent 0.19.0: the released ``ContextCompressor`` and ``compress_context``,
called where the agent loop calls them.

Run with the python of the ``hermes==0.19.0`` environment; it imports nothing from ctxbench.

The framework's code (the installed wheel, unmodified): ``ContextCompressor``
(``agent/context_compressor.py``: thresholds, ``should_compress``, the anti-thrash and
deferral guards, ``update_from_response``, ``compress`` with its prune / head / tail /
summary walks), ``conversation_compression.compress_context`` (the wrapper the loop calls
through ``agent._compress_context``: guards, ``_ensure_compressed_has_user_turn``), the rough
estimators of ``agent/model_metadata.py`` and ``_should_run_preflight_estimate``.

Emulated (the loop itself, ``conversation_loop.py`` and ``turn_context.py``, needs a live
model client, tools and a session store): at each recorded model call the driver applies the
loop's rules in its order:

- turn prologue (``turn_context.py:568-665``), at the first call after a real user message:
  ``compression_attempts`` resets (``conversation_loop.py:686``) and the preflight estimate
  (``estimate_request_tokens_rough`` with system prompt and tools) may compress up to 3 passes;
- post-response usage (``conversation_loop.py:5114-5150``): the provider's real prompt tokens of
  the previous call go to ``update_from_response``; after a turn with tool calls the loop's
  ``should_compress(last_prompt_tokens)`` check runs (0 right after a compaction, -1 sentinel);
- pre-API check (``conversation_loop.py:1087-1186``): ``estimate_messages_tokens_rough`` of
  system + messages plus the tools' estimate, ``compression_attempts < 3``, deferral and
  cooldown guards, then ``should_compress``;
- a provider overflow (``conversation_loop.py:3666-3830``): ``compression_attempts`` + 1, over 3
  the call fails (``compression_exhausted``), else compress and retry when messages or the
  estimate went down by 5 %, else fail ("cannot compress further").

Also emulated: the agent object ``compress_context`` reads (no session DB, no lock, the system
prompt kept as given), and the summary call: ``context_compressor.call_llm`` is replaced by a
request to ctxbench, answered by the run's summarizer. Messages are OpenAI dicts as the agent
stores them (tool calls carry ``call_id`` and ``response_item_id``); the system prompt is kept
outside the list passed to the compressor.
"""

from __future__ import annotations

import json
import os
import tempfile
import types
from typing import Any

import wire

os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="ctxbench-hermes-"))

import agent.context_compressor as compressor_module
from agent import conversation_compression
from agent.context_compressor import ContextCompressor
from agent.model_metadata import (
    _estimate_tools_tokens_rough,
    estimate_messages_tokens_rough,
    estimate_request_tokens_rough,
)
from agent.turn_context import _should_run_preflight_estimate

try:
    from importlib.metadata import version

    VERSION = version("hermes-agent")
except Exception:  # pragma: no cover - metadata always present in the env
    VERSION = "0.19.0"

MAX_COMPRESSION_ATTEMPTS = 3  # conversation_loop.py:1219


def _summary_llm(**kwargs: Any) -> Any:
    """``call_llm`` for the compression task: ctxbench's summarizer answers."""
    prompt = "\n".join(str(m.get("content", "")) for m in kwargs.get("messages") or [])
    reply = wire.ask_summary("compaction", prompt, send_max_tokens=False)
    if not reply.get("ok"):
        raise RuntimeError(str(reply.get("error") or "summary failed"))
    message = types.SimpleNamespace(content=reply.get("text") or "")
    return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)])


compressor_module.call_llm = _summary_llm


class LoopAgent:
    """The attributes ``compress_context`` reads from an ``AIAgent``."""

    def __init__(self, compressor: ContextCompressor, system: str, tools: list, model: str):
        self.context_compressor = compressor
        self.api_mode = "chat_completions"
        self.session_id = None
        self._session_db = None
        self.model = model
        self.tools = tools
        self.compression_enabled = True
        self.compression_in_place = True
        self._compression_feasibility_checked = True
        self._cached_system_prompt = system
        self._last_compaction_in_place = False
        self._compression_warning = None
        self._last_compression_lock_error_sid = None
        self._todo_store = types.SimpleNamespace(format_for_injection=lambda: "")  # no todos
        self._memory_manager = None
        self._last_compression_summary_warning = None
        self._last_aux_fallback_warning_key = None
        self._last_memory_context_unsupported_engine = None
        self.log_prefix = ""
        self.event_callback = None
        self.platform = "cli"
        self.statuses: list = []

    def _invalidate_system_prompt(self) -> None:
        """The cached prompt is rebuilt by ``_build_system_prompt`` (kept as given)."""

    def _build_system_prompt(self, system_message: str) -> str:
        return system_message

    def _emit_status(self, text: str) -> None:
        self.statuses.append(text)

    def _emit_warning(self, text: str) -> None:
        self.statuses.append(text)


def _hermes_message(message: dict) -> dict:
    role = message["role"]
    out: dict = {"role": role, "content": message.get("content") or ""}
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {
                "id": c["id"],
                "call_id": c["id"],
                "response_item_id": None,
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in message["tool_calls"]
        ]
    if role == "tool":
        out["tool_call_id"] = message.get("tool_call_id")
    return out


class Replay:
    def __init__(self, request: dict) -> None:
        cfg = dict(request["config"])
        window = int(request["window"])
        self.model = cfg.pop("model")
        context_length = cfg.pop("context_length")
        self.compressor = ContextCompressor(
            model=self.model,
            quiet_mode=True,
            config_context_length=window if context_length is None else context_length,
            **cfg,
        )
        self.tools = [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t["description"],
                    "parameters": t["parameters"],
                },
            }
            for t in request["tools"]
        ]
        self.system = ""
        self.messages: list = []
        self.ids: dict = {}  # id(dict) -> history id
        self.by_call_id: dict = {}
        self.originals: dict = {}  # history id -> original dict
        self.agent = LoopAgent(self.compressor, "", self.tools, self.model)
        self.attempts = 0
        self.last_assistant_had_tools = False
        self.new_turn = False

    # -- history <-> protocol ------------------------------------------------------------
    def remember(self, appended: list) -> None:
        for message in appended:
            if message["role"] == "system":
                self.system = (self.system + "\n\n" + message["content"]).strip()
                self.ids[id(message)] = message["id"]
                self.system_id = message["id"]
                continue
            stored = _hermes_message(message)
            self.ids[id(stored)] = message["id"]
            self.originals[message["id"]] = stored
            if message["role"] == "tool" and message.get("tool_call_id"):
                self.by_call_id[message["tool_call_id"]] = message["id"]
            if message["role"] == "user":
                self.new_turn = True
            if message["role"] == "assistant":
                self.last_assistant_had_tools = bool(message.get("tool_calls"))
            self.messages.append(stored)
        self.agent._cached_system_prompt = self.system

    def items(self) -> list:
        out: list = []
        if self.system:
            out.append({"ref": self.system_id})
        for msg in self.messages:
            ident = self.ids.get(id(msg))
            if ident is None and msg.get("role") == "tool":
                ident = self.by_call_id.get(msg.get("tool_call_id"))
            if ident is None:
                ident = next(
                    (
                        i
                        for i, o in self.originals.items()
                        if o.get("role") == msg.get("role")
                        and o.get("content") == msg.get("content")
                        and o.get("tool_calls") == msg.get("tool_calls")
                    ),
                    None,
                )
            content = msg.get("content")
            if not isinstance(content, str):
                content = json.dumps(content, ensure_ascii=False)
            if ident is None:
                role = msg.get("role") if msg.get("role") in ("user", "assistant") else "user"
                out.append({"role": role, "content": content})
            elif content == self.originals[ident].get("content"):
                out.append({"ref": ident})
            else:
                out.append({"ref": ident, "content": content})
        return out

    # -- the loop's compaction sites -----------------------------------------------------------
    def _compress(self, where: str, approx: int, steps: list) -> None:
        before = len(self.messages)
        self.messages, _ = conversation_compression.compress_context(
            self.agent, self.messages, self.system, approx_tokens=approx, task_id="ctxbench"
        )
        steps.append(
            {"layer": where, "messages": self.items(), "note": f"{before}->{len(self.messages)}"}
        )

    def _api_tokens(self) -> int:
        api = ([{"role": "system", "content": self.system}] if self.system else []) + self.messages
        tokens = estimate_messages_tokens_rough(api)
        return tokens + (_estimate_tools_tokens_rough(self.tools) if self.tools else 0)

    def call(self, request: dict) -> dict:
        steps: list = []
        last = request.get("last_call")
        if last and last.get("ok"):
            self.compressor.update_from_response({"prompt_tokens": int(last["prompt_tokens"])})
        had_tools = self.last_assistant_had_tools
        self.new_turn = False
        self.remember(request["append"])
        c = self.compressor
        if self.new_turn:
            self.attempts = 0
            if _should_run_preflight_estimate(
                self.messages, c.protect_first_n, c.protect_last_n, c.threshold_tokens
            ):
                tokens = estimate_request_tokens_rough(
                    self.messages, system_prompt=self.system, tools=self.tools or None
                )
                deferred = c.should_defer_preflight_to_real_usage(tokens)
                if not deferred and c.last_prompt_tokens >= 0 and tokens > c.last_prompt_tokens:
                    c.last_prompt_tokens = tokens
                if not deferred and c.should_compress(tokens):
                    for _ in range(3):
                        rows, before = len(self.messages), tokens
                        self._compress("preflight", tokens, steps)
                        tokens = estimate_request_tokens_rough(
                            self.messages, system_prompt=self.system, tools=self.tools or None
                        )
                        if not (len(self.messages) < rows or tokens < before):
                            break
                        if not c.should_compress(tokens):
                            break
        elif had_tools and last is not None:
            if c.last_prompt_tokens > 0:
                real = c.last_prompt_tokens
            elif c.last_prompt_tokens == -1:
                real = 0
            else:
                real = estimate_request_tokens_rough(self.messages, tools=self.tools or None)
            if c.should_compress(real):
                self._compress("post_response", c.last_prompt_tokens, steps)
        pressure = self._api_tokens()
        cooldown = getattr(c, "get_active_compression_failure_cooldown", lambda: None)()
        if (
            len(self.messages) > 1
            and self.attempts < 3
            and not c.should_defer_preflight_to_real_usage(pressure)
            and not cooldown
            and c.should_compress(pressure)
        ):
            self.attempts += 1
            self._compress("pre_api", pressure, steps)
        return {"op": "prompt", "base": self.items() if not steps else None, "steps": steps,
                "info": self.info()}  # fmt: skip

    def overflow(self, request: dict) -> dict:
        steps: list = []
        self.attempts += 1
        if self.attempts > MAX_COMPRESSION_ATTEMPTS:
            return self._failed(
                steps,
                f"compression_exhausted: Context length exceeded: max compression attempts "
                f"({MAX_COMPRESSION_ATTEMPTS}) reached.",
            )
        rows, before = len(self.messages), estimate_messages_tokens_rough(self.messages)
        self._compress("overflow", self._api_tokens(), steps)
        after = estimate_messages_tokens_rough(self.messages)
        if len(self.messages) < rows or (after > 0 and after < before * 0.95):
            return {"op": "prompt", "steps": steps, "retry": True, "info": self.info()}
        return self._failed(
            steps,
            f"compression_exhausted: Context length exceeded ({after:,} tokens). "
            "Cannot compress further.",
        )

    def _failed(self, steps: list, text: str) -> dict:
        return {"op": "prompt", "steps": steps, "retry": False, "exception": text,
                "info": self.info()}  # fmt: skip

    def info(self) -> dict:
        c = self.compressor
        return {
            "compression_attempts": self.attempts,
            "threshold_tokens": c.threshold_tokens,
            "last_prompt_tokens": c.last_prompt_tokens,
            "compression_count": getattr(c, "compression_count", None),
        }


if __name__ == "__main__":
    wire.serve_replays(Replay, "hermes", VERSION)
