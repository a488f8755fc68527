"""AgentScope's texts: the compression prompts, the summary schema and template, the
reminders and markers, and the compression request as one prompt (``agent/_config.py``,
``agent/_agent.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from ctxbench.strategies.layers import transcript
from ctxbench.trace import Message

COMPRESSION_PROMPT = (
    "<system-hint>You have been working on the task described above "
    "but have not yet completed it. "
    "Now write a continuation summary that will allow you to resume "
    "work efficiently in a future context window where the "
    "conversation history will be replaced with this summary. "
    "Your summary should be structured, concise, and actionable."
    "</system-hint>"
)

SUMMARY_TEMPLATE = (
    "<system-info>Here is a summary of your previous work\n"
    "# Task Overview\n"
    "{task_overview}\n\n"
    "# Current State\n"
    "{current_state}\n\n"
    "# Important Discoveries\n"
    "{important_discoveries}\n\n"
    "# Next Steps\n"
    "{next_steps}\n\n"
    "# Context to Preserve\n"
    "{context_to_preserve}"
    "</system-info>"
)

#: ``SummarySchema``: (field, heading in the template, description).
SUMMARY_FIELDS: tuple[tuple[str, str, str], ...] = (
    (
        "task_overview",
        "Task Overview",
        "The user's core request and success criteria.\n"
        "Any clarifications or constraints they specified",
    ),
    (
        "current_state",
        "Current State",
        "What has been completed so far.\n"
        "File created, modified, or analyzed (with paths if relevant).\n"
        "Key outputs or artifacts produced.",
    ),
    (
        "important_discoveries",
        "Important Discoveries",
        "Technical constraints or requirements uncovered.\n"
        "Decisions made and their rationale.\n"
        "Errors encountered and how they were resolved.\n"
        "What approaches were tried that didn't work (and why)",
    ),
    (
        "next_steps",
        "Next Steps",
        "Specific actions needed to complete the task.\n"
        "Any blockers or open questions to resolve.\n"
        "Priority order if multiple steps remain",
    ),
    (
        "context_to_preserve",
        "Context to Preserve",
        "User preferences or style requirements.\n"
        "Domain-specific details that aren't obvious.\n"
        "Any promises made to the user",
    ),
)
SUMMARY_SECTIONS = tuple(title for _, title, _ in SUMMARY_FIELDS)

TRUNCATED_SUMMARY = (
    "<system-info>Some earlier messages were truncated for limited context.</system-info>"
)
TRUNCATION_REMINDER = (
    "\n<<<TRUNCATED>>>\n<system-reminder>The remaining content has been omitted for limited "
    "context.{offload_reminder}</system-reminder>"
)
TOOL_RESULT_OFFLOAD_REMINDER = (
    " You can refer to the file in '{path}' for the truncated content if needed."
)
CONTEXT_OFFLOAD_REMINDER = (
    "<system-reminder>The compressed context is offloaded to '{path}', "
    "you can refer to it when needed.</system-reminder>"
)
IMAGE_OFFLOADED = (
    "<system-reminder>The image {name}is offloaded into {url}, "
    "you can refer to it when needed.</system-reminder>"
)
IMAGE_REMOVED = (
    "<system-reminder>The image {name}is removed to free up context space.</system-reminder>"
)
RUNTIME_STATE_TEMPLATE = "<system-reminder>{runtime_state}</system-reminder>"

#: 2.0.11 ``ContextConfig.compression_prompt`` (agent/_config.py:82-109)
COMPRESSION_PROMPT_2_0_11 = (
    "<system-hint>You have been working on the task described above. "
    "Now write a continuation summary that will allow you to resume "
    "work efficiently in a future context window where the "
    "conversation history will be replaced with this summary. "
    "Your summary should be structured, concise, and actionable.\n"
    "The current time is {current_time}.\n"
    "This summary may itself be summarized again later, and the "
    "conversation history it refers to will be gone, so every "
    "reference must be self-contained — resolve anything that "
    "depends on the vanished context into an absolute, "
    "fully-qualified form:\n"
    "- Time: convert relative expressions ('today', 'now', "
    "'yesterday', 'tomorrow', 'recently') to absolute dates using "
    "the current time above; re-anchor them even if an earlier "
    "summary already wrote them relatively.\n"
    "- Names & pointers: use file paths, symbol names, PR/issue "
    "numbers, IDs, URLs, and exact commands/error strings verbatim "
    "instead of 'this file', 'the above', 'the second approach', "
    "'the 5 failing tests'.\n"
    "- In-flight work: record everything still pending, especially "
    "tools launched in the background whose results you are still "
    "waiting on — give each one's id and a short note of what it is "
    "doing — and mark each item's owner (user request vs your own "
    "decision) and status (done / pending / blocked).\n"
    "</system-hint>"
)
#: 2.0.11 ``InjectionConfig.template`` (agent/_config.py:288-300)
RUNTIME_STATE_TEMPLATE_2_0_11 = (
    "<system-reminder>Treat the following as the ground truth at this point of the "
    "conversation. Anything stated earlier is outdated, and a later reminder, if any, "
    "supersedes this one:\n{runtime_state}\n</system-reminder>"
)

#: ``meta`` marks of the messages this strategy adds to the prompt.
SUMMARY_MARK = {"agentscope": "summary"}
HINT_MARK = {"agentscope": "runtime_state"}
MAX_ITERS_MARK = {"agentscope": "max_iters"}
#: 2.0.11 ``Agent._next_action`` at ``cur_iter == max_iters`` (agent/_agent.py)
MAX_ITERS_HINT = (
    "<system-reminder>You have reached the maximum of {max_iters} reasoning-acting iterations. "
    "Summarize the work and findings so far and return the final answer as text. Do not call "
    "any tools.</system-reminder>"
)

IMAGE_PART_TYPES = frozenset({"image_url", "input_image", "image"})


def parse_summary_fields(text: str) -> dict[str, str]:
    """The five fields of a structured summary: a JSON object, or markdown sections headed by
    the field titles; text with neither goes whole into ``task_overview``."""
    names = [name for name, _, _ in SUMMARY_FIELDS]
    stripped = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        obj = json.loads(stripped)
    except (ValueError, RecursionError):
        obj = None
    if isinstance(obj, dict) and any(name in obj for name in names):
        return {name: str(obj.get(name) or "").strip() for name in names}
    by_title = {title.lower(): name for name, title, _ in SUMMARY_FIELDS}
    by_title.update({name: name for name in names})
    fields: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        heading = re.match(r"^\s*#{1,6}\s*(.+?)\s*:?\s*$", line)
        if heading:
            key = re.sub(r"^[\d.\s]+", "", heading.group(1)).lower()
            current = by_title.get(key, by_title.get(key.replace(" ", "_")))
            if current is not None:
                fields.setdefault(current, [])
                continue
        if current is not None:
            fields[current].append(line)
    if not fields:
        return {name: (text.strip() if name == "task_overview" else "") for name in names}
    return {name: "\n".join(fields.get(name, [])).strip() for name in names}


def schema_tool_json() -> str:
    """The forced ``generate_structured_output`` tool AgentScope sends with the compression call."""
    schema = {
        "type": "object",
        "title": "SummarySchema",
        "properties": {
            name: {"type": "string", "title": title, "description": description}
            for name, title, description in SUMMARY_FIELDS
        },
        "required": [name for name, _, _ in SUMMARY_FIELDS],
    }
    tool = {
        "type": "function",
        "function": {
            "name": "generate_structured_output",
            "description": "Call this function to generate structured output required by the user.",
            "parameters": schema,
        },
    }
    return json.dumps([tool], ensure_ascii=False, separators=(",", ":"))


def render_compression_prompt(
    system: Sequence[Message], summary: str, messages: Sequence[Message], instruction: str
) -> str:
    """The compression call as one text: what AgentScope sends as messages plus the schema."""
    head = [*system, *([Message("user", summary)] if summary else [])]
    fields = "\n".join(
        f"- {name}: {description.replace(chr(10), ' ')}" for name, _, description in SUMMARY_FIELDS
    )
    return (
        f"{transcript([*head, *messages, Message('user', instruction)])}\n\n"
        "Call generate_structured_output: reply with one JSON object with these string "
        f"fields:\n{fields}"
    )
