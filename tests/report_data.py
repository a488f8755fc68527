"""A small, real results directory for the report tests: two traces (one recorded-style with
provider usage, one hostile: HTML and script in its content, id and probes) replayed through
``none``, ``sliding_window`` and a 2 x 2 DB-GPT threshold grid in two windows, written the
way ``ctxbench run --out/--events`` writes rows and events."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from ctxbench.cell.runner import resolve_spec, run_spec
from ctxbench.cell.spec import RunSpec
from ctxbench.counting import get_counter
from ctxbench.engine.events import event_line
from ctxbench.engine.result import RunResult
from ctxbench.formats.canonical import write_traces
from ctxbench.probes.model import Probe
from ctxbench.results.table import column_types
from ctxbench.trace import Message, ToolCall, Trace, Usage


def result_row(**fields: object) -> RunResult:
    """A row with every column at a neutral value (no probes, no error) but ``fields``."""
    neutral: dict[type, object] = {str: "", int: 0, float: 0.0, bool: True}
    row = {name: neutral[tp] for name, tp in column_types().items()}
    row.update(params="{}", compactions="{}", retention_by_kind="{}", spec="{}")
    row.update(retention=None, recoverability=None, cost_usd=None, error=None)
    row.update(fields)
    return RunResult.from_row(row)


SCRIPT = "<script>window.__pwned=1</script>"
IMG = '"><img src=x onerror="window.__pwned=2">'
HOSTILE_ID = 'evil"><img src=x onerror="window.__pwned=3">'
COUNTER = "tiktoken:o200k_base"
WINDOWS = (5000, 9000)
CONFIGS: tuple[tuple[str, Mapping[str, object]], ...] = (
    ("none", {}),
    ("sliding_window", {"keep_rounds": 2}),
    ("sliding_window", {"keep_rounds": 6}),
    *(
        ("dbgpt", {"warning_threshold": w, "error_threshold": e, "min_keep_tokens": 500})
        for w in (0.5, 0.7)
        for e in (0.85, 0.9)
    ),
)

_LOG = "2024-05-01T10:{m:02d}:00Z INFO worker-{i} processed batch {i} in {ms} ms status=ok\n"


def _round(i: int, payload: str) -> list[Message]:
    call = ToolCall(f"c{i}", "bash", json.dumps({"cmd": f"cat part_{i}.log"}))
    return [
        Message("assistant", f"Step {i}: read part {i}.", tool_calls=(call,)),
        Message("tool", payload, tool_call_id=call.id, name="bash"),
    ]


def plain_trace(rounds: int = 24) -> Trace:
    """A coding-agent trace with logs and JSON results and recorded usage on every call."""
    counter = get_counter(COUNTER)
    messages = [
        Message("system", "You are a careful agent."),
        Message("user", "Find why the nightly job fails. The deploy key is KEY-7731."),
    ]
    for i in range(rounds):
        if i % 2:
            payload = json.dumps(
                [{"id": j, "name": f"item-{i}-{j}", "ok": j % 3 != 0} for j in range(30)]
            )
        else:
            payload = "".join(_LOG.format(m=j % 60, i=i * 100 + j, ms=17 * j) for j in range(40))
        messages += _round(i, payload)
    messages.append(Message("assistant", "The job fails on batch 3; KEY-7731 is fine."))
    with_usage = []
    for index, message in enumerate(messages):
        if message.role == "assistant":
            prompt = counter.count_prompt(messages[:index]) + 7
            message = Message(
                message.role,
                message.content,
                tool_calls=message.tool_calls,
                usage=Usage(prompt_tokens=prompt, completion_tokens=20),
            )
        with_usage.append(message)
    probes = (
        Probe("key", "recall", "Which deploy key?", ("KEY-7731",), evidence=(1,)),
        Probe(
            "batch", "artifact", "Which worker logged batch 305?", ("worker-305",), evidence=(9,)
        ),
    )
    return Trace("plain", tuple(with_usage), probes=probes, meta={"model": "gpt-4o"})


def hostile_trace(rounds: int = 18) -> Trace:
    """Content, id and probes full of markup that must show as text and never run."""
    messages = [
        Message("system", f"System prompt {SCRIPT}"),
        Message("user", f"Task: fix the page. Marker {IMG} and {SCRIPT}."),
    ]
    for i in range(rounds):
        messages += _round(i, f"line {i} {SCRIPT} " + "data " * 300)
    messages.append(Message("assistant", "Done."))
    probes = (
        Probe("xss-1", "recall", f"What did the task say? {SCRIPT}", (IMG,), evidence=(1,)),
        Probe("xss-2", "decision", f"Which marker {IMG}?", ("Marker",), evidence=(1,)),
    )
    return Trace(HOSTILE_ID, tuple(messages), probes=probes)


def build_results(directory: Path) -> Path:
    """Replay every config and write ``results.jsonl``, ``events.jsonl`` and the trace file."""
    directory.mkdir(parents=True, exist_ok=True)
    traces = [plain_trace(), hostile_trace()]
    source = directory / "traces.jsonl"
    write_traces(source, traces)
    rows, lines = [], []
    for trace in traces:
        for strategy, params in CONFIGS:
            for window in WINDOWS:
                spec = resolve_spec(
                    RunSpec(
                        trace_id=trace.id,
                        trace_hash=trace.content_hash,
                        strategy=strategy,
                        params=params,
                        window=window,
                        reserved=500,
                        counter=COUNTER,
                        trace_source=str(source),
                    )
                )
                output = run_spec(spec, trace)
                rows.append(output.result.to_row())
                lines += [event_line(e, run_id=spec.run_id) for e in output.events]
    with (directory / "results.jsonl").open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    (directory / "events.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


PRICES = '[prices."tiktoken:o200k_base"]\ninput_per_mtok = 2.5\ncached_input_per_mtok = 1.25\n'


@cache
def built_report() -> Path:
    """The results directory with ``report.html`` written from it (with ``prices.toml``),
    built once per test process and shared by the report tests (removed at exit)."""
    from ctxbench.decisions.verdict import Verdict
    from ctxbench.report.write import write_report

    root = Path(tempfile.mkdtemp(prefix="ctxbench-report-test-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    results = build_results(root / "results")
    (root / "prices.toml").write_text(PRICES, encoding="utf-8")
    written = write_report(
        results,
        results / "report.html",
        prices_file=root / "prices.toml",
        **Verdict().report_args(),
    )
    assert written.notes == (), written.notes
    return results
