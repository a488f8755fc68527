"""The ``ctxbench`` command line. Commands load lazily, so ``ctxbench --help`` stays fast.

Each command lives in its own module under :mod:`ctxbench.cli` and only parses arguments into
specs and calls the API; ctxbench's own errors print as one clear message and exit code 2.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import click

from ctxbench.errors import CtxbenchError

#: command name -> (module under ctxbench.cli, function, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "demo": (
        "demo",
        "demo",
        "Run the quickstart job on the embedded scenarios and write its report.",
    ),
    "counters": ("counting", "counters", "List token counters (exact tokenizers and estimators)."),
    "count": ("counting", "count", "Count tokens of text or traces with one or more counters."),
    "validate": ("validating", "validate", "Check traces for structural problems."),
    "run": ("running", "run", "Replay traces through one compaction strategy."),
    "strategies": ("strategies", "strategies", "List compaction strategies with their knobs."),
    "gen": ("generating", "gen", "Generate synthetic traces from a scenario."),
    "scenarios": ("generating", "scenarios", "List the embedded scenarios."),
    "probes": ("probing", "probes", "Mine probes from recorded traces."),
    "import": ("importing", "import_", "Import recorded traces into the canonical format."),
    "calibrate": ("calibrating", "calibrate", "Compare a counter with provider-reported usage."),
    "sweep": ("sweeping", "sweep", "Run a sweep of traces x strategies x windows x counters."),
    "report": ("reporting", "report", "Write the HTML report of a results directory."),
    "drift": ("reporting", "drift", "Write the token-counting drift report for traces."),
    "recommend": ("recommending", "recommend", "Name the config to deploy, with its intervals."),
    "baseline": ("gating", "baseline", "Record a baseline of a results directory."),
    "check": ("gating", "check", "Compare results with a baseline; exit 1 on regression."),
    "diff": ("gating", "diff", "Show where two replays of the same trace diverge."),
    "losses": ("gating", "losses", "List the probes runs lost, where, and each kind's cliff."),
    "score": ("scoring", "score", "Grade a compaction saved to a file against a trace's probes."),
    "recorded": (
        "recorded",
        "recorded",
        "Compare a strategy's compactions with the ones a recorded session made.",
    ),
    "summaries": (
        "summaries",
        "summaries",
        "Compare a summarizer with the summaries recorded sessions wrote.",
    ),
    "view": ("viewing", "view", "Write (or serve) a viewer of runs: the prompt at every call."),
    "init": ("initializing", "init", "Write a commented starter sweep for your traces."),
    "shipped": ("shipped", "shipped", "Install, list and remove released framework environments."),
    "parity": ("parity", "parity", "Compare a reproduction with the released code, call by call."),
    "windows": (
        "windowing",
        "windows",
        "List the model windows a --window may name, with sources.",
    ),
    "cost": (
        "costing",
        "cost",
        "What a threshold costs per 1,000 tasks, with and without compaction.",
    ),
}


ALLOW_PLUGINS = "--allow-plugins"


class LazyGroup(click.Group):
    """A click group whose commands are imported only when invoked (or listed by --help)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # --allow-plugins is the group's option, also accepted after the subcommand
        end = args.index("--") if "--" in args else len(args)
        if ALLOW_PLUGINS in args[1:end]:
            ctx.meta["ctxbench.allow_plugins"] = True
            args = [a for i, a in enumerate(args) if i >= end or a != ALLOW_PLUGINS]
        ctx.meta["ctxbench.argv"] = tuple(args)  # the plug-ins the user named (registry.py)
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in COMMANDS if self._available(name)]

    @staticmethod
    def _available(name: str) -> bool:
        module = COMMANDS[name][0]
        return importlib.util.find_spec(f"ctxbench.cli.{module}") is not None

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS or not self._available(cmd_name):
            return None
        module_name, attr, _ = COMMANDS[cmd_name]
        module = importlib.import_module(f"ctxbench.cli.{module_name}")
        command: click.Command = getattr(module, attr)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ctxbench")
@click.option(
    "--allow-plugins",
    is_flag=True,
    help="Import plug-ins (module:attr) that files name (a sweep file, a results directory, a "
    "baseline); by default only those given on the command line are imported. Accepted "
    "before or after the command.",
)
@click.option(
    "--max-unpacked",
    type=click.IntRange(min=1),
    metavar="BYTES",
    help="Refuse a compressed input (.gz) unpacking to more bytes (default 1 GiB).",
)
@click.option(
    "--max-unpacked-lines",
    type=click.IntRange(min=1),
    metavar="N",
    help="Refuse a compressed input (.gz) unpacking to more lines (default 1,000,000).",
)
@click.pass_context
def cli(
    ctx: click.Context,
    allow_plugins: bool,
    max_unpacked: int | None = None,
    max_unpacked_lines: int | None = None,
) -> None:
    """ctxbench: replay agent traces through context-compaction strategies, offline.

    \b
    Typical flow:
      ctxbench gen scenarios/coding_agent.toml -o traces.jsonl
      ctxbench run traces.jsonl --strategy dbgpt --window 32768 --counter tiktoken:o200k_base
      ctxbench sweep scenarios/quickstart.toml -o results/ && ctxbench report results/ -o report.html
    """
    from ctxbench.guard import unpacked_limits_set
    from ctxbench.registry import plugin_policy, plugin_words

    ctx.with_resource(unpacked_limits_set(max_unpacked, max_unpacked_lines))

    allow_plugins = allow_plugins or bool(ctx.meta.get("ctxbench.allow_plugins"))
    named = None if allow_plugins else plugin_words(ctx.meta.get("ctxbench.argv", ()))
    ctx.with_resource(plugin_policy(named))


def main(argv: list[str] | None = None) -> Any:
    """Console entry point: ctxbench errors print cleanly and exit 2."""
    try:
        return cli.main(args=argv, standalone_mode=False)
    except CtxbenchError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if exc.exit_code == 1 else exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
