"""The answerer's options, shared by ``run`` and ``sweep`` (``--answerer MODEL@URL`` ...).

Each option keeps its value in the click context (``ctx.meta``) instead of adding a
parameter to the command: :func:`answerer_settings` reads them back as one
:class:`~ctxbench.answering.client.AnswererSettings`, or None when no model is asked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

_META = "ctxbench.answerer"


def _keep(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    ctx.meta.setdefault(_META, {})[param.name] = value
    return value


def _option(*names: str, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(*names, callback=_keep, expose_value=False, **kwargs)


def answerer_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add the answerer's options to ``command``."""
    options = [
        _option(
            "--answerer",
            metavar="MODEL@URL",
            help="Ask a model, through an OpenAI-compatible endpoint, each probe's question after "
            "the prompt the replay scored (rows gain answered_retention beside retention); e.g. "
            "qwen2.5:0.5b@http://127.0.0.1:11434/v1. Answers are cached on disk.",
        ),
        _option(
            "--answerer-key-env",
            metavar="VARIABLE",
            default="",
            help="The environment variable holding the endpoint's API key (none sent without it).",
        ),
        _option(
            "--next-action",
            is_flag=True,
            help="With --answerer: at each compaction ask the model's next step with the "
            "uncompacted history and with the compacted prompt (rows gain "
            "next_action_agreement).",
        ),
        _option(
            "--next-action-every",
            type=click.IntRange(min=0),
            default=0,
            metavar="N",
            help="With --next-action: also ask at every N-th call (0: compactions only).",
        ),
        _option(
            "--offline",
            is_flag=True,
            help="Answer from the cache only: a question not cached is an error (no request).",
        ),
        _option(
            "--max-cost",
            type=click.FloatRange(min=0),
            metavar="USD",
            help="Send no answerer request past this cost (priced by --answerer-price); a sweep "
            "stops once its cells' requests cost it, over all workers (finished cells saved).",
        ),
        _option(
            "--answerer-price",
            metavar="IN/OUT",
            default="0/0",
            show_default=True,
            help="USD per million prompt / completion tokens, for the cost meter.",
        ),
        _option(
            "--answerer-concurrency",
            type=click.IntRange(min=1),
            default=4,
            show_default=True,
            help="Requests in flight at once (per worker process in a sweep).",
        ),
        _option(
            "--answerer-timeout",
            type=click.FloatRange(min=0.001),
            default=120.0,
            show_default=True,
            help="Seconds one request may take as a whole.",
        ),
        _option(
            "--answerer-retries",
            type=click.IntRange(min=0),
            default=2,
            show_default=True,
            help="Retries of a timed-out, refused, 429 or 5xx request (exponential backoff).",
        ),
        _option("--answerer-seed", type=int, default=0, show_default=True, help="The seed sent."),
        _option(
            "--answerer-temperature",
            type=click.FloatRange(min=0),
            default=0.0,
            show_default=True,
            help="The temperature sent.",
        ),
        _option(
            "--answerer-max-tokens",
            type=click.IntRange(min=1),
            default=256,
            show_default=True,
            help="The longest answer asked for.",
        ),
        _option(
            "--answerer-cache",
            type=click.Path(file_okay=False),
            default="",
            help="The answer cache (default $CTXBENCH_CACHE/answers, ~/.cache/ctxbench/answers).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def answerer_settings(ctx: click.Context | None = None) -> Any:
    """The settings the options give, or None without ``--answerer``."""
    from ctxbench.answering.client import AnswererSettings, parse_answerer
    from ctxbench.errors import ConfigError

    values = (ctx or click.get_current_context()).meta.get(_META, {})
    given = values.get("answerer")
    if not given:
        if values.get("next_action"):
            raise click.UsageError("--next-action asks a model: give --answerer MODEL@URL")
        return None
    if "@http" not in given and values.get("offline"):
        model, url = given, ""  # a model id alone answers from the cache
    else:
        model, url = parse_answerer(given)
    try:
        price_in, _, price_out = str(values.get("answerer_price", "0/0")).partition("/")
        prices = float(price_in), float(price_out or 0)
    except ValueError:
        raise ConfigError(
            f"--answerer-price takes IN/OUT in USD per million tokens, not "
            f"{values.get('answerer_price')!r}",
            key="answerer-price",
            hint="for example --answerer-price 0.15/0.60",
        ) from None
    return AnswererSettings(
        model=model,
        base_url=url,
        api_key_env=values.get("answerer_key_env") or "",
        temperature=float(values.get("answerer_temperature", 0.0)),
        seed=int(values.get("answerer_seed", 0)),
        max_tokens=int(values.get("answerer_max_tokens", 256)),
        timeout=float(values.get("answerer_timeout", 120.0)),
        max_retries=int(values.get("answerer_retries", 2)),
        concurrency=int(values.get("answerer_concurrency", 4)),
        cache_dir=values.get("answerer_cache") or "",
        offline=bool(values.get("offline")),
        max_cost=values.get("max_cost"),
        price_in=prices[0],
        price_out=prices[1],
    )


def next_action_of(ctx: click.Context | None = None) -> tuple[bool, int]:
    """``(--next-action, --next-action-every)``."""
    values = (ctx or click.get_current_context()).meta.get(_META, {})
    return bool(values.get("next_action")), int(values.get("next_action_every") or 0)


__all__ = ["answerer_options", "answerer_settings", "next_action_of"]
