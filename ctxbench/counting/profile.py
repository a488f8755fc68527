"""Fitted framing profiles: an exact counter corrected by what a provider adds unseen.

``ctxbench calibrate --save-profile FILE`` fits, for one model family, the tokens a provider
counts beyond the base counter: per message, per tool call, and a constant per request (tool
schemas the trace does not store, hidden system framing). The counter spec
``profile:FILE.json`` wraps the base counter with that framing, so ``run --counter
profile:FILE.json`` gives the simulated provider the counts the real one reported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ctxbench import jsontext
from ctxbench.config import build
from ctxbench.counting.base import TokenCounter
from ctxbench.errors import ConfigError, CtxbenchError
from ctxbench.trace import Message, ToolSpec

PREFIX = "profile:"
SCHEMA = "ctxbench.profile/1"


@dataclass(frozen=True)
class Profile:
    """Framing a provider adds on top of the ``base`` counter's count, in whole tokens."""

    base: str
    family: str = ""
    per_message: int = 0
    per_tool_call: int = 0
    constant: int = 0
    fitted_on: Mapping[str, Any] = field(default_factory=dict)
    schema: str = SCHEMA

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["fitted_on"] = dict(self.fitted_on)
        return {"schema": out.pop("schema"), **out}

    def extra(self, message: Message) -> int:
        """Tokens this profile adds to one message."""
        return self.per_message + self.per_tool_call * len(message.tool_calls)


def save_profile(path: str | Path, profile: Profile) -> None:
    Path(path).write_text(
        json.dumps(profile.to_dict(), indent=2, sort_keys=False) + "\n", encoding="utf-8"
    )


def load_profile(path: str | Path) -> Profile:
    """Read a profile file; unknown keys and wrong types are errors naming the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(
            "no such profile file",
            path=path,
            hint="write one with `ctxbench calibrate TRACES --counter SPEC --save-profile FILE`",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read profile: {exc}", path=path, hint="is it a profile JSON file?"
        ) from None
    data = jsontext.loads(text, path=path, hint="is it a profile JSON file? fix its JSON")
    if not isinstance(data, dict):
        raise ConfigError(
            "a profile is a JSON object", path=path, key="$", hint="see `ctxbench calibrate --help`"
        )
    profile = build(Profile, data, source=str(path))
    if profile.schema != SCHEMA:
        raise ConfigError(
            f"schema is {profile.schema!r}, expected {SCHEMA!r}",
            path=path,
            key="schema",
            hint="write profiles with `ctxbench calibrate --save-profile`",
        )
    return profile


class ProfileCounter(TokenCounter):
    """The base counter plus a fitted profile's framing: fitted to provider usage, so reported
    as ``fitted`` (for Claude, whose tokenizer is not public, the base is only a proxy)."""

    kind = "fitted"

    def __init__(self, name: str, base: TokenCounter, profile: Profile) -> None:
        super().__init__(
            name, f"{base.name} + fitted framing ({profile.family or 'unnamed family'})"
        )
        self.base = base
        self.profile = profile

    def count(self, text: str) -> int:
        return self.base.count(text)

    def message_tokens(self, message: Message) -> int:
        return self.base.count_message(message) + self.profile.extra(message)

    def prompt_overhead(self, tools: Sequence[ToolSpec] = ()) -> int:
        return self.base.prompt_overhead(tools) + self.profile.constant

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "profile": self.profile.to_dict()}


def profile_counter(spec: str) -> ProfileCounter:
    """The counter for ``profile:FILE.json``."""
    from ctxbench.counting import get_counter

    path = spec[len(PREFIX) :]
    if not path:
        raise ConfigError(
            "profile: needs a file",
            key="--counter",
            hint="for example --counter profile:gpt-4o.json",
        )
    profile = load_profile(path)
    if profile.base.startswith(PREFIX):
        raise ConfigError(
            "a profile cannot wrap another profile",
            path=path,
            key="base",
            hint="set base to a registered counter (see `ctxbench counters`)",
        )
    try:
        base = get_counter(profile.base)
    except CtxbenchError as exc:
        raise ConfigError(exc.message, path=path, key="base", hint=exc.hint) from None
    return ProfileCounter(spec, base, profile)
