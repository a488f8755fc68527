"""The ``release`` knob the reproductions share (``dbgpt``, ``agentscope``, ``hermes``).

Each names what it reproduces: a released wheel (the default, what users deploy) or the
documented design / a later commit. A strategy keeps a table ``{value: rules}`` whose rules carry
a ``summary`` of what differs; ``ctxbench strategies`` lists it, and a row's ``params`` carries
the value, so a result says which release it reproduces.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any, Protocol


class ReleaseRules(Protocol):
    """What every release table entry has."""

    @property
    def summary(self) -> str: ...


def release_field(default: str, table: Mapping[str, ReleaseRules]) -> Any:
    """The ``release`` dataclass field: ``default`` (the latest release), documented from
    ``table``."""
    return field(
        default=default,
        metadata={"help": "; ".join(f"{name}: {rules.summary}" for name, rules in table.items())},
    )


def check_release(value: str, table: Mapping[str, ReleaseRules]) -> None:
    """Reject a value the table does not know (the config layer turns it into a ConfigError)."""
    if value not in table:
        raise ValueError(f"unknown release {value!r}: use one of {', '.join(table)}")


def release_summaries(table: Mapping[str, ReleaseRules]) -> dict[str, str]:
    """``{value: what it reproduces}`` for ``ctxbench strategies``."""
    return {name: rules.summary for name, rules in table.items()}
