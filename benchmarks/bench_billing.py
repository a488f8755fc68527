"""Counting what the provider bills: ``--counter auto`` and a cross-validated profile against
the prompt tokens providers recorded, per model, next to chars4 and the framework estimators.

Needs the shared recorded traces (``CTXBENCH_TRACES``; skipped without them). For every trace
set with per-call usage, per model:

- ``auto``: the counter and reasoning rule ``--counter auto`` picks, raw errors;
- ``cv``: a profile on that counter fitted on K-1 folds and scored on the held-back fold
  (whole traces per fold, or blocks of calls when a model has fewer than K traces);
- each estimator's raw errors, and after the per-trace constant where that lowers p90.

Errors are ``|counted - recorded| / recorded`` per call: median and p90. The target
(issue 18): ``cv`` median <= 1% and p90 <= 3%.

The OpenHands SDK completion logs (one JSON per call: the exact request and the raw response)
and the Codex CLI rollout are read by :func:`openhands_completion_run` and
:func:`codex_rollout`, minimal readers kept here until the importers of issue 20 read them.

``python -m benchmarks.bench_billing`` prints the markdown table; ``python -m benchmarks
billing`` the JSON.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from ctxbench.calibration import BASELINES, Accuracy, calibrate, cross_validate
from ctxbench.counting import get_counter
from ctxbench.counting.auto import choose
from ctxbench.counting.reasoning import REASONING_KEYS, with_reasoning
from ctxbench.formats import openai_chat
from ctxbench.formats.importing import open_source
from ctxbench.formats.location import At
from ctxbench.trace import Message, ToolCall, Trace, Usage

TARGET_MEDIAN = 0.01
TARGET_P90 = 0.03
K = 5

#: (set name, path under CTXBENCH_TRACES, reader)
SETS: tuple[tuple[str, str, str], ...] = (
    ("mini-swe-agent", "mini-swe-agent/astropy__astropy-12907.traj.json", "import"),
    (
        "tau2 telecom",
        "tau2-bench/2025-08-10T02-44-06.496849_telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.json",
        "import",
    ),
    (
        "tau2 airline (thinking)",
        "sierra-research+tau2-bench/web/leaderboard/public/submissions/"
        "claude-sonnet-4-5_aide-platform_2025-10-31/trajectories/"
        "claude-sonnet-4-5_airline_default_gpt4.1_1trials.json",
        "import",
    ),
    (
        "Codex CLI rollout",
        "codemie-ai+codemie-code/src/agents/plugins/codex/__tests__/fixtures/"
        "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
        "codex_rollout",
    ),
    (
        "Codex CLI rollout, calls before the first web search",
        "codemie-ai+codemie-code/src/agents/plugins/codex/__tests__/fixtures/"
        "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
        "codex_rollout_before_web_search",
    ),
    ("Claude Code sessions", "marot+spotter/test/fixtures/transcripts", "claude_code"),
    (
        "OpenHands SDK (native tools)",
        "OpenHands+software-agent-sdk/tests/fixtures/llm_data/llm-logs",
        "openhands_completions",
    ),
    (
        "OpenHands SDK (prompted tools)",
        "OpenHands+software-agent-sdk/tests/fixtures/llm_data/nonfncall-llm-logs",
        "openhands_completions",
    ),
)


def openhands_completion_run(directory: Path) -> Trace:
    """One OpenHands SDK ``log_completions`` directory (one JSON per call of one run) as a
    trace: the last request's messages plus its response, each assistant message carrying the
    usage of the call its request prefix was sent in (request k has the messages before it)."""
    files = sorted(directory.glob("*.json"), key=lambda p: json.loads(p.read_text())["timestamp"])
    logs = [json.loads(p.read_text(encoding="utf-8")) for p in files]
    last = logs[-1]
    at = At(str(files[-1]))
    raw = [*last["messages"], last["response"]["choices"][0]["message"]]
    messages = list(openai_chat.messages(raw, at.key("messages")))
    for log in logs:
        position = len(log["messages"])
        usage = openai_chat.usage(log["response"]["usage"], at.key("response.usage"))
        if messages[position].role != "assistant" or usage is None:
            raise ValueError(
                f"{directory}: request of {position} messages is not followed by a reply"
            )
        messages[position] = replace(messages[position], usage=usage)
    tools = tuple(
        openai_chat.tool_spec(t, at.key("tools").index(i))
        for i, t in enumerate(last["kwargs"].get("tools") or last.get("tools") or ())
    )
    model = str(last["response"].get("model") or "")
    return Trace(
        id=directory.name,
        messages=tuple(messages),
        tools=tools,
        meta={"model": model, "imported_from": {"format": "openhands_completions"}},
    )


def _codex_text(content: Any) -> str:
    return "".join(p.get("text", "") for p in content or () if isinstance(p, dict))


def codex_rollout(path: Path, *, before_web_search: bool = False) -> Trace:
    """An OpenAI Codex CLI rollout (``~/.codex/sessions/*.jsonl``) as a trace: the
    ``base_instructions`` as the system message, then the response items in order. The items
    of one model response (reasoning, text, tool calls, up to its ``token_count`` event) make
    one assistant message, with that event's ``last_token_usage`` as its usage (input tokens
    and the reasoning tokens of its encrypted reasoning items). The results of the hosted
    ``web_search`` tool are not in the rollout; ``before_web_search`` stops the trace at the
    first response that searched."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    meta = lines[0]["payload"]
    model = next((ln["payload"].get("model") for ln in lines if ln["type"] == "turn_context"), None)
    messages = [Message("system", meta["base_instructions"]["text"])]
    text, calls, reasoning = "", [], []
    for line in lines[1:]:
        item, kind = line["payload"], line["payload"].get("type")
        if line["type"] == "response_item":
            if kind == "message" and item["role"] in ("user", "developer"):
                role = "user" if item["role"] == "user" else "system"
                messages.append(Message(role, _codex_text(item["content"])))
            elif kind == "message":
                text += _codex_text(item["content"])
            elif kind == "reasoning":
                reasoning.append({"encrypted_content": item.get("encrypted_content")})
            elif kind in ("function_call", "custom_tool_call", "web_search_call"):
                arguments = (
                    item.get("arguments") or item.get("input") or json.dumps(item.get("action"))
                )
                name = item.get("name") or "web_search"
                calls.append(ToolCall(item.get("call_id") or f"ws{len(messages)}", name, arguments))
            elif kind in ("function_call_output", "custom_tool_call_output"):
                messages.append(Message("tool", str(item["output"]), tool_call_id=item["call_id"]))
        elif kind == "token_count" and item.get("info"):
            last = item["info"]["last_token_usage"]
            usage = Usage(
                last["input_tokens"],
                last["output_tokens"],
                last.get("cached_input_tokens"),
                meta={"reasoning_output_tokens": last.get("reasoning_output_tokens", 0)},
            )
            replay = {"codex_reasoning_items": reasoning} if reasoning else {}
            if before_web_search and any(c.name == "web_search" for c in calls):
                break
            messages.append(
                Message("assistant", text, tool_calls=tuple(calls), usage=usage, replay=replay)
            )
            text, calls, reasoning = "", [], []
    return Trace(path.stem, tuple(messages), meta={"model": model or ""})


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or () if isinstance(b, dict))


def claude_code_session(path: Path) -> list[Trace]:
    """A Claude Code session JSONL (one entry per content block; the entries of one API call
    share ``message.id`` and its usage) as traces: one per stretch between compactions
    (``compact_boundary``: the next prompt starts from the summary) and per model that made
    calls in it (the other model's calls stay in the history without usage). The billed
    prompt is ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``; the
    system prompt and tool schemas are not in the file."""
    segments: list[list[tuple[Message, str]]] = [[]]
    calls: dict[str, dict[str, Any]] = {}  # message.id -> its blocks so far and its position
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        kind = entry.get("type")
        if kind == "system" and entry.get("subtype") == "compact_boundary":
            segments.append([])
            calls.clear()
            continue
        if kind not in ("user", "assistant"):
            continue
        message = entry["message"]
        if kind == "assistant":
            call = calls.get(message["id"])
            if call is None:
                call = calls[message["id"]] = {
                    "at": len(segments[-1]),
                    "model": message.get("model", ""),
                    "text": "",
                    "calls": [],
                    "thinking": [],
                    "usage": message.get("usage") or {},
                }
                segments[-1].append((Message("assistant"), ""))
            for block in message.get("content") or ():
                if block.get("type") == "text":
                    call["text"] += block.get("text", "")
                elif block.get("type") == "thinking":
                    call["thinking"].append(
                        {"type": "thinking", "thinking": block.get("thinking", "")}
                    )
                elif block.get("type") == "tool_use":
                    arguments = json.dumps(block.get("input"), ensure_ascii=False)
                    call["calls"].append(ToolCall(block["id"], block["name"], arguments))
            u = call["usage"]
            billed = sum(
                int(u.get(k) or 0)
                for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
            )
            usage = Usage(
                billed, int(u.get("output_tokens") or 0), int(u.get("cache_read_input_tokens") or 0)
            )
            replay = {"thinking_blocks": list(call["thinking"])} if call["thinking"] else {}
            segments[-1][call["at"]] = (
                Message(
                    "assistant",
                    call["text"],
                    tool_calls=tuple(call["calls"]),
                    usage=usage,
                    replay=replay,
                ),
                call["model"],
            )
            continue
        content = message.get("content")
        if isinstance(content, str):
            segments[-1].append((Message("user", content), ""))
            continue
        for block in content or ():
            if block.get("type") == "tool_result":
                text = _block_text(block.get("content"))
                segments[-1].append((Message("tool", text, tool_call_id=block["tool_use_id"]), ""))
            elif block.get("type") == "text":
                segments[-1].append((Message("user", block.get("text", "")), ""))
    traces = []
    for n, segment in enumerate(s for s in segments if s):
        for model in dict.fromkeys(m for _, m in segment if m):
            messages = tuple(
                msg if who in ("", model) else replace(msg, usage=None) for msg, who in segment
            )
            traces.append(Trace(f"{path.stem}#{n}:{model}", messages, meta={"model": model}))
    return traces


def load_set(root: Path, path: str, reader: str) -> list[Trace]:
    if reader == "claude_code":
        return [t for f in sorted((root / path).glob("**/*.jsonl")) for t in claude_code_session(f)]
    if reader == "openhands_completions":
        return [openhands_completion_run(root / path)]
    if reader == "codex_rollout":
        return [codex_rollout(root / path)]
    if reader == "codex_rollout_before_web_search":
        return [codex_rollout(root / path, before_web_search=True)]
    return list(open_source(str(root / path)).traces())


def _has_reasoning(traces: list[Trace]) -> bool:
    return any(k in m.replay for t in traces for m in t.messages for k in REASONING_KEYS)


def _errors(acc: Accuracy) -> dict[str, Any]:
    out: dict[str, Any] = {
        "median": acc.raw.median_abs_rel_error,
        "p90": acc.raw.p90_abs_rel_error,
        "bias": acc.raw.bias,
    }
    if acc.constant_helps:
        out["median_c"] = acc.with_constant.median_abs_rel_error
        out["p90_c"] = acc.with_constant.p90_abs_rel_error
    return out


def measure_model(name: str, model: str, traces: list[Trace]) -> dict[str, Any]:
    choice = choose(model)
    counter = with_reasoning(get_counter(choice.counter), choice.reasoning)
    baselines = {b: get_counter(b) for b in BASELINES}
    result = calibrate(traces, counter, baselines)
    scale = not choice.exact
    k = min(K, result.calls)
    cv = cross_validate(result.samples, k, fit_scale=scale)
    return {
        "set": name,
        "model": model,
        "kind": "reasoning" if _has_reasoning(traces) else "chat",
        "traces": len(result.per_trace),
        "calls": result.calls,
        "counter": choice.counter,
        "reasoning": choice.reasoning,
        "exact_tokenizer": choice.exact,
        "auto": _errors(result.counter),
        "cv": {
            "k": cv.k,
            "folds_by": cv.by,
            "fit_scale": scale,
            "median": cv.errors.median_abs_rel_error,
            "p90": cv.errors.p90_abs_rel_error,
            "bias": cv.errors.bias,
            "meets_target": cv.errors.median_abs_rel_error <= TARGET_MEDIAN
            and cv.errors.p90_abs_rel_error <= TARGET_P90,
        },
        "estimators": {n: _errors(a) for n, a in result.baselines.items()},
    }


def rows(root: Path) -> Iterator[dict[str, Any]]:
    for name, path, reader in SETS:
        if not (root / path).exists():
            continue
        traces = load_set(root, path, reader)
        by_model: dict[str, list[Trace]] = {}
        for trace in traces:
            by_model.setdefault(str(trace.meta.get("model") or ""), []).append(trace)
        for model, group in by_model.items():
            yield measure_model(name, model, group)


def run(quick: bool) -> dict[str, Any]:
    root = os.environ.get("CTXBENCH_TRACES")
    if not root or not Path(root).is_dir():
        return {"skipped": "set CTXBENCH_TRACES to the shared recorded traces"}
    measured = list(rows(Path(root)))
    return {
        "target": {"median": TARGET_MEDIAN, "p90": TARGET_P90},
        "models": measured,
        "all_meet_target": all(m["cv"]["meets_target"] for m in measured),
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.2%}"


def markdown(result: dict[str, Any]) -> str:
    head = (
        "| set | model | kind | traces/calls | auto counter (reasoning) | auto raw med/p90 | "
        "cv profile med/p90 | " + " | ".join(f"{b} med/p90" for b in BASELINES) + " |"
    )
    lines = [head, "|" + "---|" * (7 + len(BASELINES))]
    for m in result["models"]:
        cv = m["cv"]
        est = []
        for b in BASELINES:
            e = m["estimators"][b]
            cell = f"{_pct(e['median'])} / {_pct(e['p90'])}"
            if "median_c" in e:
                cell += f" (+c {_pct(e['median_c'])} / {_pct(e['p90_c'])})"
            est.append(cell)
        lines.append(
            f"| {m['set']} | {m['model']} | {m['kind']} | {m['traces']}/{m['calls']} | "
            f"{m['counter']} ({m['reasoning']}) | {_pct(m['auto']['median'])} / {_pct(m['auto']['p90'])} | "
            f"**{_pct(cv['median'])} / {_pct(cv['p90'])}** (K={cv['k']} by {cv['folds_by']}"
            f"{', scale' if cv['fit_scale'] else ''}) | " + " | ".join(est) + " |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    outcome = run(quick="--quick" in sys.argv)
    if "skipped" in outcome:
        print(outcome["skipped"])
    else:
        print(markdown(outcome))
