"""Driver for deep agents' own summarization middleware (``deepagents`` 0.7.32).

Run with the python of the ``deepagents`` environment; it imports nothing from ctxbench.

The framework's code (the installed wheel, unmodified): ``create_summarization_middleware``
(``deepagents/middleware/summarization.py:1873``), the middleware ``create_deep_agent``
installs, with its model-aware defaults (``compute_summarization_defaults``, ``:279``: with a
model profile's ``max_input_tokens`` summarize at 0.85 of it and keep 0.10, tool arguments
truncated at the same fraction; without one 170,000 tokens / keep 6 messages, arguments
truncated past 20 messages); ``_DeepAgentsSummarizationMiddleware.wrap_model_call``
(``:1586``): the effective messages rebuilt from the ``_summarization_event`` in the state
(the state's messages are never rewritten), large ``write_file``/``edit_file`` arguments of
older messages truncated (``_truncate_args``, ``:1134``, 2,000 characters), the evicted
messages offloaded to the backend's ``/conversation_history/<session>.md`` before the summary
(``_offload_to_backend``, ``:1326``) and the summary message naming that file, the input
budget check (``_input_budget``, ``:1494``: 0.95 of the profile's limit minus the output
tokens) and the overflow fallback (a context-overflow error summarizes and retries once, the
overflowing tail clipped to the backend, ``_call_with_budget``, ``:1524``); LangChain's
``count_tokens_approximately`` (with the tools) and its cutoff and summary prompt.

Emulated: the LangGraph agent loop around it (the recorded turns appended to the state; the
system prompt is the request's ``system_message``; the middleware's state update applied as the
``add_messages`` reducer applies it); the backend is a ``FilesystemBackend`` in a scratch folder
(virtual paths); the session id is fixed (``session_ctxbench``) so the summary's file path is
the same in every run; the chat model is a ``BaseChatModel`` whose profile's
``max_input_tokens`` is the knob (None: the run window; ``model_profile=false``: no profile)
and whose summary calls ctxbench's summarizer answers (``wire.ask_summary``). A provider's
overflow rejection re-runs the middleware with a handler that raises ``ContextOverflowError``
first, as the model call would.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

import wire
from deepagents.backends import FilesystemBackend
from deepagents.middleware.summarization import (
    SUMMARIZATION_EVENT_KEY,
    SUMMARIZATION_SESSION_ID_KEY,
    _DeepAgentsSummarizationMiddleware,
    create_summarization_middleware,
)
from langchain.agents.middleware.types import ExtendedModelResponse, ModelRequest, ModelResponse
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, SystemMessage

# the same LangChain messages, chat model and protocol items as the langchain driver (the
# deepagents environment holds langchain, which the middleware wraps)
from langchain_middleware_driver import Replay as LangChainReplay
from langchain_middleware_driver import ReplayChatModel, _lc_message

VERSION = wire.installed_version("deepagents")

SESSION = "session_ctxbench"


class Observed(_DeepAgentsSummarizationMiddleware):
    """The release's middleware; what it hands its summary call is remembered for ctxbench."""

    replay: Any = None

    def _create_summary(self, messages_to_summarize: list) -> str:
        self.replay.summarizing = list(messages_to_summarize)
        self.replay.summaries += 1
        return super()._create_summary(messages_to_summarize)


class Replay:
    def __init__(self, request: dict) -> None:
        cfg = dict(request["config"])
        window = cfg.get("max_input_tokens") or int(request["window"])
        profile = {"max_input_tokens": int(window)} if cfg.get("model_profile", True) else None
        self.model = ReplayChatModel(profile=profile)
        self.model.replay = self
        output = cfg.get("max_output_tokens")
        self.settings = {"max_tokens": int(output if output is not None else request["reserved"])}
        self.scratch = tempfile.mkdtemp(prefix="ctxbench-deepagents-")
        factory = create_summarization_middleware(
            self.model, FilesystemBackend(root_dir=self.scratch, virtual_mode=True),
            trim_tokens_to_summarize=cfg.get("trim_tokens_to_summarize"),
        )  # fmt: skip
        # the factory's instance, as the observed subclass (same fields, same defaults)
        self.middleware = Observed.__new__(Observed)
        self.middleware.__dict__.update(factory.__dict__)
        self.middleware.replay = self
        self.tools = [
            {"type": "function", "function": {"name": t["name"],
             "description": t.get("description", ""), "parameters": t.get("parameters", {})}}
            for t in request.get("tools") or []
        ]  # fmt: skip
        self.system: list[int] = []
        self.system_text: list[str] = []
        self.state: dict[str, Any] = {"messages": [], SUMMARIZATION_SESSION_ID_KEY: SESSION}
        self.original: dict[str, Any] = {}
        self.summarizing: list = []
        self.summaries = 0
        self.sent: list = []

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    # -- protocol items ----------------------------------------------------------------------
    items = LangChainReplay.items

    def prompt(self, messages: list) -> list[dict]:
        return [{"ref": i} for i in self.system] + self.items(messages)

    # -- the model call through the middleware ----------------------------------------------------
    def _run(self, overflowing: bool) -> list:
        """``wrap_model_call`` on the state; returns what the handler (the model) was sent."""
        sent: list = []
        raised = [False]

        def handler(request: ModelRequest) -> ModelResponse:
            if overflowing and not raised[0]:
                raised[0] = True
                raise ContextOverflowError("the provider rejected the prompt: context overflow")
            sent[:] = list(request.messages)
            return ModelResponse(result=[AIMessage("")])

        system = SystemMessage("\n\n".join(self.system_text)) if self.system_text else None
        request = ModelRequest(
            model=self.model, messages=list(self.state["messages"]), system_message=system,
            tools=self.tools, state=self.state, runtime=None, model_settings=self.settings,
        )  # fmt: skip
        response = self.middleware.wrap_model_call(request, handler)
        if isinstance(response, ExtendedModelResponse):  # the state update, as LangGraph applies it
            update = dict(response.command.update or {})
            replacements = {m.id: m for m in update.pop("messages", [])}
            self.state.update(update)
            if replacements:
                self.state["messages"] = [replacements.get(m.id, m) for m in self.state["messages"]]
        return sent

    def _answer(self, base: list, overflowing: bool) -> dict:
        steps: list[dict] = []
        exception = None
        summaries = self.summaries
        try:
            self.sent = self._run(overflowing)
        except Exception as exc:  # the middleware raised: the model call never happens
            exception, self.sent = wire.exception_text(exc), list(self.state["messages"])
        after = self.prompt(self.sent)
        if after != base:  # a new summary, else only older tool arguments truncated
            layer = "summarization" if self.summaries > summaries else "truncate_args"
            steps.append({"layer": layer, "messages": after,
                          "note": f"{len(self.state['messages'])} message(s) in the state"})  # fmt: skip
        info = {"deepagents_tokens": int(self.middleware._count_tokens(self.sent, None, self.tools))
                if self.sent else 0, "summaries": self.summaries,
                "cutoff": (self.state.get(SUMMARIZATION_EVENT_KEY) or {}).get("cutoff_index")}  # fmt: skip
        reply: dict = {"op": "prompt", "base": base, "steps": steps, "info": info}
        if exception:
            reply["exception"] = exception
        return reply

    def call(self, request: dict) -> dict:
        for message in request["append"]:
            if message["role"] == "system":
                self.system.append(message["id"])
                self.system_text.append(message.get("content") or "")
                continue
            msg = _lc_message(message)
            self.original[msg.id] = msg.model_copy()
            self.state["messages"].append(msg)
        effective = self.middleware._get_effective_messages(
            ModelRequest(model=self.model, messages=list(self.state["messages"]),
                         state=self.state, runtime=None)
        )  # fmt: skip
        return self._answer(self.prompt(effective), overflowing=False)

    def overflow(self, request: dict) -> dict:
        if int(request.get("attempt", 0)) > 0:  # the one smaller retry was sent already
            return {"op": "prompt", "steps": [], "retry": False, "info": {}}
        reply = self._answer(self.prompt(self.sent), overflowing=True)
        reply["retry"] = not reply.get("exception") and bool(reply["steps"])
        return reply


if __name__ == "__main__":
    replays: list[Replay] = []

    def make(request: dict) -> Replay:
        for old in replays:
            old.close()
        replays[:] = [Replay(request)]
        return replays[0]

    wire.serve_replays(make, "deepagents", VERSION)
