"""``agentscope``: AgentScope v2 context compression (``ContextConfig``).

Two releases (the ``release`` knob, :data:`RELEASES`): ``"2.0.11"`` (default) reproduces the
``agentscope==2.0.11`` wheel as docs/sources.md reads it: the request counted whole and rounded once
(tools as ``json.dumps(tools, ensure_ascii=False)``), the 2.0.11 ``compression_prompt`` (its
``{current_time}`` filled from the ``current_time``/``timezone`` knobs: a replay has no clock),
the ground-truth ``<system-reminder>`` template, ``<current-time>``/``<timezone>`` injected
whenever no injection in the context records a time (the first call, and after a compression
removed it), no offloader, ``context_buffer_ratio < trigger_ratio`` required while injecting,
and ``reply()`` as the loop around them: an exception out of the reply (the empty-context
``RuntimeError``; a provider overflow, since ``ModelConfig.max_retries`` is 0 and there is no
reactive compaction) ends it: that call and every later call of the reply fail with kind
``aborted``, and the recorded turns of the ended reply never reach the agent (the next reply
starts from the context as it was, plus the new user input); ``cur_iter == 0`` (the
context-length pre-warning) at the run's first call, at recorded user input (a text
``Observation:`` too) and after an answer without tool calls; ``ReActConfig.max_iters`` (50):
the 51st call of a reply gets the release's "maximum of 50 reasoning-acting iterations" hint and
ends the reply; a boundary assistant turn with tool calls is cut like AgentScope's blocks, after
its text and between its calls. ``"design"`` is the behaviour below as its design document
give it (before the knob existed).

Parity with ``shipped:agentscope@2.0.11``: over 349 traces (every shared recorded trace and
embedded scenario, 5,013 calls per window) two divergences remained, both fixed since; after
the fixes ``make parity PARITY="--per-source 6"`` (50 traces, 1,464 calls) agrees on every
call at 8k, 16k, 32k and 64k. A boundary turn the compression cuts keeps its trace index in its kept calls (the
release's kept blocks stay in the turn's ``Msg``; the shipped side named the turn only once its
prompt was re-assembled, so astropy-12907 at 16k differed in "kept" at calls 50-63). Call 41 of
the codemie-code rollout at 32k and 64k was the driver's: the release parses a call's arguments
before running the tool and answered a Codex freeform ``apply_patch`` patch with its
``ToolJSONDecodeError`` reminder instead of the recorded output; the driver lets the recorded
call answer. Issue 45's message shapes (``ctxbench.synth.shapes``) found two more, both fixed:
a boundary turn with provider replay fields is cut after its ``ThinkingBlock`` too (2.0.11
keeps a turn as ThinkingBlock, TextBlock, ToolCallBlocks, ``_save_to_context``, and
``_split_context_for_compression``, agent/_agent.py:2963-3037, cuts between any two: a
reasoning turn with empty content kept its call and result there and lost them here), and
recorded user input after tool results arrives after one more reasoning step of the acting
reply, whose compression runs on the context without that input (it was compressed here).
Remaining divergences from 2.0.11 that the traces do not reach: the compression call is one text prompt (``render_compression_prompt``), not
AgentScope's message list with a forced tool (ctxbench's summarizer answers both the same way);
the time never advances, so the 0.5 h ``time_interval`` re-injection never fires (the driver
freezes the release's clock alike); the pre-warning's task and repeated-tool-error fields are
absent (no task list, recorded tools do not fail); the release keeps one ``Msg`` per reply with
the tool results inside it, so its first split walk is over replies, not turns, and a call in
one reply with its result in the next cannot occur here (QwenPaw #5960); a recorded
reasoning-only turn keeps the release's loop reasoning, here it is one call.

Source: agentscope-ai/agentscope ``src/agentscope/agent/_config.py`` (``ContextConfig``,
``SummarySchema``), ``src/agentscope/agent/_agent.py`` (``_compress_context_impl``,
``_split_context_for_compression``, ``_split_tool_result_for_compression``,
``_limit_context_images``, ``_inject_runtime_state``), ``src/agentscope/model/_base.py``
(``count_tokens``), ``tests/compress_context_test.py`` and the "Compress Context" page
(docs/sources.md). Counting is AgentScope's own estimate by default (``agentscope``: UTF-8 bytes / 4).

Rules reproduced:

- Trigger (before every model call): limit images, then compress when the estimate of system
  prompt + summary + context + tools reaches ``trigger_ratio * context_size``. Over the
  threshold with an empty context (the system prompt and summary alone exceed it) AgentScope
  raises ``RuntimeError``; the replay records a ``strategy.error`` event and leaves the prompt.
- Split: walk back from the newest message to the smallest suffix whose estimate (with system
  prompt and summary) reaches ``reserve_ratio * context_size``; the boundary message keeps the
  trailing content blocks that fit (multi-part messages without tool calls; an assistant
  turn's reasoning, text and each call; others are one block). Then a fixed-point loop moves every kept tool result whose call is on the compressed
  side onto that side (PR #2093). AgentScope v2 keeps a step's calls and results in one ``Msg``
  and checks pairing only inside the boundary message, so a call in one ``Msg`` and its result
  in the next can still be split (QwenPaw #5960); ctxbench's messages are OpenAI-style (calls
  and results in separate messages), so the loop runs across messages and that split cannot
  happen. Nothing on the compressed side: retry the split with reserve 0.
- Summary: one structured call with the five ``SummarySchema`` fields (task_overview,
  current_state, important_discoveries, next_steps, context_to_preserve), the previous summary
  and the ``compression_prompt`` (a ``<system-hint>`` asking for a continuation summary),
  rendered with ``summary_template`` (``<system-info>Here is a summary of your previous work``
  ``# Task Overview ... # Context to Preserve ...</system-info>``). The summary lives in strategy
  state and is rendered as a user message right after the system prompt; the reserved messages
  become the context. With ``offload``, the compressed messages go to
  ``offload/<trace>/context.jsonl`` (one growing file per session) and the summary gets
  ``<system-reminder>The compressed context is offloaded to '{path}', ...</system-reminder>``.
- Summary failure: if the compression request was estimated over ``context_size``, drop the
  oldest messages to compress until it is under ``trigger_ratio * context_size`` and retry once;
  on final failure (``compression_fallback_to_truncation``) keep the old summary or use
  ``<system-info>Some earlier messages were truncated for limited context.</system-info>`` and
  still drop the messages to compress. With the fallback off, AgentScope raises and leaves the
  state unchanged; the replay records ``strategy.error``.
- Tool results over ``tool_result_limit`` tokens keep their leading blocks; a text boundary
  block is cut in proportion to its token delta, other boundary blocks are dropped whole; the
  remainder is offloaded to ``offload/<trace>/tool_result-<call>.txt`` and the kept part gets
  ``\\n<<<TRUNCATED>>>\\n<system-reminder>The remaining content has been omitted for limited
  context.{ You can refer to the file in '{path}' for the truncated content if needed.}``
  ``</system-reminder>``.
- Images: the oldest images beyond ``max_image_num`` become ``<system-reminder>The image
  {name}is offloaded into {url}, you can refer to it when needed.</system-reminder>`` (http(s)
  URLs, or data URLs written to ``offload/`` when ``offload``) or ``...is removed to free up
  context space.</system-reminder>``.
- Pre-warning: at the first model call of a reply (the view ends with a real user message), if
  the estimate exceeds ``max(0, trigger_ratio - context_buffer_ratio) * context_size``, append
  ``<context-length>Your current context contains {n} tokens. When reaching {trigger} tokens,
  your context will be compressed.</context-length>`` inside ``runtime_state_template``.
- Overflow: AgentScope has no reactive compaction (a rejected call is retried ``max_retries``
  times, default 0, then falls back to another model), so ``on_overflow`` gives up.

Left out: the model-driven self-compaction rubric (``self_compact_enabled``, off by default),
the agent-callable compression tool (``compression_tool_enabled``, off by default), the Read
tool's file-cache clearing (no file cache in a replay) and the time and task fields of the
runtime-state injection (no clock, no task list). Not verified in source, exposed as knobs:
the ``runtime_state_template`` wrapper (the repository reading: "inside the ``<system-reminder>``
runtime-state template") and the order of injection after compression. A later revision of
the compression prompt also asks for absolute dates, verbatim paths and in-flight tools; its
text was not available, so ``compression_prompt`` defaults to the ``_config.py`` text quoted
below. ``trigger_ratio`` accepts up to 0.9 inclusive (#2396; earlier releases required < 0.9).

Knobs (defaults): context_size None (the run window; AgentScope's ``ChatModelBase`` default is
32768), trigger_ratio 0.8, reserve_ratio 0.1, tool_result_limit 50000, max_image_num 5,
context_buffer_ratio 0.2, offload True, compression_fallback_to_truncation True,
inject_runtime_state True, compression_prompt, summary_template, runtime_state_template.
"""

from __future__ import annotations

from ctxbench.strategies.agentscope.config import AgentScopeConfig
from ctxbench.strategies.agentscope.layers import (
    Meter,
    PerMessage,
    WholePrompt,
    append_reminder,
    split_context,
    split_tool_result,
)
from ctxbench.strategies.agentscope.prompts import (
    COMPRESSION_PROMPT,
    COMPRESSION_PROMPT_2_0_11,
    RUNTIME_STATE_TEMPLATE,
    RUNTIME_STATE_TEMPLATE_2_0_11,
    SUMMARY_FIELDS,
    SUMMARY_SECTIONS,
    SUMMARY_TEMPLATE,
    TRUNCATED_SUMMARY,
    TRUNCATION_REMINDER,
    parse_summary_fields,
    render_compression_prompt,
    schema_tool_json,
)
from ctxbench.strategies.agentscope.releases import LATEST_RELEASE, RELEASES, AgentScopeRelease
from ctxbench.strategies.agentscope.strategy import AgentScopeStrategy

__all__ = [
    "COMPRESSION_PROMPT",
    "COMPRESSION_PROMPT_2_0_11",
    "LATEST_RELEASE",
    "RELEASES",
    "RUNTIME_STATE_TEMPLATE",
    "RUNTIME_STATE_TEMPLATE_2_0_11",
    "SUMMARY_FIELDS",
    "SUMMARY_SECTIONS",
    "SUMMARY_TEMPLATE",
    "TRUNCATED_SUMMARY",
    "TRUNCATION_REMINDER",
    "AgentScopeConfig",
    "AgentScopeRelease",
    "AgentScopeStrategy",
    "Meter",
    "PerMessage",
    "WholePrompt",
    "append_reminder",
    "parse_summary_fields",
    "render_compression_prompt",
    "schema_tool_json",
    "split_context",
    "split_tool_result",
]
