"""``TaskProgress``: the system prompt 0.8.2 renders with the task progress, a line longer at
every step, is the release's text, and its fingerprint (worked out from the hash of the lines
before) is the one its text gives, whatever the system prompt."""

from __future__ import annotations

import pytest

from ctxbench.strategies.dbgpt.memory import progress_head, progress_line, task_progress
from ctxbench.strategies.dbgpt.progress import TaskProgress
from ctxbench.trace import Message, Part

SYSTEMS = {
    "none": None,
    "plain": Message("system", 'You are a data analyst agent.\nAnswer in "tables" \\ only.'),
    "named": Message("system", "You are an agent.", name="analyst"),
    "media": Message.from_parts(
        "system", (Part("text", "Look:"), Part("image_url", "", {"image_url": {"url": "x.png"}}))
    ),
}


@pytest.mark.parametrize("which", SYSTEMS)
def test_every_head_is_the_release_text_with_the_fingerprint_of_that_text(which: str) -> None:
    system = SYSTEMS[which]
    progress = TaskProgress()
    assert progress.head(system) is None  # no step yet: the system prompt as it is
    for step in range(1, 40):
        action = ["bash", 'say "hi"', "path\\to", "\u2705\ud800", "sql"][step % 5]
        progress.add(progress_line(step, action, f"conv/step_{step:03d}_{action}.json"))
        head = progress.head(system)
        assert head is not None
        expected = progress_head(system, task_progress(progress.lines) or "")
        assert head == expected
        assert progress.text == task_progress(progress.lines)
        assert head.fingerprint == expected._digest()
        if which != "media":  # worked out as the head was made, not from its whole text
            assert "fingerprint" in vars(head)


def test_a_new_system_prompt_starts_the_hash_again() -> None:
    progress = TaskProgress()
    for step, system in enumerate([Message("system", "A."), Message("system", "B."), None], 1):
        progress.add(progress_line(step, "bash", ""))
        head = progress.head(system)
        assert head is not None
        assert head.fingerprint == head._digest()
        assert head.content.startswith(system.content if system else "## Task Progress")
