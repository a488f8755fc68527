"""``ctxbench strategies``: every registered strategy with its summary, source and knobs."""

from __future__ import annotations

import json
from typing import Any

import click

from ctxbench.cli.options import json_option


def strategy_listing() -> list[dict[str, Any]]:
    """``[{name, summary, source, knobs, releases}]`` for every registered strategy, sorted by
    name; ``releases`` maps each value of a ``release`` knob to what it reproduces."""
    from ctxbench.config import describe_fields
    from ctxbench.strategies import STRATEGIES, strategy_class

    out = []
    for entry in STRATEGIES.entries():
        cls = strategy_class(entry.name)
        out.append(
            {
                "name": entry.name,
                "summary": cls.summary,
                "source": cls.source,
                "knobs": describe_fields(cls.Config),
                "releases": dict(getattr(cls, "releases", {})),
            }
        )
    return out


def _knob_line(knob: dict[str, Any]) -> str:
    default = json.dumps(knob["default"], ensure_ascii=False)
    if len(default) > 60:
        default = default[:57] + "..."
    line = f"    {knob['name']} ({knob['type']}, default {default})"
    return f"{line}: {knob['help']}" if knob["help"] else line


@click.command("strategies")
@json_option("Print a JSON list of {name, summary, source, knobs}.")
def strategies(as_json: bool) -> None:
    """List compaction strategies: one line each, where each comes from, and its knobs.

    Knobs are set with `ctxbench run --set KEY=VALUE` or a TOML `--config` file. A plug-in
    strategy (a subclass of ctxbench.Strategy) is given to `--strategy` as
    `package.module:Class`; a plain function `compact(messages, budget, **knobs)` on
    OpenAI-style message dicts as `package.module:compact` (its keyword parameters are its
    knobs).

    \b
    Examples:
      ctxbench strategies
      ctxbench strategies --json | jq '.[] | select(.name == "hermes") | .knobs'
    """
    listing = strategy_listing()
    if as_json:
        click.echo(json.dumps(listing, ensure_ascii=False, indent=2))
        return
    for item in listing:
        click.echo(f"{item['name']}: {item['summary']}")
        if item["source"]:
            click.echo(f"  source: {item['source']}")
        if item["releases"]:
            click.echo("  releases (--set release=VALUE; the first is the default):")
            for value, what in item["releases"].items():
                click.echo(f"    {value}: {what}")
        if item["knobs"]:
            click.echo("  knobs:")
            for knob in item["knobs"]:
                click.echo(_knob_line(knob))
        click.echo("")
    from ctxbench.cell.spec import RunSpec
    from ctxbench.summarizers import SUMMARIZERS

    click.echo("summarizers (--summarizer NAME, for the strategies that summarise):")
    for entry in SUMMARIZERS.entries():
        default = " (default)" if entry.name == RunSpec.summarizer else ""
        click.echo(f"  {entry.name}{default}: {entry.summary}")
    _shipped_lines()


def _shipped_lines() -> None:
    """The ``shipped:*`` strategies (released framework code, `ctxbench shipped install`): one
    line each, its release file, and where its rule differs from a reproduction."""
    from ctxbench.strategies import SHIPPED_STRATEGIES, strategy_class

    click.echo("")
    click.echo(
        "released framework code (shipped:*; `ctxbench shipped list` shows what is installed):"
    )
    for entry in SHIPPED_STRATEGIES.entries():
        cls = strategy_class(entry.name)
        click.echo(f"{entry.name}: {cls.summary}")
        if cls.source:
            click.echo(f"  source: {cls.source}")
        differs = getattr(cls, "differs", "")
        if differs:
            click.echo(f"  differs: {differs}")
