"""``extractive``: the deterministic, offline verbatim upper bound (the default was this until
``model_like``, which writes like the recorded summaries, replaced it).

It keeps what compaction prompts ask a model to keep, by priority: the original task and its
constraints, file paths, identifiers, numbers, URLs, commands, error lines, decisions, next
steps and the actions taken; and it lays them out under the section headings of the
strategy's real prompt (AgentScope's five ``SummarySchema`` fields, Hermes' thirteen headings,
DB-GPT's six), within the request's token budget. A previous summary (the request's, or one
found among the messages) is carried forward section by section before new facts of the same
kind, as the iterative prompts ask ("PRESERVE all existing information"). It never invents
text, so a fact it keeps is verbatim from the trace. ``lossy`` is the same with a seeded drop
rate, to model an imperfect LLM.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ctxbench.counting.base import TokenCounter
from ctxbench.summarizers.base import Summarizer, SummaryRequest
from ctxbench.trace import Message

# The patterns stay linear on pathological text (a 50 MB log, a run of "a-a-a-..."): no
# match may start inside a run it would rescan, and lookaheads scan a bounded stretch.
PATH_RE = re.compile(
    r"(?<![\w/.-])(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]+\.\w{1,8}\b|(?<![\w/-])[\w-]+\.(?:py|js|ts|go|rs|java|sql|csv|json|yaml|yml|toml|md|txt|log|sh|cfg|ini|html|c|h|cpp)\b"
)
ID_RE = re.compile(
    r"\b(?=[A-Za-z0-9_-]{0,80}\d)(?=[A-Za-z0-9_-]{0,80}[A-Za-z])[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+\b|\b[0-9a-f]{7,40}\b"
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
    r"(?m)^[ \t]*(?:\$ |>>> )?((?:git|python|pytest|pip|npm|make|ls|cat|grep|sed|find|cd|curl|docker|kubectl|psql|SELECT|UPDATE|INSERT)\b[^\n]{0,200})"
)
CONSTRAINT_RE = re.compile(r"\b(must|never|always|do not|don't|only)\b", re.I)

#: Fact kinds in the order they claim the budget.
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

#: Where each fact kind goes: the first keyword found in a requested heading wins.
KIND_HOMES: dict[str, tuple[str, ...]] = {
    "task": (
        "task overview",
        "original task",
        "goal",
        "task snapshot",
        "task",
        "request",
        "intent",
        "overview",
    ),
    "constraint": (
        "constraint",
        "preference",
        "context to preserve",
        "rule",
        "task overview",
        "original task",
        "goal",
        "task",
    ),
    "path": (
        "relevant files",
        "files",
        "key data",
        "artifact",
        "current state",
        "active state",
        "critical context",
        "data",
        "state",
    ),
    "id": ("critical context", "key data", "data", "current state", "active state", "state"),
    "number": ("critical context", "key data", "data", "current state", "active state", "state"),
    "url": ("critical context", "key data", "relevant files", "data", "current state", "state"),
    "command": ("completed", "current state", "active state", "key data", "action"),
    "error": ("error", "blocked", "discover", "problem", "issue", "critical context"),
    "decision": ("decision", "discover", "current state", "key data", "context"),
    "next": ("next", "remaining", "pending", "in-progress", "in progress", "todo", "plan"),
    "action": ("completed", "progress", "current state", "active state", "action", "history"),
}

#: How messages that are themselves summaries begin (their lines are carried, not re-mined).
SUMMARY_MARKERS: tuple[str, ...] = (
    "[Context Summary of ",
    "<system-info>Here is a summary of your previous work",
    "[CONTEXT COMPACTION",
    "[PRIOR CONTEXT",
    "This session is being continued from a previous conversation",
)

_HEADING_RE = re.compile(r"^\s*#{1,6}\s*(.+?)\s*$")
_ITEM_RE = re.compile(r"^\s*(?:(?:[-*]|\d+[.)])\s+)+(.+?)\s*$")
#: list markers at a line's start, however many (a carried ``- - - item`` is ``item``)
_MARKERS_RE = re.compile(r"^(?:\s*(?:[-*]|\d+[.)])\s+)+")
#: a numbered file listing's gutter (``   100→``, ``  42\t``): line numbers, not facts
_GUTTER_RE = re.compile(r"(?m)^[ \t]*\d+(?:→|\t)")
_SYSTEM_TAG_RE = re.compile(r"</?system-(?:info|reminder)>")


@dataclass(frozen=True)
class Fact:
    """One verbatim fact; ``section`` pins a fact carried from a previous summary."""

    kind: str
    text: str
    section: str | None = None


def _sentences(text: str) -> Iterable[str]:
    for line in text.splitlines():
        line = _MARKERS_RE.sub("", line).strip()
        if not line:
            continue
        yield from (s.strip() for s in re.split(r"(?<=[.!?])\s+", line) if s.strip())


def is_summary_text(text: str) -> bool:
    """True for a message that is an earlier compaction summary."""
    stripped = text.lstrip()
    return any(stripped.startswith(marker) for marker in SUMMARY_MARKERS)


def extract_facts(messages: Iterable[Message]) -> list[Fact]:
    """Facts in first-seen order, deduplicated by (kind, text). Summary messages are skipped
    (see :func:`carried_facts`)."""
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
        if is_summary_text(text):
            continue
        if msg.role in ("user", "system") and not msg.is_observation:
            if first_user and msg.role == "user":
                add("task", text[:400])
                first_user = False
            for s in _sentences(text):
                if CONSTRAINT_RE.search(s):
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
        for m in NUMBER_RE.finditer(_GUTTER_RE.sub("", haystack)):
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


def _norm(heading: str) -> str:
    """A heading compared loosely: no markup, numbering or case."""
    return re.sub(r"^[#\s\d.)]+", "", heading).strip().rstrip(":").lower()


def homes(sections: Sequence[str]) -> dict[str, str]:
    """The heading each fact kind goes under (a kind without a matching heading is absent)."""
    out: dict[str, str] = {}
    for kind, keywords in KIND_HOMES.items():
        for keyword in keywords:
            match = next((h for h in sections if keyword in h.lower()), None)
            if match is not None:
                out[kind] = match
                break
    return out


def carried_facts(text: str, sections: Sequence[str]) -> list[Fact]:
    """The items of an earlier summary, pinned to the requested heading they were under.

    Items under a heading the request does not have (or before any heading) keep their place
    by the kind whose home is the first requested heading."""
    by_norm = {_norm(h): h for h in sections}
    kind_of = {heading: kind for kind, heading in reversed(homes(sections).items())}
    current: str | None = None
    out: list[Fact] = []
    for line in text.splitlines():
        heading = _HEADING_RE.match(line)
        if heading:
            current = by_norm.get(_norm(heading.group(1)))
            continue
        if line.lstrip().startswith("<system-reminder>"):
            continue
        item = _ITEM_RE.match(line)
        body = _SYSTEM_TAG_RE.sub("", item.group(1) if item else line).strip()
        if not body or body.lower().rstrip(".") == "none" or is_summary_text(body):
            continue
        if item is None and current is None:
            continue
        section = current or (sections[0] if sections else None)
        kind = kind_of.get(section, "task") if section is not None else "task"
        out.append(Fact(kind, body, section))
    return out


def request_facts(request: SummaryRequest) -> list[Fact]:
    """Carried facts (the request's previous summary, then summary messages) and new facts."""
    sections = request.sections or ("Summary",)
    carried: list[Fact] = []
    if request.previous_summary:
        carried += carried_facts(request.previous_summary, sections)
    for msg in request.messages:
        if is_summary_text(msg.content):
            carried += carried_facts(msg.content, sections)
    return carried + extract_facts(request.messages)


def _render(headings: Sequence[str], assigned: dict[str, list[str]]) -> str:
    parts = []
    for h in headings:
        body = "\n".join(assigned[h]) if assigned[h] else "- None"
        parts.append(f"## {h}\n{body}")
    return "\n\n".join(parts)


def layout(
    sections: tuple[str, ...], facts: list[Fact], counter: TokenCounter, budget: int | None
) -> str:
    """Fill the requested sections by fact priority while the text stays within ``budget``.

    Within a kind, carried facts come first, then new ones in first-seen order; a text kept once
    is not repeated under another kind. Lines are priced one by one, then the lowest-priority
    lines go until the whole text, counted once, fits (tokenizers do not add up per line)."""
    headings = sections or ("Summary",)
    home = homes(headings)
    unmatched = [h for h in headings if h not in home.values()]
    fallback = unmatched[0] if unmatched else headings[-1]
    assigned: dict[str, list[str]] = {h: [] for h in headings}
    used = counter.count(_render(headings, assigned))
    rank = {kind: i for i, kind in enumerate(PRIORITY)}
    ordered = sorted(
        enumerate(facts),
        key=lambda p: (rank.get(p[1].kind, len(PRIORITY)), p[1].section is None, p[0]),
    )
    kept: list[tuple[str, str]] = []
    texts: set[str] = set()
    for _, fact in ordered:
        if fact.text in texts:
            continue
        line = f"- {fact.text}"
        cost = counter.count(line + "\n")
        if budget is not None and used + cost > budget:
            continue
        section = fact.section if fact.section in assigned else home.get(fact.kind, fallback)
        assigned[section].append(line)
        kept.append((section, line))
        texts.add(fact.text)
        used += cost
    text = _render(headings, assigned)
    while budget is not None and kept and counter.count(text) > budget:
        section, line = kept.pop()
        assigned[section].pop(len(assigned[section]) - 1 - assigned[section][::-1].index(line))
        text = _render(headings, assigned)
    return text


class ExtractiveSummarizer(Summarizer):
    """Deterministic offline summarizer; see the module docstring."""

    name = "extractive"

    def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
        return layout(request.sections, self.facts(request), counter, request.max_tokens)

    def facts(self, request: SummaryRequest) -> list[Fact]:
        """The facts this summarizer may keep for ``request``."""
        return request_facts(request)


class LossySummarizer(ExtractiveSummarizer):
    """The extractive summary with each fact dropped with probability ``drop_rate``, seeded by
    ``seed`` and the request key (the same request always loses the same facts)."""

    name = "lossy"

    def __init__(self, drop_rate: float = 0.3, seed: int = 0) -> None:
        if not 0.0 <= drop_rate <= 1.0:
            from ctxbench.errors import ConfigError

            raise ConfigError(f"drop_rate must be within [0, 1], not {drop_rate}", key="drop_rate")
        self.drop_rate = drop_rate
        self.seed = seed

    def params(self) -> dict[str, object]:
        return {"drop_rate": self.drop_rate, "seed": self.seed}

    def facts(self, request: SummaryRequest) -> list[Fact]:
        rng = random.Random(f"{self.seed}:{request.key}")
        return [f for f in request_facts(request) if rng.random() >= self.drop_rate]
