"""Fitted framing profiles: an exact counter corrected by what a provider adds unseen.

``ctxbench calibrate --save-profile FILE`` fits, for one model family, the tokens a provider
counts beyond the base counter: per message, per tool call, and a constant per request (tool
schemas the trace does not store, hidden system framing), and, when the base tokenizer only
stands in for the provider's (Claude), a ``scale`` on the base count. It also records the
``reasoning`` rule the fit was made under (``ctxbench.counting.reasoning``). The counter spec
``profile:FILE.json`` wraps the base counter with that framing, so ``run --counter
profile:FILE.json`` gives the simulated provider the counts the real one reported:
``round(scale * base) + per_message * messages + per_tool_call * calls + constant``.
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
from ctxbench.guard import small_file
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
    scale: float = 1.0
    reasoning: str | None = None
    schema: str = SCHEMA

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["fitted_on"] = dict(self.fitted_on)
        return {"schema": out.pop("schema"), **out}

    def extra(self, message: Message) -> int:
        """Tokens this profile adds to one message."""
        return self.per_message + self.per_tool_call * len(message.tool_calls)

    def scaled(self, tokens: int) -> int:
        return tokens if self.scale == 1.0 else round(self.scale * tokens)


def save_profile(path: str | Path, profile: Profile) -> None:
    Path(path).write_text(
        json.dumps(profile.to_dict(), indent=2, sort_keys=False) + "\n", encoding="utf-8"
    )


def load_profile(path: str | Path) -> Profile:
    """Read a profile file; unknown keys and wrong types are errors naming the file."""
    path = small_file(path, what="a counter profile", hint="give a file `--save-profile` wrote")
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
    if profile.reasoning is not None:
        from ctxbench.counting.reasoning import check_rule

        try:
            check_rule(profile.reasoning)
        except ConfigError as exc:
            raise ConfigError(exc.message, path=path, key="reasoning", hint=exc.hint) from None
    if not 0.1 <= profile.scale <= 10:
        raise ConfigError(
            f"scale {profile.scale} is not a plausible token ratio",
            path=path,
            key="scale",
            hint="refit the profile with `ctxbench calibrate --save-profile`",
        )
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

    @property
    def tokenizer_name(self) -> str:
        return self.base.tokenizer_name

    def count(self, text: str) -> int:
        return self.base.count(text)

    def message_tokens(self, message: Message) -> int:
        return self.profile.scaled(self.base.count_message(message)) + self.profile.extra(message)

    def prompt_overhead(self, tools: Sequence[ToolSpec] = ()) -> int:
        return self.profile.scaled(self.base.prompt_overhead(tools)) + self.profile.constant

    def count_prompt(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int:
        """The fitted prediction: the scaled base count of the request plus the framing."""
        framing = sum(self.profile.extra(m) for m in messages)
        base = self.base.count_prompt(messages, tools)
        return self.profile.scaled(base) + framing + self.profile.constant

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "profile": self.profile.to_dict()}


def _read_spec(spec: str) -> tuple[str, Profile]:
    """The file of a ``profile:FILE`` spec and its profile, whose base is not a profile."""
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
    return path, profile


def profile_counter(spec: str, *, reasoning: str | None = None) -> ProfileCounter:
    """The counter for ``profile:FILE.json``; ``reasoning`` overrides the profile's rule."""
    from ctxbench.counting import get_counter
    from ctxbench.counting.reasoning import with_reasoning

    path, profile = _read_spec(spec)
    try:
        base = with_reasoning(get_counter(profile.base), reasoning or profile.reasoning)
    except CtxbenchError as exc:
        raise ConfigError(exc.message, path=path, key="base", hint=exc.hint) from None
    return ProfileCounter(spec, base, profile)


def check_profile_spec(spec: str) -> None:
    """Validate ``profile:FILE`` without loading a tokenizer (sweep files are checked up front)."""
    from ctxbench.counting import COUNTERS

    path, profile = _read_spec(spec)
    try:
        COUNTERS.load(profile.base)
    except CtxbenchError as exc:
        raise ConfigError(exc.message, path=path, key="base", hint=exc.hint) from None
