"""Driver for LangChain v1's agent middleware (``langchain`` 1.5.2).

Run with the python of the ``langchain`` environment; it imports nothing from ctxbench. ``config["middleware"]`` picks what runs before each model call:

- ``summarization``: ``SummarizationMiddleware.before_model``
  (``langchain/agents/middleware/summarization.py:479``) on the agent state's messages, its
  update applied to the state as LangGraph's ``add_messages`` reducer applies it
  (``RemoveMessage(REMOVE_ALL_MESSAGES)``: the state becomes the summary plus the kept
  messages). Defaults in 1.5.2: ``trigger=None`` (never summarizes, ``:286``), ``keep=("messages",
  20)`` (``:113``, ``:287``), ``trim_tokens_to_summarize=4000`` (``:114``), the counter
  ``count_tokens_approximately`` with usage-metadata scaling (``_get_approximate_token_counter``,
  ``:252``), the safe cutoff that keeps AI/tool pairs (``_find_safe_cutoff_point``, ``:878``).
- ``clear_tool_uses``: ``ContextEditingMiddleware.wrap_model_call``
  (``langchain/agents/middleware/context_editing.py:250``) with one ``ClearToolUsesEdit``
  (``:58``: ``trigger=100_000``, ``clear_at_least=0``, ``keep=3``, ``placeholder="[cleared]"``)
  on a copy of the state's messages: the edit changes the request, never the state.

Emulated: the LangGraph agent loop around the middleware (the recorded turns are appended to
the state; the system prompt is ``create_agent``'s ``system_prompt``, outside the state); the
chat model, a ``BaseChatModel`` whose profile's ``max_input_tokens`` is the knob (None: the run
window) and whose summary calls ctxbench's summarizer answers (``wire.ask_summary``) with the
release's own prompt; the recorded assistant turns carry the provider-reported usage of the
call that produced them (``usage_metadata`` from ctxbench's verdict on the previous call), as
a provider's ``AIMessage`` does, so the release's usage scaling and reported-token trigger act.
"""

from __future__ import annotations

import json
from typing import Any

import wire
from langchain.agents.middleware import (
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    SummarizationMiddleware,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult

VERSION = wire.installed_version("langchain")

PROVIDER = "replayed"


def _args(arguments: str) -> dict:
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        return {"input": arguments}
    return args if isinstance(args, dict) else {"input": args}


def _lc_message(message: dict) -> Any:
    ident, role, text = str(message["id"]), message["role"], message.get("content") or ""
    if role == "assistant":
        calls = [
            {"id": c["id"], "name": c["name"], "args": _args(c["arguments"])}
            for c in message.get("tool_calls") or []
        ]
        return AIMessage(text, tool_calls=calls, id=ident)
    if role == "tool":
        return ToolMessage(
            text, tool_call_id=message.get("tool_call_id") or "", id=ident,
            name=message.get("name"),
        )  # fmt: skip
    return HumanMessage(text, id=ident)


class ReplayChatModel(BaseChatModel):
    """The agent's chat model: its profile gives the window; it only ever writes summaries."""

    replay: Any = None

    @property
    def _llm_type(self) -> str:
        return "replayed-chat"

    def _get_ls_params(self, stop: Any = None, **kwargs: Any) -> Any:
        return {"ls_provider": PROVIDER, "ls_model_name": "replayed-model"}

    def _generate(self, messages: list, stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:  # fmt: skip
        prompt = "\n\n".join(str(m.content) for m in messages)
        reply = wire.ask_summary(
            "summarization", prompt, messages=self.replay.items(self.replay.summarizing),
            send_max_tokens=False,
        )  # fmt: skip
        if not reply.get("ok"):
            raise RuntimeError(str(reply.get("error") or "summary failed"))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(reply["text"]))])


class ObservedSummarization(SummarizationMiddleware):
    """The release's middleware; what it hands its summary call is remembered for ctxbench."""

    replay: Any = None

    def _create_summary(self, messages_to_summarize: list) -> str:
        self.replay.summarizing = list(messages_to_summarize)
        return super()._create_summary(messages_to_summarize)


def _context_size(value: Any) -> Any:
    """``(kind, value)`` as the release types it: a count is an int, a fraction a float."""
    if value is None:
        return None
    kind, amount = value
    return (kind, float(amount) if kind == "fraction" else int(amount))


class Replay:
    def __init__(self, request: dict) -> None:
        cfg = dict(request["config"])
        self.kind = cfg.pop("middleware")
        self.report_usage = bool(cfg.pop("report_usage", True))
        window = cfg.pop("max_input_tokens", None) or int(request["window"])
        self.model = ReplayChatModel(profile={"max_input_tokens": int(window)})
        self.model.replay = self
        self.system: list[int] = []
        self.state: list = []
        self.original: dict[str, Any] = {}
        self.summarizing: list = []
        self.summaries = 0
        if self.kind == "clear_tool_uses":
            edit = ClearToolUsesEdit(
                trigger=cfg["trigger"], clear_at_least=cfg["clear_at_least"], keep=cfg["keep"],
                clear_tool_inputs=cfg["clear_tool_inputs"],
                exclude_tools=tuple(cfg["exclude_tools"]), placeholder=cfg["placeholder"],
            )  # fmt: skip
            self.middleware: Any = ContextEditingMiddleware(edits=[edit])
        else:
            triggers = [_context_size(t) for t in cfg["trigger"]]
            middleware = ObservedSummarization(
                self.model,
                trigger=(triggers[0] if len(triggers) == 1 else triggers) or None,
                keep=_context_size(cfg["keep"]),
                trim_tokens_to_summarize=cfg["trim_tokens_to_summarize"],
                **({"summary_prompt": cfg["summary_prompt"]} if cfg.get("summary_prompt") else {}),
            )  # fmt: skip
            middleware.replay = self
            self.middleware = middleware

    # -- protocol items ----------------------------------------------------------------------
    def items(self, messages: list) -> list[dict]:
        out: list[dict] = []
        for msg in messages:
            original = self.original.get(msg.id)
            if original is None:
                role = "assistant" if isinstance(msg, AIMessage) else "user"
                out.append({"role": role, "content": str(msg.content)})
                continue
            item: dict = {"ref": int(msg.id)}
            if msg.content != original.content:
                item["content"] = str(msg.content)
            if isinstance(msg, AIMessage) and msg.tool_calls != original.tool_calls:
                item["arguments"] = [json.dumps(c["args"]) for c in msg.tool_calls]
            out.append(item)
        return out

    def prompt(self, messages: list) -> list[dict]:
        return [{"ref": i} for i in self.system] + self.items(messages)

    # -- a call ----------------------------------------------------------------------------------
    def call(self, request: dict) -> dict:
        last = request.get("last_call") or {}
        for message in request["append"]:
            if message["role"] == "system":
                self.system.append(message["id"])
                continue
            msg = _lc_message(message)
            if isinstance(msg, AIMessage) and self.report_usage and last.get("ok"):
                # the provider's usage on the response to the previous call
                out = count_tokens_approximately([msg])
                prompt_tokens = int(last.get("prompt_tokens") or 0)
                msg.usage_metadata = {"input_tokens": prompt_tokens, "output_tokens": out,
                                      "total_tokens": prompt_tokens + out}  # fmt: skip
                msg.response_metadata = {"model_provider": PROVIDER}
            self.original[msg.id] = msg.model_copy()
            self.state.append(msg)
        base = self.prompt(self.state)
        steps: list[dict] = []
        exception = None
        try:
            sent = self._edit() if self.kind == "clear_tool_uses" else self._summarize()
        except Exception as exc:  # the middleware raised: the model call never happens
            exception, sent = wire.exception_text(exc), self.state
        after = self.prompt(sent)
        if after != base:
            note = (
                f"{len(self.state)} message(s) in the state"
                if self.kind != "clear_tool_uses"
                else ""
            )
            steps.append({"layer": self.kind, "messages": after, "note": note})
        reply: dict = {"op": "prompt", "base": base, "steps": steps, "info": self.info(sent)}
        if exception:
            reply["exception"] = exception
        return reply

    def _summarize(self) -> list:
        update = self.middleware.before_model({"messages": self.state}, None)
        if update is not None:
            self.summaries += 1
            self.state = list(update["messages"][1:])  # RemoveMessage(REMOVE_ALL) first
        return self.state

    def _edit(self) -> list:
        sent: list = []

        class Request:
            messages = self.state
            system_message = None
            tools = ()
            model = self.model

            def override(self, messages: list) -> Any:
                sent.extend(messages)
                return self

        self.middleware.wrap_model_call(Request(), lambda request: None)
        return sent

    def info(self, sent: list) -> dict:
        counter = getattr(self.middleware, "token_counter", None) or count_tokens_approximately
        return {
            "langchain_tokens": int(counter(sent)) if sent else 0,
            "state_messages": len(self.state),
            "summaries": self.summaries,
        }


if __name__ == "__main__":
    wire.serve_replays(Replay, "langchain", VERSION)
