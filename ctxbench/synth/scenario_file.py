"""Scenario files: a scenario found by name or path, its TOML parsed into a
:class:`~ctxbench.synth.scenario.ScenarioSpec`, and its domain file loaded.

Every key is checked: an unknown key is a :class:`~ctxbench.errors.ConfigError` that names the
key, the file and the valid keys. ``load_scenario("coding_agent")`` finds the embedded file.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from ctxbench import config as configuration
from ctxbench.errors import ConfigError
from ctxbench.limits import MAX_TRACE_CHARS
from ctxbench.resources import resource_dir
from ctxbench.synth.content import CONTENT_CLASSES
from ctxbench.synth.scenario import (
    BANK_KINDS,
    FORMATS,
    LANGUAGES,
    MAX_ROUNDS,
    SCENARIO_SCHEMA,
    Domain,
    FactSpec,
    Images,
    LargeOutputs,
    OutputClass,
    ParallelCalls,
    ProbeMix,
    ScenarioSpec,
    ToolDef,
)

_TABLES = ("parallel", "large", "images", "probes", "output", "tools", "facts")
_SCALARS = (
    "schema",
    "name",
    "description",
    "rounds",
    "format",
    "language",
    "domain",
    "system_prompt",
    "task",
)


def scenario_dir() -> Path:
    """The embedded ``scenarios/`` folder."""
    return resource_dir("scenarios")


def resolve_scenario_path(path_or_name: str | Path) -> Path:
    """A scenario file path; a bare name (``coding_agent``) is looked up in ``scenarios/``."""
    text = str(path_or_name)
    candidate = Path(text)
    if candidate.suffix == ".toml" or "/" in text or os.path.exists(candidate):
        embedded_copy = scenario_dir() / candidate.name
        if (
            not os.path.exists(candidate)
            and candidate.parent.name == "scenarios"
            and embedded_copy.is_file()
        ):
            return embedded_copy  # `scenarios/coding_agent.toml` typed outside the checkout
        if not os.path.isfile(candidate):  # never raises, unlike Path.is_file
            raise ConfigError(
                "no such scenario file",
                path=candidate,
                hint="give a .toml path or an embedded name (see `ctxbench scenarios`)",
            )
        return candidate
    embedded = scenario_dir() / f"{text}.toml"
    if embedded.is_file():
        return embedded
    from ctxbench.registry import suggestions

    names = scenario_names()
    close = suggestions(text, names, n=1)
    raise ConfigError(
        f"no embedded scenario named {text!r}; known: {', '.join(names)}",
        hint=f"did you mean {' or '.join(repr(c) for c in close)}?"
        if close
        else "give a path to a scenario .toml file",
    )


def scenario_names() -> list[str]:
    """Names of the embedded scenarios (files in ``scenarios/`` declaring the scenario schema)."""
    out = []
    for path in sorted(scenario_dir().glob("*.toml")):
        try:
            data = configuration.load_toml(path)
        except ConfigError:
            continue
        if data.get("schema") == SCENARIO_SCHEMA:
            out.append(path.stem)
    return out


def load_scenario(path_or_name: str | Path) -> ScenarioSpec:
    """Parse a scenario file (or an embedded scenario by name) into a :class:`ScenarioSpec`."""
    path = resolve_scenario_path(path_or_name)
    return parse_scenario(configuration.load_toml(path), source=path)


def parse_scenario(data: Mapping[str, Any], *, source: str | Path) -> ScenarioSpec:
    """Build a scenario from parsed TOML; errors name the key and ``source``."""
    _check_keys(data, (*_SCALARS, *_TABLES), source, "")
    schema = data.get("schema", SCENARIO_SCHEMA)
    if schema != SCENARIO_SCHEMA:
        raise ConfigError(
            f"schema is {schema!r}, expected {SCENARIO_SCHEMA!r}",
            path=source,
            key="schema",
            hint="is this a scenario file? sweep files are run with `ctxbench sweep`",
        )
    name = _scalar(data, "name", str, source, default=Path(str(source)).stem)
    rounds = _scalar(data, "rounds", int, source)
    if not 3 <= rounds <= MAX_ROUNDS:
        raise ConfigError(
            f"rounds must be within [3, {MAX_ROUNDS}], not {rounds}",
            path=source,
            key="rounds",
            hint="a trace has at least 3 rounds; generate more traces instead of longer ones",
        )
    fmt = _scalar(data, "format", str, source, default="tool_calls")
    language = _scalar(data, "language", str, source, default="en")
    for key, value, allowed in (("format", fmt, FORMATS), ("language", language, LANGUAGES)):
        if value not in allowed:
            raise ConfigError(
                f"{value!r} is not one of {', '.join(allowed)}",
                path=source,
                key=key,
                hint=f"set {key} to one of {', '.join(allowed)}",
            )
    domain_name = _scalar(data, "domain", str, source)
    domain = load_domain(domain_name, relative_to=Path(str(source)).parent, source=source)

    tools = tuple(
        _build(ToolDef, t, source, f"tools[{i}]")
        for i, t in enumerate(_array(data, "tools", source))
    )
    if not tools:
        raise ConfigError(
            "a scenario needs at least one [[tools]] entry",
            path=source,
            key="tools",
            hint='add a [[tools]] table with name = "..." (see scenarios/coding_agent.toml)',
        )
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        if tool.name in seen:
            raise ConfigError(
                f"tool {tool.name!r} is defined twice",
                path=source,
                key=f"tools[{i}].name",
                hint="give every [[tools]] entry its own name",
            )
        seen.add(tool.name)
    output_raw = _table(data, "output", source)
    _check_keys(output_raw, CONTENT_CLASSES, source, "output.")
    output = {
        cls: _build(
            OutputClass, _table(output_raw, cls, source, prefix="output."), source, f"output.{cls}"
        )
        for cls in output_raw
    }
    if not any(c.weight > 0 for c in output.values()):
        raise ConfigError(
            "no content class has a weight > 0",
            path=source,
            key="output",
            hint="add for example [output.logs] weight = 1",
        )
    parallel = _build(ParallelCalls, _table(data, "parallel", source), source, "parallel")
    if fmt == "react_text" and parallel.probability > 0:
        raise ConfigError(
            "parallel calls need format = 'tool_calls' (a text ReAct turn has one Action)",
            path=source,
            key="parallel.probability",
            hint="set probability = 0 or change the format",
        )
    images = _build(Images, _table(data, "images", source), source, "images")
    unknown_tools = [t for t in images.tools if t not in seen]
    if unknown_tools:
        raise ConfigError(
            f"unknown tool {unknown_tools[0]!r}; tools: {', '.join(sorted(seen))}",
            path=source,
            key="images.tools",
            hint="list tools the scenario defines in [[tools]]",
        )
    probes = _build(ProbeMix, _table(data, "probes", source), source, "probes")
    for kind in BANK_KINDS:
        have = len(domain.bank(kind))
        if probes.count(kind) > have:
            raise ConfigError(
                f"asks for {probes.count(kind)} {kind} facts but domain {domain.name!r} has {have}",
                path=source,
                key=f"probes.{kind}",
                hint="lower the count or add [[facts]] to the scenario or the domain file",
            )
    facts = tuple(
        _build(FactSpec, f, source, f"facts[{i}]")
        for i, f in enumerate(_array(data, "facts", source))
    )
    for i, fact in enumerate(facts):
        if fact.tool and fact.tool not in seen:
            raise ConfigError(
                f"unknown tool {fact.tool!r}; tools: {', '.join(sorted(seen))}",
                path=source,
                key=f"facts[{i}].tool",
                hint="name a tool the scenario defines in [[tools]], or leave tool empty",
            )
    spec = ScenarioSpec(
        name=name,
        description=_scalar(data, "description", str, source, default=""),
        rounds=rounds,
        format=fmt,
        language=language,
        domain=domain,
        system_prompt=_scalar(data, "system_prompt", str, source, default=domain.system_prompt),
        task=_scalar(data, "task", str, source, default=domain.task),
        tools=tools,
        output=output,
        parallel=parallel,
        large=_build(LargeOutputs, _table(data, "large", source), source, "large"),
        images=images,
        probes=probes,
        facts=facts,
        source=str(source),
    )
    if spec.expected_chars() > MAX_TRACE_CHARS:
        raise ConfigError(
            f"one trace would hold about {spec.expected_chars():,.0f} characters of tool output "
            f"(rounds x calls x output size), over the limit of {MAX_TRACE_CHARS:,} "
            "(ctxbench.limits.MAX_TRACE_CHARS)",
            path=source,
            key="rounds",
            hint="lower rounds or the output sizes; generate more traces instead of longer ones",
        )
    return spec


def load_domain(
    name: str, *, relative_to: Path | None = None, source: str | Path | None = None
) -> Domain:
    """A domain file by name (``scenarios/domains/NAME.toml``) or by path."""
    candidates = []
    if name.endswith(".toml"):
        candidates = [Path(name)] + ([relative_to / name] if relative_to else [])
    else:
        candidates = [scenario_dir() / "domains" / f"{name}.toml"]
    path = next((c for c in candidates if os.path.isfile(c)), None)
    if path is None:
        known = sorted(p.stem for p in (scenario_dir() / "domains").glob("*.toml"))
        raise ConfigError(
            f"no domain {name!r}; embedded domains: {', '.join(known)}",
            path=source,
            key="domain",
            hint="use an embedded domain name or a path to a domain .toml file",
        )
    data = configuration.load_toml(path)
    _check_keys(data, ("system_prompt", "task", "final_answer", "facts"), path, "")
    facts = tuple(
        _build(FactSpec, f, path, f"facts[{i}]") for i, f in enumerate(_array(data, "facts", path))
    )
    return Domain(
        name=path.stem,
        system_prompt=_scalar(data, "system_prompt", str, path),
        task=_scalar(data, "task", str, path),
        final_answer=_scalar(data, "final_answer", str, path),
        facts=facts,
    )


# -- helpers -----------------------------------------------------------------------------------


def _check_keys(
    data: Mapping[str, Any], valid: tuple[str, ...], source: str | Path, prefix: str
) -> None:
    for key in data:
        if key not in valid:
            close = difflib.get_close_matches(key, valid, n=1)
            raise ConfigError(
                f"unknown key {prefix}{key!r}; valid keys: {', '.join(valid)}",
                path=source,
                key=f"{prefix}{key}",
                hint=f"did you mean {close[0]!r}?" if close else "remove it or fix its spelling",
            )


def _scalar(
    data: Mapping[str, Any], key: str, tp: type, source: str | Path, *, default: Any = ...
) -> Any:
    if key not in data:
        if default is ...:
            raise ConfigError(
                f"missing required key {key!r}",
                path=source,
                key=key,
                hint=f"add {key} = ... (see the embedded scenarios: `ctxbench scenarios`)",
            )
        return default
    return configuration.coerce(data[key], tp, key=key, source=str(source))


def _table(
    data: Mapping[str, Any], key: str, source: str | Path, *, prefix: str = ""
) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"expected a table, got {value!r}",
            path=source,
            key=f"{prefix}{key}",
            hint=f"write it as [{prefix}{key}]",
        )
    return value


def _array(data: Mapping[str, Any], key: str, source: str | Path) -> list[Mapping[str, Any]]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise ConfigError(
            "expected an array of tables",
            path=source,
            key=key,
            hint=f"write each entry as [[{key}]]",
        )
    return value


def _build(cls: type[Any], params: Mapping[str, Any], source: str | Path, prefix: str) -> Any:
    """``config.build`` with the key path (``tools[2].name``) in the error."""
    try:
        return configuration.build(cls, params, source=str(source))
    except ConfigError as exc:
        key = f"{prefix}.{exc.key}" if exc.key else prefix
        valid = ", ".join(f.name for f in fields(cls))
        hint = (
            exc.hint
            if exc.key and "did you mean" in (exc.hint or "")
            else (exc.hint or f"valid keys: {valid}")
        )
        raise ConfigError(exc.message, path=source, key=key, hint=hint) from None
