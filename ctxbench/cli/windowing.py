"""``ctxbench windows``: the documented model windows a ``--window`` may name."""

from __future__ import annotations

import json

import click

from ctxbench.cli.options import json_option
from ctxbench.cli.output import print_table


@click.command("windows")
@json_option("Print one JSON list.")
def windows(as_json: bool) -> None:
    """List the models whose documented context window and output limit ctxbench knows, with
    the source and the date it was read. Every command that takes a window takes a name from
    this list, a token count (128000) or a size (32k = 32,768; k = 1,024, so `200k` is
    204,800: a k size within 3% of a listed decimal window is warned about).

    \b
    Examples:
      ctxbench run session.jsonl -s claude_code -w claude-opus-4-6
      windows = ["deepseek-chat", "32k", 65536]   # in a sweep file
    """
    from ctxbench.windows import MODEL_WINDOWS

    rows = [
        {
            "model": w.model,
            "window": w.window,
            "max_output": w.max_output,
            "read": w.read,
            "source": w.source,
        }
        for w in MODEL_WINDOWS
    ]
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False))
        return
    shown = [
        {
            k: f"{v:,}" if isinstance(v, int) else ("-" if v is None else str(v))
            for k, v in r.items()
        }
        for r in rows
    ]
    print_table(shown, ["model", "window", "max_output", "read", "source"])
