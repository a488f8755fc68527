"""Counting cost: each counter's load time and throughput, chars/4 drift per content class, huge
strings, and the cost of the message cache relative to the raw tokenizer.

Corpus (deterministic, no network): prose from ``pydoc_data.topics``, code from stdlib sources,
and seeded synthetic JSON records, log lines, tables and Chinese text, cut into ~4,000-character
documents at line boundaries. Figures, all measured side by side in one run:

- ``load_seconds``: building the counter from its vendored file (hash check, decompression,
  parsing).
- ``mb_per_s``, ``tokens_per_s``: ``count()`` over the corpus (best of the repetitions).
- ``exact_vs_chars4_ratio``: the counter's tokens divided by ``len(text) // 4``, overall and per
  class; above 1 means chars/4 undercounts.
- ``huge_string_seconds``: ``count()`` of one string of ``huge_mb`` MB of mixed text, and of a
  run of spaces of that size (a pathological input for tiktoken's regex).
- ``cache_overhead_ratio``: ``count_message`` with a cold cache (fresh messages: fingerprint,
  framing, cache insert) divided by the raw tokenizer on the same texts;
  ``cache_hit_ratio``: a warm ``count_message`` divided by the raw tokenizer, and
  ``cache_hit_us``: microseconds per hit.
- ``template_vs_incremental``: for chat-template counters, the exact ``count_prompt`` of a
  synthetic tool-calling conversation minus ``prompt_overhead + sum(count_message)``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from ctxbench.counting import COUNTERS, counter_kind
from ctxbench.counting.base import TokenCounter
from ctxbench.counting.chat_template import ChatTemplateCounter
from ctxbench.counting.hf_counter import HFCounter
from ctxbench.counting.tekken import TekkenCounter
from ctxbench.counting.tiktoken_counter import TiktokenCounter
from ctxbench.trace import Message, ToolCall, ToolSpec

EXACT = [n for n in COUNTERS.names() if counter_kind(n) == "exact"]
DOC_CHARS = 4_000
_CODE_MODULES = [
    "argparse",
    "json.decoder",
    "email.parser",
    "collections",
    "dataclasses",
    "textwrap",
    "logging",
]
_HANZI = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可也你"
    "能而子那得于着下自之年过发后作里如家多方心与文样法学都然没日都想情理又已从"
)
_ZH_PUNCT = "，。、；：？！"


def _documents(text: str) -> list[str]:
    """``text`` cut at line ends into documents of about ``DOC_CHARS`` characters."""
    docs, current, size = [], [], 0
    for line in text.splitlines(keepends=True):
        current.append(line)
        size += len(line)
        if size >= DOC_CHARS:
            docs.append("".join(current))
            current, size = [], 0
    if current:
        docs.append("".join(current))
    return docs


def corpus(chars_per_class: int, seed: int = 1) -> dict[str, list[str]]:
    """Deterministic documents per content class."""
    import pydoc_data.topics

    rng = random.Random(seed)
    prose = "\n\n".join(pydoc_data.topics.topics[k] for k in sorted(pydoc_data.topics.topics))
    code = "\n\n".join(inspect.getsource(importlib.import_module(m)) for m in _CODE_MODULES)
    words = prose.split()[:5000]
    records = [
        json.dumps(
            {"id": i, "user": rng.choice(words), "score": round(rng.random(), 4), "tags": rng.sample(words, 3),
             "active": rng.random() < 0.5, "ts": f"2024-05-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00Z"},
            indent=2 if i % 2 else None,
        )
        for i in range(chars_per_class // 60)
    ]  # fmt: skip
    levels = ["INFO", "INFO", "INFO", "WARN", "ERROR", "DEBUG"]
    logs = [
        f"2024-05-20T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}.{rng.randint(0, 999):03d}Z "
        f"{rng.choice(levels):5} [worker-{rng.randint(1, 8)}] req={rng.getrandbits(32):08x} "
        f"path=/api/v1/{rng.choice(words)} status={rng.choice([200, 200, 201, 404, 500])} ms={rng.randint(1, 2000)}"
        for i in range(chars_per_class // 90)
    ]
    tables = []
    for t in range(chars_per_class // 800):
        tables.append("id,name,qty,price,updated")
        tables += [
            f"{t * 20 + r},{rng.choice(words)},{rng.randint(1, 99)},{rng.random() * 100:.2f},2024-05-{1 + r % 28:02d}"
            for r in range(20)
        ]
        tables.append(" id | name | qty\n----+------+-----")
        tables += [
            f" {r:3d} | {rng.choice(words)[:12]:12} | {rng.randint(1, 999):4d}" for r in range(10)
        ]
    zh = [
        "".join(rng.choice(_HANZI) for _ in range(rng.randint(8, 30))) + rng.choice(_ZH_PUNCT)
        for _ in range(chars_per_class // 20)
    ]
    sources = {
        "prose": prose,
        "code": code,
        "json": "\n".join(records),
        "logs": "\n".join(logs),
        "tables": "\n".join(tables),
        "cjk": "\n".join(zh),
    }
    out = {}
    for cls, text in sources.items():
        while len(text) < chars_per_class:
            text += "\n" + text
        out[cls] = _documents(text[:chars_per_class])
    return out


def _best(fn: Callable[[], Any], reps: int) -> tuple[float, Any]:
    best, value = float("inf"), None
    for _ in range(reps):
        started = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - started)
    return best, value


def _raw_count(counter: TokenCounter) -> Callable[[str], int]:
    """The bare tokenizer call under a counter (no chunking, framing or cache)."""
    if isinstance(counter, (TiktokenCounter, TekkenCounter)):
        encode = counter.encoding.encode_ordinary
        return lambda text: len(encode(text))
    if isinstance(counter, HFCounter):
        tokenizer = counter.tokenizer
        return lambda text: len(tokenizer.encode(text, add_special_tokens=False))
    raise TypeError(f"no raw tokenizer for {counter.name}")


def _messages(docs: Sequence[str]) -> list[Message]:
    roles = ["user", "assistant", "tool"]
    return [
        Message(roles[i % 3], doc, tool_call_id=f"c{i}" if i % 3 == 2 else None)
        for i, doc in enumerate(docs)
    ]


def _conversation(docs: Sequence[str], rounds: int) -> tuple[list[Message], list[ToolSpec]]:
    tool = ToolSpec(
        "bash",
        "Run a shell command.",
        {"type": "object", "properties": {"cmd": {"type": "string"}}},
    )
    msgs = [
        Message("system", "You are a careful coding agent."),
        Message("user", "Fix the failing build."),
    ]
    for i in range(rounds):
        calls = tuple(
            ToolCall(f"c{i}_{j}", "bash", json.dumps({"cmd": f"step {i}.{j}"}))
            for j in range(1 + i % 2)
        )
        msgs.append(Message("assistant", "" if i % 3 else f"Step {i}: checking.", tool_calls=calls))
        msgs += [
            Message("tool", docs[(i + j) % len(docs)], tool_call_id=c.id, name="bash")
            for j, c in enumerate(calls)
        ]
    msgs.append(Message("assistant", "The build passes now."))
    return msgs, [tool]


def _cache_figures(counter: TokenCounter, messages: list[Message], reps: int) -> dict[str, float]:
    """Raw tokenizer and cold cache alternate in each repetition, so load changes hit both."""
    raw = _raw_count(counter)
    texts = [m.content for m in messages]
    raw_times, cold_times = [], []
    for _ in range(reps):
        started = time.perf_counter()
        for text in texts:
            raw(text)
        raw_times.append(time.perf_counter() - started)
        fresh = [replace(m) for m in messages]  # new objects: fingerprints not yet computed
        counter.clear_cache()
        started = time.perf_counter()
        for m in fresh:
            counter.count_message(m)
        cold_times.append(time.perf_counter() - started)
    warm_s, _ = _best(lambda: sum(counter.count_message(m) for m in fresh), reps)
    raw_s, cold_s = min(raw_times), min(cold_times)
    return {
        "raw_seconds": round(raw_s, 4),
        "cold_seconds": round(cold_s, 4),
        "warm_seconds": round(warm_s, 5),
        "cache_overhead_ratio": round(cold_s / raw_s, 3),
        "cache_hit_ratio": round(warm_s / raw_s, 4),
        "cache_hit_us": round(warm_s / len(messages) * 1e6, 2),
    }


def _throughput(counter: TokenCounter, docs: dict[str, list[str]], reps: int) -> dict[str, Any]:
    def count_all() -> dict[str, int]:
        return {cls: sum(counter.count(d) for d in ds) for cls, ds in docs.items()}

    seconds, per_class = _best(count_all, reps)
    tokens = sum(per_class.values())
    chars = sum(len(d) for ds in docs.values() for d in ds)
    mb = sum(len(d.encode("utf-8")) for ds in docs.values() for d in ds) / 1e6
    chars4 = {cls: sum(len(d) // 4 for d in ds) for cls, ds in docs.items()}
    return {
        "kind": counter.kind,
        "tokens": tokens,
        "mb_per_s": round(mb / seconds, 2),
        "tokens_per_s": round(tokens / seconds),
        "chars_per_token": round(chars / max(tokens, 1), 3),
        "exact_vs_chars4_ratio": round(tokens / sum(chars4.values()), 3),
        "exact_vs_chars4_ratio_by_class": {
            cls: round(n / max(chars4[cls], 1), 3) for cls, n in per_class.items()
        },
    }


def _template_figures(
    counter: ChatTemplateCounter, messages: list[Message], tools: list[ToolSpec]
) -> dict[str, Any]:
    started = time.perf_counter()
    exact = counter.count_prompt(messages, tools)
    seconds = time.perf_counter() - started
    incremental = counter.prompt_overhead(tools) + sum(counter.count_message(m) for m in messages)
    return {
        "messages": len(messages),
        "exact": exact,
        "incremental": incremental,
        "difference": exact - incremental,
        "count_prompt_seconds": round(seconds, 4),
    }


def run(quick: bool) -> dict[str, Any]:
    chars_per_class = 60_000 if quick else 500_000
    reps = 1 if quick else 3
    huge_mb = 1 if quick else 5
    docs = corpus(chars_per_class)
    all_docs = [d for cls_docs in docs.values() for d in cls_docs]
    total_chars = sum(len(d) for d in all_docs)
    total_mb = sum(len(d.encode("utf-8")) for d in all_docs) / 1e6
    messages = _messages(all_docs[: 120 if quick else 600])
    huge = "\n".join(all_docs)
    huge = (huge * (huge_mb * 1_000_000 // len(huge) + 1))[: huge_mb * 1_000_000]
    conv_msgs, conv_tools = _conversation(all_docs, 12 if quick else 60)

    out: dict[str, Any] = {
        "corpus_chars": total_chars,
        "corpus_mb": round(total_mb, 3),
        "documents": len(all_docs),
        "huge_mb": huge_mb,
        "counters": {},
    }
    spaces = " " * (huge_mb * 1_000_000) + "x"
    for spec in EXACT + [n for n in COUNTERS.names() if counter_kind(n) == "estimator"]:
        load_s, counter = _best(COUNTERS.load(spec), 1)
        figures = _throughput(counter, docs, reps)
        figures["load_seconds"] = round(load_s, 3)
        if counter.kind == "exact":
            figures["huge_string_seconds"] = round(_best(partial(counter.count, huge), 1)[0], 3)
            figures["huge_spaces_seconds"] = round(_best(partial(counter.count, spaces), 1)[0], 3)
            figures.update(_cache_figures(counter, messages, reps))
        if isinstance(counter, ChatTemplateCounter):
            figures["template_vs_incremental"] = _template_figures(counter, conv_msgs, conv_tools)
        out["counters"][spec] = figures
    return out
