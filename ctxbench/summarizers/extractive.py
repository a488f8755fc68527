"""``extractive``: the deterministic, offline summarizer (the default).

It keeps what compaction prompts ask a model to keep, by priority: the original task, file
paths, identifiers, numbers, error lines, decisions, next steps, and the actions taken; and
it lays them out under the section headings the strategy's real prompt requests, within the
request's token budget. It never invents text, so a fact it keeps is verbatim from the trace.
``lossy`` is the same with a seeded drop rate, to model an imperfect LLM.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ctxbench.counting.base import TokenCounter
from ctxbench.summarizers.base import Summarizer, SummaryRequest
from ctxbench.trace import Message

PATH_RE = re.compile(
    r"(?<![\w/.-])(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]+\.\w{1,8}\b|(?<![\w/])[\w-]+\.(?:py|js|ts|go|rs|java|sql|csv|json|yaml|yml|toml|md|txt|log|sh|cfg|ini|html|c|h|cpp)\b"
)
ID_RE = re.compile(
    r"\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+\b|\b[0-9a-f]{7,40}\b"
)
NUMBER_RE = re.compile(
    r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?\s?(?:%|ms|s|MB|GB|KB|kB|tokens|rows|USD|\$|px|items|users|req/s)?(?![\w.])"
)
URL_RE = re.compile(r"https?://[^\s)\]>'\"]+")
ERROR_RE = re.compile(
    r"(error|exception|traceback|failed|failure|fatal|denied|not found|invalid)", re.I
)
DECISION_RE = re.compile(
    r"\b(decid\w*|chose|choose|will use|instead of|because|so that|prefer\w*|opt(?:ed)? for)\b",
    re.I,
)
NEXT_RE = re.compile(r"\b(next|then|todo|to do|remaining|will now|plan to|going to|should)\b", re.I)
COMMAND_RE = re.compile(
    r"(?m)^\s*(?:\$ |>>> )?((?:git|python|pytest|pip|npm|make|ls|cat|grep|sed|find|cd|curl|docker|kubectl|psql|SELECT|UPDATE|INSERT)\b[^\n]{0,200})"
)

#: Which facts a section heading asks for (matched on the lower-cased heading).
SECTION_RULES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("task", "goal", "intent", "request", "overview", "user"), ("task", "constraint")),
    (("constraint", "preference", "rule"), ("constraint",)),
    (("error", "fix", "blocked"), ("error",)),
    (("decision", "discover", "problem solving", "concept"), ("decision",)),
    (("next", "pending", "remaining", "todo", "plan"), ("next",)),
    (("completed", "progress", "action", "steps", "done", "history"), ("action",)),
    (
        ("data", "file", "artifact", "code", "critical", "key", "relevant"),
        ("path", "id", "number", "url", "command"),
    ),
    (("state", "context"), ("path", "id", "number", "url", "command", "action")),
)

PRIORITY: tuple[str, ...] = (
    "task",
    "constraint",
    "path",
    "id",
    "number",
    "url",
    "command",
    "error",
    "decision",
    "next",
    "action",
)


@dataclass(frozen=True)
class Fact:
    kind: str
    text: str


def _sentences(text: str) -> Iterable[str]:
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        yield from (s.strip() for s in re.split(r"(?<=[.!?])\s+", line) if s.strip())


def extract_facts(messages: Iterable[Message]) -> list[Fact]:
    """Facts in first-seen order, deduplicated by (kind, text)."""
    facts: list[Fact] = []
    seen: set[tuple[str, str]] = set()

    def add(kind: str, text: str) -> None:
        text = text.strip()
        if text and (kind, text) not in seen:
            seen.add((kind, text))
            facts.append(Fact(kind, text))

    first_user = True
    for msg in messages:
        text = msg.content
        if msg.role in ("user", "system") and not msg.is_observation:
            if first_user and msg.role == "user":
                add("task", text[:400])
                first_user = False
            for s in _sentences(text):
                if re.search(r"\b(must|never|always|do not|don't|only)\b", s, re.I):
                    add("constraint", s[:300])
        for call in msg.tool_calls:
            add("action", f"{call.name}({call.arguments[:160]})")
        haystack = text + "".join("\n" + c.arguments for c in msg.tool_calls)
        for m in PATH_RE.finditer(haystack):
            add("path", m.group(0))
        for m in URL_RE.finditer(haystack):
            add("url", m.group(0))
        for m in ID_RE.finditer(haystack):
            add("id", m.group(0))
        for m in COMMAND_RE.finditer(haystack):
            add("command", m.group(1))
        for m in NUMBER_RE.finditer(haystack):
            token = m.group(0).strip()
            if len(token.replace(",", "")) >= 3 or not token.isdigit():
                add("number", token)
        for s in _sentences(text):
            if ERROR_RE.search(s):
                add("error", s[:240])
            elif msg.role == "assistant" and DECISION_RE.search(s):
                add("decision", s[:240])
            elif msg.role == "assistant" and NEXT_RE.search(s):
                add("next", s[:240])
    return facts


def _kinds_for(section: str) -> tuple[str, ...]:
    low = section.lower()
    for keywords, kinds in SECTION_RULES:
        if any(k in low for k in keywords):
            return kinds
    return ()


def layout(
    sections: tuple[str, ...], facts: list[Fact], counter: TokenCounter, budget: int | None
) -> str:
    """Fill the requested sections by fact priority while the text stays within ``budget``."""
    headings = sections or ("Summary",)
    assigned: dict[str, list[str]] = {h: [] for h in headings}
    home: dict[str, str] = {}
    for keywords, kinds in SECTION_RULES:  # earlier rules win a fact kind
        for h in headings:
            if _kinds_for(h) and any(k in h.lower() for k in keywords):
                for kind in kinds:
                    home.setdefault(kind, h)
    fallback = next((h for h in headings if not _kinds_for(h)), headings[-1])
    used = sum(counter.count(f"## {h}\n") for h in headings)
    ranked = sorted(
        facts, key=lambda f: PRIORITY.index(f.kind) if f.kind in PRIORITY else len(PRIORITY)
    )
    for fact in ranked:
        line = f"- {fact.text}"
        cost = counter.count(line + "\n")
        if budget is not None and used + cost > budget:
            continue
        assigned[home.get(fact.kind, fallback)].append(line)
        used += cost
    parts = []
    for h in headings:
        body = "\n".join(assigned[h]) if assigned[h] else "- None"
        parts.append(f"## {h}\n{body}")
    return "\n\n".join(parts)


class ExtractiveSummarizer(Summarizer):
    """Deterministic offline summarizer; see the module docstring."""

    name = "extractive"

    def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
        facts = extract_facts(request.messages)
        if request.previous_summary:
            facts = [
                Fact("task", line.lstrip("- ").strip())
                for line in request.previous_summary.splitlines()
                if line.startswith("- ")
            ] + facts
        return layout(request.sections, facts, counter, request.max_tokens)


class LossySummarizer(ExtractiveSummarizer):
    """The extractive summary with each fact dropped with probability ``drop_rate`` (seeded)."""

    name = "lossy"

    def __init__(self, drop_rate: float = 0.3, seed: int = 0) -> None:
        if not 0.0 <= drop_rate <= 1.0:
            from ctxbench.errors import ConfigError

            raise ConfigError(f"drop_rate must be within [0, 1], not {drop_rate}", key="drop_rate")
        self.drop_rate = drop_rate
        self.seed = seed

    def params(self) -> dict[str, object]:
        return {"drop_rate": self.drop_rate, "seed": self.seed}

    def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
        rng = random.Random(f"{self.seed}:{request.key}")
        facts = [f for f in extract_facts(request.messages) if rng.random() >= self.drop_rate]
        return layout(request.sections, facts, counter, request.max_tokens)
