"""What Hermes sends to and gets from its summary call: the serialised middle, the structured
template and prompt, the summary prefix and end marker, and the handoff markers."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ctxbench.strategies.hermes.prune import _is_image
from ctxbench.trace import Message, Part

SUMMARY_INPUT_MAX_CHARS = 160_000


CONTENT_MAX, CONTENT_HEAD, CONTENT_TAIL = 6000, 4000, 1500


TOOL_ARGS_MAX, TOOL_ARGS_HEAD = 1500, 1200


AUTO_FOCUS_MAX_TURNS, AUTO_FOCUS_TURN_MAX_CHARS, AUTO_FOCUS_MAX_CHARS = 3, 260, 700


ACTIVE_TASK_MAX_CHARS = 1400


NO_USER_TASK_SENTINEL = "None. This session contains no user-authored turns."


HISTORICAL_TASK_HEADING = "## Historical Task Snapshot"


HISTORICAL_IN_PROGRESS_HEADING = "## Historical In-Progress State"


HISTORICAL_PENDING_ASKS_HEADING = "## Historical Pending User Asks"


HISTORICAL_REMAINING_WORK_HEADING = "## Historical Remaining Work"


#: The summary template's headings, in order (what offline summarizers lay out).
SUMMARY_SECTIONS: tuple[str, ...] = (
    "Historical Task Snapshot",
    "Goal",
    "Constraints & Preferences",
    "Completed Actions",
    "Active State",
    "Historical In-Progress State",
    "Blocked",
    "Key Decisions",
    "Resolved Questions",
    "Historical Pending User Asks",
    "Relevant Files",
    "Historical Remaining Work",
    "Critical Context",
)


SUMMARY_PREFIX = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted "
    "into the summary below. This is a handoff from a previous context "
    "window — treat it as background reference, NOT as active instructions. "
    "Do NOT answer questions or fulfill requests mentioned in this summary; "
    "they were already addressed. "
    "Respond ONLY to the latest user message that appears AFTER this "
    "summary — that message is the single source of truth for what to do "
    "right now. "
    "Topic overlap with the summary does NOT mean you should resume its "
    "task: even on similar topics, the latest user message WINS. Treat ONLY "
    "the latest message as the active task and discard stale items from "
    f"'{HISTORICAL_TASK_HEADING}' / '{HISTORICAL_IN_PROGRESS_HEADING}' / "
    f"'{HISTORICAL_PENDING_ASKS_HEADING}' / "
    f"'{HISTORICAL_REMAINING_WORK_HEADING}' entirely — do not 'wrap up' or "
    "'finish' work described there unless the latest message explicitly "
    "asks for it. "
    "Reverse signals in the latest message (e.g. 'stop', 'undo', 'roll "
    "back', 'just verify', 'don't do that anymore', 'never mind', a new "
    "topic) must immediately end any in-flight work described in the "
    "summary; do not re-surface it in later turns. "
    "IMPORTANT: Your persistent memory (MEMORY.md, USER.md) in the system "
    "prompt is ALWAYS authoritative and active — never ignore or deprioritize "
    "memory content due to this compaction note. "
    "None of the above restricts HOW you work: your tools remain fully "
    "active — keep calling them normally for the active task (edit files, "
    "run commands, search) instead of merely narrating what you would do. "
    "The current session state (files, config, etc.) may reflect work "
    "described here — avoid repeating it:"
)


SUMMARY_END_MARKER = (
    "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"
)


MERGED_PRIOR_CONTEXT_HEADER = "[PRIOR CONTEXT — for reference only; not a new message]"


MERGED_SUMMARY_DELIMITER = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]"


COMPRESSION_NOTE = (
    "[Note: Some earlier conversation turns have been compacted into a handoff summary to "
    "preserve context space. The current session state may still reflect earlier work, so "
    "build on that summary and state rather than re-doing work. Your persistent memory "
    "(MEMORY.md, USER.md) remains fully authoritative regardless of compaction.]"
)


SUMMARY_MARK = "_compressed_summary"


SUMMARY_HAS_USER_MARK = "_compressed_summary_has_user_turn"


MEDIA_DIRECTIVE_RE = re.compile(r"MEDIA:\S+")


THINK_BLOCK_RE = re.compile(r"<(think|thinking|reasoning)>.*?</\1>\s*", re.S | re.I)


HISTORICAL_TASK_SECTION_RE = re.compile(
    rf"(?ms)^{re.escape(HISTORICAL_TASK_HEADING)}\s*\n.*?(?=^## |\Z)"
)


def _add_text(message: Message, text: str, *, prepend: bool = False) -> Message:
    if message.parts is None:
        return replace(
            message, content=text + message.content if prepend else message.content + text
        )
    block = Part("text", text)
    parts = (block, *message.parts) if prepend else (*message.parts, block)
    return replace(message, parts=parts, content="\n".join(p.text for p in parts if p.is_text))


def is_summary_message(message: Message) -> bool:
    """A compaction handoff: the metadata flag, or the summary prefix (standalone or merged)."""
    if message.meta.get(SUMMARY_MARK):
        return True
    text = message.content.lstrip()
    if MERGED_SUMMARY_DELIMITER in text:
        return text.split(MERGED_SUMMARY_DELIMITER, 1)[1].lstrip().startswith(SUMMARY_PREFIX)
    return text.startswith(SUMMARY_PREFIX)


def strip_handoff(message: Message) -> Message | None:
    """Drop a stale handoff; a merged one gives back the tail content it wrapped."""
    if not is_summary_message(message):
        return message
    meta = {k: v for k, v in message.meta.items() if k not in (SUMMARY_MARK, SUMMARY_HAS_USER_MARK)}
    content = message.content
    if MERGED_SUMMARY_DELIMITER in content:
        prior = content.split(MERGED_SUMMARY_DELIMITER, 1)[0].strip()
        if prior.startswith(MERGED_PRIOR_CONTEXT_HEADER):
            prior = prior[len(MERGED_PRIOR_CONTEXT_HEADER) :].lstrip()
        if prior:
            return replace(message.with_text(prior), meta=meta)
    elif SUMMARY_END_MARKER in content:
        rest = content.split(SUMMARY_END_MARKER, 1)[1].lstrip()
        if rest:
            return replace(message.with_text(rest), meta=meta)
    return None


def summary_body(text: str) -> str:
    """A summary without the prefix, the merged-tail wrapper and the END marker."""
    text = text.strip()
    if MERGED_SUMMARY_DELIMITER in text:
        text = text.split(MERGED_SUMMARY_DELIMITER, 1)[1].strip()
    if text.startswith(SUMMARY_PREFIX):
        text = text[len(SUMMARY_PREFIX) :].lstrip()
    marker = text.find(SUMMARY_END_MARKER)
    return text[:marker].rstrip() if marker >= 0 else text


def with_summary_prefix(body: str) -> str:
    body = summary_body(body)
    return f"{SUMMARY_PREFIX}\n{body}" if body else SUMMARY_PREFIX


def _is_actionable_user(message: Message) -> bool:
    """A real user turn: not a compaction handoff, not blank."""
    if message.role != "user" or is_summary_message(message):
        return False
    return bool(message.content.strip() or message.media_parts)


def _cap(text: str) -> str:
    if len(text) > CONTENT_MAX:
        return text[:CONTENT_HEAD] + "\n...[truncated]...\n" + text[-CONTENT_TAIL:]
    return text


def _message_text(message: Message) -> str:
    if message.parts is None:
        return message.content
    pieces = []
    for part in message.parts:
        if part.is_text:
            pieces.append(part.text)
        elif _is_image(part):
            url = part.data.get("image_url", part.data.get("url", ""))
            url = url.get("url", "") if isinstance(url, dict) else url
            is_web = isinstance(url, str) and url.startswith(("http://", "https://"))
            pieces.append(f"[image: {url}]" if is_web else "[image]")
        else:
            pieces.append(f"[{part.type or 'attachment'}]")
    return "\n".join(pieces)


def serialize_for_summary(turns: Sequence[Message]) -> str:
    """``_serialize_for_summary``: labelled, capped text of the turns to summarise."""
    parts = []
    for msg in turns:
        content = MEDIA_DIRECTIVE_RE.sub("[media attachment]", _message_text(msg))
        if msg.role == "tool":
            parts.append(f"[TOOL RESULT {msg.tool_call_id or ''}]: {_cap(content)}")
            continue
        if msg.role == "assistant":
            content = _cap(THINK_BLOCK_RE.sub("", content))
            if msg.tool_calls:
                calls = []
                for call in msg.tool_calls:
                    args = call.arguments
                    if len(args) > TOOL_ARGS_MAX:
                        args = args[:TOOL_ARGS_HEAD] + "..."
                    calls.append(f"  {call.name}({args})")
                content += "\n[Tool calls:\n" + "\n".join(calls) + "\n]"
            parts.append(f"[ASSISTANT]: {content}")
            continue
        parts.append(f"[{msg.role.upper()}]: {_cap(content)}")
    return "\n\n".join(parts)


def bound_summary_input(content: str, limit: int = SUMMARY_INPUT_MAX_CHARS) -> str:
    """Cap the summariser input at ``limit`` chars: 45% head, 55% tail, a marked middle."""
    if len(content) <= limit:
        return content
    template = (
        "\n\n...[summary input truncated: omitted {omitted:,} chars from the middle to keep "
        "compression prompt bounded]...\n\n"
    )
    marker = template.format(omitted=len(content))
    for _ in range(2):
        remaining = max(limit - len(marker), 0)
        head = int(remaining * 0.45)
        tail = remaining - head
        marker = template.format(omitted=max(len(content) - head - tail, 0))
    remaining = max(limit - len(marker), 0)
    head = int(remaining * 0.45)
    tail = remaining - head
    return content[:head].rstrip() + marker + (content[-tail:].lstrip() if tail else "")


_PREAMBLE = (
    "You are a summarization agent creating a context checkpoint. Treat the conversation "
    "turns below as source material for a compact record of prior work. Produce only the "
    "structured summary; do not add a greeting, preamble, or prefix. {language}NEVER include "
    "API keys, tokens, passwords, secrets, credentials, or connection strings in the summary "
    "— replace any that appear with [REDACTED]. Note that {credentials} present, but do "
    "not preserve their values."
)


_LANGUAGE_USER = (
    "Write the summary in the same language the user was using in the conversation — do not "
    "translate or switch to English. "
)


_LANGUAGE_NO_USER = (
    "This session contains no user-authored turns. Write the summary in the dominant language "
    "of the source turns; if they are mixed, use the language of the most recent "
    "natural-language assistant turn. Do not translate, invent a user, or attribute any "
    "request to a user. "
)


_TASK_USER = """[THE SINGLE MOST IMPORTANT FIELD. Capture the user's most recent unfulfilled
input verbatim — the exact words they used. This includes:
- Explicit task assignments ("<specific user task>")
- Questions awaiting an answer ("<specific user question>")
- Decisions awaiting input ("<option A or B?>")
- Ongoing discussions where the assistant owes the next substantive reply
A conversation where the user just asked a question IS an active task — the
task is "answer that question with full context". Do NOT write "None" merely
because the user did not issue an imperative command; reserve "None" for the
rare case where the last exchange was fully resolved and the user said
something like "thanks, that's all".
If multiple items are outstanding, list only the ones NOT yet completed.
This historical snapshot must identify the latest unresolved user input precisely. Examples:
"User asked: '<exact latest user request>'"
"User asked: '<exact latest user question>' — needs investigation + answer"
"User chose <option>; awaiting implementation of <specific next step>"
If the user's most recent message was a reverse signal (stop, undo, roll
back, never mind, just verify, change of topic) that supersedes earlier
work, write the reverse signal verbatim and DO NOT carry forward the
cancelled task. Example: "User asked: '<exact reverse signal>' — earlier
in-flight work is cancelled."
If no outstanding task exists, write "None."]"""


_TASK_NO_USER = f"""[NO user-authored turn exists in this session. Write exactly:
{NO_USER_TASK_SENTINEL}
Do not write "User asked:" or any translated equivalent anywhere in the summary.
Describe agent/tool work only as completed actions, state, or historical work.]"""


_FIELD_HELP = {
    True: (
        "[What the user is trying to accomplish overall]",
        "[User preferences, coding style, constraints, important decisions]",
        "[Questions the user asked that were ALREADY answered — include the answer so it is "
        "not repeated]",
        "[Questions or requests from the user that have NOT yet been answered or fulfilled. "
        "These are STALE — they were from the compacted turns. Write them here for reference "
        "only. The agent must NOT act on them unless the latest user message explicitly "
        'requests it. If none, write "None."]',
    ),
    False: (
        "[Historical cron/agent objective inferred only from assistant and tool activity. "
        "Never call it a user goal.]",
        "[Runtime, configuration, and technical constraints only. Do not invent user preferences.]",
        "[Write exactly: None. No user-authored questions exist.]",
        "[Write exactly: None. No user-authored requests exist.]",
    ),
}


def summary_template(has_user_turn: bool, budget: int) -> str:
    """The structured sections Hermes asks for, with their instructions."""
    goal, constraints, resolved, pending = _FIELD_HELP[has_user_turn]
    task = _TASK_USER if has_user_turn else _TASK_NO_USER
    return f"""{HISTORICAL_TASK_HEADING}
{task}

## Goal
{goal}

## Constraints & Preferences
{constraints}

## Completed Actions
[Numbered list of concrete actions taken — include tool used, target, and outcome.
Format each as: N. ACTION target — outcome [tool: name]
Example:
1. READ config.py:45 — found `==` should be `!=` [tool: read_file]
2. PATCH config.py:45 — changed `==` to `!=` [tool: patch]
3. TEST `pytest tests/` — 3/50 failed: test_parse, test_validate, test_edge [tool: terminal]
Be specific with file paths, commands, line numbers, and results.]

## Active State
[Current working state — include:
- Working directory and branch (if applicable)
- Modified/created files with brief note on each
- Test status (X/Y passing)
- Any running processes or servers
- Environment details that matter]

{HISTORICAL_IN_PROGRESS_HEADING}
[Work currently underway — what was being done when compaction fired]

## Blocked
[Any blockers, errors, or issues not yet resolved. Include exact error messages.]

## Key Decisions
[Important technical decisions and WHY they were made]

## Resolved Questions
{resolved}

{HISTORICAL_PENDING_ASKS_HEADING}
{pending}

## Relevant Files
[Files read, modified, or created — with brief note on each]

{HISTORICAL_REMAINING_WORK_HEADING}
[What remains to be done — framed as STALE context for reference only. The agent must NOT resume this work unless the latest user message explicitly asks for it.]

## Critical Context
[Any specific values, error messages, configuration details, or data that would be lost without explicit preservation. NEVER include API keys, tokens, passwords, or credentials — write [REDACTED] instead.]

Target ~{budget} tokens. Be CONCRETE — include file paths, command outputs, error messages, line numbers, and specific values. Avoid vague descriptions like "made some changes" — say exactly what changed.

Write only the summary body. Do not include any preamble or prefix."""


def summary_prompt(
    turns: Sequence[Message],
    *,
    previous_summary: str | None,
    has_user_turn: bool,
    budget: int,
    focus_topic: str | None,
    input_cap: bool = True,
    no_user_prompt: bool = True,
) -> str:
    """``_generate_summary``'s prompt: first compaction, or an iterative update.

    ``input_cap`` bounds the serialised turns and the previous summary at 160K chars, and
    ``no_user_prompt`` words the prompt apart for a session without a user turn (rules of the
    later commit; hermes-agent 0.19.0 sends the turns whole, in one prompt for every session)."""
    if not no_user_prompt:
        has_user_turn = True
    preamble = _PREAMBLE.format(
        language=_LANGUAGE_USER if has_user_turn else _LANGUAGE_NO_USER,
        credentials="credentials were" if no_user_prompt else "the user had credentials",
    )

    def bound(text: str) -> str:
        return bound_summary_input(text) if input_cap else text

    content = bound(serialize_for_summary(turns))
    template = summary_template(has_user_turn, budget)
    if previous_summary:
        prompt = f"""{preamble}

You are updating a context compaction summary. A previous compaction produced the summary below. New conversation turns have occurred since then and need to be incorporated.

PREVIOUS SUMMARY:
{bound(previous_summary)}

NEW TURNS TO INCORPORATE:
{content}

Update the summary using this exact structure. PRESERVE all existing information that is still relevant. ADD new completed actions to the numbered list (continue numbering). Move items from "In Progress" to "Completed Actions" when done. Move answered questions to "Resolved Questions". Update "Active State" to reflect current state. Remove information only if it is clearly obsolete. CRITICAL: Update "## Active Task" to reflect the user's most recent unfulfilled input — this includes any question, decision request, or discussion turn that the assistant has not yet answered. Only write "None" if the last exchange was fully resolved.

{template}"""
    else:
        prompt = f"""{preamble}

Create a structured checkpoint summary for the conversation after earlier turns are compacted. The summary should preserve enough detail for continuity without re-reading the original turns.

TURNS TO SUMMARIZE:
{content}

Use this exact structure:

{template}"""
    if focus_topic:
        prompt += f"""

FOCUS TOPIC: "{focus_topic}"
This compaction should PRIORITISE preserving all information related to the focus topic above. For content related to "{focus_topic}", include full detail — exact values, file paths, command outputs, error messages, and decisions. For content NOT related to the focus topic, summarise more aggressively (brief one-liners or omit if truly irrelevant). The focus topic sections should receive roughly 60-70% of the summary token budget. Even for the focus topic, NEVER preserve API keys, tokens, passwords, or credentials — use [REDACTED]."""
    return prompt


def auto_focus_topic(messages: Sequence[Message]) -> str | None:
    """``_derive_auto_focus_topic``: the last 3 real user turns."""
    picked: list[str] = []
    for msg in reversed(messages):
        if not _is_actionable_user(msg):
            continue
        text = " ".join(msg.content.split())
        if not text:
            continue
        if len(text) > AUTO_FOCUS_TURN_MAX_CHARS:
            text = text[: AUTO_FOCUS_TURN_MAX_CHARS - 1].rstrip() + "…"
        picked.append(text)
        if len(picked) >= AUTO_FOCUS_MAX_TURNS:
            break
    if not picked:
        return None
    focus = "Recent user focus:\n" + "\n".join(f"- {t}" for t in reversed(picked))
    if len(focus) > AUTO_FOCUS_MAX_CHARS:
        focus = focus[: AUTO_FOCUS_MAX_CHARS - 1].rstrip() + "…"
    return focus


def ground_task_snapshot(body: str, turns: Sequence[Message]) -> str:
    """Overwrite the task snapshot with the newest real user turn of the compacted window."""
    user = next((m for m in reversed(turns) if _is_actionable_user(m) and m.content.strip()), None)
    if user is None:
        return body
    text = re.sub(r"\s+", " ", user.content.strip())
    if len(text) > ACTIVE_TASK_MAX_CHARS:
        text = text[: ACTIVE_TASK_MAX_CHARS - 15].rstrip() + " ...[truncated]"
    section = (
        f"{HISTORICAL_TASK_HEADING}\nUser asked (deterministic, from compacted turns): {text!r}\n"
        "Historical only; newer protected-tail messages after this summary win.\n\n"
    )
    if HISTORICAL_TASK_SECTION_RE.search(body):
        return HISTORICAL_TASK_SECTION_RE.sub(lambda _m: section, body, count=1).strip()
    return f"{section}{body}".strip()


def stand_ins(before: Sequence[Message], after: Sequence[Message]) -> list[Message | None]:
    """The message of ``before`` each message of ``after`` stands for (None: new), matched as
    the shipped driver matches the release's copies (``hermes_driver._same`` and
    ``_identify``): the same tool result, the same tool calls, the tail message a summary was
    merged into, or the same text; in order first, then anywhere (a re-inserted user turn).
    Declared to ``ctx.apply``, so both sides attribute a rewrite by one rule."""
    where = {id(m): i for i, m in enumerate(before)}
    out: list[Message | None] = []
    floor = -1
    for msg in after:
        i = where.get(id(msg))
        if i is None:
            i = next((k for k in range(floor + 1, len(before)) if _same(before[k], msg)), None)
            if i is None:
                i = next((k for k in reversed(range(len(before))) if _same(before[k], msg)), None)
                out.append(None if i is None else before[i])
                continue
        floor = max(floor, i)
        out.append(before[i])
    return out


def _same(stored: Message, msg: Message) -> bool:
    if stored.role != msg.role:
        return False
    if msg.role == "tool":
        return stored.tool_call_id == msg.tool_call_id
    if stored.tool_calls or msg.tool_calls:
        return [c.id for c in msg.tool_calls] == [c.id for c in stored.tool_calls]
    header = MERGED_PRIOR_CONTEXT_HEADER + "\n"
    if msg.content.startswith(header):
        old = msg.content[len(header) :].split("\n\n" + MERGED_SUMMARY_DELIMITER)[0]
        return old == stored.content
    return msg.content == stored.content
