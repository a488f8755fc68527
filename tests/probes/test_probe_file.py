"""Probe files: probes that travel apart from their traces, read back exactly, with errors that
name the file, the line and the JSON path."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxbench.errors import TraceFormatError
from ctxbench.probes.model import Probe
from ctxbench.probes.probe_file import load_probes, with_probes, write_probes
from ctxbench.synth import generate, load_scenario
from ctxbench.trace import Message, Trace


def test_written_probes_load_back_per_trace(tmp_path: Path) -> None:
    traces = list(generate(load_scenario("support_agent"), 1, count=2))
    path = tmp_path / "p.jsonl"
    assert write_probes(path, traces) == 2
    assert load_probes(path) == {t.id: t.probes for t in traces}


def test_traces_without_probes_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    assert write_probes(path, [Trace("empty", (Message("user", "hi"),))]) == 0
    assert load_probes(path) == {}


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        ('{"trace_id": "a", "probes": []}\n{"trace_id": "a", "probes": []}\n', 2, "$.trace_id"),
        (
            '{"trace_id": "a", "probes": [{"id": "p", "kind": "gossip", "question": "q", "answers": ["x"]}]}\n',
            1,
            "$.probes[0]",
        ),
        ('{"trace_id": "a"}\n', 1, "$"),
        ("\n\n{not json\n", 3, None),
    ],
)
def test_bad_probe_files_name_the_line_and_path(
    tmp_path: Path, text: str, line: int, key: str | None
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text, "utf-8")
    with pytest.raises(TraceFormatError) as err:
        load_probes(path)
    assert err.value.path == str(path) and err.value.line == line
    if key:
        assert err.value.key == key


def test_a_missing_probe_file_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="probes mine"):
        load_probes(tmp_path / "nope.jsonl")


def test_with_probes_adds_new_probes_with_unique_ids() -> None:
    old = Probe("mined-1", "recall", "q", ("842 ms",))
    trace = Trace("t", (Message("user", "842 ms and 9.1 GB"),), probes=(old,))
    same_answer = Probe("mined-9", "recall", "q", ("842 ms",))
    same_id = Probe("mined-1", "recall", "q", ("9.1 GB",))
    merged = with_probes(trace, [same_answer, same_id])
    assert [p.id for p in merged.probes] == ["mined-1", "mined-1~2"]
    assert merged.probes[1].answers == ("9.1 GB",)
    assert with_probes(trace, [same_id], keep_existing=False).probes == (same_id,)
