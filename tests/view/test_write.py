"""The viewer's data files: a page reads one call's prompt from at most two chunks of calls and
the chunks (and files) of the messages it shows; long messages and large calls are split out
so that what one call needs does not grow with the run."""

from __future__ import annotations

import json
from bisect import bisect_right
from pathlib import Path
from typing import Any

import pytest

from ctxbench.view import build, write
from tests.viewing import two_runs


def _data(viewer: Path, key: str) -> Any:
    text = (viewer / "data" / f"{key}.js").read_text("utf-8")
    return json.loads(text[text.index(",") + 1 : text.rindex(")")])


def _calls(viewer: Path, run: str) -> list[dict[str, Any]]:
    """Every call's entry, found as the page finds it (the last chunk starting at or before)."""
    starts = _data(viewer, f"{run}/run")["call_chunks"]
    out = []
    for k in range(_data(viewer, f"{run}/run")["calls"]):
        c = bisect_right(starts, k) - 1
        out.append(_data(viewer, f"{run}/calls-{c}")[k - starts[c]])
    return out


def _messages(viewer: Path, run: str, ids: range) -> list[dict[str, Any]]:
    """Messages as the page reads them: from their chunk, or their own file for a stub."""
    per = _data(viewer, "index")["messages_per_chunk"]
    out = []
    for i in ids:
        record = _data(viewer, f"{run}/msgs-{i // per}")[i % per]
        out.append(_data(viewer, f"{run}/msg-{i}") if record.get("apart") else record)
    return out


@pytest.fixture(scope="module")
def viewers() -> tuple[Path, Path, list[str]]:
    runs = two_runs()
    plain = build(runs.rows_file, runs.root / "viewer-plain").parent
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(write, "APART_TEXT", 200)
        patch.setattr(write, "CALL_CHUNK_CHARS", 2_000)
        split = build(runs.rows_file, runs.root / "viewer-split").parent
    return plain, split, [str(r["run_id"]) for r in runs.rows]


def test_split_chunks_hold_the_same_calls_and_messages(
    viewers: tuple[Path, Path, list[str]],
) -> None:
    plain, split, runs = viewers
    for run in runs:
        calls = _calls(plain, run)
        assert _calls(split, run) == calls
        n = 1 + max(b for c in calls for _, b in c["ranges"])
        assert _messages(split, run, range(n)) == _messages(plain, run, range(n))


def test_a_long_message_is_in_a_file_of_its_own(viewers: tuple[Path, Path, list[str]]) -> None:
    _, split, runs = viewers
    own = sorted((split / "data" / runs[0]).glob("msg-*.js"))
    assert own, "the runs hold messages over 200 characters"
    per = _data(split, "index")["messages_per_chunk"]
    for path in own:
        i = int(path.stem.removeprefix("msg-"))
        assert _data(split, f"{runs[0]}/msgs-{i // per}")[i % per] == {"apart": True}
        assert len(_data(split, f"{runs[0]}/msg-{i}")["content"]) > 200


def test_chunks_of_calls_end_past_their_size(viewers: tuple[Path, Path, list[str]]) -> None:
    plain, split, runs = viewers
    starts = _data(split, f"{runs[0]}/run")["call_chunks"]
    assert len(starts) > len(_data(plain, f"{runs[0]}/run")["call_chunks"])
    for c in range(len(starts) - 1):
        entries = _data(split, f"{runs[0]}/calls-{c}")
        assert len(entries) == starts[c + 1] - starts[c]
        sizes = [len(json.dumps(e, separators=(",", ":"), ensure_ascii=False)) for e in entries]
        assert sum(sizes[:-1]) < 2_000  # the chunk ended at the first call past the size


def test_a_models_answers_are_shown_at_their_call(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ctxbench.cli import cli
    from ctxbench.formats.canonical import write_traces
    from tests.answering.server import fact_trace, facts_of, running, scripted_server

    write_traces(tmp_path / "t.jsonl", [fact_trace()])
    served = running(scripted_server(facts_of(fact_trace().probes)))
    server = next(served)
    args = ["run", str(tmp_path / "t.jsonl"), "-s", "sliding_window", "--set", "keep_rounds=2"]
    args += ["-w", "100000", "--reserved", "0", "-c", "chars4", "--out", str(tmp_path / "r.jsonl")]
    args += ["--events", str(tmp_path / "e.jsonl"), "--answerer", f"m@{server.url}"]
    args += ["--next-action", "--answerer-cache", str(tmp_path / "c"), "-q"]
    result = CliRunner().invoke(cli, args)
    served.close()
    assert result.exit_code == 0, result.output
    viewer = build(tmp_path / "e.jsonl", tmp_path / "v", rows=tmp_path / "r.jsonl").parent
    (run,) = [r["id"] for r in _data(viewer, "index")["runs"]]
    calls = _calls(viewer, run)
    steps = {k for k, c in enumerate(calls) for e in c["events"] if e["type"] == "next_action"}
    compacted = {k for k, c in enumerate(calls) for e in c["events"] if e["type"] == "compaction"}
    assert steps == compacted - {len(calls) - 1} != set()
    (answer,) = [e for c in calls for e in c["events"] if e["type"] == "probe.answer"]
    assert (answer["verdict"], answer["answer"]) == ("missed", "unknown")
