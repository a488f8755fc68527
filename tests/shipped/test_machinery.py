"""The shipped-strategy machinery without a framework: environments and their manifest, the
line protocol, the adaptor's events, and the fault paths (a driver that crashes, hangs, prints
garbage or raises) through a scripted driver run with ctxbench's own python."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from ctxbench import parity
from ctxbench.cell.runner import error_result, resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.cli import cli
from ctxbench.engine.result import RunResult
from ctxbench.formats.canonical import write_traces
from ctxbench.shipped import environment, process
from ctxbench.shipped.environment import Environment, Manifest
from ctxbench.shipped.process import DriverError
from ctxbench.shipped.protocol import ProtocolError, decode_prompt, encode_message
from ctxbench.shipped.releases import DBGPT, Release, find_release
from ctxbench.shipped.strategy import SHIPPED, ShippedStrategy
from ctxbench.sweep.task import Task, run_task
from ctxbench.synth import generate, load_scenario
from ctxbench.trace import Message, Part, Trace
from tests import REPO

SCRIPTED = Release("scripted", "scripted", "1", driver="scripted_driver.py")


@dataclasses.dataclass(frozen=True)
class ScriptedConfig:
    mode: str = "keep"
    at: int = 2


class Scripted(ShippedStrategy):
    """The adaptor with the scripted driver in ctxbench's own environment."""

    name = "scripted"
    Config = ScriptedConfig
    release: ClassVar[Release] = SCRIPTED

    def environment(self) -> Environment:
        manifest = Manifest("x", SCRIPTED.key, (), "3", (), "scripted-env", 0.0)
        return Environment(SCRIPTED, Path(sys.prefix), manifest)

    def driver_program(self) -> Path:
        return REPO / "tests" / "shipped_drivers" / "scripted_driver.py"


@pytest.fixture(autouse=True)
def _drivers(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("CTXBENCH_WIRE_DIR", str(process.DRIVERS_DIR))
    yield
    process.shutdown()


@pytest.fixture()
def trace() -> Trace:
    full = next(generate(load_scenario("coding_agent"), 0))
    return dataclasses.replace(full, messages=full.messages[:30], probes=())


def replay_scripted(trace: Trace, **params: Any) -> list[dict[str, Any]]:
    spec = resolve_spec(
        RunSpec(
            trace.id, trace.content_hash, "tests.shipped.test_machinery:Scripted", params, 16_384
        )
    )
    return [e.to_dict() for e in run_spec(spec, trace).events]


def test_missing_environment_names_the_exact_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXBENCH_CACHE", str(tmp_path))
    traces = tmp_path / "t.jsonl"
    full = next(generate(load_scenario("sql_agent"), 0))
    write_traces(traces, [full])
    done = subprocess.run(
        [sys.executable, "-m", "ctxbench", "run", str(traces), "-s", "shipped:dbgpt@0.8.2",
         "-w", "8192"],
        capture_output=True, text=True, check=False,
        env={**os.environ, "CTXBENCH_CACHE": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "`ctxbench shipped install dbgpt==0.8.2`" in lines[0]


def test_list_and_remove_read_the_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXBENCH_CACHE", str(tmp_path))
    root = environment.environment_dir(DBGPT)
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").symlink_to(sys.executable)
    freeze = ("dbgpt==0.8.2", "cachetools==5.5.2")
    Manifest(environment.MANIFEST_SCHEMA, DBGPT.key, DBGPT.requirements, "3.11.7", freeze,
             "abc123", 42.5).write(root / environment.MANIFEST_NAME)  # fmt: skip
    env = environment.require(DBGPT)
    assert env.manifest.version_of("CacheTools") == "5.5.2"
    listed = json.loads(CliRunner().invoke(cli, ["shipped", "list", "--json"]).output)
    row = next(r for r in listed if r["release"] == "dbgpt==0.8.2")
    assert (row["installed"], row["env_hash"], row["install_seconds"]) == (True, "abc123", 42.5)
    assert not next(r for r in listed if r["release"] == "hermes==0.19.0")["installed"]
    out = CliRunner().invoke(cli, ["shipped", "remove", "dbgpt==0.8.2"]).output
    assert "removed" in out and not root.exists()
    assert environment.installed(DBGPT) is None


def test_a_manifest_for_other_requirements_is_not_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXBENCH_CACHE", str(tmp_path))
    root = environment.environment_dir(DBGPT)
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").symlink_to(sys.executable)
    Manifest(environment.MANIFEST_SCHEMA, DBGPT.key, ("dbgpt==0.8.2",), "3.11.7", (), "h", 1.0
             ).write(root / environment.MANIFEST_NAME)  # fmt: skip
    assert environment.installed(DBGPT) is None


def test_unknown_release_suggests_the_known_one() -> None:
    with pytest.raises(Exception, match=r"did you mean 'dbgpt==0\.8\.2'"):
        find_release("dbgpt==0.8.1")


def test_prompt_items_reference_history_rewrite_and_add() -> None:
    history = [Message("system", "s"), Message("tool", "long output", tool_call_id="c1")]
    out = decode_prompt(
        [{"ref": 0}, {"ref": 1, "content": "short"}, {"role": "user", "content": "summary"}],
        history,
    )
    assert out[0] is history[0]
    assert (out[1].role, out[1].content, out[1].tool_call_id) == ("tool", "short", "c1")
    assert (out[2].role, out[2].content) == ("user", "summary")
    for bad in ([{"ref": 5}], [{"role": "bot", "content": "x"}], {"ref": 0}):
        with pytest.raises(ProtocolError):
            decode_prompt(bad, history)


def test_a_list_content_message_travels_with_its_parts_and_comes_back_rewritten() -> None:
    """Hermes stores a screenshot a tool returned as list content and its prune replaces the
    image by a placeholder part: the driver gets the parts, and a rewrite by parts comes back
    as the reproduction writes it (the text parts one per line, the image's place taken)."""
    image = Part("image_url", data={"image_url": {"url": "data:image/png;base64,AAAA"}})
    shot = Message("tool", "page text", tool_call_id="c1", parts=(Part("text", "page text"), image))
    sent = encode_message(shot, 1)
    assert sent["parts"] == [{"type": "text", "text": "page text"}, image.to_dict()]
    assert "parts" not in encode_message(Message("tool", "plain", tool_call_id="c2"), 2)
    placeholder = {"type": "text", "text": "[screenshot removed to save context]"}
    back = decode_prompt(
        [
            {"ref": 0, "content": [sent["parts"][0], placeholder]},
            {"ref": 0, "content": sent["parts"]},
        ],
        [shot],
    )
    assert back[0].parts == (Part("text", "page text"), Part("text", placeholder["text"]))
    assert back[0].content == "page text\n[screenshot removed to save context]"
    assert not back[0].media_parts and back[0].tool_call_id == "c1"
    assert back[1] is shot  # the same parts: the message as it was
    with pytest.raises(ProtocolError, match="a list of parts"):
        decode_prompt([{"ref": 0, "content": ["not a part"]}], [shot])


def test_summaries_come_from_the_runs_summarizer(trace: Trace) -> None:
    events = replay_scripted(trace, mode="summarize", at=3)
    start = next(e for e in events if e["type"] == SHIPPED)
    assert (start["release"], start["env_hash"]) == ("scripted==1", "scripted-env")
    summaries = [e for e in events if e["type"] == "summary"]
    assert [(s["layer"], s["ok"], s["call"]) for s in summaries] == [("scripted", True, 3)]
    compaction = next(e for e in events if e["type"] == "compaction")
    assert compaction["layer"] == "scripted" and compaction["added"] == 1
    # the next call rebuilds the prompt from the whole history: no compaction event for that
    assert [e["call"] for e in events if e["type"] == "compaction"] == [3]


def test_a_framework_exception_is_a_failed_call_with_its_text(trace: Trace) -> None:
    events = replay_scripted(trace, mode="raise", at=2)
    failed = [e for e in events if e["type"] == "call.failed" and e["call"] < 4]
    assert [(e["call"], e.get("error")) for e in failed] == [(2, "KeyError: 'x'")]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("crash", "exited with code 3"),
        ("garbage", "not JSON: 'this is not json"),
        ("hang", "did not answer within 2 s"),
    ],
)
def test_a_broken_driver_is_an_error_with_its_stderr_tail(
    trace: Trace, monkeypatch: pytest.MonkeyPatch, mode: str, expected: str
) -> None:
    monkeypatch.setenv(process.TIMEOUT_ENV_VAR, "2")
    with pytest.raises(DriverError) as info:
        replay_scripted(trace, mode=mode, at=2)
    message = str(info.value)
    assert expected in message
    assert "stderr tail:" in message and "scripted driver started" in message


def test_a_sweep_goes_on_after_a_crashed_driver_and_reuses_live_ones(
    trace: Trace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "t.jsonl"
    write_traces(source, [trace])
    modes: list[dict[str, Any]] = [
        {"mode": "keep"},
        {"mode": "crash", "at": 1},
        {"mode": "keep", "at": 3},
        {"mode": "keep", "at": 4},
    ]
    name = "tests.shipped.test_machinery:Scripted"
    cells = tuple(
        resolve_spec(
            RunSpec(trace.id, trace.content_hash, name, p, 16_384, trace_source=f"{source}#0")
        )
        for p in modes
    )
    outcomes = run_task(Task(cells))
    rows = [json.loads(o.record)["row"] for o in outcomes]
    assert [o.failed for o in outcomes] == [False, True, False, False]
    assert "simulated crash" in rows[1]["error"] and "exited with code 3" in rows[1]["error"]
    pids = [
        next(e["framework_version"] for e in json.loads(o.record)["events"] if e["type"] == SHIPPED)
        for o in outcomes
        if not o.failed
    ]
    assert pids[0] != pids[1] == pids[2]  # a new driver after the crash, then reused


def test_error_rows_keep_the_driver_text(trace: Trace) -> None:
    spec = RunSpec(trace.id, trace.content_hash, "scripted")
    row = error_result(spec, DriverError("x.py: the driver exited; stderr tail:\nboom"))
    assert row.error is not None and row.error.endswith("boom")


def test_drivers_are_pooled_per_program(trace: Trace) -> None:
    replay_scripted(trace)
    first = set(map(id, process._POOL.values()))
    replay_scripted(trace)
    assert set(map(id, process._POOL.values())) == first and len(first) == 1


def test_the_row_records_the_release_and_the_environment_hash(trace: Trace) -> None:
    spec = resolve_spec(
        RunSpec(trace.id, trace.content_hash, "tests.shipped.test_machinery:Scripted", {}, 16_384)
    )
    row = run_spec(spec, trace).result
    assert (row.release, row.env_hash) == ("scripted==1", "scripted-env")
    plain = run_spec(resolve_spec(RunSpec(trace.id, trace.content_hash, "none", {}, 16_384)), trace)
    assert (plain.result.release, plain.result.env_hash) == ("", "")
    older = {k: v for k, v in row.to_row().items() if k not in ("release", "env_hash")}
    assert RunResult.from_row(older).release == ""  # a row written before the columns existed


def test_a_prompt_item_keeps_its_messages_trace_index_unless_it_carries_nothing(
    trace: Trace,
) -> None:
    """The adaptor declares each step item's ``ref`` as its source: a turn kept without its
    text names the turn, from the call that cut it on, as a re-assembly would; the blanked task
    (an empty stand-in) names nothing."""
    spec = RunSpec(trace.id, trace.content_hash, "tests.shipped.test_machinery:Scripted",
                   {"mode": "cut", "at": 3}, 16_384)  # fmt: skip
    side = parity.replay_side(
        trace, spec.strategy, window=16_384, reserved=0, counter="chars4", params=spec.params
    )
    history = trace.messages
    for state in side.calls[3:]:
        turn = max(i for i in range(trace.call_indices[state.call]) if history[i].tool_calls)
        assert history[turn].content  # the cut rewrote it
        assert state.kept == (0, turn, *range(turn + 1, trace.call_indices[state.call]))
