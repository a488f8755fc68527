"""Driver for Hermes Agent 0.19.0: the released ``ContextCompressor`` and ``compress_context``,
called where the agent loop calls them.

Run with the python of the ``hermes==0.19.0`` environment; it imports nothing from ctxbench.

The framework's code (the installed wheel, unmodified): ``ContextCompressor``
(``agent/context_compressor.py``: thresholds, ``should_compress``, the anti-thrash and
deferral guards, ``update_from_response``, ``compress`` with its prune / head / tail /
summary walks, ``_generate_summary`` and its prompt), ``conversation_compression.compress_context``
(the wrapper the loop calls through ``agent._compress_context``: guards, the no-progress
check, ``_ensure_compressed_has_user_turn``, the usage latch, ``record_completed_compaction``),
the rough estimators of ``agent/model_metadata.py``, ``_should_run_preflight_estimate``,
``_compression_made_progress`` and ``_derive_responses_function_call_id``.

Emulated (the loop itself, ``conversation_loop.py`` and ``turn_context.py``, needs a live
model client, tools and a session store): at each recorded model call the driver applies the
loop's rules in its order:

- turn prologue (``turn_context.py:563-680``), at a call whose last appended message is a
  non-blank user message: ``compression_attempts`` resets (``conversation_loop.py:686``) and
  the preflight (``estimate_request_tokens_rough`` of the stored messages with system prompt
  and tools, deferral, cooldown) may compress up to 3 passes while they make progress;
- post-response usage (``conversation_loop.py:5105-5150``): the provider's real prompt tokens of
  the previous accepted call go to ``update_from_response``; when that response (the assistant
  message just appended) had tool calls the loop's ``should_compress(last_prompt_tokens)``
  check runs (0 right after a compaction, the -1 sentinel);
- pre-API check (``conversation_loop.py:1086-1186``): ``estimate_messages_tokens_rough`` of the
  API copies (system prompt first; ``reasoning``, ``finish_reason`` and the Codex call fields
  dropped, content stripped, arguments re-serialised with sorted keys, as lines 870-1080 build
  them) plus the tools' estimate, ``compression_attempts < 3``, deferral and cooldown guards,
  then ``should_compress``;
- a provider overflow (``conversation_loop.py:3770-3830``): ``compression_attempts`` + 1, over 3
  the call fails (``compression_exhausted``), else compress and retry when messages or the
  estimate went down by 5 %, else fail ("cannot compress further");
- after ``compression_exhausted`` ``run_conversation`` has returned: every later call of that
  user turn fails with the same text and compresses nothing (on an overflow either).

Also emulated: the agent object ``compress_context`` reads (no session DB, no lock, no todo
store, the system prompt kept as given), and the summary call: ``context_compressor.call_llm``
is replaced by a request to ctxbench, answered by the run's summarizer with what the
reproduction gives it (the pruned turns ``_generate_summary`` received, the template's
headings, the ``Target ~N tokens`` budget as guidance, the previous summary, the request key
``compaction<N>``). Messages are dicts as the agent stores them: assistant turns from
``build_assistant_message`` (``reasoning``, ``finish_reason``, provider replay fields, tool
calls with ``call_id`` and the derived ``response_item_id``), tool results from
``make_tool_message`` (``name``, ``tool_name``); the trace's system messages, joined, are the
system prompt outside the list passed to the compressor, and all of them stay in the prompt.
Compressor copies are mapped back to trace messages by tool-call id, content and order.
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
import hermes_time
from agent import conversation_compression
from agent.codex_responses_adapter import _derive_responses_function_call_id
from agent.context_compressor import ContextCompressor
from agent.model_metadata import (
    _estimate_tools_tokens_rough,
    estimate_messages_tokens_rough,
    estimate_request_tokens_rough,
)
from agent.turn_context import _compression_made_progress, _should_run_preflight_estimate

VERSION = wire.installed_version("hermes-agent", "0.19.0")

MAX_COMPRESSION_ATTEMPTS = 3  # conversation_loop.py:1219


#: what the summary call in flight summarises (set by the ``_generate_summary`` wrapper)
PENDING: dict = {}


def _summary_sections(prompt: str) -> list:
    """The headings of the release's template, read from the end of its prompt (the turns
    before it may hold headings of their own)."""
    start = prompt.rfind(compressor_module.HISTORICAL_TASK_HEADING + "\n")
    template = prompt[start:] if start >= 0 else ""
    return [line[3:].strip() for line in template.splitlines() if line.startswith("## ")]


def _summary_llm(**kwargs: Any) -> Any:
    """``call_llm`` for the compression task: ctxbench's summarizer answers, given what the
    reproduction gives it (the pruned turns, the template's headings, the ``Target ~N`` budget
    as guidance only, the previous summary and the same request key)."""
    prompt = "\n".join(str(m.get("content", "")) for m in kwargs.get("messages") or [])
    replay = PENDING.get("replay")
    reply = wire.ask_summary(
        "compaction",
        prompt,
        messages=replay.items(PENDING["turns"]) if replay is not None else None,
        max_tokens=PENDING.get("budget"),
        sections=_summary_sections(prompt),
        previous_summary=PENDING.get("previous"),
        send_max_tokens=False,
        key=f"compaction{PENDING.get('count', 0)}",
    )
    if not reply.get("ok"):
        raise RuntimeError(str(reply.get("error") or "summary failed"))
    message = types.SimpleNamespace(content=reply.get("text") or "")
    return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)])


_released_generate_summary = ContextCompressor._generate_summary


def _generate_summary(
    self: ContextCompressor, turns_to_summarize: list, *args: Any, **kw: Any
) -> str | None:
    """The release's ``_generate_summary``, with what it summarises noted for ``call_llm``."""
    PENDING.update(
        turns=turns_to_summarize,
        budget=self._compute_summary_budget(turns_to_summarize),
        previous=self._previous_summary or None,
        count=self.compression_count,
    )
    try:
        return _released_generate_summary(self, turns_to_summarize, *args, **kw)
    finally:
        for key in ("turns", "budget", "previous", "count"):
            PENDING.pop(key, None)


ContextCompressor._generate_summary = _generate_summary
compressor_module.call_llm = _summary_llm


def _no_clock() -> Any:
    """A replay has no clock: the summary prompt's TEMPORAL ANCHORING rule would hold the day
    the replay ran (context_compressor.py:2204-2243), so a run would change from day to day;
    with the clock unresolved the release omits the rule, as the reproduction does."""
    raise RuntimeError("no clock in a replay")


hermes_time.now = _no_clock


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
    """A recorded message as the agent stores it: ``build_assistant_message``
    (chat_completion_helpers.py:1314-1473: reasoning and finish_reason keys, tool calls with
    ``call_id`` and the derived ``response_item_id``) and ``make_tool_message``
    (tool_dispatch_helpers.py:484-490: ``name`` and ``tool_name``)."""
    role = message["role"]
    # a multimodal message is stored with list content (a screenshot a tool returned)
    parts = message.get("parts")
    content = [dict(p) for p in parts] if parts else message.get("content") or ""
    if role == "tool":
        name = message.get("name") or ""
        return {"role": "tool", "name": name, "tool_name": name, "content": content,
                "tool_call_id": message.get("tool_call_id") or ""}  # fmt: skip
    if role != "assistant":
        return {"role": role, "content": content, **(message.get("replay") or {})}
    calls = message.get("tool_calls") or []
    replay = dict(message.get("replay") or {})
    out: dict = {"role": "assistant", "content": content, "reasoning": replay.pop("reasoning", None),
                 "finish_reason": "tool_calls" if calls else "stop", **replay}  # fmt: skip
    if calls:
        out["tool_calls"] = [
            {
                "id": c["id"],
                "call_id": c["id"],
                "response_item_id": _derive_responses_function_call_id(c["id"], None),
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in calls
        ]
    return out


def _api_copy(message: dict) -> dict:
    """The copy of a stored message the loop sends (conversation_loop.py:870-1080 for
    chat_completions: ``reasoning`` and ``finish_reason`` popped, ``call_id`` and
    ``response_item_id`` stripped, content stripped, arguments re-serialised compactly with
    sorted keys)."""
    out = {
        k: v for k, v in message.items() if k not in ("reasoning", "finish_reason", "api_content")
    }
    if isinstance(out.get("content"), str):
        out["content"] = out["content"].strip()
    calls = []
    for call in out.get("tool_calls") or ():
        call = {
            k: v
            for k, v in call.items()
            if k not in ("call_id", "response_item_id", "extra_content")
        }
        try:
            arguments = json.dumps(json.loads(call["function"]["arguments"]),
                                   separators=(",", ":"), sort_keys=True)  # fmt: skip
            call = {**call, "function": {**call["function"], "arguments": arguments}}
        except Exception:
            pass
        calls.append(call)
    if calls:
        out["tool_calls"] = calls
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
        self.system = ""  # the system prompt: the trace's system messages, joined
        self.system_ids: list = []
        self.messages: list = []
        self.ids: dict = {}  # id(stored dict) -> history id (the originals stay alive)
        self.originals: dict = {}  # history id -> the stored dict
        self.agent = LoopAgent(self.compressor, "", self.tools, self.model)
        self.attempts = 0
        #: the failure text once run_conversation returned ``compression_exhausted``
        self.exhausted = ""
        self.last_assistant_had_tools = False
        self.new_turn = False

    # -- history <-> protocol ------------------------------------------------------------
    def remember(self, appended: list) -> None:
        for message in appended:
            if message["role"] == "system":
                self.system = (self.system + "\n\n" + message["content"]).strip()
                self.system_ids.append(message["id"])
                continue
            stored = _hermes_message(message)
            self.ids[id(stored)] = message["id"]
            self.originals[message["id"]] = stored
            # a user turn starts run_conversation (the reproduction's _starts_user_turn)
            self.new_turn = message["role"] == "user" and bool(
                str(message.get("content") or "").strip() or message.get("images")
            )
            if message["role"] == "assistant":
                self.last_assistant_had_tools = bool(message.get("tool_calls"))
            self.messages.append(stored)
        self.agent._cached_system_prompt = self.system

    @staticmethod
    def _same(stored: dict, msg: dict) -> bool:
        """``msg`` is (a copy of, or a rewrite by the compressor of) ``stored``: the same tool
        result, the same tool calls, the same text, or the tail message a summary was merged
        into (context_compressor.py:3650-3668)."""
        if stored.get("role") != msg.get("role"):
            return False
        if msg.get("role") == "tool":
            return stored.get("tool_call_id") == msg.get("tool_call_id")
        if stored.get("tool_calls") or msg.get("tool_calls"):
            ids = [c.get("id") for c in msg.get("tool_calls") or ()]
            return ids == [c.get("id") for c in stored.get("tool_calls") or ()]
        content = msg.get("content")
        header = compressor_module._MERGED_PRIOR_CONTEXT_HEADER + "\n"
        if isinstance(content, str) and content.startswith(header):
            old = content[len(header) :].split(
                "\n\n" + compressor_module._MERGED_SUMMARY_DELIMITER
            )[0]
            return old == stored.get("content")
        return content == stored.get("content")

    def _identify(self, messages: list) -> list:
        """The history id of each message (None: new). The compressor copies messages, so
        copies are matched in history order (the first match after the previous one), then
        anywhere (the re-inserted user turn is a copy of an earlier message)."""
        out: list = []
        floor = -1
        for msg in messages:
            ident = self.ids.get(id(msg))
            if ident is None:
                ident = next((i for i, o in self.originals.items()
                              if i > floor and self._same(o, msg)), None)  # fmt: skip
                if ident is None:
                    ident = next((i for i, o in reversed(self.originals.items())
                                  if self._same(o, msg)), None)  # fmt: skip
                    out.append(ident)
                    continue
            floor = max(floor, ident)
            out.append(ident)
        return out

    def items(self, messages: list | None = None) -> list:
        """``messages`` (the working list) as prompt items: history refs, rewritten contents
        and tool-call arguments, new messages."""
        listed = self.messages if messages is None else messages
        out: list = [{"ref": i} for i in self.system_ids] if messages is None else []
        for msg, ident in zip(listed, self._identify(listed)):
            content = msg.get("content")
            if not isinstance(content, str) and (ident is None or not isinstance(content, list)):
                content = json.dumps(content, ensure_ascii=False)
            if ident is None:
                role = msg.get("role") if msg.get("role") in ("user", "assistant") else "user"
                out.append({"role": role, "content": content})
                continue
            item: dict = {"ref": ident}
            original = self.originals[ident]
            if content != original.get("content"):
                item["content"] = content
            arguments = [c["function"]["arguments"] for c in msg.get("tool_calls") or ()]
            if arguments != [c["function"]["arguments"] for c in original.get("tool_calls") or ()]:
                item["arguments"] = arguments
            out.append(item)
        return out

    # -- the loop's compaction sites -----------------------------------------------------------
    def _compress(self, where: str, approx: int, steps: list) -> None:
        before = self.messages
        PENDING["replay"] = self
        self.messages, _ = conversation_compression.compress_context(
            self.agent, self.messages, self.system, approx_tokens=approx, task_id="ctxbench"
        )
        if self.messages is not before:  # unchanged: the same list comes back
            note = f"{len(before)}->{len(self.messages)}"
            steps.append({"layer": where, "messages": self.items(), "note": note})

    def _api_tokens(self) -> int:
        """``request_pressure_tokens`` (conversation_loop.py:1086-1089): the rough estimate of
        the API copies, system prompt included, plus the tools' estimate."""
        system = [{"role": "system", "content": self.system.strip()}] if self.system else []
        tokens = estimate_messages_tokens_rough(system + [_api_copy(m) for m in self.messages])
        return tokens + (_estimate_tools_tokens_rough(self.tools) if self.tools else 0)

    def _request_tokens(self) -> int:
        """``estimate_request_tokens_rough`` of the stored messages (the turn prologue's)."""
        return estimate_request_tokens_rough(
            self.messages, system_prompt=self.system, tools=self.tools or None
        )

    def call(self, request: dict) -> dict:
        steps: list = []
        last = request.get("last_call")
        if last and last.get("ok"):
            self.compressor.update_from_response({"prompt_tokens": int(last["prompt_tokens"])})
        self.new_turn = False
        self.remember(request["append"])
        c = self.compressor
        if self.new_turn:
            self.attempts, self.exhausted = 0, ""  # conversation_loop.py:686
            self._prologue(steps)
        elif self.exhausted:  # run_conversation returned: no call until the next user turn
            return self._failed(steps, self.exhausted)
        elif self.last_assistant_had_tools and last and last.get("ok"):  # the response's calls
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

    def _prologue(self, steps: list) -> None:
        """The turn prologue's preflight (turn_context.py:563-680)."""
        c = self.compressor
        if not _should_run_preflight_estimate(
            self.messages, c.protect_first_n, c.protect_last_n, c.threshold_tokens
        ):
            return
        tokens = self._request_tokens()
        deferred = c.should_defer_preflight_to_real_usage(tokens)
        if not deferred and c.last_prompt_tokens >= 0 and tokens > c.last_prompt_tokens:
            c.last_prompt_tokens = tokens
        cooldown = getattr(c, "get_active_compression_failure_cooldown", lambda: None)()
        if deferred or cooldown or not c.should_compress(tokens):
            return
        for _ in range(3):
            rows, before = len(self.messages), tokens
            self._compress("preflight", tokens, steps)
            tokens = self._request_tokens()
            if not _compression_made_progress(rows, len(self.messages), before, tokens):
                break
            if not c.should_compress(tokens):
                break

    def overflow(self, request: dict) -> dict:
        steps: list = []
        if self.exhausted:  # a call the ended turn would not make: no compression either
            return self._failed(steps, self.exhausted)
        self.attempts += 1
        if self.attempts > MAX_COMPRESSION_ATTEMPTS:
            self.exhausted = (
                f"compression_exhausted: Context length exceeded: max compression attempts "
                f"({MAX_COMPRESSION_ATTEMPTS}) reached."
            )
            return self._failed(steps, self.exhausted)
        rows, before = len(self.messages), estimate_messages_tokens_rough(self.messages)
        self._compress("overflow", self._api_tokens(), steps)
        after = estimate_messages_tokens_rough(self.messages)
        if len(self.messages) < rows or (after > 0 and after < before * 0.95):
            return {"op": "prompt", "steps": steps, "retry": True, "info": self.info()}
        self.exhausted = (
            f"compression_exhausted: Context length exceeded ({after:,} tokens). "
            "Cannot compress further."
        )
        return self._failed(steps, self.exhausted)

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
            "ineffective": getattr(c, "_ineffective_compression_count", None),
            "fallback_streak": getattr(c, "_fallback_compression_streak", None),
        }


if __name__ == "__main__":
    wire.serve_replays(Replay, "hermes", VERSION)
