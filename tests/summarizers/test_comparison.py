"""``ctxbench summaries``: the request the strategy makes, and any summarizer measured beside
the recorded summary (the facts an agent used after a compaction are the needed facts of
``tests/probes/test_needed.py``)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ctxbench.cli import cli
from ctxbench.counting import get_counter
from ctxbench.formats.importing import import_file
from ctxbench.summarizers import build_summarizer
from ctxbench.summarizers.comparison import (
    compare,
    history_before,
    recorded_request,
    render,
)
from ctxbench.trace import Message, ToolCall

EXCERPT = Path(__file__).parents[1] / "golden" / "sessions" / "claude_code_session.jsonl"
TRANSCRIPTS = "marot+spotter/test/fixtures/transcripts"


def call(name: str, arguments: str) -> Message:
    return Message("assistant", "", tool_calls=(ToolCall("c", name, arguments),))


def test_the_request_is_the_one_claude_code_makes_at_that_call() -> None:
    (trace,), _ = import_file(EXCERPT)
    history, start = history_before(trace, 0)
    request = recorded_request(trace, 0, history)
    assert start == 0 and request.strategy == "claude_code"
    assert request.key == f"{trace.id}:{trace.recorded_compactions[0].call}:autocompact:0"
    assert request.max_tokens == 20_000 and request.sections[0].startswith("1. Primary Request")
    assert request.prompt.endswith(
        "9. Optional Next Step: List the next step that you will"
        " take that is related to the most recent work you were doing.\n"
    )


def test_the_recorded_summary_against_itself_keeps_the_same() -> None:
    (trace,), _ = import_file(EXCERPT)
    (row,) = compare([trace], build_summarizer("recorded").for_trace(trace), get_counter("chars4"))  # type: ignore[attr-defined]
    assert row.ours == row.recorded


def test_the_table_and_the_json(shared_traces: Path) -> None:
    paths = sorted(str(p) for p in (shared_traces / TRANSCRIPTS).glob("*.jsonl"))
    runner = CliRunner()
    out = runner.invoke(cli, ["summaries", *paths, "--summarizer", "extractive"])
    assert out.exit_code == 0, out.output
    assert "all 3 compactions" in out.output and "used after, kept" in out.output
    as_json = runner.invoke(cli, ["summaries", *paths, "--summarizer", "extractive", "--json"])
    doc = json.loads(as_json.output)
    rows = doc["compactions"]
    assert doc["summarizer"] == "extractive" and len(rows) == 3
    # the verbatim upper bound fills the budget; the real model wrote 3-4k tokens. Both keep
    # most mined probes (now the files the agent needed, which real summaries list), but of
    # the facts the agent went on to use, the real summary kept under half and the verbatim
    # upper bound most (45% and 88% when measured)
    for row in rows:
        assert row["summarizer"]["tokens"] > 2.5 * row["recorded"]["tokens"]
    kept = sum(r["summarizer"]["probes_kept"]["kept"] for r in rows)
    of = sum(r["recorded"]["probes_kept"]["of"] for r in rows)
    assert kept / of > 0.7
    used = [sum(r[side]["used_after"]["kept"] for r in rows) for side in ("summarizer", "recorded")]
    facts = sum(r["recorded"]["used_after"]["of"] for r in rows)
    assert used[1] / facts < 0.5 and used[0] / facts > used[1] / facts + 0.3


def test_no_recorded_summary_says_so() -> None:
    assert render([], "x") == "no recorded compaction with a summary in these traces"


def test_an_openhands_condensation_gets_the_condenser_request(tmp_path: Path) -> None:
    def action(n: int) -> dict[str, object]:
        call = {"id": f"c{n}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        return {"kind": "ActionEvent", "source": "agent", "tool_call": call, "tool_name": "bash"}

    def result(n: int) -> dict[str, object]:
        text = {"kind": "TextObservation", "content": [{"type": "text", "text": "lib/a.py"}]}
        return {"kind": "ObservationEvent", "tool_call_id": f"c{n}", "observation": text}

    condensed = {"kind": "Condensation", "summary": "the agent read lib/a.py", "source": "x"}
    history = [action(1), result(1), action(2), result(2), condensed, action(3), result(3)]
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps({"instance_id": "i", "instruction": "go", "history": history}))
    (trace,), _ = import_file(path, "openhands")
    (row,) = compare([trace], build_summarizer("model_like"), get_counter("chars4"))
    assert (row.strategy, row.call) == ("openhands_summarizing", 2)
    request = recorded_request(trace, 0, history_before(trace, 0)[0])
    assert request.prompt.endswith("Now summarize the events using the rules above.")
    assert request.messages[0].role == "assistant"  # the first event (the task) stays
