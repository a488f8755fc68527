"""Structural validation of a trace: each problem with its code, message index and a fix hint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ctxbench.probes.scoring import TextIndex
from ctxbench.trace import ROLES, Trace, message_search_text


@dataclass(frozen=True)
class Problem:
    """One structural problem found by :func:`validate`."""

    code: str
    index: int | None
    message: str
    hint: str

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "index": self.index, "message": self.message, "hint": self.hint}


PROBLEM_CODES: tuple[str, ...] = (
    "empty_trace",
    "unknown_role",
    "orphan_tool_result",
    "missing_tool_result",
    "duplicate_call_id",
    "tool_not_adjacent",
    "probe_evidence_out_of_range",
    "probe_answer_not_in_evidence",
    "probe_ask_at_out_of_range",
    "duplicate_probe_id",
    "recorded_compaction_out_of_range",
)


def refuse_duplicate_call_ids(trace: Trace, *, source: str = "") -> None:
    """A TraceFormatError naming the trace, the message and the id when a tool call id is used
    twice: a replay matches results to calls by id, and a strategy names the files it writes
    after them (DB-GPT's persisted result of the first call was overwritten by the second)."""
    from ctxbench.errors import TraceFormatError

    seen: dict[str, int] = {}
    for i, msg in enumerate(trace.messages):
        for call in msg.tool_calls:
            if call.id in seen:
                raise TraceFormatError(
                    f"trace {trace.id!r}: message {i} reuses tool call id {call.id!r} "
                    f"(first used at message {seen[call.id]})",
                    path=source or None,
                    key=f"$.messages[{i}].tool_calls",
                    hint="give every tool call a unique id (`ctxbench validate` lists them)",
                )
            seen[call.id] = i


def validate(trace: Trace) -> list[Problem]:
    """Structural problems of a trace, each with its message index and a fix hint."""
    problems: list[Problem] = []
    msgs = trace.messages
    if not msgs:
        problems.append(
            Problem(
                "empty_trace",
                None,
                "the trace has no messages",
                "add at least one user and one assistant message",
            )
        )
    seen_ids: dict[str, int] = {}
    open_calls: dict[str, int] = {}  # call id -> assistant index, awaiting a result
    answered: set[str] = set()
    block_owner: int | None = None  # assistant index whose tool results may follow now
    for i, msg in enumerate(msgs):
        if msg.role not in ROLES:
            problems.append(
                Problem(
                    "unknown_role",
                    i,
                    f"unknown role {msg.role!r}",
                    f"use one of {', '.join(ROLES)}",
                )
            )
            block_owner = None
            continue
        if msg.role == "assistant":
            block_owner = i if msg.tool_calls else None
            for call in msg.tool_calls:
                if call.id in seen_ids:
                    problems.append(
                        Problem(
                            "duplicate_call_id",
                            i,
                            f"tool call id {call.id!r} was already used at message {seen_ids[call.id]}",
                            "give every tool call a unique id",
                        )
                    )
                else:
                    seen_ids[call.id] = i
                    open_calls[call.id] = i
            continue
        if msg.role == "tool":
            cid = msg.tool_call_id
            if cid is None or cid not in seen_ids:
                problems.append(
                    Problem(
                        "orphan_tool_result",
                        i,
                        f"tool result for call id {cid!r} has no matching assistant tool call",
                        "set tool_call_id to the id of a call in an earlier assistant message, or drop the result",
                    )
                )
                continue
            if cid in answered:
                problems.append(
                    Problem(
                        "orphan_tool_result",
                        i,
                        f"call id {cid!r} already has a result",
                        "keep one tool result per call",
                    )
                )
                continue
            answered.add(cid)
            owner = open_calls.pop(cid, seen_ids[cid])
            if block_owner != owner:
                problems.append(
                    Problem(
                        "tool_not_adjacent",
                        i,
                        f"tool result for call {cid!r} (made at message {owner}) does not directly follow its assistant message",
                        "move tool results right after the assistant message that made the calls",
                    )
                )
            continue
        if msg.role != "system":
            block_owner = None
    for cid, owner in sorted(open_calls.items(), key=lambda kv: kv[1]):
        if owner == len(msgs) - 1:
            # The last message: the run ended with this call (mini-swe-agent's final submit is
            # answered by nothing), so it is the run's end, not a lost result.
            continue
        problems.append(
            Problem(
                "missing_tool_result",
                owner,
                f"tool call {cid!r} has no result",
                "add a tool message with this tool_call_id after the assistant message",
            )
        )
    n_calls = len(trace.call_indices)
    probe_ids: set[str] = set()
    for probe in trace.probes:
        if probe.id in probe_ids:
            problems.append(
                Problem(
                    "duplicate_probe_id",
                    None,
                    f"probe id {probe.id!r} is used twice",
                    "give every probe a unique id",
                )
            )
        probe_ids.add(probe.id)
        if probe.ask_at is not None and not 0 <= probe.ask_at <= n_calls:
            problems.append(
                Problem(
                    "probe_ask_at_out_of_range",
                    None,
                    f"probe {probe.id!r} ask_at={probe.ask_at} but the trace has {n_calls} model calls",
                    f"use null (end of trace) or a call index in 0..{n_calls}",
                )
            )
        bad = [e for e in probe.evidence if not 0 <= e < len(msgs)]
        for e in bad:
            problems.append(
                Problem(
                    "probe_evidence_out_of_range",
                    e,
                    f"probe {probe.id!r} cites evidence message {e}, but the trace has {len(msgs)} messages",
                    "evidence holds 0-based message indices",
                )
            )
        good = [e for e in probe.evidence if 0 <= e < len(msgs)]
        if good and not bad:
            text = "\n".join(message_search_text(msgs[e]) for e in good)
            if not TextIndex.of(text).has_any(probe.answers):
                problems.append(
                    Problem(
                        "probe_answer_not_in_evidence",
                        good[0],
                        f"none of probe {probe.id!r}'s answers appears in its evidence messages {good}"
                        " (as the scorer matches: case, quotes and whitespace aside, as a whole"
                        " token, a path as absolute or relative)",
                        "fix the evidence indices or the answers",
                    )
                )
    for compaction in trace.recorded_compactions:
        if compaction.call > n_calls or compaction.message > len(msgs):
            problems.append(
                Problem(
                    "recorded_compaction_out_of_range",
                    None,
                    f"a recorded compaction at call {compaction.call} / message {compaction.message}"
                    f" lies past the trace's {n_calls} calls / {len(msgs)} messages",
                    "call counts the model calls before the compaction; message is the index of the"
                    " first message after it",
                )
            )
    return problems
