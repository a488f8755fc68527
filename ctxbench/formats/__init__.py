"""Trace formats: the canonical ``ctxbench.trace/1`` files and importers of recorded formats.

``FORMATS`` maps a format name to its :class:`~ctxbench.formats.importer.Importer`, loaded
lazily; ``ctxbench import --format NAME`` picks one, ``--format auto`` detects it.
"""

from ctxbench.formats.canonical import read_traces, schema, write_traces
from ctxbench.registry import Registry

FORMATS = Registry("format")
FORMATS.add(
    "canonical",
    "ctxbench.formats.importing:CANONICAL",
    "ctxbench.trace/1 traces (already canonical)",
)
FORMATS.add(
    "openai_chat",
    "ctxbench.formats.openai_chat:IMPORTER",
    "OpenAI chat messages: a list, {messages: [...]}, or JSON Lines of either",
)
FORMATS.add(
    "tau_bench",
    "ctxbench.formats.tau_bench:IMPORTER",
    "tau-bench v1 results [{task_id, traj, ...}]",
    "sierra-research/tau-bench historical_trajectories",
)
FORMATS.add(
    "tau2_bench",
    "ctxbench.formats.tau2_bench:IMPORTER",
    "tau2-bench simulation results (agent view, usage)",
    "sierra-research/tau2-bench data/simulations",
)
FORMATS.add(
    "swe_agent",
    "ctxbench.formats.swe_agent:IMPORTER",
    "SWE-agent .traj (text actions or function calling)",
    "SWE-agent/SWE-agent trajectories",
)
FORMATS.add(
    "mini_swe_agent",
    "ctxbench.formats.mini_swe_agent:IMPORTER",
    "mini-swe-agent .traj.json (usage and cache hits per call)",
    "SWE-agent/mini-swe-agent",
)
FORMATS.add(
    "openhands",
    "ctxbench.formats.openhands:IMPORTER",
    "OpenHands SDK event streams (output.jsonl)",
    "OpenHands/software-agent-sdk, OpenHands/benchmarks",
)
FORMATS.add(
    "claude_code",
    "ctxbench.formats.claude_code:IMPORTER",
    "Claude Code session JSONL (one call per message.id, thinking, compact boundaries)",
    "~/.claude/projects/<project>/<session>.jsonl (Claude Code 2.x)",
)
FORMATS.add(
    "openhands_completions",
    "ctxbench.formats.openhands_completions:IMPORTER",
    "OpenHands SDK completion logs (log_completions: one JSON per call, exact request)",
    "OpenHands/software-agent-sdk LLM(log_completions=True)",
)
FORMATS.add(
    "codex",
    "ctxbench.formats.codex:IMPORTER",
    "Codex CLI rollout JSONL (response items, token_count usage, compacted records)",
    "~/.codex/sessions/**/rollout-*.jsonl (codex-rs)",
)
FORMATS.add(
    "hf_dataset",
    "ctxbench.formats.hf_dataset:IMPORTER",
    "Hugging Face datasets: parquet / JSON(L) rows with a messages column, or --hf NAME[:SPLIT]",
)

__all__ = ["FORMATS", "read_traces", "schema", "write_traces"]
