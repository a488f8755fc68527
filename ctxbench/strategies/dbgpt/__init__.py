"""``dbgpt``: DB-GPT's agent context management, the reference strategy.

Two releases of the same rules (the ``release`` knob): ``"0.8.2"`` (default) reproduces the
``dbgpt==0.8.2`` wheel as docs/sources.md reads it; ``"design"`` is the four layers as the design document
and the docs describe them (the behaviour before the knob existed). See :data:`RELEASES`.

What 0.8.2 does differently (line numbers of the wheel): Layer 3 raises ``AttributeError`` on
``self.model_name`` (``manager.py:160``) before any summary is asked for, so with a summarizer
every attempt at >= error fails (a ``strategy.error`` event), the breaker trips after
``max_compact_failures`` and, checked before Layer 1, stops all compaction for the run
(``patch_model_name=true`` is the release with that line fixed: a failed summary then reads as
an empty one, which counts as a success); Layer 4 is unreachable (``thinking()`` re-raises the
provider error as ``ValueError``), so an overflowing call fails; the ReAct agent rebuilds its
prompt from memory at every call, so the manager runs on the uncompacted history each time and
its result serves that call only; rounds end only at ``Observation:`` user messages (a native
tool-calling history is one round: Layers 1 and 2 change nothing); Layer 1 ages rounds by the
ReAct loop counter of the reply; tool-result persistence has no window scaling and no per-turn
budget (``tool_result_budget_for_context_window``/``enforce_turn_budget`` are never called);
snapshots are ``<conv>/step_NNN_<action>.json`` with NNN the loop counter + 1 (failed steps write
none) and ``""`` for missing fields, and a persisted result gets no snapshot pointer;
``truncated_observation_max_chars`` is 500 through the core ``ContextBudgetConfig`` and 200
through the app/TOML (``entry_point``). Both releases keep a re-cut observation's snapshot path
(the message's ``snapshot_path``, DB-GPT's ``msg.context``).

What the 0.8.2 manager sees is the agent's memory, not the recorded messages (the ReAct agent
keeps text rounds, ``read_memories``, react_agent.py:274-365): an assistant turn with native
tool calls is ``Thought: ...`` / ``Action: name`` / ``Action Input: args``, a tool result is a
human ``Observation: ...`` turn (so every result ends a round and Layers 1 and 2 work on it),
the system prompt carries the task-progress block, one ``✅ Step N: Action=... | ref: ...``
line per successful step (``role.py:212-240``, rendered by ``_REACT_SYSTEM_TEMPLATE``), and
the current question is appended after the manager ran (``base_agent.py:1433-1451``), so it
is neither counted nor compacted. Counting, rounds and Layers 1-3 use that stored form; the
prompt keeps the recorded messages (a cut result is the tool message with the cut text), and
the system prompt with the progress block is a re-assembly, not a compaction. An overflow
fails the call with ``thinking()``'s ``ValueError: <provider error>``.

Remaining divergences from the 0.8.2 agent: the recorded system prompt stands in for the
ReAct template's own (which also holds the question); the manager sees the whole recorded
history, as with the app's ``GptsMemory`` (the library's default
``ShortTermMemory(buffer_size=5)`` is not reproduced); ``thinking()``'s three retries with
10 s sleeps before it gives up are one attempt here; a recorded result marked failed
(``is_error``) is a failed step, any other a successful one; snapshot timestamps are null and a
snapshot path reused by a later reply gets a ``~2`` suffix (the release overwrites the file);
the engine emits ``context.status`` even when the budget is <= 0, where 0.8.2 skips it.

Parity with ``shipped:dbgpt@0.8.2`` (``ctxbench parity``, every shared recorded trace and
embedded scenario at 8k-64k): the same prompts, compactions and counts call for call. When
the layers that re-ran give exactly the previous call's prompt plus what was appended, both
record no compaction (the prompt did not change: ``ShippedStrategy._apply`` and
``_repeats_last``). Rounds ending at every result let Layer 2 keep a result without its call
in the native view; the release sends text rounds, so no pairing check applies
(``sends_tool_roles``). Layers 1 and 2 of each rebuilt prompt are worked out from a ledger of
running sums over the history (``ledger.py``: the counts, the rounds, the cuts made so far),
so a call costs what arrived since; a prompt it does not answer for (a system message inside
the history, ages by the view) goes to the message-list layers it is tested against. The
system prompt with the task progress, a line longer at every step, gets its fingerprint from
the hash of the lines before (``progress.py``) and counters cut it again only where it grew
(``grown_segments``), so it too costs a call what changed.

Source: eosphoros-ai/DB-GPT, ``packages/dbgpt-core/src/dbgpt/agent/core/context/`` (``budget.py``,
``compact.py``, ``manager.py``, ``storage.py``), ``agent/core/base_agent.py`` (Layer 4 retry) and
``docs/docs/agents/modules/context-management.md`` (docs/sources.md).

Rules reproduced:

- Budget: ``effective_budget = max_context_tokens - reserved_tokens``; ``ratio = used / budget``;
  states ``overflow`` (>= 1.0), ``critical`` (>= critical_threshold), ``error``, ``warning``,
  ``normal``. Counting is DB-GPT's own estimate by default (``dbgpt``: content only).
- Manager: count and emit ``context.status``; normal -> stop; breaker tripped -> stop before
  Layer 1; Layer 1 and Layer 2 at >= warning, Layer 3 at >= error (only with a summarizer),
  recounting and emitting ``context.status`` after each layer, stopping once the state is safe.
- Layer 1: observations (``Observation:`` user messages, and tool results) of rounds older
  than ``max_observation_age_rounds`` longer than ``max_chars + 30`` become
  ``content[:max_chars] + "... [truncated, full detail at: PATH]"`` (``"... [truncated]"`` with no
  snapshot); observations holding ``<persisted-output>`` are skipped.
- Layer 2: drop whole old rounds, keeping ``min_keep_recent_rounds`` and walking back until
  ``min_keep_tokens`` are kept (the round where the walk stops is counted, not kept).
- Layer 3: summarise all but the last ``min_keep_recent_rounds`` rounds with the six-heading
  prompt (``[role]: content[:3000]`` lines, ``max_new_tokens=2000``); the summary goes in as a
  user message ``[Context Summary of N earlier messages]`` between the system messages and the
  recent rounds. A failure counts toward the ``max_compact_failures`` breaker; success resets it.
- Layer 4: on a provider error containing ``context_too_long``, ``context_length_exceeded`` or
  ``maximum context length``, keep system messages + the last 2 rounds and retry once.
- Snapshots: every successful tool result gets ``op_snapshots/<conv>/step_NNN_<action>.json``
  (step, action, phase, action_intention, action_reason, thought, action_input, observation,
  timestamp, conv_id) and the observation gets ``\\n[Full detail available at: PATH]``.
- Tool-result persistence (ported from hermes): a result over the tool's threshold (100,000
  chars; ``read_file`` never) is saved to ``persisted_results/<conv>/<call>.txt`` and replaced by
  a ``<persisted-output>`` block with a 1,500-char preview; per turn, the largest results spill
  until the turn is under 200,000 chars; both scale to small windows (15% / 30% of
  ``window * 4`` chars, floors 8,000 / 16,000).

Where code and docs disagree, both are reachable: ``truncated_observation_max_chars`` defaults
to the documented 200 (the TOML section and docs); the core ``ContextBudgetConfig`` at some
commits uses 500. ``observation_age_from="loop_counter"`` reproduces ``base_agent.py``, which
passes the ReAct loop counter as ``current_round``; the default ``"view"`` ages rounds within
the current prompt, as documented. Snapshot ``timestamp`` is null (no clock in a replay).

Knobs (``[service.web.agent_context]`` keys first; ``None`` means "the run's value"):
max_context_tokens (None = the provider window), reserved_tokens (None = the run's --reserved),
warning_threshold 0.70, error_threshold 0.90, critical_threshold 0.95, min_keep_recent_rounds 3,
max_observation_age_rounds 5, truncated_observation_max_chars 200, min_keep_tokens 10000,
max_compact_failures 3; observation_age_from "view", snapshots True, persist_tool_results True,
tool_result_threshold 100000, turn_result_budget 200000, preview_size 1500, scale_to_window True,
layer4_max_retries 1.
"""

from ctxbench.engine.provider import is_overflow_error
from ctxbench.strategies.dbgpt.config import (
    DEFAULT_MAX_CONTEXT_TOKENS,
    LATEST_RELEASE,
    OBSERVATION_MAX_CHARS,
    RELEASES,
    DbgptConfig,
    DbgptRelease,
)
from ctxbench.strategies.dbgpt.manager import (
    LAYER4_MARKERS,
    MODEL_NAME_ERROR,
    SUMMARY_PROMPT,
    SUMMARY_SECTIONS,
)
from ctxbench.strategies.dbgpt.memory import (
    PERSISTED_OUTPUT_TAG,
    generate_preview,
    manager_rounds,
    persisted_block,
    snapshot_path,
    stored,
)
from ctxbench.strategies.dbgpt.strategy import DbgptStrategy

__all__ = [
    "DEFAULT_MAX_CONTEXT_TOKENS",
    "LATEST_RELEASE",
    "LAYER4_MARKERS",
    "MODEL_NAME_ERROR",
    "OBSERVATION_MAX_CHARS",
    "PERSISTED_OUTPUT_TAG",
    "RELEASES",
    "SUMMARY_PROMPT",
    "SUMMARY_SECTIONS",
    "DbgptConfig",
    "DbgptRelease",
    "DbgptStrategy",
    "generate_preview",
    "is_overflow_error",
    "manager_rounds",
    "persisted_block",
    "snapshot_path",
    "stored",
]
