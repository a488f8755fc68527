"""``model_like`` (the default summarizer): an offline stand-in that writes a summary the way
real models do.

Measured against the summaries Claude Code 2.1.39 (Opus 4.6) wrote at the recorded compactions
of the shared sessions (``ctxbench summaries``), two things set a model's summary apart from
the verbatim ``extractive`` one, and this summarizer follows both:

- **Length.** A model writes about as much whatever the budget: 3.5k-4.2k tokens on 70k-110k
  token histories, where ``claude_code`` allows 20,000. The length comes from
  :data:`CLAUDE_CODE_LENGTH`, fitted on the recorded summaries (see its data there; the only
  framework with recorded summaries to fit, so every strategy's requests use it); the request's ``max_tokens`` stays a cap, never a target, and a summary is at
  most a quarter of the history it replaces.
- **What it keeps.** Real summaries keep every user message (quoted), the request and its
  constraints, the files the agent edited or created (as the agent refers to them:
  repo-relative), task ids, the errors it ran into and what it did next, its decisions, the
  current work and the next step; they drop URLs, ids seen once, tool arguments and exact
  command lines. The selection here is by those kinds, in that order, not by the token classes
  the probe miner asks about (``extractive``'s rule, which keeps what probes ask by
  construction).

It never invents text: every item is words of the trace (trimmed), laid out under the
strategy's section headings. A previous summary's items are carried forward once, without
their list markers (no ``- - - -`` nesting). Deterministic: same request, same text.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ctxbench.counting.base import TokenCounter
from ctxbench.summarizers.base import Summarizer, SummaryRequest
from ctxbench.summarizers.extractive import homes, is_summary_text
from ctxbench.trace import Message


@dataclass(frozen=True)
class LengthModel:
    """Summary tokens a framework's model writes: ``tokens`` (the median of the recorded
    summaries, which do not grow with the history: 4,156 tokens on the smallest history, 3,457
    on the largest), and at most ``max_share`` of the history (an assumption, not a fit: no
    recorded compaction summarised a history under 69k tokens)."""

    tokens: int
    #: what the fit rests on
    source: str
    max_share: float = 0.25

    def target(self, history_tokens: int) -> int:
        return max(1, min(self.tokens, round(history_tokens * self.max_share)))


def fit_length(samples: Sequence[tuple[int, int]], source: str) -> LengthModel:
    """The length model of ``(history tokens, summary tokens)`` samples: their median summary
    length."""
    lengths = sorted(s for _, s in samples)
    n = len(lengths)
    median = lengths[n // 2] if n % 2 else (lengths[n // 2 - 1] + lengths[n // 2]) / 2
    return LengthModel(round(median), source)


#: Fitted on the 3 recorded compactions of the shared Claude Code 2.1.39 sessions (marot/spotter
#: test fixtures, commit 8cc42b0; Opus 4.6), counted with tiktoken o200k_base by
#: ``ctxbench summaries`` (history = the request's prompt; summary = the recorded text):
#: 258c7280 call 102 auto: 109,877 -> 3,457; ae4a77f8 call 138 manual: 69,868 -> 4,156;
#: fa812bfe call 126 auto: 104,288 -> 3,579. ``tests/summarizers/test_model_like.py`` refits
#: it from the traces when they are present. Frameworks without recorded summaries use it too.
CLAUDE_CODE_LENGTH = LengthModel(
    3_579, "3 recorded Claude Code 2.1.39 summaries (marot/spotter 8cc42b0)"
)

#: Tools whose ``file_path``/``path`` argument is a file the agent wrote.
EDIT_TOOLS = frozenset(
    {"Edit", "Write", "MultiEdit", "NotebookEdit", "str_replace_editor", "edit", "write"}
)
READ_TOOLS = frozenset({"Read", "view", "read_file", "cat"})
PATH_KEYS = ("file_path", "path", "notebook_path", "filename")
ROOT_MARKERS = (
    "mix.exs",
    "package.json",
    "pyproject.toml",
    "setup.py",
    "Cargo.toml",
    "go.mod",
    "Makefile",
    "README.md",
    ".git",
)

#: an issue-tracker or task id: ``spotter-a0y.1``, ``PROJ-123``, ``#42``
TASK_ID_RE = re.compile(
    r"(?<![\w/.#-])(?:[A-Za-z][A-Za-z0-9]*-[A-Za-z0-9]+(?:\.\d+)+|[A-Z][A-Z0-9]+-\d+|#\d+)(?![\w/])"
)
ERROR_RE = re.compile(r"\b(error|exception|traceback|failed|failure|fatal)\b", re.I)
DECISION_RE = re.compile(
    r"\b(decid\w*|chose|instead of|because|so that|the fix is|the issue is|root cause)\b", re.I
)
NEXT_RE = re.compile(r"\b(next|now I|let me|I'll|I will|remaining|still need)\b", re.I)
CONSTRAINT_RE = re.compile(r"\b(must|never|always|do not|don't|only|make sure)\b", re.I)
CONTINUED = "This session is being continued"
#: lines of the code an edit wrote that a file's item quotes
CODE_LINES = 12
#: an error is kept as its first characters (models paraphrase the message, not quote it)
ERROR_CHARS = 60
_BULLETS = re.compile(r"^\s*(?:(?:[-*+•]|\d+[.)])\s+)+")
_GUTTER = re.compile(r"^\s*\d+(?:→|\t)")
_TAG = re.compile(r"<[^>\n]{1,80}>")
_HEADING = re.compile(r"^\s*(?:#{1,6}\s*)?(\d+\.\s+[^:\n]+):?\s*$")


def one_line(text: str, limit: int) -> str:
    """``text`` on one line, whitespace collapsed, cut at a word before ``limit`` characters;
    lines of a numbered file listing (``  100→...``) are left out: a model does not copy them."""
    lines = [ln for ln in text.splitlines() if not _GUTTER.match(ln)]
    flat = " ".join(_TAG.sub(" ", "\n".join(lines)).split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0]
    return cut + " …"


#: a sentence's end: its mark (kept with it) and the spaces after it
_SENTENCE_END = re.compile(r"([.!?])\s+")


def sentences(text: str) -> Iterable[str]:
    """The sentences of ``text`` longer than 20 characters, split after ``.``, ``!`` or ``?``
    and the spaces that follow (``re.split(r"(?<=[.!?])\\s+", line)``, without the lookbehind
    tried at every position: the mark is matched and put back)."""
    for line in text.splitlines():
        if _GUTTER.match(line):
            continue
        parts = _SENTENCE_END.split(line.strip())
        for i in range(0, len(parts) - 1, 2):
            if len(parts[i]) + 1 > 20:
                yield parts[i] + parts[i + 1]
        if len(parts[-1]) > 20:
            yield parts[-1]


def find_task_ids(text: str) -> list[str]:
    """``TASK_ID_RE.findall(text)``, searched only in the words that hold ``-`` or ``#``
    (every id holds one): an id holds no whitespace, and the pattern reads a whitespace beside
    a match as it reads the text's ends, so the words joined by spaces hold the same ids in
    the same order, without the lookbehind tried at every position of a long tool result."""
    if "-" not in text and "#" not in text:
        return []
    return TASK_ID_RE.findall(" ".join([w for w in text.split() if "-" in w or "#" in w]))


def _arguments(message: Message) -> list[tuple[str, dict[str, object]]]:
    out = []
    for call in message.tool_calls:
        try:
            args = json.loads(call.arguments)
        except ValueError:
            args = {}
        out.append((call.name, args if isinstance(args, dict) else {}))
    return out


def _path_of(args: Mapping[str, object]) -> str | None:
    for key in PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value and "\n" not in value:
            return value
    return None


def repo_root(paths: Sequence[str], texts: Iterable[str]) -> str | None:
    """The project directory the agent works in: the directory of a root marker
    (``mix.exs``, ``package.json``, ``.git``...) that holds most of ``paths``, else their
    common directory."""
    absolute = [p for p in paths if p.startswith("/")]
    if not absolute:
        return None
    roots: dict[str, int] = {}
    marker = re.compile(
        r"(/[\w.@+-]+(?:/[\w.@+-]+)*)/(?:" + "|".join(map(re.escape, ROOT_MARKERS)) + r")\b"
    )
    for text in texts:
        for m in marker.finditer(text):
            root = m.group(1)
            roots[root] = sum(p.startswith(root + "/") for p in absolute)
    if roots:
        best = max(sorted(roots), key=lambda r: (roots[r], -len(r)))
        if roots[best]:
            return best
    common = posixpath.commonpath(absolute)
    return common if common.count("/") > 2 else None


def relative(path: str, root: str | None) -> str:
    if root and path.startswith(root + "/"):
        return path[len(root) + 1 :]
    return path


@dataclass(frozen=True)
class Item:
    kind: str
    text: str


#: Kinds in the order they claim the length, and the section each goes to (by keyword).
KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("request", ("request", "intent", "task overview", "goal", "task")),
    ("user", ("user message", "user", "request", "intent")),
    ("constraint", ("constraint", "preference", "request", "intent", "goal")),
    ("task_id", ("pending", "task", "remaining", "progress")),
    ("file", ("files", "relevant files", "artifact", "code section", "state")),
    ("error", ("error", "fix", "blocked", "problem", "issue")),
    ("current", ("current work", "current state", "active state", "progress", "state")),
    ("next", ("next", "remaining", "pending", "plan")),
    ("code", ("files", "relevant files", "code section", "artifact", "state")),
    ("decision", ("problem solving", "decision", "discover", "context")),
    ("progress", ("problem solving", "progress", "completed", "history", "action")),
    ("read", ("files", "relevant files", "code section", "state")),
    ("concept", ("concept", "technical", "context")),
)


def carried(text: str) -> list[Item]:
    """A previous summary's items, each once and without its list markers."""
    out = []
    for line in text.splitlines():
        if _HEADING.match(line) or not line.strip():
            continue
        body = _BULLETS.sub("", line).strip()
        if body and not is_summary_text(body) and body.lower().rstrip(".") != "none":
            out.append(Item("carried", one_line(body, 300)))
    return out


def items(messages: Sequence[Message]) -> list[Item]:
    """What a model keeps of ``messages``, by kind (see the module docstring)."""
    out: list[Item] = []
    edited: dict[str, int] = {}
    read: list[str] = []
    commands: list[str] = []
    task_ids: list[str] = []
    code: dict[str, str] = {}
    users = [m for m in messages if _is_user(m)]
    for m in messages:
        if m.role == "user" and _is_summary(m.content):
            out += carried(m.content)
    for m in messages:
        for name, args in _arguments(m):
            path = _path_of(args)
            if path and name in EDIT_TOOLS:
                edited[path] = edited.get(path, 0) + 1
                written = args.get("new_string", args.get("content"))
                if isinstance(written, str) and written.strip():
                    code[path] = written
            elif path and name in READ_TOOLS and path not in read:
                read.append(path)
            command = args.get("command")
            if isinstance(command, str) and name in ("Bash", "bash", "shell", "exec_command"):
                words = command.split()[:2]
                head = " ".join(w for w in words if re.fullmatch(r"[\w.-]+", w))
                if head and head not in commands:
                    commands.append(head)
    texts = [m.content for m in messages] + [c.arguments for m in messages for c in m.tool_calls]
    root = repo_root([*edited, *read], texts)
    for m in users:
        for tid in find_task_ids(m.content):
            if tid not in task_ids:
                task_ids.append(tid)
    for m in messages:
        if m.role == "assistant":
            for c in m.tool_calls:
                for tid in find_task_ids(c.arguments):
                    if tid not in task_ids:
                        task_ids.append(tid)
    listed: dict[str, int] = {}  # ids in tool results (a task list), by how many results
    for m in messages:
        if m.role == "tool" or m.is_observation:
            for tid in set(find_task_ids(m.content)):
                listed[tid] = listed.get(tid, 0) + 1
    task_ids += [tid for tid, n in listed.items() if n >= 2 and tid not in task_ids]
    if users:
        out.append(Item("request", f'The user asked: "{one_line(users[0].content, 300)}"'))
    for m in users:
        out.append(Item("user", f'"{one_line(m.content, 200)}"'))
        for s in sentences(m.content):
            if CONSTRAINT_RE.search(s):
                out.append(Item("constraint", f"Constraint from the user: {one_line(s, 200)}"))
    for tid in task_ids:
        out.append(Item("task_id", f"Task {tid}"))
    for path, n in edited.items():
        times = "once" if n == 1 else f"{n} times"
        out.append(Item("file", f"`{relative(path, root)}`: edited {times}"))
    out += _errors(messages)
    last = next(
        (m for m in reversed(messages) if m.role == "assistant" and m.content.strip()), None
    )
    if last is not None:
        out.append(Item("current", f"Working on: {one_line(last.content, 400)}"))
    said = {id(m): list(sentences(m.content)) for m in messages if m.role == "assistant"}
    nexts = [
        s for m in messages[-12:] if m.role == "assistant" for s in said[id(m)] if NEXT_RE.search(s)
    ]
    if nexts:
        out.append(Item("next", one_line(nexts[-1], 300)))
    for m in messages:
        if m.role == "assistant":
            for s in said[id(m)]:
                if DECISION_RE.search(s):
                    out.append(Item("decision", one_line(s, 240)))
    for path, written in code.items():
        lines = [ln.rstrip() for ln in written.strip("\n").splitlines()][:CODE_LINES]
        snippet = "\n".join("  " + ln for ln in lines)
        out.append(Item("code", f"`{relative(path, root)}` now holds:\n{snippet}"))
    for m in messages:
        if m.role == "assistant" and m.content.strip():
            out.append(Item("progress", one_line(m.content, 240)))
    for path in read:
        if path not in edited:
            out.append(Item("read", f"`{relative(path, root)}`: read"))
    if commands:
        out.append(Item("concept", "Tools run: " + ", ".join(commands[:12])))
    return out


def _is_summary(text: str) -> bool:
    return is_summary_text(text) or text.lstrip().startswith(CONTINUED)


def _is_user(message: Message) -> bool:
    """A message the user typed (not a tool result, an injected skill or a summary)."""
    return (
        message.role == "user"
        and not message.is_observation
        and not message.meta.get("isMeta")
        and bool(message.content.strip())
        and not _is_summary(message.content)
    )


def _failed(message: Message) -> bool:
    """A tool result that reports a failure: flagged so, or an error in its first lines."""
    if message.role != "tool" and not message.is_observation:
        return False
    if message.meta.get("is_error") is True:
        return True
    head = message.content.splitlines()[:3]
    return any(ERROR_RE.search(ln) and not _GUTTER.match(ln) for ln in head)


_DIGITS = re.compile(r"\d+")


def digits_as_n(text: str, limit: int) -> str:
    """``re.sub(r"\\d+", "N", text)[:limit]`` (an error line's key) from as little of ``text``
    as gives ``limit`` characters: a run of digits cut short is one ``N`` where the whole run
    is one too, so a prefix's replacement starts as the whole line's does, and a long line of a
    tool result costs its first characters, not a pass over all of it."""
    end = limit
    while True:
        head = _DIGITS.sub("N", text[:end])
        if len(head) >= limit or end >= len(text):
            return head[:limit]
        end *= 2


def _errors(messages: Sequence[Message]) -> list[Item]:
    """The first error line of each failing tool result, and what the agent did next (the
    next assistant text), once per distinct line."""
    out: list[Item] = []
    seen: set[str] = set()
    for i, m in enumerate(messages):
        if not _failed(m):
            continue
        lines = [_BULLETS.sub("", ln).strip() for ln in m.content.splitlines()]
        line = next((ln for ln in lines if ERROR_RE.search(ln)), None) or next(
            (ln for ln in lines if ln), None
        )
        if line is None:
            continue
        key = digits_as_n(line.strip(), 80)
        if key in seen:
            continue
        seen.add(key)
        after = next(
            (n for n in messages[i + 1 :] if n.role == "assistant" and n.content.strip()), None
        )
        fix = f"; then: {one_line(after.content, 160)}" if after is not None else ""
        out.append(Item("error", f"{one_line(line, ERROR_CHARS)}{fix}"))
    return out


def layout(
    sections: Sequence[str], found: Sequence[Item], counter: TokenCounter, target: int
) -> str:
    """``found`` under ``sections`` by kind order while the text stays within ``target``."""
    headings = list(sections) or ["Summary"]
    lowered = [h.lower() for h in headings]
    home: dict[str, str] = {}
    for kind, keywords in KINDS:
        for keyword in keywords:
            at = next((i for i, h in enumerate(lowered) if keyword in h), None)
            if at is not None:
                home[kind] = headings[at]
                break
    fallback = homes(headings).get("task", headings[0])
    home.setdefault("carried", home.get("request", fallback))
    rank = {kind: i for i, (kind, _) in enumerate((("carried", ()), *KINDS))}
    assigned: dict[str, list[str]] = {h: [] for h in headings}
    used = counter.count(_render(headings, assigned))
    kept: list[tuple[str, str]] = []
    texts: set[str] = set()
    for _, item in sorted(enumerate(found), key=lambda p: (rank.get(p[1].kind, 99), p[0])):
        if item.text in texts:
            continue
        line = f"- {item.text}"
        cost = counter.count(line + "\n")
        if used + cost > target:
            continue
        section = home.get(item.kind, fallback)
        assigned[section].append(line)
        kept.append((section, line))
        texts.add(item.text)
        used += cost
    text = _render(headings, assigned)
    while kept and counter.count(text) > target:
        section, line = kept.pop()
        assigned[section].remove(line)
        text = _render(headings, assigned)
    return text


def _render(headings: Sequence[str], assigned: Mapping[str, list[str]]) -> str:
    return "\n\n".join(
        f"{h}:\n" + ("\n".join(assigned[h]) if assigned[h] else "- None") for h in headings
    )


class ModelLikeSummarizer(Summarizer):
    """Deterministic offline summarizer that writes like a model; see the module docstring."""

    name = "model_like"

    def __init__(
        self,
        length_scale: float = 1.0,
        length_tokens: int | None = None,
        max_share: float | None = None,
    ) -> None:
        from ctxbench.errors import ConfigError

        if length_scale <= 0:
            raise ConfigError(f"length_scale must be > 0, not {length_scale}", key="length_scale")
        for key, value in (("length_tokens", length_tokens), ("max_share", max_share)):
            if value is not None and value <= 0:
                raise ConfigError(f"{key} must be > 0, not {value}", key=key)
        self.length_scale = length_scale
        self.length_tokens = length_tokens
        self.max_share = max_share

    def params(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.length_scale != 1.0:
            out["length_scale"] = self.length_scale
        if self.length_tokens is not None:
            out["length_tokens"] = self.length_tokens
        if self.max_share is not None:
            out["max_share"] = self.max_share
        return out

    def length_model(self) -> LengthModel:
        """The fitted length model (:data:`CLAUDE_CODE_LENGTH`), or the one ``length_tokens``
        / ``max_share`` set (a refit, a leave-one-out fold)."""
        model = CLAUDE_CODE_LENGTH
        if self.length_tokens is None and self.max_share is None:
            return model
        return LengthModel(
            self.length_tokens or model.tokens, "set", self.max_share or model.max_share
        )

    def target(self, request: SummaryRequest, counter: TokenCounter) -> int:
        """The summary's length: the framework's length model on this history, times
        ``length_scale``, within the request's cap."""
        model = self.length_model()
        target = round(model.target(counter.count(request.prompt)) * self.length_scale)
        return target if request.max_tokens is None else min(target, request.max_tokens)

    def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
        found = items(request.messages)
        if request.previous_summary:
            found = carried(request.previous_summary) + found
        return layout(request.sections, found, counter, self.target(request, counter))
