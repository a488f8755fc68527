"""``hermes``: Hermes Agent's ``ContextCompressor``.

Two versions (the ``release`` knob, :data:`ctxbench.strategies.hermes.limits.RELEASES`):
``"0.19.0"`` (default) is the ``hermes-agent==0.19.0`` wheel driven by its agent loop, as
docs/sources.md reads it; ``"0000416b"`` is ``context_compressor.py`` at commit
0000416b34a3dad10c39446ab62c6626c609c30f, the later, unreleased state docs/sources.md and the
rules below describe (the behaviour before the knob existed).

0.19.0 differs in: when it compacts (the turn prologue's preflight at each user turn, gated by
``_should_run_preflight_estimate`` and measured by ``estimate_request_tokens_rough`` of the
stored messages, up to 3 passes that spend no attempt; the pre-API check before every call,
measured on the API copies (:mod:`~ctxbench.strategies.hermes.measure`: no ``reasoning`` /
``finish_reason`` / Codex call fields, stripped content, sorted compact arguments); the
provider's real ``prompt_tokens`` after each tool-calling response, received through
``after_call``; after a compaction no estimate-driven one until real usage arrives, #36718; 3
attempts per user turn shared by pre-API and overflow compaction; overflow compaction blocked
by the anti-thrash guard too; when an overflow cannot be compacted the run returns
``compression_exhausted`` and the rest of that user turn is not made: failed calls of kind
``aborted``); a compaction whose result equals its input changes nothing (no latch, no
anti-thrash verdict, no fallback streak: ``record_completed_compaction`` runs only after
``compress_context`` saw the list change); ``_ensure_compressed_has_user_turn`` re-inserts the
last real user message (merged first into a trailing user turn); ``max_tokens`` None reserves
nothing; the prune floor is ``min(protect_last_n, n)`` with no pressure pass; no 160K
summary-input cap; the summary budget is 20% of the rough estimate of the summarised turns; the
system prompt (every system message) is outside the list ``compress()`` sees, so no compaction
note is added to it, the head is the system messages plus ``protect_first_n`` and the summary
role is chosen as if the head had no system message; re-compaction summarises only the turns
after the latest handoff in the window (an empty window is summarised too; none found: the
previous summary is discarded), and handoffs in the kept head and tail stay as they are; the
tail's last-assistant anchor counts an assistant-role summary and there is no bridge moving a
cut at the latest user turn; the budget walks round ``content_len // 4`` down;
``model_thresholds``, ``threshold_tokens_cap``, proactive prune and ``min_tail_user_messages``
do not exist (setting them is an error).

Parity with ``shipped:hermes@0.19.0`` (``python -m benchmarks.parity_table --pairs hermes
--per-source 15``: 96 traces, every embedded scenario and up to 15 shared recorded traces per
source, at 8k-64k): identical on every call, once an empty tail counts as a user turn when the
summary's role is chosen (two Claude Code subagent traces at 8k differed before). What is
still not modelled, on either side, because the replay cannot exercise it: the 600 s
summary-failure cooldown (no clock); the prompt the loop sends is the trace's messages, not the
API copies it measures (content stripping and argument re-serialisation change the estimate,
not what the simulated provider counts); ``repair_message_sequence`` (merging adjacent user
turns before a request) and ``_maybe_wrap_untrusted`` (recorded tool output is used as
recorded); the context-probe step-down (the simulated provider reports the run window, so
``get_context_length_from_provider_error`` finds no smaller limit); the post-response check
when a user message follows a tool-calling response (a Hermes loop never sees that order:
neither side runs it); ``reasoning`` comes only from a recorded ``reasoning`` replay field (the
agent would also derive it from ``reasoning_content``); Hermes' ``_fresh_compaction_message_copy``
and session-store side effects.

Source: NousResearch/hermes-agent ``agent/context_compressor.py`` (``ContextCompressor``:
``__init__``, ``_compute_threshold_tokens``, ``_prune_old_tool_results``,
``_find_tail_cut_by_tokens``, ``_generate_summary``, ``_build_static_fallback_summary``,
``compress``, ``_sanitize_tool_pairs``, ``update_from_response``) and the overflow handling of
``agent/conversation_loop.py`` as the readings in docs/sources.md describe it. Counting is
Hermes' own estimate by default (``hermes``: ``(len+3)//4 + 10`` per message, the whole
tool-call envelope, replay keys, 1600 per image).

Rules reproduced:

- Threshold: ``threshold_tokens = max(int((ctx - max_tokens) * pct), MINIMUM_CONTEXT_LENGTH)``
  with ``pct = threshold_percent`` (or the longest matching ``model_thresholds`` key), raised to
  at least 0.75 for windows under 512K; when that floor reaches the effective window, 85% of it
  (#14690); then capped by ``threshold_tokens_cap``. ``tail_token_budget = threshold *
  summary_target_ratio`` (clamped to 0.10-0.80); summaries target ``max(2000, min(20% of the
  summarised tokens, min(5% of ctx, 10000)))`` tokens (guidance only: no wire cap).
- Guards: at most ``head + 3 + 1`` messages is an ineffective no-op; automatic compaction is
  blocked while ``ineffective_compression_count >= 2`` or the fallback streak is ``>= 2``; a
  compaction is ineffective when the provider's next reported prompt count is still at or over
  the threshold, and any reading under it resets the count. Before a call, up to
  ``max_compression_attempts`` passes run while over the threshold and making progress.
- Cheap prune (every compaction): identical tool outputs of >= 200 chars are deduplicated by
  md5 anywhere, keeping the newest (``[Duplicate tool output — same content as a more recent
  call]``); outside the protected tail (token budget, floor ``min(protect_last_n, 8)``), tool
  results over 200 chars become one-line summaries (``[terminal] ran `cmd` -> exit 0, N lines
  output``, ``[read_file] read PATH from line N (N chars)``, generic ``[tool] k=v (N chars
  result)``), tool-call arguments over 500 chars get their JSON string leaves cut to 200 chars +
  ``...[truncated]`` (still valid JSON, #11762) and images in tool results become
  ``[screenshot removed to save context]``; if the protected tail exceeds 1.5x the budget, bulky
  tool bodies inside it are demoted too, always keeping the last 3 messages (#61932).
- Head: the system prompt plus ``protect_first_n`` messages, decayed to the system prompt only
  after the first compaction (#11996); the start moves past leading tool results.
- Tail: walk back to a soft ceiling of 1.5x the budget with a minimum tail of
  ``max(3, min(protect_last_n, 8))``; if everything fits, re-walk with the raw budget (#40803);
  never split a tool group; keep the last user message (with the causal-coupling push, #22523)
  and the last assistant reply (#29824) in the tail; optionally the last N user messages; keep
  an actionable user turn out of the merge position; final forward alignment.
- Summary: the middle serialised as ``[TOOL RESULT id]``, ``[ASSISTANT]`` (with ``[Tool calls:
  name(args)]``, args capped at 1500 -> 1200 chars), ``[USER]`` lines, each capped at 6000 chars
  (4000 head + 1500 tail), the whole at 160,000 chars (45% head / 55% tail around an omitted
  middle marker); ``MEDIA:`` directives and ``<think>`` blocks removed; the structured template
  (``## Historical Task Snapshot`` ... ``## Critical Context``), the iterative-update prompt when
  a previous summary exists, the auto-derived focus topic of the last 3 user turns; the task
  snapshot is then overwritten with the newest real user turn. It goes in as ``SUMMARY_PREFIX``
  (reference only) + body + the END marker, with a role that avoids consecutive same roles
  (``user`` after assistant/tool or a system-only head or when no user message survives), and
  is merged into the first tail message between ``[PRIOR CONTEXT ...]`` / ``[END OF PRIOR
  CONTEXT ...]`` when both roles collide. The system prompt gets the compaction note.
- Failure: a deterministic fallback summary (user asks, tool actions, up to 12 path mentions,
  error lines, the last 8 dropped turns; <= 8,000 chars), or no change when
  ``abort_on_summary_failure`` or the failure was access/quota (401/402/403) or network
  (summarizer error kind ``auth``, ``connection`` or ``network``, #29559).
- After assembly: tool results whose call is gone are dropped and orphan calls stripped (an
  emptied assistant says ``(tool call removed)``); images before the newest image-bearing user
  message become ``[Attached image — stripped after compression]``.
- Overflow: on a context-length error, compress again (not blocked by the guards), up to
  ``max_compression_attempts`` per call; retry only if the message count dropped or the estimate
  fell below 95% of the original (#62605, PR #50726).
- Proactive prune (``proactive_prune_tokens`` > 0): the deterministic prune alone, protecting the
  last ``protect_last_n`` messages, committed only when it reclaims
  ``proactive_prune_min_reclaim_tokens``.

Hermes works on native tool calls: text-ReAct ``Observation:`` messages are user messages to it
(never pruned, and counted as user turns). Left out, and why: the 600 s summary-failure cooldown and its timeout ladder (no clock in a
replay; repeated failures are still stopped by the fallback streak), the fallback from an
auxiliary summary model to the main model (one summarizer per run), secret redaction and the
user-provenance check of summaries (the redactor is a separate module; the check would reject
offline summaries), the temporal-anchoring date (no clock: Hermes omits the rule when the date
cannot be resolved), blank platform-echo removal, session-store markers and the context-probe
step-down tiers (secondary sources only). ``MINIMUM_CONTEXT_LENGTH`` is 64,000 per secondary
references to ``agent/model_metadata.py``; it is the ``minimum_context_length`` knob.
``max_tokens`` (the output reservation subtracted from the window, #43547) defaults to the
run's ``--reserved``; Hermes' own default (None) means no reservation, which is ``0`` here.

Knobs (defaults): context_length None (the run window), max_tokens None (the run's reserved),
threshold_percent 0.50, protect_first_n 3, protect_last_n 20, summary_target_ratio 0.20,
abort_on_summary_failure False, model "", model_thresholds {}, threshold_tokens_cap None,
proactive_prune_tokens 0, proactive_prune_min_result_chars 8000,
proactive_prune_min_reclaim_tokens 4096, min_tail_user_messages 1, max_compression_attempts 3,
minimum_context_length 64000.
"""

from __future__ import annotations

from ctxbench.strategies.hermes.fallback import (
    TERMINAL_FAILURE_KINDS,
    fallback_summary,
    is_context_error,
)
from ctxbench.strategies.hermes.limits import (
    MINIMUM_CONTEXT_LENGTH,
    HermesConfig,
    Limits,
    compute_limits,
)
from ctxbench.strategies.hermes.prune import (
    DUPLICATE_TOOL_OUTPUT,
    SCREENSHOT_REMOVED,
    prune_old_tool_results,
    shrink_json_arguments,
    summarize_tool_result,
)
from ctxbench.strategies.hermes.strategy import HermesStrategy
from ctxbench.strategies.hermes.summary import (
    COMPRESSION_NOTE,
    MERGED_PRIOR_CONTEXT_HEADER,
    MERGED_SUMMARY_DELIMITER,
    SUMMARY_END_MARKER,
    SUMMARY_PREFIX,
    SUMMARY_SECTIONS,
    bound_summary_input,
    serialize_for_summary,
)
from ctxbench.strategies.hermes.tail import IMAGE_STRIPPED, find_tail_cut, sanitize_tool_pairs

__all__ = [
    "COMPRESSION_NOTE",
    "DUPLICATE_TOOL_OUTPUT",
    "IMAGE_STRIPPED",
    "MERGED_PRIOR_CONTEXT_HEADER",
    "MERGED_SUMMARY_DELIMITER",
    "MINIMUM_CONTEXT_LENGTH",
    "SCREENSHOT_REMOVED",
    "SUMMARY_END_MARKER",
    "SUMMARY_PREFIX",
    "SUMMARY_SECTIONS",
    "TERMINAL_FAILURE_KINDS",
    "HermesConfig",
    "HermesStrategy",
    "Limits",
    "bound_summary_input",
    "compute_limits",
    "fallback_summary",
    "find_tail_cut",
    "is_context_error",
    "prune_old_tool_results",
    "sanitize_tool_pairs",
    "serialize_for_summary",
    "shrink_json_arguments",
    "summarize_tool_result",
]
