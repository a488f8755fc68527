"""``ctxbench init --strategy NAME``: the files a team needs to test its own compactor in CI.

- ``NAME.py``: a plain compactor (``compact(messages, budget, *, keep_last=12)`` on
  OpenAI-style dicts) that keeps the system prompt, every user message (where rules, safety
  rules and preferences arrive) and the last messages, never starting at a tool result;
- ``ctxbench/probes.jsonl``: the probes the test asks, in the probe-file format
  (``{"trace_id", "probes"}`` per line): the rules, safety rules and preferences of an
  embedded scenario, to copy for your own traces;
- ``tests/test_NAME.py``: a pytest test through the ``ctxbench_retention`` fixture (the
  plugin installs with ctxbench), failing with each probe lost, its call and the answer;
- ``.github/workflows/ctxbench.yml``: a workflow that installs ctxbench and runs the test.

The compactor passes its own test as written; change it, and the test says what it lost.
"""

from __future__ import annotations

import json
from pathlib import Path

from ctxbench.errors import ConfigError

#: The scenario the scaffolded test replays, its seed and window, and the kinds it asserts.
SCENARIO, SEED, WINDOW = "coding_agent", 1, 131072
KINDS = ("constraint", "safety", "preference")

COMPACTOR = '''"""{name}: a context compactor for our agent, tested with ctxbench.

ctxbench calls ``compact(messages, budget, **knobs)`` before every model call with the prompt
as OpenAI-style dicts; the list returned is the prompt sent. Knobs are keyword parameters with
defaults (``ctxbench run ... --strategy {name}:compact --set keep_last=8``).
"""

from __future__ import annotations


def compact(messages: list[dict], budget: int, *, keep_last: int = 12) -> list[dict]:
    """Keep the system prompt, every user message (rules and preferences arrive there) and the
    last ``keep_last`` messages; the kept tail never starts at a tool result (its call would
    be gone: a provider rejects that prompt)."""
    start = max(len(messages) - keep_last, 0)
    while start < len(messages) and messages[start]["role"] == "tool":
        start += 1
    return [
        m for i, m in enumerate(messages) if i >= start or m["role"] in ("system", "user")
    ]
'''

TEST = '''"""{name} keeps what the user said must hold: rules, safety rules and preferences given
mid-run. A failure lists each probe lost, the call where it was lost and the missing answer.

Replace the scenario with your own traces (``ctxbench_retention(compact, ["traces.jsonl"],
probes="ctxbench/probes.jsonl", ...)``; ``ctxbench probes mine`` proposes probes for recorded runs).
"""

from __future__ import annotations

from pathlib import Path

from {name} import compact

PROBES = Path(__file__).resolve().parents[1] / "ctxbench" / "probes.jsonl"


def test_{name}_keeps_rules_safety_and_preferences(ctxbench_retention) -> None:
    ctxbench_retention(
        compact,
        scenarios=["{scenario}"],
        seeds=[{seed}],
        probes=PROBES,
        window={window},
        min_kind={min_kind},
    )
'''

WORKFLOW = """# Runs the ctxbench retention test of {name} (tests/test_{name}.py) on every change.
name: ctxbench

on:
  pull_request:
  push:
    branches: [main]

jobs:
  retention:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      # Pin ctxbench (a release or a wheel you build); its pytest plugin installs with it.
      - name: Install ctxbench and pytest
        run: pip install "ctxbench @ git+https://github.com/OWNER/ctxbench@v0.1.0" pytest
      - name: Retention test
        run: PYTHONPATH=. python -m pytest -q tests/test_{name}.py
"""


def scaffold_files(name: str) -> dict[str, str]:
    """The scaffold's files by relative path (see the module docstring)."""
    if not name.isidentifier() or name.startswith("_"):
        raise ConfigError(
            f"{name!r} is not a module name",
            key="--strategy",
            hint="give a Python identifier, e.g. --strategy my_compactor",
        )
    from ctxbench.synth import generate, load_scenario

    trace = next(generate(load_scenario(SCENARIO), SEED))
    probes = [p.to_dict() for p in trace.probes if p.kind in KINDS]
    min_kind = "{" + ", ".join(f'"{k}": 1.0' for k in KINDS) + "}"
    return {
        f"{name}.py": COMPACTOR.format(name=name),
        "ctxbench/probes.jsonl": json.dumps(
            {"trace_id": trace.id, "probes": probes}, ensure_ascii=False
        )
        + "\n",
        f"tests/test_{name}.py": TEST.format(
            name=name, scenario=SCENARIO, seed=SEED, window=WINDOW, min_kind=min_kind
        ),
        ".github/workflows/ctxbench.yml": WORKFLOW.format(name=name),
    }


def write_scaffold(name: str, folder: str | Path, *, force: bool = False) -> list[Path]:
    """Write the scaffold under ``folder``; an existing file is an error unless ``force``."""
    files = {Path(folder) / rel: text for rel, text in scaffold_files(name).items()}
    if not force:
        for path in files:
            if path.exists():
                raise ConfigError("already exists", path=path, hint="add --force to overwrite it")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    return list(files)
