"""RunSpec: one cell (trace, strategy + params, window, counters, summarizer) with a stable id.

``run_id`` hashes the canonical JSON of the spec together with the trace's content hash, so
the same cell always gets the same id, on any machine, in any order.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ctxbench.errors import ConfigError


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8: the one serialisation ids are computed from."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class RunSpec:
    """Everything needed to re-run one replay; ``trace_source`` says where to load the trace.

    Its defaults are one replay's defaults, written once: sweep files and every command read
    them as ``RunSpec.reserved``, ``RunSpec.counter`` ..."""

    trace_id: str
    trace_hash: str
    strategy: str
    params: Mapping[str, Any] = field(default_factory=dict)
    window: int = 0
    reserved: int = 4096
    counter: str = "tiktoken:o200k_base"
    estimator: str = ""
    #: which earlier reasoning the counters count (``ctxbench.counting.reasoning``); "" follows
    #: the family of the trace's recorded model, and is left out of the id (older ids hold)
    reasoning: str = ""
    summarizer: str = "model_like"
    summarizer_params: Mapping[str, Any] = field(default_factory=dict)
    error_style: str = "openai"
    seed: int = 0
    mine_probes: bool = False
    trace_source: str = ""
    #: the model id an answerer endpoint serves (``--answerer MODEL@URL``): its answers to
    #: the probes, and with ``next_action`` its next steps at compactions (and at every
    #: ``next_action_every``-th call); "" asks no model. Where it is served is not part of
    #: the cell (it comes from the command line only); each is in the id only when set
    answerer: str = ""
    next_action: bool = False
    next_action_every: int = 0
    #: the code of the plug-ins the cell runs (``path@sha256:...`` or ``path@version:V``,
    #: space-separated; :func:`ctxbench.registry.plugin_version`): a changed plug-in is
    #: another cell, so ``--resume`` never reuses an old version's result. Left out of the id
    #: when empty (built-in strategies keep their ids) and out of :attr:`key`, so the gate
    #: compares a new version with the old one.
    plugin: str = ""
    #: the strategy's Config built from ``params`` (by :func:`ctxbench.cell.runner.resolve_spec`),
    #: carried to the replay so it is built once: not part of the cell (``params`` is), left
    #: out of equality, of rows and of pickles (a worker builds its own), and dropped by
    #: :meth:`with_` when ``params`` change
    config: Any = field(default=None, compare=False, repr=False)

    def identity(self) -> dict[str, Any]:
        """The fields that define the cell (where the trace was loaded from is not one); the
        reasoning rule only when one is set, so cells written before it keep their ids."""
        out: dict[str, Any] = {
            "trace_id": self.trace_id,
            "trace_hash": self.trace_hash,
            "strategy": self.strategy,
            "params": dict(self.params),
            "window": self.window,
            "reserved": self.reserved,
            "counter": self.counter,
            "estimator": self.estimator,
            "summarizer": self.summarizer,
            "summarizer_params": dict(self.summarizer_params),
            "error_style": self.error_style,
            "seed": self.seed,
            "mine_probes": self.mine_probes,
        }
        if self.reasoning:
            out["reasoning"] = self.reasoning
        if self.answerer:
            out["answerer"] = self.answerer
        if self.next_action:
            out["next_action"] = self.next_action
        if self.next_action_every:
            out["next_action_every"] = self.next_action_every
        if self.plugin:
            out["plugin"] = self.plugin
        return out

    @property
    def run_id(self) -> str:
        return hashlib.sha256(canonical_json(self.identity()).encode("utf-8")).hexdigest()[:16]

    @property
    def key(self) -> str:
        """A readable key that survives re-hashing: trace, strategy, params, window, counters."""
        params = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        reasoning = f"|reasoning={self.reasoning}" if self.reasoning else ""
        return (
            f"{self.trace_id}|{self.strategy}({params})|w={self.window}|r={self.reserved}"
            f"|{self.counter}{reasoning}|{self.estimator}|{self.summarizer}"
        )

    def to_dict(self) -> dict[str, Any]:
        out = self.identity()
        out["trace_source"] = self.trace_source
        out["run_id"] = self.run_id
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSpec:
        known = {f for f in cls.__dataclass_fields__ if f != "config"}
        unknown = sorted(k for k in data if k not in known and k != "run_id")
        if unknown:
            raise ConfigError(
                f"unknown run spec keys {unknown}",
                hint=f"valid keys: {', '.join(sorted(known))}",
            )
        for key, value in data.items():
            problem = _field_problem(key, value)
            if problem:
                raise ConfigError(
                    f"run spec key {key!r} {problem}, not {type(value).__name__}",
                    key=f"spec.{key}",
                    hint="the row was edited, or written by another ctxbench version",
                )
        required = [
            f.name
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        absent = [k for k in required if k not in data]
        if absent:
            raise ConfigError(
                f"the run spec has no {', '.join(repr(k) for k in absent)}",
                key=f"spec.{absent[0]}",
                hint="the row was edited, or written by another ctxbench version",
            )
        if data.get("reasoning"):
            from ctxbench.counting.reasoning import check_rule

            try:
                check_rule(data["reasoning"])
            except ConfigError as exc:
                raise ConfigError(exc.message, key="spec.reasoning", hint=exc.hint) from None
        spec = cls(**{k: v for k, v in data.items() if k in known})
        if "run_id" in data and data["run_id"] != spec.run_id:
            raise ConfigError(
                f"run_id {data['run_id']!r} does not match the spec (recomputed {spec.run_id!r})",
                hint="the row was edited, or written by another ctxbench version",
            )
        return spec

    def with_(self, **changes: Any) -> RunSpec:
        if "config" not in changes and changes.get("params", self.params) != self.params:
            changes["config"] = None  # the Config was built from the old params
        return replace(self, **changes)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["config"] = None  # a plug-in's Config may not pickle; a worker builds its own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


#: The JSON type every run spec field must have (text when not listed): a row is data.
_FIELD_TYPES: dict[str, type] = {
    "params": dict,
    "summarizer_params": dict,
    "window": int,
    "reserved": int,
    "seed": int,
    "mine_probes": bool,
    "next_action": bool,
    "next_action_every": int,
}
_TYPE_WORDS = {dict: "an object", int: "an integer", bool: "true or false", str: "text"}


def _field_problem(key: str, value: Any) -> str:
    """Why ``value`` cannot be run spec field ``key`` ("" when it can)."""
    if key == "run_id":
        return ""
    expected = _FIELD_TYPES.get(key, str)
    if (isinstance(value, bool) and expected is not bool) or not isinstance(value, expected):
        return f"must be {_TYPE_WORDS[expected]}"
    if isinstance(value, dict) and not all(isinstance(k, str) for k in value):
        return "must have text keys"
    try:  # a lone surrogate (from a JSON escape) has no UTF-8: the run id could not be computed
        canonical_json(value).encode("utf-8")
    except (UnicodeEncodeError, ValueError, RecursionError):
        return "must be valid Unicode text"
    return ""
