"""The options and arguments several commands share, each written once: its flags, its type and
its help where they are the same (a command passes what it words its own way)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def traces_argument(*, exists: bool = False, required: bool = False) -> Decorator:
    """``TRACES``: any number of trace files (canonical or recorded)."""
    return click.argument(
        "traces", nargs=-1, required=required, type=click.Path(exists=exists, dir_okay=False)
    )


def file_option(*names: str, exists: bool = False, **kwargs: Any) -> Decorator:
    """An option naming a file (a directory there is a usage error)."""
    return click.option(*names, type=click.Path(exists=exists, dir_okay=False), **kwargs)


def dir_option(*names: str, **kwargs: Any) -> Decorator:
    """An option naming a directory (a file there is a usage error)."""
    return click.option(*names, type=click.Path(file_okay=False), **kwargs)


def json_option(help: str) -> Decorator:
    """``--json``: machine-readable output instead of text (``help`` says its shape)."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def quiet_option(help: str = "No progress bar.") -> Decorator:
    return click.option("--quiet", "-q", is_flag=True, help=help)


def workers_option(help: str) -> Decorator:
    return click.option("--workers", "-j", type=click.IntRange(min=1), help=help)


def reserved_option(default: int) -> Decorator:
    """``--reserved``: the output reservation, as a size (``4k``)."""
    from ctxbench.cli.sizes import RESERVED_TOKENS

    return click.option(
        "--reserved",
        type=RESERVED_TOKENS,
        default=default,
        show_default=True,
        help="Output reservation: prompts must fit window - reserved.",
    )


def sets_option() -> Decorator:
    """``--set KEY=VALUE``: one strategy knob, typed by the field it sets."""
    return click.option(
        "--set", "sets", multiple=True, metavar="KEY=VALUE", help="Override one knob (repeatable)."
    )


def counter_option(*names: str, **kwargs: Any) -> Decorator:
    """``--counter/-c``: a token counter spec (``names`` adds the parameter name)."""
    return click.option("--counter", "-c", *names, **kwargs)


def at_least_option(*names: str, minimum: int, default: float, help: str) -> Decorator:
    """A number with a lower bound and a shown default (an ``int`` default takes integers)."""
    number = click.IntRange if isinstance(default, int) else click.FloatRange
    return click.option(
        *names, type=number(min=minimum), default=default, show_default=True, help=help
    )


def reasoning_option(default: str) -> Decorator:
    """``--reasoning RULE``: which earlier reasoning the provider counts (``default`` says
    what happens without it), one of ``ctxbench.counting.reasoning.REASONING_RULES``."""
    from ctxbench.counting.reasoning import REASONING_RULES

    return click.option(
        "--reasoning",
        type=click.Choice(REASONING_RULES),
        default=None,
        help=f"Which earlier reasoning the provider counts (default: {default}).",
    )
