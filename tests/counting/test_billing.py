"""The reasoning rule from billing: ``auto`` checks each rule against the recorded usage.

The traces here are DeepSeek-reasoner-style runs generated with ``reasoning_content`` on every
assistant message and billed ``prompt_tokens`` on every call, the billing following one rule
(the exact tokenizer under that rule, plus a hidden system part and half a percent of noise):
tool turns alternate with chat turns, so every pair of rules counts some calls apart."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxbench.cell.runner import build_parts
from ctxbench.cell.spec import RunSpec
from ctxbench.cli import cli
from ctxbench.counting import counter_under, get_counter
from ctxbench.counting.auto import billed_for, choose, rule_for
from ctxbench.counting.billing import FROM_FAMILY, FROM_USAGE, billed_calls, choose_rule
from ctxbench.counting.reasoning import REASONING_RULES, ReasoningCounter
from ctxbench.formats.canonical import write_traces
from ctxbench.trace import Message, ToolCall, Trace, Usage

WORDS = ("check", "file", "the", "error", "maybe", "line", "test", "run", "fix", "import")


def reasoner_trace(
    billed_as: str, trace_id: str = "reasoner", *, model: str = "deepseek-reasoner", seed: int = 0
) -> Trace:
    """Six user turns (tool turns of five calls alternate with one-call chat turns), billed
    under ``billed_as`` with hf:deepseek-v3.1, 900 hidden tokens and +-0.5% noise."""
    rng = random.Random(seed)
    billing = counter_under("hf:deepseek-v3.1", billed_as)
    msgs = [Message("system", "You are a coding agent. Use bash.")]
    for turn in range(6):
        msgs.append(Message("user", f"Task {turn}: fix bug {turn} in module m{turn}.py"))
        rounds = 5 if turn % 2 == 0 else 0
        for r in range(rounds + 1):
            thought = " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 200)))
            billed = round((billing.count_prompt(msgs) + 900) * rng.uniform(0.995, 1.005))
            usage = Usage(prompt_tokens=billed, completion_tokens=50)
            replay = {"reasoning_content": thought}
            if r < rounds:
                call = ToolCall(f"c{turn}_{r}", "bash", json.dumps({"cmd": f"grep err m{r}.py"}))
                msgs.append(
                    Message("assistant", "", tool_calls=(call,), usage=usage, replay=replay)
                )
                out = f"m{turn}.py:{r}: error " * rng.randint(5, 40)
                msgs.append(Message("tool", out, tool_call_id=call.id, name="bash"))
            else:
                msgs.append(Message("assistant", f"Fixed bug {turn}.", usage=usage, replay=replay))
    return Trace(trace_id, tuple(msgs), meta={"model": model})


@pytest.mark.parametrize("billed_as", REASONING_RULES)
def test_auto_chooses_the_rule_the_billed_usage_supports(billed_as: str) -> None:
    trace = reasoner_trace(billed_as)
    billed = billed_for(trace, "deepseek-reasoner", "hf:deepseek-v3.1")
    assert billed is not None and billed.from_usage
    assert billed.rule == billed_as
    assert billed.telling_calls >= 20 and billed.family_rule == "tool_turns"
    fits = {f.rule: f for f in billed.fits}
    assert all(fits[billed_as].median < fits[r].median for r in fits if r != billed_as)
    assert ("the family's rule" in billed.describe()) == (billed_as == "tool_turns")


def test_usage_overrides_the_model_name_table_in_the_replay() -> None:
    """An agent that strips reasoning before sending it back is billed for none of it: the
    replay counts under 'none' although DeepSeek's thinking mode documents tool turns."""
    trace = reasoner_trace("none")
    assert choose("deepseek-reasoner").reasoning == "tool_turns"
    assert rule_for("", "deepseek-reasoner", "hf:deepseek-v3.1", trace) == "none"
    assert rule_for("all", "deepseek-reasoner", "hf:deepseek-v3.1", trace) == "all"  # given wins
    spec = RunSpec(
        trace_id=trace.id,
        trace_hash=trace.content_hash,
        strategy="none",
        window=32768,
        counter="hf:deepseek-v3.1",
        estimator="hf:deepseek-v3.1",
    )
    parts = build_parts(spec, trace)
    assert isinstance(parts.true_counter, ReasoningCounter)
    assert parts.true_counter.rule == "none" and getattr(parts.estimator, "rule", None) == "none"


def test_without_telling_usage_the_family_rule_stands_with_its_source() -> None:
    trace = reasoner_trace("tool_turns")
    stripped = Trace("plain", tuple(replace(m, replay={}) for m in trace.messages), meta=trace.meta)
    billed = billed_for(stripped, "deepseek-reasoner", "hf:deepseek-v3.1")
    assert billed is not None and billed.source == FROM_FAMILY and billed.rule == "tool_turns"
    assert "api-docs.deepseek.com/guides/thinking_mode" in billed.describe()
    calls = billed_calls([stripped], get_counter("hf:deepseek-v3.1"))
    assert choose_rule([], "none").source == FROM_FAMILY and len(calls) == 21
    assert billed_for(trace, "deepseek-reasoner", "chars4") is None  # an estimator holds no rule


def test_calibrate_reports_per_model_and_applies_the_rule_it_prints(tmp_path: Path) -> None:
    """Chat runs billed without reasoning and reasoner runs billed for tool turns, calibrated
    together: one group per model, each under its own billed rule, the pooled figure last."""
    path = tmp_path / "mixed.jsonl"
    write_traces(
        path,
        [
            reasoner_trace("tool_turns", "r1"),
            reasoner_trace("none", "c1", model="deepseek-chat", seed=1),
        ],
    )
    result = CliRunner().invoke(cli, ["calibrate", str(path), "-c", "auto", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    groups = {g["model"]: g for g in data["models"]}
    assert groups["deepseek-reasoner"]["reasoning"] == "tool_turns"
    assert groups["deepseek-chat"]["reasoning"] == "none"
    for group in groups.values():
        check = group["reasoning_check"]
        assert check["from"] == FROM_USAGE and check["rule"] == group["reasoning"]
        fitted = group["counter"]["with_constant"]["median_abs_rel_error"]
        assert fitted < 0.01  # the rule printed is the rule applied
    assert data["pooled"]["name"] == "all 2 models pooled"
    assert "deepseek-reasoner -> hf:deepseek-v3.1, reasoning tool_turns" in result.stderr
    text = CliRunner().invoke(cli, ["calibrate", str(path), "-c", "auto", "-q"]).output
    assert text.index("== deepseek-reasoner") < text.index("all 2 models pooled")
