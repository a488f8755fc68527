"""A scripted OpenAI-compatible endpoint on 127.0.0.1: its answers depend on what the prompt
holds, so a test can tell a dropped fact from a kept one.

- A question (the last message ends with ``Question: ...``) is answered with the first of the
  question's ``facts`` (accepted answers) found in the messages before it, else "unknown".
- Any other request is a next step: the earliest tool call of the prompt (its name and
  arguments), or the earliest ReAct ``Action:`` / ``Action Input:`` pair, as a tool call (a
  prompt whose early rounds were compacted away names another step); else a final answer.

It records every request body and its Authorization header; ``mode`` makes it ``slow``
(``delay`` seconds before answering), ``fail`` (HTTP 500), ``redirect`` (307 to
``redirect``), ``malformed`` (200 without ``choices``), or fail once ``fail_after`` requests were answered. Run standalone
(``python -m tests.answering.server TRACE --port 8000``) it answers the probes mined from
TRACE, and prints what it was asked when stopped.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import threading
import time
from collections.abc import Generator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ACTION = re.compile(r"^\s*Action\s*:\s*(.+?)\s*$\n\s*Action Input\s*:\s*(.*?)\s*$", re.MULTILINE)


class Scripted(ThreadingHTTPServer):
    daemon_threads = True
    facts: Mapping[str, Sequence[str]]
    bodies: list[dict[str, Any]]
    auth: list[str]
    mode: str
    delay: float
    redirect: str
    fail_after: int | None
    recall: int | None
    answered: int
    prompt_tokens: int
    completion_tokens: int
    lock: threading.Lock

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


def text_of(message: Mapping[str, Any]) -> str:
    pieces = [str(message.get("content") or "")]
    for call in message.get("tool_calls") or ():
        pieces += [call["function"]["name"], call["function"]["arguments"]]
    return "\n".join(pieces)


def scripted(
    body: Mapping[str, Any], facts: Mapping[str, Sequence[str]], recall: int | None = None
) -> dict[str, Any]:
    """The reply message the script gives to ``body``; with ``recall``, a question is answered
    from the last ``recall`` characters of the prompt only (a model that misses what lies far
    back, so string presence overstates it)."""
    messages = body["messages"]
    last = str(messages[-1].get("content") or "")
    if messages[-1]["role"] == "user" and "\nQuestion: " in last:
        question = last.rsplit("\nQuestion: ", 1)[1]
        context = "\n".join(text_of(m) for m in messages[:-1])
        context = context[-recall:] if recall else context
        found = next((a for a in facts.get(question, ()) if a in context), "unknown")
        return {"role": "assistant", "content": found}
    for message in messages:
        if message["role"] == "assistant" and message.get("tool_calls"):
            call = message["tool_calls"][0]["function"]
            return {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_0",
                        "type": "function",
                        "function": {"name": call["name"], "arguments": call["arguments"]},
                    }
                ],
            }
        react = (
            _ACTION.search(str(message.get("content") or ""))
            if message["role"] == "assistant"
            else None
        )
        if react:
            return {
                "role": "assistant",
                "content": f"Thought: next\nAction: {react.group(1)}\nAction Input: {react.group(2)}",
            }
    return {"role": "assistant", "content": "Final answer: done."}


class Handler(BaseHTTPRequestHandler):
    server: Scripted

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        server = self.server
        with server.lock:
            server.bodies.append(body)
            server.auth.append(self.headers.get("Authorization") or "")
            failing = server.mode == "fail" or (
                server.fail_after is not None and server.answered >= server.fail_after
            )
        if server.mode == "slow":
            time.sleep(server.delay)
        if server.mode == "redirect":
            self._send(307, b"", {"Location": server.redirect})
            return
        if failing:
            self._send(500, b'{"error": {"message": "the scripted server fails"}}')
            return
        if server.mode == "malformed":
            self._send(200, b'{"not": "a completion"}')
            return
        message = scripted(body, server.facts, server.recall)
        prompt = len(json.dumps(body["messages"], ensure_ascii=False)) // 4
        completion = max(1, len(text_of(message)) // 4)
        with server.lock:
            server.answered += 1
            server.prompt_tokens += prompt
            server.completion_tokens += completion
        payload = {
            "id": "x",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
        }
        self._send(200, json.dumps(payload).encode())

    def _send(self, status: int, data: bytes, headers: Mapping[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (a timeout test)
            pass

    def log_message(self, *args: object) -> None:
        pass


def scripted_server(facts: Mapping[str, Sequence[str]] | None = None, port: int = 0) -> Scripted:
    server = Scripted(("127.0.0.1", port), Handler)
    server.facts = dict(facts or {})
    server.bodies, server.auth = [], []
    server.mode, server.delay, server.redirect, server.fail_after = "ok", 0.0, "", None
    server.recall = None
    server.answered = server.prompt_tokens = server.completion_tokens = 0
    server.lock = threading.Lock()
    return server


def running(server: Scripted) -> Generator[Scripted, None, None]:
    """Serve in a thread while the generator is suspended (a pytest fixture's body)."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def facts_of(probes: Sequence[Any]) -> dict[str, list[str]]:
    """Question -> accepted answers, for the script."""
    return {p.question: list(p.answers) for p in probes}


def main() -> None:
    import argparse

    from ctxbench.cell.runner import mined_probes
    from ctxbench.cell.traces import open_traces

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--recall-chars", type=int, default=0, help="answer from the prompt's end")
    args = parser.parse_args()
    facts: dict[str, list[str]] = {}
    for path in args.traces:
        for trace in open_traces(path).traces():
            facts.update(facts_of(trace.probes or mined_probes(trace)))
    server = scripted_server(facts, args.port)
    server.recall = args.recall_chars or None
    print(f"serving {server.url}", flush=True)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # kill PID stops it as ^C does
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    print(
        json.dumps(
            {
                "requests": len(server.bodies),
                "prompt_tokens": server.prompt_tokens,
                "completion_tokens": server.completion_tokens,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()


def fact_trace(rounds: int = 8, *, trace_id: str = "facts") -> Any:
    """A tool-calling trace whose first tool result holds a fact (port 8471) a probe asks
    about at the end, with the bash tool's schema recorded: a strategy keeping only recent
    rounds drops the fact, ``none`` keeps it."""
    from ctxbench.probes.model import Probe
    from ctxbench.trace import Message, ToolCall, ToolSpec, Trace

    messages = [Message("system", "You are a careful agent."), Message("user", "Start the server.")]
    for i in range(rounds):
        call = ToolCall(f"c{i}", "bash", json.dumps({"command": f"step {i}"}))
        messages.append(Message("assistant", f"step {i}", tool_calls=(call,)))
        output = "the server listens on port 8471" if i == 0 else f"ok {i} " + "x" * 400
        messages.append(Message("tool", output, tool_call_id=call.id, name="bash"))
    messages.append(Message("assistant", "All done."))
    probe = Probe("port", "recall", "Which port does the server listen on?", ("8471",))
    schema = {"type": "object", "properties": {"command": {"type": "string"}}}
    return Trace(
        trace_id,
        tuple(messages),
        tools=(ToolSpec("bash", "Run a shell command.", schema),),
        probes=(probe,),
    )
