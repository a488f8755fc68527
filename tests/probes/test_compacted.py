"""Grading a saved compaction: the real summary Claude Code wrote in a recorded session is
graded as a person graded it, a replay's prompt saved to a file is graded as the engine scored
it, and the cut picks the probes the compaction had to carry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxbench.answering.asking import chat_message
from ctxbench.cell.runner import resolve_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.counting import get_counter
from ctxbench.engine import events as ev
from ctxbench.errors import TraceFormatError
from ctxbench.formats.canonical import write_traces
from ctxbench.formats.importing import open_source
from ctxbench.probes.compacted import Cut, default_cut, grade, probes_for, read_compacted
from ctxbench.probes.model import Probe
from ctxbench.synth import generate, load_scenario
from ctxbench.trace import Message, Trace
from ctxbench.view.capture import capture_run
from tests.probes.test_matching_sample import MAX_FALSE_NEGATIVES, MAX_FALSE_POSITIVES, sample

SESSION = "marot+spotter/test/fixtures/transcripts/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
O200K = get_counter("tiktoken:o200k_base")


@pytest.fixture(scope="module")
def session(shared_traces: Path) -> Trace:
    (trace,) = open_source(shared_traces / SESSION).traces()
    return trace


@pytest.fixture(scope="module")
def summary(session: Trace, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The summary the real model wrote at the session's compaction, saved as a product would."""
    path = tmp_path_factory.mktemp("cc") / "summary.md"
    path.write_text(session.recorded_compactions[0].summary, "utf-8")
    return path


def test_a_real_summary_is_graded_as_the_person_who_read_it(summary: Path, tmp_path: Path) -> None:
    rows = [r for r in sample() if r["file"] == Path(SESSION).name and r["compaction"] == 0]
    probes = tuple(
        Probe(str(r["id"]), "recall", "?", (str(r["answer"]),), evidence=(0,)) for r in rows
    )
    graded = grade(read_compacted(summary), probes, O200K)
    outcomes = {g.probe.id: g.outcome for g in graded.graded}
    labels = {str(r["id"]): r["label"] for r in rows}
    assert set(outcomes) == set(labels) and len(labels) > 50
    false_pos = [i for i, o in outcomes.items() if o == "in_context" and labels[i] == "lost"]
    false_neg = [i for i, o in outcomes.items() if o == "lost" and labels[i] == "kept"]
    assert len(false_pos) <= MAX_FALSE_POSITIVES and len(false_neg) <= MAX_FALSE_NEGATIVES
    # measured on this summary (the README says so): every one of the 72 verdicts agrees
    assert (false_pos, false_neg) == ([], [])
    assert {"in_context", "lost"} <= set(outcomes.values())


def test_the_cut_is_the_recorded_compaction_and_the_share_its_history(
    session: Trace, summary: Path
) -> None:
    (compaction,) = session.recorded_compactions
    cut = Cut(session, default_cut(session))
    assert cut.call == compaction.call and cut.end == session.call_indices[compaction.call]
    probes = probes_for(session, None, source=SESSION)  # mined: the session has none planted
    graded = grade(read_compacted(summary), probes, O200K, cut=cut)
    assert graded.graded and graded.left_out
    assert len(graded.graded) + graded.left_out == len(probes)
    for g in graded.graded:  # asked after the compaction, about a fact stated before it
        assert g.probe.ask_at is not None and g.probe.ask_at >= compaction.call
        assert min(g.probe.evidence) < cut.end
    history = sum(O200K.count_message(m) for m in session.messages[: cut.end])
    assert graded.history_tokens == history
    assert graded.compacted_tokens == O200K.count_message(Message("user", compaction.summary))
    assert graded.share == graded.compacted_tokens / history and 0 < graded.share < 0.1


def test_a_saved_prompt_is_graded_as_the_replay_scored_it(tmp_path: Path) -> None:
    """Every call where the engine scored probes: that call's prompt, saved as chat messages
    and graded from the file, gives the engine's outcome for each probe asked there."""
    (trace,) = generate(load_scenario("coding_agent"), seed=3)
    write_traces(tmp_path / "t.jsonl", [trace])
    spec = resolve_spec(
        RunSpec(
            trace_id=trace.id,
            trace_hash=trace.content_hash,
            strategy="sliding_window",
            params={"keep_rounds": 4},
            window=128_000,
            trace_source=str(tmp_path / "t.jsonl"),
        )
    )
    capture = capture_run(spec, trace, None)
    scored = [e for e in capture.events if isinstance(e, ev.ProbeScored) and not e.reason]
    assert {e.outcome for e in scored} >= {"in_context", "lost"}, "nothing to compare"
    by_id = {p.id: p for p in trace.probes}
    for call in sorted({e.call for e in scored}):
        saved = tmp_path / f"call-{call}.json"
        saved.write_text(json.dumps([chat_message(m) for m in capture.prompt(call)]), "utf-8")
        asked = [e for e in scored if e.call == call]
        result = grade(read_compacted(saved), [by_id[e.probe_id] for e in asked], O200K)
        assert [g.outcome for g in result.graded] == [e.outcome for e in asked], call
        assert [g.bare for g in result.graded] == [e.bare for e in asked], call


def test_a_canonical_trace_file_is_a_transcript(tmp_path: Path) -> None:
    trace = Trace("c", (Message("system", "s"), Message("user", "The port is 8123.")))
    write_traces(tmp_path / "c.jsonl", [trace])
    compacted = read_compacted(tmp_path / "c.jsonl")
    assert compacted.messages == trace.messages and compacted.read_as.startswith("transcript")
    probe = Probe("p", "recall", "Which port?", ("8123",), stale_answers=("8080",))
    assert grade(compacted, [probe], O200K).graded[0].outcome == "in_context"
    stale = read_compacted(_text(tmp_path / "s.txt", "We moved off port 8080."))
    assert grade(stale, [probe], O200K).graded[0].outcome == "stale"


def _text(path: Path, text: str) -> Path:
    path.write_text(text, "utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.txt", "  \n", "the summary is empty"),
        ("bad.json", "[{", "JSON"),
        ("two.jsonl", None, "holds 2 conversations"),
        ("latin.txt", b"caf\xe9", "cannot read"),
        ("missing.md", "", "no such file"),
    ],
)
def test_a_bad_file_is_one_error_naming_it(
    tmp_path: Path, name: str, content: str | bytes | None, message: str
) -> None:
    path = tmp_path / name
    if content is None:
        write_traces(path, [Trace(f"t{i}", (Message("user", "hi"),)) for i in range(2)])
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif name != "missing.md":
        path.write_text(content, "utf-8")
    with pytest.raises(TraceFormatError, match=message) as caught:
        read_compacted(path)
    assert str(path) in str(caught.value) and "hint:" in str(caught.value)


def test_a_probe_file_of_several_traces_needs_the_trace() -> None:
    probe = Probe("p", "recall", "?", ("x",))
    with pytest.raises(TraceFormatError, match="holds the probes of 2 traces"):
        probes_for(None, {"a": (probe,), "b": (probe,)}, source="p.jsonl")
    other = Trace("c", (Message("user", "x"),))
    with pytest.raises(TraceFormatError, match="has no probes for trace 'c'"):
        probes_for(other, {"a": (probe,)}, source="p.jsonl")
    assert probes_for(None, {"a": (probe,)}, source="p.jsonl") == (probe,)
