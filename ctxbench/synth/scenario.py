"""Scenario specs: a TOML file in ``scenarios/`` parsed into frozen dataclasses.

A scenario says what a synthetic trace looks like: how many rounds, which tools, how often calls
run in parallel, the mix and size of tool output per content class, very large observations,
image parts, the trace format (native tool calling or DB-GPT text ReAct) and the facts to plant.
Facts come from the scenario's *domain* (``scenarios/domains/NAME.toml``: a bank of fact
templates plus the domain's system prompt and task) and from the scenario's own ``[[facts]]``.
:mod:`ctxbench.synth.scenario_file` finds and parses the files.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ctxbench.errors import ConfigError
from ctxbench.jsontext import attrs
from ctxbench.probes.model import PROBE_KINDS
from ctxbench.synth.content import CONTENT_CLASSES
from ctxbench.trace import ToolSpec

#: Kinds planted from a domain's bank of facts; "task" probes ask about the opening itself.
BANK_KINDS: tuple[str, ...] = tuple(k for k in PROBE_KINDS if k not in ("task", "needed"))

SCENARIO_SCHEMA = "ctxbench.scenario/1"
FORMATS: tuple[str, ...] = ("tool_calls", "react_text")
LANGUAGES: tuple[str, ...] = ("en", "zh")
#: where a fact's text is planted ("user": the first user message; "turn": a user message of
#: its own mid-run, at the fact's position, after a line of its own)
WHERE: tuple[str, ...] = ("tool", "assistant", "argument", "system", "user", "turn")
#: kinds whose fact may change later (``update``): the latest value is the answer
UPDATABLE: tuple[str, ...] = ("superseded", "preference")
POSITIONS: tuple[str, ...] = ("early", "middle", "late")
ASK: tuple[str, ...] = ("end", "mid")

#: ``{d4}`` digits, ``{h8}`` hex, ``{u3}`` upper-case letters, ``{l5}`` lower-case letters,
#: ``{one:a|b|c}`` one of the options; ``{value}`` (in texts) is the fact's value.
#: Upper bounds that keep a generated trace finite: rounds per trace, characters per message
#: (the largest single message ctxbench is measured on, see benchmarks/bench_limits.py) and
#: the spread of a log-normal size (beyond it sizes overflow a float).
MAX_ROUNDS = 100_000
MAX_CHARS = 50_000_000
MAX_SIGMA = 4.0

PLACEHOLDER = re.compile(r"\{(value|[dhul][1-9][0-9]?|one:[^{}]+)\}")
_ANY_BRACE = re.compile(r"\{[^{}]*\}")


def _check_probability(value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"probability must be within [0, 1], not {value}")


def _check_sigma(value: float) -> None:
    if not 0.0 <= value <= MAX_SIGMA:
        raise ValueError(f"sigma must be within [0, {MAX_SIGMA}], not {value}")


def _schema_problem(parameters: Mapping[str, Any]) -> str | None:
    """What the generator cannot use in a tool's JSON Schema (it reads ``properties``,
    ``required`` and each property's ``enum``, ``minimum`` and ``maximum``)."""
    props = parameters.get("properties", {})
    if not isinstance(props, Mapping):
        return "parameters.properties must be a table of parameter schemas"
    required = parameters.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return "parameters.required must be a list of parameter names"
    for name, schema in props.items():
        if not isinstance(schema, Mapping):
            return f"parameters.properties.{name} must be a table (a JSON Schema)"
        enum = schema.get("enum")
        if enum is not None and not (isinstance(enum, list) and enum):
            return f"parameters.properties.{name}.enum must be a non-empty list"
        for bound in ("minimum", "maximum"):
            value = schema.get(bound)
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
            ):
                return f"parameters.properties.{name}.{bound} must be a finite number"
    return None


@dataclass(frozen=True)
class ToolDef:
    """A tool the synthetic agent has; ``produces`` lists the content classes of its output."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    produces: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        bad = [c for c in self.produces if c not in CONTENT_CLASSES]
        if bad:
            raise ValueError(
                f"produces: unknown content class {bad[0]!r}; known: {', '.join(CONTENT_CLASSES)}"
            )
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", self.name):
            raise ValueError(
                f"name {self.name!r} is not a valid tool name (letters, digits, _ . -)"
            )
        problem = _schema_problem(self.parameters)
        if problem:
            raise ValueError(problem)

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, dict(self.parameters))

    @property
    def properties(self) -> dict[str, Any]:
        props = self.parameters.get("properties") or {}
        return dict(props) if isinstance(props, Mapping) else {}


@dataclass(frozen=True)
class OutputClass:
    """How often tool output is of one content class, and its size (log-normal, in chars)."""

    weight: float = 1.0
    median_chars: int = 2000
    sigma: float = 0.8
    min_chars: int = 120
    max_chars: int = 60_000

    def __post_init__(self) -> None:
        if self.weight < 0:
            raise ValueError(f"weight must be >= 0, not {self.weight}")
        if not 0 < self.min_chars <= self.median_chars <= self.max_chars <= MAX_CHARS:
            raise ValueError(f"need 0 < min_chars <= median_chars <= max_chars <= {MAX_CHARS}")
        _check_sigma(self.sigma)


@dataclass(frozen=True)
class ParallelCalls:
    """Native tool calling only: the chance a turn makes several calls, and at most how many."""

    probability: float = 0.0
    max_calls: int = 1

    def __post_init__(self) -> None:
        _check_probability(self.probability)
        if self.max_calls < 1:
            raise ValueError(f"max_calls must be >= 1, not {self.max_calls}")


@dataclass(frozen=True)
class LargeOutputs:
    """Very large single observations (a whole log file, a full table dump)."""

    probability: float = 0.0
    median_chars: int = 150_000
    sigma: float = 0.3

    def __post_init__(self) -> None:
        _check_probability(self.probability)
        if not 1 <= self.median_chars <= MAX_CHARS:
            raise ValueError(f"median_chars must be within [1, {MAX_CHARS}]")
        _check_sigma(self.sigma)


@dataclass(frozen=True)
class Images:
    """Image parts attached to tool output (screenshots, charts)."""

    probability: float = 0.0
    width: int = 96
    height: int = 64
    detail: Literal["auto", "low", "high"] = "auto"
    tools: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_probability(self.probability)
        if not (1 <= self.width <= 1024 and 1 <= self.height <= 1024):
            raise ValueError("width and height must be within 1..1024")


@dataclass(frozen=True)
class ProbeMix:
    """How many facts of each kind to draw from the domain's bank, and how they are asked."""

    recall: int = 0
    artifact: int = 0
    decision: int = 0
    continuation: int = 0
    constraint: int = 0
    superseded: int = 0
    finished_task: int = 0
    safety: int = 0
    preference: int = 0
    mid_trace: float = field(
        default=0.25, metadata={"help": "share of probes asked at a call mid-trace"}
    )
    distractors: int = field(
        default=1, metadata={"help": "near-duplicate values planted per fact value"}
    )
    task: int = field(
        default=1,
        metadata={"help": "probes on phrases of the task (the first user message), kind task"},
    )
    system: int = field(
        default=1,
        metadata={"help": "probes on phrases of the system prompt, kind constraint"},
    )
    repeat: int = field(
        default=1,
        metadata={
            "help": "draws of the bank per kind: more probes per trace (each copy plants "
            "new values), so narrower intervals"
        },
    )

    def __post_init__(self) -> None:
        _check_probability(self.mid_trace)
        counts = [self.count(k) for k in BANK_KINDS] + [self.distractors, self.task, self.system]
        if min(counts) < 0:
            raise ValueError("counts must be >= 0")
        if self.repeat < 1:
            raise ValueError("repeat must be >= 1")

    def count(self, kind: str) -> int:
        """Facts of a bank kind drawn per copy (see ``repeat``)."""
        value: int = getattr(self, kind)
        return value


@dataclass(frozen=True)
class FactSpec:
    """A fact to plant and the probe that asks for it.

    ``value`` is a pattern (``ORD-{d5}``); ``text`` is the sentence holding it (``{value}``);
    a superseded fact's ``update`` announces the new value. ``where`` defaults by kind
    (recall: tool, artifact: argument, decision/continuation/finished_task: assistant,
    constraint: system, superseded: tool, safety and preference: a user turn mid-run); a
    preference may change too (``update``); ``argument`` names the tool parameter (or its kind:
    path, command, sql, url, id, query) an artifact goes into.
    """

    kind: str
    question: str
    value: str
    text: str = ""
    update: str = ""
    where: str = ""
    tool: str = ""
    argument: str = ""
    position: str = ""
    ask: str = ""

    def __post_init__(self) -> None:
        if self.kind not in BANK_KINDS:
            raise ValueError(f"kind {self.kind!r} is not one of {', '.join(BANK_KINDS)}")
        for name, allowed in (("where", WHERE), ("position", POSITIONS), ("ask", ASK)):
            value = getattr(self, name)
            if value and value not in allowed:
                raise ValueError(f"{name} {value!r} is not one of {', '.join(allowed)}")
        if not self.question.strip() or not self.value.strip():
            raise ValueError("question and value must not be empty")
        if "{value}" in self.value:
            raise ValueError("value is the pattern itself; {value} belongs in text and update")
        needs_text = self.kind != "artifact"
        if (needs_text or self.text) and "{value}" not in self.text:
            raise ValueError("text must contain {value}")
        if self.kind == "superseded" and "{value}" not in self.update:
            raise ValueError("a superseded fact needs an update text containing {value}")
        if self.update and "{value}" not in self.update:
            raise ValueError("an update text must contain {value}")
        if self.kind not in UPDATABLE and self.update:
            raise ValueError(f"only {' and '.join(UPDATABLE)} facts have an update")
        for name in ("value", "text", "update"):
            value = getattr(self, name)
            if any(ch in value for ch in '"\\\n\r\t'):
                raise ValueError(
                    f"{name} must not hold double quotes, backslashes or line breaks "
                    "(planted text must survive JSON encoding verbatim)"
                )
            stray = [m for m in _ANY_BRACE.findall(value) if not PLACEHOLDER.fullmatch(m)]
            if stray:
                raise ValueError(
                    f"{name} has an unknown placeholder {stray[0]}; use {{value}}, {{d4}}, {{h8}}, {{u3}}, {{l5}} or {{one:a|b}}"
                )

    @property
    def placement(self) -> str:
        if self.where:
            return self.where
        return {
            "recall": "tool",
            "artifact": "argument",
            "decision": "assistant",
            "continuation": "assistant",
            "constraint": "system",
            "superseded": "tool",
            "finished_task": "assistant",
            "safety": "turn",
            "preference": "turn",
        }[self.kind]


@dataclass(frozen=True)
class Domain:
    """A domain file: the agent's system prompt and task, its final answer, and a fact bank."""

    name: str
    system_prompt: str
    task: str
    final_answer: str
    facts: tuple[FactSpec, ...] = ()

    def bank(self, kind: str) -> tuple[FactSpec, ...]:
        return tuple(f for f in self.facts if f.kind == kind)


@dataclass(frozen=True)
class ScenarioSpec:
    """A resolved scenario: everything :func:`ctxbench.synth.generate` needs, no file access."""

    name: str
    rounds: int
    format: str
    language: str
    domain: Domain
    system_prompt: str
    task: str
    tools: tuple[ToolDef, ...]
    output: Mapping[str, OutputClass]
    description: str = ""
    parallel: ParallelCalls = field(default_factory=ParallelCalls)
    large: LargeOutputs = field(default_factory=LargeOutputs)
    images: Images = field(default_factory=Images)
    probes: ProbeMix = field(default_factory=ProbeMix)
    facts: tuple[FactSpec, ...] = ()
    source: str = ""

    @property
    def tool_specs(self) -> tuple[ToolSpec, ...]:
        return tuple(t.spec() for t in self.tools)

    def output_mix(self) -> dict[str, float]:
        """Content class -> share of tool outputs (weights normalised)."""
        total = sum(c.weight for c in self.output.values()) or 1.0
        return {name: round(c.weight / total, 4) for name, c in self.output.items() if c.weight > 0}

    def expected_chars(self) -> float:
        """The expected characters of tool output in one trace: rounds x calls per round x
        output size, each as the generator draws it (log-normal means, clipped)."""
        total = sum(c.weight for c in self.output.values()) or 1.0
        normal = sum(
            c.weight
            / total
            * min(c.max_chars, max(c.min_chars, c.median_chars * math.exp(c.sigma**2 / 2)))
            for c in self.output.values()
        )
        large = min(MAX_CHARS, self.large.median_chars * math.exp(self.large.sigma**2 / 2))
        size = self.large.probability * large + (1 - self.large.probability) * normal
        calls = 1 + self.parallel.probability * (self.parallel.max_calls - 1)
        return self.rounds * calls * size

    def probe_counts(self) -> dict[str, int]:
        """Probes per kind in every generated trace (bank draws plus explicit facts, and at
        most ``task`` / ``system`` on the opening: fewer when its text has fewer phrases)."""
        counts = {
            k: self.probes.repeat * self.probes.count(k) + sum(1 for f in self.facts if f.kind == k)
            for k in BANK_KINDS
        }
        counts["constraint"] += self.probes.system
        counts["task"] = self.probes.task
        return counts

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary (what ``ctxbench scenarios`` lists)."""
        return {
            **attrs(self, "name description rounds format language"),
            "domain": self.domain.name,
            "tools": [t.name for t in self.tools],
            "content_mix": self.output_mix(),
            "parallel_probability": self.parallel.probability,
            "large_probability": self.large.probability,
            "image_probability": self.images.probability,
            "probes": self.probe_counts(),
            "source": self.source,
        }


def check_generation(
    spec: ScenarioSpec, traces: int, *, key: str, source: str | Path | None = None
) -> None:
    """Refuse, before any trace is built, to generate ``traces`` traces of ``spec`` when
    their expected text (traces x rounds x calls x output size) is over
    :data:`~ctxbench.limits.MAX_GENERATED_CHARS`; ``key`` names the count in the error."""
    from ctxbench import limits

    total = traces * spec.expected_chars()
    if total > limits.MAX_GENERATED_CHARS:
        raise ConfigError(
            f"{traces:,} traces of {spec.name} would hold about {total:,.0f} characters of "
            f"tool output (traces x rounds x calls x output size), over the limit of "
            f"{limits.MAX_GENERATED_CHARS:,} (ctxbench.limits.MAX_GENERATED_CHARS)",
            path=source,
            key=key,
            hint="generate fewer traces (or smaller ones) per source, or split the work",
        )
