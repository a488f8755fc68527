"""``ctxbench recommend``: the config to deploy, with its uncertainty and its constraints."""

from __future__ import annotations

from typing import Any

import click

from ctxbench.bootstrap import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED
from ctxbench.cli.options import at_least_option, counter_option
from ctxbench.cost.cache import PROVIDERS
from ctxbench.errors import ConfigError


def parse_weights(values: tuple[str, ...]) -> dict[str, float]:
    """``--weight KIND=W`` options as a mapping (the kinds are checked by KindWeights)."""
    out: dict[str, float] = {}
    for value in values:
        kind, sep, number = value.partition("=")
        try:
            weight = float(number)
        except ValueError:
            weight = None
        if not sep or weight is None:
            raise ConfigError(
                f"--weight {value!r} is not KIND=NUMBER", key="weight", hint="e.g. --weight task=2"
            )
        out[kind.strip()] = weight
    return out


def _sweep_weights(results_dir: str) -> Any:
    """The kind weights the results' sweep file set (a results dir without one: equal)."""
    from ctxbench.probes.weights import sweep_weights
    from ctxbench.results import ResultsDir
    from ctxbench.results.layout import SPEC_FILE

    store = ResultsDir(results_dir)
    has_spec = (store.path / SPEC_FILE).is_file()
    return sweep_weights(store.spec() if has_spec else {}, source=results_dir)


def _priced(runs: list[Any], results_dir: str, provider: str | None) -> list[Any]:
    """The runs with their USD through the provider's prompt cache (for --max-usd)."""
    import dataclasses

    from ctxbench.cost.runs import run_costs

    usd = run_costs(results_dir, provider)
    return [dataclasses.replace(r, usd=usd.get(r.run_id)) for r in runs]


@click.command("recommend")
@click.argument("results_dir", type=click.Path(file_okay=False))
@click.option("--window", "-w", type=int, help="Only this window (default: every window).")
@counter_option(help="Only this true counter (default: every counter).")
@at_least_option(
    "--max-failed-calls",
    minimum=0,
    default=0,
    help="Failed calls a config may have over all its traces.",
)
@click.option(
    "--max-tokens",
    type=click.FloatRange(min=0),
    help="Token budget: mean input + summary + rejected prompt tokens per trace.",
)
@click.option(
    "--max-usd",
    type=click.FloatRange(min=0),
    help="USD budget: mean cost per trace through the provider's prompt cache (see `ctxbench cost`).",
)
@click.option(
    "--provider",
    type=click.Choice(list(PROVIDERS)),
    default=None,
    help="Whose cache and prices --max-usd uses (default: the one each true counter stands for).",
)
@click.option("--allow-errors", is_flag=True, help="Do not exclude configs whose replays raised.")
@click.option(
    "--weight",
    "weights",
    multiple=True,
    metavar="KIND=W",
    help="Weight of a probe kind in retention (default: the sweep file's kind_weights, else 1 "
    "each; 0 leaves it out). Repeatable; replaces the sweep file's weights.",
)
@click.option(
    "--level",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=DEFAULT_LEVEL,
    show_default=True,
    help="Confidence level of the intervals.",
)
@at_least_option("--resamples", minimum=100, default=DEFAULT_RESAMPLES, help="Bootstrap resamples.")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True, help="Bootstrap seed.")
@click.option(
    "--strategy",
    "-s",
    "strategies",
    multiple=True,
    metavar="NAME",
    help="Only this strategy's configs (repeatable), e.g. your plug-in: -s mypkg.mod:compact.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the same content as JSON.")
def recommend(
    results_dir: str,
    window: int | None,
    counter: str | None,
    max_failed_calls: int,
    max_tokens: float | None,
    max_usd: float | None,
    provider: str | None,
    allow_errors: bool,
    weights: tuple[str, ...],
    level: float,
    resamples: int,
    seed: int,
    strategies: tuple[str, ...],
    as_json: bool,
) -> None:
    """Name the config to deploy per window and true counter of RESULTS_DIR.

    Among the configs that meet the constraints (default: no failed calls, no replay errors),
    the highest retention wins; configs whose paired interval with it includes 0 are tied,
    and the cheapest of those is recommended. Also printed: the tied configs with how many
    more traces would separate them, the knobs that made no difference (inert) and those
    that did, and the fact kinds no config keeps. Warnings say when the pick sits at the edge
    of a swept knob's range, keeps under half the probed facts, or when an excluded config
    would win with a slightly looser --max-failed-calls. Intervals come from a seeded
    bootstrap over traces, so the output is the same on every run.

    \b
    Examples:
      ctxbench recommend reports/quickstart
      ctxbench recommend results --window 32768 --max-tokens 400000 --weight task=2
      ctxbench recommend results --max-usd 0.50 --provider anthropic
      ctxbench recommend results --strategy mypkg.compaction:compact --json
    """
    from ctxbench.decisions.outcomes import Constraints, KindWeights, read_outcomes
    from ctxbench.decisions.recommend import recommend as decide
    from ctxbench.decisions.text import recommendation_text

    constraints = Constraints(max_failed_calls, max_tokens, allow_errors, max_usd)
    kind_weights = KindWeights(parse_weights(weights)) if weights else _sweep_weights(results_dir)
    runs = read_outcomes(results_dir)
    if max_usd is not None:
        runs = _priced(runs, results_dir, provider)
    rec = decide(
        runs,
        constraints=constraints,
        weights=kind_weights,
        window=window,
        counter=counter,
        level=level,
        resamples=resamples,
        seed=seed,
        strategies=strategies,
    )
    if not rec.groups:
        raise ConfigError(
            "no runs in this window / counter" + (" / strategy" if strategies else ""),
            path=results_dir,
            hint="drop --window / --counter / --strategy to see every group",
        )
    if as_json:
        import json

        from ctxbench.decisions.text import recommendation_json

        click.echo(json.dumps(recommendation_json(rec), indent=2, ensure_ascii=False))
        return
    click.echo(recommendation_text(rec))
