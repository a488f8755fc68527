"""Cut small excerpts of the shared recorded sessions into ``tests/golden/sessions/``.

The tests of the Claude Code, Codex, OpenHands completion-log and tau2 (Claude thinking)
importers run on these when ``CTXBENCH_TRACES`` is unset. Each excerpt keeps whole entries
(so calls, tool pairs, usage and the compaction boundary stay as recorded) and shortens long
strings to ``LIMIT`` characters, except the tool result just before the Claude Code boundary,
whose length the recorded ``preTokens`` counts. Sources and licences: ``../shared/traces/SOURCES.md``
(marot/spotter MIT, codemie-ai/codemie-code Apache-2.0, OpenHands/software-agent-sdk MIT,
sierra-research/tau2-bench MIT); ``sessions/README.md`` repeats them.

Run once, review the diff, commit::

    CTXBENCH_TRACES=../shared/traces .venv/bin/python tests/golden/make_session_excerpts.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

LIMIT = 240
HERE = Path(__file__).parent / "sessions"
ROOT = Path(os.environ.get("CTXBENCH_TRACES", "../shared/traces"))
CLAUDE = ROOT / "marot+spotter/test/fixtures/transcripts/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
CODEX = next((ROOT / "codemie-ai+codemie-code").rglob("rollout-*.jsonl"), Path("missing"))
OPENHANDS = ROOT / "OpenHands+software-agent-sdk/tests/fixtures/llm_data/llm-logs"
TAU2 = next((ROOT / "sierra-research+tau2-bench").rglob("*.json"), Path("missing"))


def shorten(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= LIMIT else value[:LIMIT] + "[cut]"
    if isinstance(value, list):
        return [shorten(v) for v in value]
    if isinstance(value, dict):
        return {k: shorten(v) for k, v in value.items()}
    return value


def call_starts(entries: list[dict[str, Any]]) -> list[int]:
    """Indices of the first entry of each Claude Code API call."""
    starts, last = [], None
    for i, e in enumerate(entries):
        if e.get("type") == "assistant" and e["message"]["id"] != last:
            starts.append(i)
            last = e["message"]["id"]
    return starts


def claude_code() -> list[str]:
    entries = [json.loads(line) for line in CLAUDE.read_text("utf-8").splitlines()]
    starts = call_starts(entries)
    boundary = next(i for i, e in enumerate(entries) if e.get("subtype") == "compact_boundary")
    before = [s for s in starts if s < boundary]
    after = [s for s in starts if s > boundary]
    keep = list(range(0, starts[4]))  # the session start and its first four calls
    keep += range(before[-3], boundary)  # the last calls before the boundary, kept exact
    keep += range(boundary, after[2])  # the boundary, the summary and two calls after it
    exact = set(range(before[-1], boundary))
    progress = [i for i in keep if entries[i].get("type") == "progress"]
    keep = [i for i in keep if i not in progress[3:]]  # three progress entries are enough
    out = []
    for i in keep:
        entry = shorten(entries[i])
        if i in exact and "message" in entry:  # the count before the boundary reads these
            entry["message"] = entries[i]["message"]
        out.append(json.dumps(entry, ensure_ascii=False))
    return out


def codex() -> list[str]:
    lines = [json.loads(line) for line in CODEX.read_text("utf-8").splitlines()]
    return [json.dumps(shorten(r), ensure_ascii=False) for r in lines[:40]]


def openhands() -> dict[str, str]:
    files = sorted(OPENHANDS.glob("*.json"))[:2]
    out = {}
    for path in files:
        data = json.loads(path.read_text("utf-8"))
        out[path.name] = json.dumps(shorten(data), ensure_ascii=False, indent=1)
    return out


def tau2() -> str:
    data = json.loads(TAU2.read_text("utf-8"))
    sim = dict(data["simulations"][0])
    sim["messages"] = sim["messages"][:8]
    info = dict(data["info"])
    info["environment_info"] = {
        k: v for k, v in info["environment_info"].items() if k in ("domain_name", "policy")
    }
    cut = {"timestamp": data["timestamp"], "info": info, "tasks": [], "simulations": [sim]}
    return json.dumps(shorten(cut), ensure_ascii=False, indent=1)


def main() -> None:
    HERE.mkdir(exist_ok=True)
    (HERE / "claude_code_session.jsonl").write_text("\n".join(claude_code()) + "\n", "utf-8")
    (HERE / "codex_rollout.jsonl").write_text("\n".join(codex()) + "\n", "utf-8")
    logs = HERE / "openhands_logs"
    logs.mkdir(exist_ok=True)
    for name, text in openhands().items():
        (logs / name).write_text(text + "\n", "utf-8")
    (HERE / "tau2_claude_thinking.json").write_text(tau2() + "\n", "utf-8")


if __name__ == "__main__":
    main()
