"""observation_masking: The Complexity Trap (SWE-agent LastNObservations) and OpenHands V0
ObservationMaskingCondenser, one test per rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxbench.pairing import pairing_violations
from ctxbench.strategies.observation_masking import (
    OPENHANDS_PLACEHOLDER,
    SWE_AGENT_PLACEHOLDER,
    ObservationMaskingConfig,
    masked_indices,
)
from ctxbench.trace import Message, Part
from tests.factories import react_trace, tool_trace
from tests.replaying import compactions, run

OUTPUT = "line one\nline two\nline three"


def test_defaults_follow_the_complexity_trap() -> None:
    cfg = ObservationMaskingConfig()
    assert (cfg.unit, cfg.keep, cfg.polling, cfg.placeholder) == ("rounds", 10, 1, None)
    assert SWE_AGENT_PLACEHOLDER == "Old environment output: ({lines} lines omitted)"
    assert OPENHANDS_PLACEHOLDER == "<MASKED>"


def test_observations_of_the_last_m_rounds_are_kept_older_ones_masked() -> None:
    out = run(tool_trace(15, output=OUTPUT), "observation_masking", 100_000)
    results = [m for m in out.final_view if m.role == "tool"]
    assert [m.content for m in results[:5]] == ["Old environment output: (3 lines omitted)"] * 5
    assert all(m.content.startswith("line one") for m in results[5:])


def test_placeholder_counts_lines_and_images() -> None:
    image = Message.from_parts(
        "tool", [Part("text", "a\nb"), Part("image_url", data={"url": "x"})], tool_call_id="c0_0"
    )
    trace = tool_trace(3)
    msgs = list(trace.messages)
    msgs[3] = image
    out = run(trace.__class__("i", tuple(msgs)), "observation_masking", 100_000, keep=1)
    assert (
        out.final_view[3].content == "Old environment output: (2 lines omitted) (1 images omitted)"
    )
    assert out.final_view[3].parts is None


def swe_agent_omitted(n_observations: int, n: int, polling: int) -> int:
    """SWE-agent ``_get_omit_indices`` over [instance template, *observations]."""
    indices = list(range(n_observations + 1))
    last_removed = max(0, (len(indices) // polling) * polling - n)
    return len(indices[1:last_removed])


@given(st.integers(0, 30), st.integers(1, 12), st.integers(1, 5))
def test_observation_unit_masks_exactly_what_last_n_observations_omits(
    rounds_: int, n: int, polling: int
) -> None:
    msgs = list(tool_trace(rounds_).messages)
    cfg = ObservationMaskingConfig(unit="observations", keep=n, polling=polling)
    masked = masked_indices(msgs, cfg)
    assert len(masked) == swe_agent_omitted(rounds_, n, polling)
    tool_positions = [i for i, m in enumerate(msgs) if m.role == "tool"]
    assert masked == tool_positions[: len(masked)]


def test_event_unit_masks_observations_outside_the_attention_window() -> None:
    msgs = list(tool_trace(6).messages)
    masked = masked_indices(msgs, ObservationMaskingConfig(unit="events", keep=5))
    assert masked == [i for i, m in enumerate(msgs) if m.role == "tool" and i < len(msgs) - 5]
    out = run(tool_trace(6), "observation_masking", 100_000, unit="events", keep=5)
    assert OPENHANDS_PLACEHOLDER in [m.content for m in out.final_view]


def test_calls_stay_so_parallel_pairs_stay_whole() -> None:
    out = run(tool_trace(12, output=OUTPUT, calls=3), "observation_masking", 100_000, keep=2)
    assert compactions(out)
    assert out.result.pairing_violations == 0
    assert pairing_violations(out.final_view) == 0
    assert sum(len(m.tool_calls) for m in out.final_view) == 36


def test_text_react_observations_keep_their_prefix() -> None:
    out = run(react_trace(6, observation="a\nb"), "observation_masking", 100_000, keep=2)
    masked = [m for m in out.final_view if "omitted" in m.content]
    assert masked and all(m.is_observation for m in masked)


def test_masking_is_recomputed_from_the_full_history_every_call() -> None:
    trace = tool_trace(12, output=OUTPUT)
    out = run(trace, "observation_masking", 100_000, unit="events", keep=7)
    msgs = list(trace.messages[:-1])  # the prompt of the last call, before its answer
    expected = masked_indices(msgs, ObservationMaskingConfig(unit="events", keep=7))
    got = [i for i, m in enumerate(out.final_view) if m.content == OPENHANDS_PLACEHOLDER]
    assert got == expected


@pytest.mark.parametrize("params", [{"keep": 0}, {"polling": 0}, {"unit": "turns"}])
def test_invalid_knobs_are_config_errors(params: dict[str, object]) -> None:
    from ctxbench.errors import ConfigError
    from ctxbench.strategies import build_strategy

    with pytest.raises(ConfigError):
        build_strategy("observation_masking", params)
