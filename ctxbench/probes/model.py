"""The probe: a question about one fact in a trace, and the answers that count as kept."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxbench.jsontext import require_object, with_meta

PROBE_KINDS: tuple[str, ...] = (
    "recall",
    "artifact",
    "decision",
    "continuation",
    "constraint",
    "superseded",
    "finished_task",
    "task",
    "needed",
    "safety",
    "preference",
)

_PROBE_KEYS = ("id", "kind", "question", "answers", "evidence", "ask_at", "stale_answers", "meta")


@dataclass(frozen=True)
class Probe:
    """A fact to look for at an ask point.

    ``ask_at`` is the 0-based index of the model call before which the probe is asked;
    ``None`` asks it at the end of the trace. ``evidence`` lists the message indices that
    hold the fact; ``stale_answers`` are superseded values (found alone, they score "stale").
    """

    id: str
    kind: str
    question: str
    answers: tuple[str, ...]
    evidence: tuple[int, ...] = ()
    ask_at: int | None = None
    stale_answers: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "question": self.question,
            "answers": list(self.answers),
            "evidence": list(self.evidence),
            "ask_at": self.ask_at,
        }
        if self.stale_answers:
            out["stale_answers"] = list(self.stale_answers)
        return with_meta(out, self.meta)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Probe:
        """Build from the canonical dict; unknown keys go to ``meta``. Raises KeyError/TypeError/ValueError."""
        data = require_object(data, "a probe")
        meta = dict(data.get("meta") or {})
        meta.update({k: v for k, v in data.items() if k not in _PROBE_KEYS})
        kind = str(data["kind"])
        if kind not in PROBE_KINDS:
            raise ValueError(f"probe kind {kind!r} is not one of {', '.join(PROBE_KINDS)}")
        answers = data["answers"]
        if isinstance(answers, str) or not isinstance(answers, list) or not answers:
            raise ValueError("probe 'answers' must be a non-empty list of strings")
        ask_at = data.get("ask_at")
        if ask_at is not None and (isinstance(ask_at, bool) or not isinstance(ask_at, int)):
            raise ValueError("probe 'ask_at' must be null or an integer model-call index")
        evidence = data.get("evidence") or []
        if not isinstance(evidence, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in evidence
        ):
            raise ValueError("probe 'evidence' must be a list of message indices")
        stale = data.get("stale_answers") or []
        if not isinstance(stale, list):
            raise ValueError("probe 'stale_answers' must be a list of strings")
        return cls(
            id=str(data["id"]),
            kind=kind,
            question=str(data.get("question", "")),
            answers=tuple(str(a) for a in answers),
            evidence=tuple(evidence),
            ask_at=ask_at,
            stale_answers=tuple(str(a) for a in stale),
            meta=meta,
        )
