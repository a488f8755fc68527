"""A driver for the protocol and fault tests: no framework, behaviour chosen by the config.

``mode``: ``keep`` answers every call with the whole history; ``summarize`` asks ctxbench for a
summary at call ``at`` and puts it in place of the history before the last message; ``cut``
at call ``at`` and after replaces the history before the last assistant turn with tool calls
by a summary, keeps that turn's calls without its text and blanks the task; ``crash``,
``hang`` and ``garbage`` misbehave at call ``at``; ``raise`` reports a framework exception.
Run with ctxbench's own python; it finds ``wire`` through ``CTXBENCH_WIRE_DIR``.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.environ["CTXBENCH_WIRE_DIR"])

import wire

STATE: dict = {"ids": [], "cfg": {}, "turns": []}


def start(request: dict) -> dict:
    STATE["ids"], STATE["cfg"], STATE["turns"] = [], request["config"], []
    print(f"scripted driver started for {request['trace_id']} pid {os.getpid()}", file=sys.stderr)
    return {"op": "ready", "framework": "scripted", "version": str(os.getpid()), "notes": []}


def call(request: dict) -> dict:
    STATE["ids"] += [m["id"] for m in request["append"]]
    STATE["turns"] += [m["id"] for m in request["append"] if m.get("tool_calls")]
    mode, at = STATE["cfg"]["mode"], STATE["cfg"]["at"]
    refs = [{"ref": i} for i in STATE["ids"]]
    if mode == "cut" and request["call"] >= at:  # a stateless cut: the same prompt each call
        turn = STATE["turns"][-1]
        summary = {"role": "user", "content": "Summary of the work so far."}
        step = [refs[0], {"ref": 1, "content": ""}, summary, {"ref": turn, "content": ""}]
        step += refs[STATE["ids"].index(turn) + 1 :]
        return {"op": "prompt", "base": refs, "steps": [{"layer": "scripted", "messages": step}]}
    if request["call"] == at:
        if mode == "crash":
            print("scripted driver: simulated crash", file=sys.stderr)
            sys.stderr.flush()
            os._exit(3)
        if mode == "hang":
            print("scripted driver: hanging", file=sys.stderr)
            time.sleep(60)
        if mode == "garbage":
            wire._OUT.write("this is not json\n")
            wire._OUT.flush()
        if mode == "raise":
            return {"op": "prompt", "base": refs, "steps": [], "exception": "KeyError: 'x'"}
        if mode == "summarize":
            reply = wire.ask_summary("scripted", "Summarise.", messages=STATE["ids"][1:-1])
            text = reply["text"] if reply["ok"] else f"failed: {reply.get('error')}"
            step = [refs[0], {"role": "user", "content": text}, refs[-1]]
            return {
                "op": "prompt",
                "base": refs,
                "steps": [{"layer": "scripted", "messages": step}],
            }
    return {"op": "prompt", "base": refs, "steps": [], "info": {"pid": os.getpid()}}


def overflow(request: dict) -> dict:
    return {"op": "prompt", "steps": [], "retry": False, "exception": "ValueError: overflow"}


wire.serve({"start": start, "call": call, "overflow": overflow})
