"""``ctxbench gen`` and ``ctxbench scenarios``: synthetic traces from scenario files."""

from __future__ import annotations

import json
from collections.abc import Iterator

import click

from ctxbench.cli.options import at_least_option, file_option, json_option
from ctxbench.cli.output import print_table
from ctxbench.cli.progress import ProgressBar
from ctxbench.formats.canonical import write_traces
from ctxbench.synth import generate, load_scenario, scenario_names
from ctxbench.synth.scenario import check_generation
from ctxbench.trace import Trace


@click.command("gen")
@click.argument("scenario")
@file_option(
    "--output", "-o", required=True, help="Canonical trace file to write (.jsonl or .jsonl.gz)."
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed; the same scenario and seed give byte-identical traces.",
)
@at_least_option("--traces", "count", minimum=1, default=1, help="How many traces to generate.")
def gen(scenario: str, output: str, seed: int, count: int) -> None:
    """Generate synthetic traces of SCENARIO (an embedded name or a .toml file).

    Each trace carries its planted facts as probes (recall, artifact, decision, continuation,
    constraint, superseded, finished_task). Trace ids are NAME-sSEED-I.

    \b
    Examples:
      ctxbench gen coding_agent -o traces.jsonl
      ctxbench gen scenarios/sql_agent.toml -o sql.jsonl --seed 7 --traces 5
    """
    spec = load_scenario(scenario)
    check_generation(spec, count, key="--traces")
    bar = ProgressBar(f"gen {spec.name}")

    def tracked() -> Iterator[Trace]:
        for i, trace in enumerate(generate(spec, seed, count), start=1):
            yield trace
            bar.update(i, count)

    written = write_traces(output, tracked())
    bar.close()
    click.echo(f"wrote {written} trace(s) of {spec.name} (seed {seed}) to {output}", err=True)


@click.command("scenarios")
@json_option("Print the full description of each scenario as JSON.")
def scenarios(as_json: bool) -> None:
    """List the embedded scenarios: rounds, format, content mix and probes per trace.

    \b
    Example:
      ctxbench scenarios
      ctxbench gen long_horizon -o long.jsonl
    """
    described = [load_scenario(name).describe() for name in scenario_names()]
    if as_json:
        click.echo(json.dumps(described, indent=2, ensure_ascii=False))
        return
    rows = [
        {
            "name": d["name"],
            "rounds": d["rounds"],
            "format": d["format"],
            "lang": d["language"],
            "content mix": " ".join(
                f"{cls}:{share:.0%}"
                for cls, share in sorted(d["content_mix"].items(), key=lambda kv: -kv[1])
            ),
            "probes": sum(d["probes"].values()),
            "description": d["description"],
        }
        for d in described
    ]
    print_table(rows, ("name", "rounds", "format", "lang", "content mix", "probes", "description"))
