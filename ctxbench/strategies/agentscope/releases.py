"""The ``release`` knob's values: what each AgentScope release does where releases differ
(docs/sources.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ctxbench.strategies.agentscope.prompts import (
    COMPRESSION_PROMPT,
    COMPRESSION_PROMPT_2_0_11,
    RUNTIME_STATE_TEMPLATE,
    RUNTIME_STATE_TEMPLATE_2_0_11,
)


@dataclass(frozen=True)
class AgentScopeRelease:
    """What one AgentScope release does where releases differ (docs/sources.md)."""

    #: count the whole request once (model/_base.py:379-465) rather than per message
    whole_prompt: bool
    compression_prompt: str
    runtime_state_template: str
    #: an offloader is attached by default (2.0.11: ``None``)
    offload: bool
    #: ``<current-time>`` is injected when none is in the context (first call, after compression)
    time_injection: bool
    #: ``reply()`` is the loop: an exception out of it (the empty-context ``RuntimeError``, a
    #: provider overflow) ends the reply, ``max_iters`` ends it too
    reply_loop: bool
    summary: str


#: The ``release`` knob's values. "design" is the design document and the commit in docs/sources.md.
RELEASES: dict[str, AgentScopeRelease] = {
    "2.0.11": AgentScopeRelease(
        whole_prompt=True,
        compression_prompt=COMPRESSION_PROMPT_2_0_11,
        runtime_state_template=RUNTIME_STATE_TEMPLATE_2_0_11,
        offload=False,
        time_injection=True,
        reply_loop=True,
        summary=(
            "the agentscope==2.0.11 wheel: whole-prompt count rounded once, tools "
            "ensure_ascii=False, the 2.0.11 compression prompt and ground-truth reminder, time "
            "re-injected after compression, no offloader, and the reply loop: an exception (an "
            "empty context over the threshold, an overflow) or max_iters ends the reply"
        ),
    ),
    "design": AgentScopeRelease(
        whole_prompt=False,
        compression_prompt=COMPRESSION_PROMPT,
        runtime_state_template=RUNTIME_STATE_TEMPLATE,
        offload=True,
        time_injection=False,
        reply_loop=False,
        summary=(
            "the documented design (per-message counts, the docs' prompt and reminder, "
            "an offloader, no time injection)"
        ),
    ),
}
LATEST_RELEASE: Literal["2.0.11"] = "2.0.11"
