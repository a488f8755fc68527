"""A commented starter sweep for a user's own traces (``ctxbench init``), from what they say.

It reads each given file once: its format (so the ``[[traces]]`` tables say how to read it),
its recorded models (``counters = ["auto"]`` counts each with its model's tokenizer and the
reasoning rule its billed usage supports), the peak prompt of each trace as the baseline
(``none``) replays it, counted by that counter, and the billed usage where there is some
(how far the counter is from it, and the profile step that closes the gap). Windows are
picked around each source's peak, below it (the baseline overflows) and above it (nothing
overflows), so every source has both kinds of column. The framework that recorded a source
brings its strategy where ctxbench reproduces it (Claude Code sessions: ``claude_code``, its
CLI version taken from each session). Every value carries a comment saying why.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctxbench.counting.billing import Call
    from ctxbench.trace import Trace
    from ctxbench.windows import ModelWindow

#: Window sizes the starter picks from (k = 1,024).
GRID_K: tuple[int, ...] = (4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
RESERVED = 4096
#: A window below the peak leaves room for at most this share of it; one above holds the
#: peak, the reservation and this margin (the baseline's count and a strategy's view differ a little).
BELOW, ABOVE = 0.6, 1.15


@dataclass
class SourceFacts:
    """What one file's traces say."""

    path: Path
    format: str
    traces: int = 0
    peak: int = 0
    models: dict[str, None] = field(default_factory=dict)  # recorded models, in order
    #: per model: its billed calls counted under every rule, its counter and family rule
    calls: dict[str, list[Call]] = field(default_factory=dict)
    versions: set[str] = field(default_factory=set)
    #: the smallest documented window of the recorded models (None: not in the table)
    model_window: ModelWindow | None = None

    @property
    def source(self) -> str:
        """The folder and format: files of one source share their windows' comments."""
        return f"{self.format} in {self.path.parent.name or '.'}/"


def read_facts(path: Path) -> SourceFacts:
    """Format, models, billed calls, versions and the baseline's peak prompt of one file."""
    from ctxbench.cell.traces import open_traces
    from ctxbench.counting import counter_under, get_counter
    from ctxbench.counting.auto import call_models, choose, stand_in, trace_model
    from ctxbench.counting.billing import billed_calls, choose_rule
    from ctxbench.windows import model_window

    source = open_traces(path)
    facts = SourceFacts(path, source.format)
    for trace in source.traces():
        facts.traces += 1
        model = trace_model(trace) or ""
        choice = choose(model or None)
        for m in call_models(trace):
            facts.models.setdefault(m, None)
        # the rule the replay will count under (cell.runner: the billed one, else the family's)
        calls = billed_calls(
            [trace], get_counter(choice.counter), _served(trace, model), exact=False
        )
        billed = choose_rule(calls, choice.reasoning, fit_scale=stand_in(choice, choice.counter))
        rule = billed.rule if billed.from_usage or choice.family != "unknown" else None
        facts.calls.setdefault(model, []).extend(calls)
        last = max(trace.call_indices, default=len(trace.messages))
        peak = counter_under(choice.counter, rule).count_prompt(trace.messages[:last], trace.tools)
        facts.peak = max(facts.peak, peak)
        version = trace.meta.get("version")
        if isinstance(version, str):
            facts.versions.add(version)
        found = model_window(model)
        if found is not None and (
            facts.model_window is None or found.window < facts.model_window.window
        ):
            facts.model_window = found
    return facts


def _served(trace: Trace, model: str) -> str:
    from ctxbench.counting.auto import call_models

    models = call_models(trace)
    return model if model in models else models[0]


def distance(model: str, calls: Sequence[Call]) -> str | None:
    """How far ``auto``'s counter is from ``model``'s billed prompts (None without any)."""
    from ctxbench.counting.auto import choose, stand_in
    from ctxbench.counting.billing import choose_rule

    if not calls:
        return None
    choice = choose(model or None)
    billed = choose_rule(calls, choice.reasoning, fit_scale=stand_in(choice, choice.counter))
    fit = billed.applied
    assert fit is not None
    return (
        f"{model or '(no model)'}: {choice.counter}, reasoning {billed.rule}, is off by median "
        f"{fit.raw_median:.1%}, p90 {fit.raw_p90:.1%}, bias {fit.raw_bias:+.1%} "
        f"on {fit.calls} billed calls"
    )


def _written(tokens: int | str) -> str:
    """A window as the sweep file writes it: a quoted model name or ``"32k"``, or the exact
    number when a ``k`` size would sit near a model's decimal window (``128k`` is warned
    about)."""
    from ctxbench.windows import window_warning

    if isinstance(tokens, str):
        return json.dumps(tokens)
    k = tokens // 1024
    return str(tokens) if window_warning(f"{k}k") else json.dumps(f"{k}k")


def windows_for(
    peak: int, reserved: int = RESERVED, model: ModelWindow | None = None
) -> tuple[int | str, int | str]:
    """A window the baseline overflows at (below the peak) and one it does not (above): the
    recorded model's documented window (its name) when that holds the peak, else a size."""
    sizes = [k * 1024 for k in GRID_K]
    below = max((s for s in sizes if s - reserved <= BELOW * peak), default=sizes[0])
    need = (peak + reserved) * ABOVE
    if model is not None and model.window >= need:
        return below, model.model
    above = min((s for s in sizes if s >= need), default=sizes[-1])
    return below, above


def _header(mine: bool) -> list[str]:
    return [
        "# A starter ctxbench sweep (written by `ctxbench init`). Edit it, then run:",
        "#   ctxbench sweep THIS_FILE -o results/ && ctxbench report results/ -o report.html",
        "# Every key: `ctxbench sweep --help` (the README has the same reference).",
        "",
        'name = "starter"',
        "# Output reservation: a prompt must fit window - reserved.",
        f"reserved = [{RESERVED}]",
        '# "" = each strategy decides with its own estimator (DB-GPT: content-only tiktoken ...).',
        'estimators = [""]',
        '# Snapshot / offload files the strategies write: "cited" keeps only those a probe\'s',
        '# evidence was found in (probes are scored during the replay either way); "all", "none".',
        'keep_files = "cited"',
        "# Recorded traces carry no probes: mine them (paths, ids, numbers only in their evidence).",
        f"mine_probes = {'true' if mine else 'false'}",
    ]


def starter_sweep(traces: Sequence[str | Path], *, base: Path) -> str:
    """The TOML text of a starter sweep over ``traces`` (paths written relative to ``base``,
    the folder the sweep file goes in); no traces: an embedded scenario stands in."""
    if not traces:
        return _scenario_starter()
    facts = [read_facts(Path(p)) for p in traces]
    lines = _header(True)
    lines += _windows_lines(facts) + _counter_lines(facts) + [""]
    for f in facts:
        try:
            shown = f.path.resolve().relative_to(base.resolve())
        except ValueError:
            shown = f.path.resolve()
        models = ", ".join(m for m in f.models if m) or "no recorded model"
        lines += [
            "[[traces]]",
            f"# {f.traces} trace(s) of {models}; the baseline's peak prompt is {f.peak:,} tokens",
            f"path = {json.dumps(str(shown))}  # relative to this file; a glob works too",
            f'format = "{f.format}"  # detected; "auto" detects at run time',
            "",
        ]
    lines += _strategy_lines([f.format for f in facts], facts)
    return "\n".join(lines)


def _windows_lines(facts: Sequence[SourceFacts]) -> list[str]:
    from ctxbench.windows import parse_window

    groups: dict[str, list[SourceFacts]] = {}
    for f in facts:
        groups.setdefault(f.source, []).append(f)
    chosen: dict[int | str, list[str]] = {}
    for source, members in groups.items():
        peak = max(f.peak for f in members)
        small = min(f.peak for f in members)
        windows = [
            min((f.model_window for f in members if f.model_window), key=_size, default=None)
        ]
        below, above = windows_for(peak, RESERVED, windows[0])
        span = f"{small:,}" if small == peak else f"{small:,} to {peak:,}"
        files = f"{len(members)} files" if len(members) > 1 else members[0].path.name
        chosen.setdefault(below, []).append(f"{source} ({files}, peak {span}) overflows")
        fits = "the recorded model's window" if isinstance(above, str) else "holds every peak"
        chosen.setdefault(above, []).append(f"{source}: {fits}")
    order = sorted(chosen, key=lambda w: parse_window(w))
    lines = [
        "",
        '# Model windows in true tokens (32k = 32,768) or model names ("gpt-4o": `ctxbench',
        "# windows`). Each window is a column of the report. Picked around each source's peak",
        "# prompt (the baseline's, counted by the counter below), so every source has a window",
        "# that overflows and one that does not:",
    ]
    lines += [f"#   {_shown(w)}: " + "; ".join(chosen[w]) for w in order]
    lines.append("windows = [" + ", ".join(_written(w) for w in order) + "]")
    return lines


def _size(window: ModelWindow) -> int:
    return window.window


def _shown(window: int | str) -> str:
    return window if isinstance(window, str) else _written(window).strip('"')


def _counter_lines(facts: Sequence[SourceFacts]) -> list[str]:
    from ctxbench.counting.auto import choose

    models = list(dict.fromkeys(m for f in facts for m in f.models))
    lines = [
        "",
        "# The provider's TRUE tokenizer: auto = each trace's recorded model's tokenizer, with",
        "# the reasoning rule its billed usage supports (else the family's documented one):",
    ]
    for model in models or [""]:
        choice = choose(model or None)
        lines.append(f"#   {model or '(no model)'} -> {choice.counter} ({choice.family})")
    calls: dict[str, list[Call]] = {}
    for f in facts:
        for model, found in f.calls.items():
            calls.setdefault(model, []).extend(found)
    distances = [d for d in (distance(m, c) for m, c in calls.items()) if d]
    if distances:
        lines.append("# These traces carry billed usage; init measured auto's counts against it:")
        lines += [f"#   {d}" for d in distances]
        paths = " ".join(str(f.path) for f in facts if any(f.calls.values()))
        lines += [
            "# Fit a profile on that usage and count with it instead:",
            f"#   ctxbench calibrate {paths} --counter auto --save-profile profile.json",
            '#   counters = ["profile:profile.json"]  (several models: profile.MODEL.json each)',
        ]
    lines.append('counters = ["auto"]')
    return lines


def _strategy_lines(formats: Sequence[str], facts: Sequence[SourceFacts]) -> list[str]:
    """The strategies every starter proposes (:attr:`Strategy.starter`), then the strategy
    reproducing each source's framework (:attr:`Strategy.reproduces`)."""
    from ctxbench.strategies import registered, starters

    lines: list[str] = []
    names = []
    for name, starter in starters():
        names.append(name)
        lines += ["[[strategies]]", f'name = "{name}"  # {starter.why}']
        if starter.params:
            lines.append(f"params = {starter.params}")
        lines.append("")
    for fmt in dict.fromkeys(formats):
        found = [cls for cls in registered() if fmt in cls.reproduces]
        if not found or found[0].name in names:
            continue
        name, why = found[0].name, found[0].reproduces_why
        names.append(name)
        versions = sorted({v for f in facts if f.format == fmt for v in f.versions})
        seen = f" (recorded versions: {', '.join(versions)})" if versions else ""
        lines += ["[[strategies]]", f'name = "{name}"  # {why}{seen}', ""]
    return lines


def _scenario_starter() -> str:
    lines = [
        *_header(False),
        "# Model windows in true tokens; 32k = 32,768. Each window is a column of the report.",
        'windows = ["32k", 131072]',
        "# The provider's TRUE tokenizer (`ctxbench counters`); add hf:qwen2.5 etc. to compare.",
        'counters = ["tiktoken:o200k_base"]',
        "",
        "[[traces]]  # no traces given: a synthetic coding agent with planted facts",
        'scenario = "coding_agent"  # `ctxbench scenarios` lists them',
        "seeds = [0, 1]",
        "",
    ]
    return "\n".join(lines + _strategy_lines([], []))
