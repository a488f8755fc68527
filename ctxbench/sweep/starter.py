"""A commented starter sweep for a user's own traces (``ctxbench init``).

It reads each given file's format (canonical or any importable recorded format), so the
sweep's ``[[traces]]`` tables say how to read them, and picks windows around the traces'
size; every other key is written with its default and a comment, ready to edit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

#: The strategies the starter compares: the baseline, a simple window and two real systems.
STARTER_STRATEGIES: tuple[tuple[str, str], ...] = (
    ("none", "the baseline: never compacts, shows where the traces overflow"),
    ("sliding_window", "system + the last N whole rounds"),
    ("dbgpt", "DB-GPT's five states and layers 1-4"),
    ("openhands_summarizing", "OpenHands' head + summary + tail"),
)


def _format_of(path: Path) -> str:
    from ctxbench.formats.importing import open_source

    return open_source(path).importer.name


def starter_sweep(traces: Sequence[str | Path], *, base: Path) -> str:
    """The TOML text of a starter sweep over ``traces`` (paths written relative to ``base``,
    the folder the sweep file goes in); no traces: an embedded scenario stands in."""
    lines = [
        "# A starter ctxbench sweep (written by `ctxbench init`). Edit it, then run:",
        "#   ctxbench sweep THIS_FILE -o results/ && ctxbench report results/ -o report.html",
        "# Every key: `ctxbench sweep --help` (the README has the same reference).",
        "",
        'name = "starter"',
        "# Model windows in true tokens; 32k = 32,768. Each window is a column of the report.",
        'windows = ["32k", "128k"]',
        "# Output reservation: a prompt must fit window - reserved.",
        "reserved = [4096]",
        "# The provider's TRUE tokenizer (`ctxbench counters`); add hf:qwen2.5 etc. to compare.",
        'counters = ["tiktoken:o200k_base"]',
        '# "" = each strategy decides with its own estimator (DB-GPT: content-only tiktoken ...).',
        'estimators = [""]',
        '# Snapshot / offload files the strategies write: "cited" keeps only those a probe\'s',
        '# evidence was found in (probes are scored during the replay either way); "all", "none".',
        'keep_files = "cited"',
        "# Recorded traces carry no probes: mine them (paths, ids, numbers only in their evidence).",
        f"mine_probes = {'true' if traces else 'false'}",
        "",
    ]
    if traces:
        for path in traces:
            target = Path(path)
            fmt = _format_of(target)
            try:
                shown = target.resolve().relative_to(base.resolve())
            except ValueError:
                shown = target.resolve()
            lines += [
                "[[traces]]",
                f"path = {json.dumps(str(shown))}  # relative to this file; a glob works too",
                f'format = "{fmt}"  # detected; "auto" detects at run time',
                "",
            ]
    else:
        lines += [
            "[[traces]]  # no traces given: a synthetic coding agent with planted facts",
            'scenario = "coding_agent"  # `ctxbench scenarios` lists them',
            "seeds = [0, 1]",
            "",
        ]
    for name, what in STARTER_STRATEGIES:
        lines += ["[[strategies]]", f'name = "{name}"  # {what}']
        if name == "sliding_window":
            lines.append("params = { keep_rounds = [4, 8] }  # a list is an axis")
        if name == "dbgpt":
            lines.append("params = { warning_threshold = [0.6, 0.7] }  # `ctxbench strategies`")
        lines.append("")
    return "\n".join(lines)
