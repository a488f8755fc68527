"""Driver for Google ADK's event compaction (``google-adk`` 2.13.0).

Run with the python of the ``google-adk`` environment; it imports nothing from ctxbench.

The framework's code (the installed wheel, unmodified): ``EventsCompactionConfig``
(``google/adk/apps/_configs.py:50``: no defaults, every trigger None; ``token_threshold`` and
``event_retention_size`` go together), the compaction request processor that runs before each
model request (``flows/llm_flows/context/_compaction.py:35`` ->
``_run_compaction_for_token_threshold_config``, ``apps/compaction.py:662``: the last reported
prompt tokens, else the contents' characters // 4, against ``token_threshold``; the range
before the last ``event_retention_size`` events cut where no call loses its response, seeded
with the previous summary; ``_is_range_worth_compacting``, ``:365``: skipped when the range is
no larger than the last summary), the post-invocation ``_run_compaction_for_sliding_window``
(``:749``: token threshold first, else every ``compaction_interval`` invocations with
``overlap_size``), ``LlmEventSummarizer`` (``apps/llm_event_summarizer.py``: its prompt, tool
content capped at 2,000 characters) and the prompt built from the session's events by
``_contents._get_contents`` (compaction events replace the ranges they summarize).

Emulated: the ``Runner`` and ``LlmAgent`` around them: the recorded turns become the session's
events (a user ``Content``; a model ``Content`` with text and ``function_call`` parts carrying
the provider's ``usage_metadata`` of the call that produced it, from ctxbench's verdict; a
``function_response`` event per result), timestamps are the history positions, an invocation
ends when a recorded user message follows the agent's answer; the model is a ``BaseLlm`` that
answers the summary request with ctxbench's summarizer. The system prompt is the agent's
instruction, outside the events.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import wire
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.apps.compaction import (
    _run_compaction_for_sliding_window,
    _run_compaction_for_token_threshold_config,
)
from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
from google.adk.events import Event
from google.adk.flows.llm_flows.context import _contents
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.sessions import InMemorySessionService
from google.genai import types

try:
    from google.adk.apps import EventsCompactionConfig
except ImportError:  # pragma: no cover - 2.13.0 exports it here
    from google.adk.apps._configs import EventsCompactionConfig

VERSION = wire.installed_version("google-adk")

AGENT = "assistant"
CURRENT: dict[str, Any] = {}


class ReplayLlm(BaseLlm):
    """The agent's model: it is only ever asked for summaries."""

    async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
        replay = CURRENT["replay"]
        prompt = "\n\n".join(
            p.text for c in llm_request.contents or () for p in c.parts or () if p.text
        )
        reply = wire.ask_summary("compaction", prompt, messages=replay.summarizing,
                                 send_max_tokens=False)  # fmt: skip
        if not reply.get("ok"):
            raise RuntimeError(str(reply.get("error") or "summary failed"))
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text=reply["text"])])
        )


class ObservedSummarizer(LlmEventSummarizer):
    """The release's summarizer; the events it summarizes are remembered for ctxbench."""

    async def maybe_summarize_events(self, *, events: list) -> Any:
        replay = CURRENT["replay"]
        replay.summarizing = replay.items_of_events(events)
        result = await super().maybe_summarize_events(events=events)
        replay.summaries += int(result is not None)
        return result


class Replay:
    def __init__(self, request: dict) -> None:
        CURRENT["replay"] = self
        cfg = dict(request["config"])
        window = int(request["window"])
        threshold = cfg.get("token_threshold") or int(cfg["token_threshold_ratio"] * window)
        self.config = EventsCompactionConfig(
            summarizer=ObservedSummarizer(llm=ReplayLlm(model="replayed-model")),
            compaction_interval=cfg.get("compaction_interval"),
            overlap_size=cfg.get("overlap_size"),
            token_threshold=threshold,
            event_retention_size=cfg["event_retention_size"],
        )
        self.agent = LlmAgent(name=AGENT, model=ReplayLlm(model="replayed-model"))
        self.app = App(name="replay", root_agent=self.agent, events_compaction_config=self.config)
        self.service = InMemorySessionService()
        self.loop = asyncio.new_event_loop()
        self.session = self.loop.run_until_complete(
            self.service.create_session(app_name="replay", user_id="user", session_id="s")
        )
        self.system: list[int] = []
        self.hid_of_event: dict[str, int] = {}
        self.result_hid: dict[str, int] = {}  # function_response id -> history position
        self.contents: list[tuple[types.Content, int]] = []  # each event's content, its position
        self.invocation = Event.new_id()
        self.answered = False
        self.summarizing: list[dict] = []
        self.summaries = 0

    # -- events ------------------------------------------------------------------------------
    def _event(self, message: dict, last: dict) -> Event | None:
        hid, role, text = message["id"], message["role"], message.get("content") or ""
        ts = float(hid + 1)
        if role == "system":
            self.system.append(hid)
            return None
        if role == "assistant":
            parts = [types.Part(text=text)] if text else []
            for n, call in enumerate(message.get("tool_calls") or ()):
                try:
                    args = json.loads(call["arguments"] or "{}")
                except ValueError:
                    args = {"input": call["arguments"]}
                parts.append(types.Part(function_call=types.FunctionCall(
                    id=call["id"] or f"call-{hid}-{n}", name=call["name"],
                    args=args if isinstance(args, dict) else {"input": args})))  # fmt: skip
            usage = None
            if last.get("ok"):
                usage = types.GenerateContentResponseUsageMetadata(
                    prompt_token_count=int(last.get("prompt_tokens") or 0)
                )
            content = types.Content(role="model", parts=parts or [types.Part(text="")])
            event = Event(invocation_id=self.invocation, author=AGENT, content=content,
                          timestamp=ts, usage_metadata=usage)  # fmt: skip
        elif role == "tool":
            ident = message.get("tool_call_id") or f"call-{hid}"
            self.result_hid[ident] = hid
            part = types.Part(function_response=types.FunctionResponse(
                id=ident, name=message.get("name") or "tool", response={"result": text}))  # fmt: skip
            event = Event(invocation_id=self.invocation, author=AGENT,
                          content=types.Content(role="user", parts=[part]), timestamp=ts)  # fmt: skip
        else:
            event = Event(invocation_id=self.invocation, author="user", timestamp=ts,
                          content=types.Content(role="user", parts=[types.Part(text=text)]))  # fmt: skip
        self.hid_of_event[event.id] = hid
        self.contents.append((event.content, hid))
        return event

    def _append(self, event: Event) -> None:
        self.loop.run_until_complete(self.service.append_event(session=self.session, event=event))

    def _end_invocation(self) -> None:
        """``Runner._run_compaction``: the post-invocation compaction."""

        async def run() -> None:
            async for event in _run_compaction_for_sliding_window(self.app, self.session,
                                                                   self.service):  # fmt: skip
                await self.service.append_event(session=self.session, event=event)

        self.loop.run_until_complete(run())
        self.invocation = Event.new_id()

    # -- protocol items ------------------------------------------------------------------------
    def items_of_events(self, events: list) -> list[dict]:
        out: list[dict] = []
        for event in events:
            hid = self.hid_of_event.get(event.id)
            if hid is not None:
                out.append({"ref": hid})
            elif event.content:
                text = "".join(p.text or "" for p in event.content.parts or ())
                out.append({"role": "user", "content": text})
        return out

    def items(self, contents: list) -> list[dict]:
        out: list[dict] = [{"ref": i} for i in self.system]
        start = 0
        for content in contents:
            responses = [p.function_response for p in content.parts or () if p.function_response]
            if responses and all(r.id in self.result_hid for r in responses):
                out += [{"ref": self.result_hid[r.id]} for r in responses]
                continue
            match = next(
                (k for k in range(start, len(self.contents)) if self.contents[k][0] == content),
                None,
            )
            if match is not None:
                out.append({"ref": self.contents[match][1]})
                start = match + 1
            else:  # a summary
                text = "".join(p.text or "" for p in content.parts or ())
                role = "assistant" if content.role == "model" else "user"
                out.append({"role": role, "content": text})
        return out

    def prompt(self) -> list[dict]:
        contents = _contents._get_contents(current_branch=None, events=self.session.events,
                                           agent_name=AGENT)  # fmt: skip
        return self.items(contents)

    # -- a call -----------------------------------------------------------------------------------
    def call(self, request: dict) -> dict:
        last = request.get("last_call") or {}
        steps: list[dict] = []
        before = self.prompt()
        for message in request["append"]:
            if message["role"] == "user" and self.answered:
                n = self.summaries
                self._end_invocation()
                if self.summaries > n:
                    steps.append(
                        {"layer": "post_invocation", "messages": self.prompt(), "note": ""}
                    )
                self.answered = False
            event = self._event(message, last)
            if event is not None:
                self._append(event)
            if message["role"] == "assistant":
                self.answered = not message.get("tool_calls")
        base = before + [{"ref": m["id"]} for m in request["append"]]
        if steps:  # the compaction ran before the new user message: it is in the prompt too
            steps[-1]["messages"] = self.prompt()
        n = self.summaries
        self.loop.run_until_complete(_run_compaction_for_token_threshold_config(
            config=self.config, session=self.session, session_service=self.service,
            agent=self.agent, agent_name=AGENT))  # fmt: skip
        if self.summaries > n:
            steps.append({"layer": "request_processor", "messages": self.prompt(), "note": ""})
        info = {"events": len(self.session.events), "summaries": self.summaries}
        return {"op": "prompt", "base": base, "steps": steps, "info": info}


if __name__ == "__main__":
    wire.serve_replays(Replay, "google-adk", VERSION)
