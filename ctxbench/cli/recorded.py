"""``ctxbench recorded``: replay recorded sessions and compare the strategy's compactions with
the ones the real agent recorded (Claude Code ``compact_boundary``, Codex ``compacted``)."""

from __future__ import annotations

import click

from ctxbench.cell.spec import RunSpec
from ctxbench.cell.traces import AUTO, open_traces
from ctxbench.cli.importing import format_option
from ctxbench.cli.options import counter_option, json_option, sets_option, traces_argument
from ctxbench.cli.running import strategy_params
from ctxbench.cli.sizes import TOKENS
from ctxbench.formats import FORMATS
from ctxbench.recorded import CLAUDE_CODE_MAX_OUTPUT, CLAUDE_CODE_WINDOW, render, replay_recorded
from ctxbench.strategies import RECORDED_DEFAULT


@click.command("recorded")
@traces_argument(required=True)
@click.option(
    "--strategy",
    "-s",
    default=RECORDED_DEFAULT,
    show_default=True,
    help="The reproduction to check (a strategy name or module:Class).",
)
@sets_option()
@format_option("TRACES")
@click.option(
    "--window",
    "-w",
    type=TOKENS,
    default=CLAUDE_CODE_WINDOW,
    show_default=True,
    help="The model's context window: tokens (200000; 200k = 204,800) or a model name "
    "(claude-opus-4-6: `ctxbench windows`).",
)
@click.option(
    "--reserved",
    type=int,
    default=CLAUDE_CODE_MAX_OUTPUT,
    show_default=True,
    help="The model's output limit (Claude Code's default max output tokens).",
)
@counter_option(
    default=RunSpec.counter, show_default=True, help="The simulated provider's true counter."
)
@json_option("Print one JSON list instead of text.")
def recorded(
    traces: tuple[str, ...],
    strategy: str,
    sets: tuple[str, ...],
    format_name: str,
    window: int,
    reserved: int,
    counter: str,
    as_json: bool,
) -> None:
    """Replay TRACES (recorded sessions, any importable format) through a strategy and print,
    per recorded compaction, the call at which the strategy compacts and its count there
    against the recorded pre-compaction count (Claude Code's preTokens).

    The replay keeps the uncompacted history (the messages before each recorded boundary are
    there). For claude_code on a Claude Code session the session's CLI version and Claude
    Code's 32,000 output limit are taken from the trace, as `run` and sweeps do, unless
    --set cli_version=... / max_output_tokens=... is given.

    \b
    Examples:
      ctxbench recorded ~/.claude/projects/my-proj/SESSION.jsonl
      ctxbench recorded SESSION.jsonl -s claude_code --set usage_anchored=false --json
    """
    if format_name != AUTO and format_name not in FORMATS:
        FORMATS.entry(format_name)  # raises with "did you mean"
    params = strategy_params(strategy, None, sets)
    parities = [
        replay_recorded(trace, strategy, params, window=window, reserved=reserved, counter=counter)
        for path in traces
        for trace in open_traces(path, format_name).traces()
    ]
    click.echo(render(parities, as_json=as_json))
