"""``ctxbench view``: see what the model saw, call by call (see :mod:`ctxbench.view`)."""

from __future__ import annotations

import click

from ctxbench.cli.options import dir_option, file_option, quiet_option


@click.command("view")
@click.argument("source", type=click.Path(exists=True))
@dir_option(
    "--out",
    "-o",
    "out_dir",
    help="Directory to write the viewer into (default: SOURCE/viewer for a results "
    "directory, else SOURCE's name + .viewer).",
)
@file_option(
    "--rows",
    "rows_file",
    exists=True,
    help="For an events file: the rows of the same run (`ctxbench run --out rows.jsonl`).",
)
@click.option("--run", "run_ids", multiple=True, metavar="RUN_ID", help="Show only these runs.")
@click.option(
    "--against",
    type=click.Path(exists=True),
    help="Another results source (a baseline, a release's results) whose runs of the same "
    "traces are shown beside SOURCE's, aligned by call.",
)
@click.option(
    "--against-rows",
    type=click.Path(exists=True, dir_okay=False),
    help="For an events file given to --against: the rows of the same run.",
)
@click.option(
    "--serve",
    is_flag=True,
    help="Serve the viewer on 127.0.0.1 under a random path (printed), to its own page only.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="The port to serve on (default: a free one, printed).",
)
@quiet_option()
def view(
    source: str,
    out_dir: str | None,
    rows_file: str | None,
    run_ids: tuple[str, ...],
    against: str | None,
    against_rows: str | None,
    serve: bool,
    port: int | None,
    quiet: bool,
) -> None:
    """Write a viewer of SOURCE's runs: a sweep's results directory, a rows file
    (`ctxbench run --out rows.jsonl`) or an events file with --rows.

    Each run is replayed again (replays are deterministic) to record the prompt every call
    sent. Pick a run, step through its calls: the prompt as the model saw it (compacted and
    rewritten messages marked, citations linked to the snapshot files), the true and
    estimated tokens against the window and the strategy's thresholds, the compaction and the
    provider's verdict, and where each probe's answer was. Compare two runs of one trace side
    by side, aligned by call, with the first divergence marked; with --against, a run of
    SOURCE opens beside its counterpart in the other source (the same run id, else the same
    configuration): baseline vs current, reproduction vs release. The page loads one call at a
    time, so it stays fast on a 10,000-round run; it opens from file:// or with --serve.

    The viewer is written only into a new folder, an empty one or one it wrote before (it
    holds a .ctxbench-viewer marker listing its files), never through a link nor over a
    results directory's own files; it is built aside and swapped in once every run replayed.

    \b
    Examples:
      ctxbench view reports/quickstart --run 0a1b2c3d4e5f6a7b
      ctxbench run t.jsonl -s dbgpt -w 32k --out rows.jsonl && ctxbench view rows.jsonl --serve
      ctxbench run t.jsonl -s dbgpt -w 32k --events ev.jsonl --out rows.jsonl
      ctxbench view ev.jsonl --rows rows.jsonl -o viewer/
      ctxbench view results/current --against results/baseline -o viewer/
    """
    from pathlib import Path

    from ctxbench.cli.progress import terminal_bar
    from ctxbench.view import build

    path = Path(source)
    target = (
        Path(out_dir)
        if out_dir
        else (path / "viewer" if path.is_dir() else path.with_suffix(".viewer"))
    )
    server = None
    if serve:  # bound first: a port in use is refused before any replay
        from ctxbench.view.serve import make_server

        server = make_server(target, port=port or 0)
    try:
        bar = terminal_bar("view", quiet=quiet)
        try:
            index = build(
                path,
                target,
                rows=rows_file,
                run_ids=run_ids,
                against=against,
                against_rows=against_rows,
                progress=bar.update,
            )
        finally:
            bar.close()
        click.echo(f"wrote {index}")
        if server is not None:
            from ctxbench.view.serve import serve_forever

            serve_forever(server)
    finally:
        if server is not None:
            server.server_close()
