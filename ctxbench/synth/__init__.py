"""Synthetic traces: scenario specs (TOML) and the seeded generator of long ReAct traces.

Stable API (the sweep uses it)::

    spec = load_scenario("coding_agent")          # or a path to a scenario .toml
    traces = list(generate(spec, seed=7, count=3)) # ids "coding_agent-s7-0", ...

Same scenario and seed -> byte-identical traces. ``scenario_names()`` lists the embedded ones.
"""

from ctxbench.synth.content import CONTENT_CLASSES
from ctxbench.synth.generator import generate
from ctxbench.synth.scenario import FactSpec, ScenarioSpec
from ctxbench.synth.scenario_file import load_scenario, parse_scenario, scenario_names

__all__ = [
    "CONTENT_CLASSES",
    "FactSpec",
    "ScenarioSpec",
    "generate",
    "load_scenario",
    "parse_scenario",
    "scenario_names",
]
