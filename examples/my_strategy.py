"""A complete ctxbench plug-in strategy: keep the system prompt, the task and the last K rounds.

Over ``trigger_ratio`` of the budget it summarises everything else with the run's summarizer
(or just drops it when summarising fails). Run it with:

    PYTHONPATH=examples ctxbench run traces.jsonl --strategy my_strategy:KeepRecentRounds -w 32000
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxbench import Message, ReplayContext, Strategy, SummarizerError, SummaryRequest, rounds


@dataclass(frozen=True)
class KeepRecentConfig:
    keep_rounds: int = field(default=4, metadata={"help": "recent whole rounds kept verbatim"})
    trigger_ratio: float = field(
        default=0.7, metadata={"help": "compact at this fraction of the budget"}
    )
    summary_tokens: int = field(default=800, metadata={"help": "budget of the summary"})

    def __post_init__(self) -> None:
        if self.keep_rounds < 1:
            raise ValueError(f"keep_rounds must be >= 1, not {self.keep_rounds}")
        if not 0 < self.trigger_ratio <= 1:
            raise ValueError(f"trigger_ratio must be within (0, 1], not {self.trigger_ratio}")


class KeepRecentRounds(Strategy[KeepRecentConfig]):
    name = "keep_recent_rounds"
    summary = "System + first user message + summary + the last K rounds."
    source = "examples/my_strategy.py (a worked plug-in example)"
    Config = KeepRecentConfig
    default_estimator = "chars4"

    def before_call(self, ctx: ReplayContext) -> None:
        cfg = self.config
        if ctx.view.estimated_tokens < cfg.trigger_ratio * self.budget(ctx):
            return
        messages = ctx.view.messages
        segments = rounds(messages)  # a tool call and its results are always in one round
        if len(segments) <= cfg.keep_rounds:
            return
        first_user = next((i for i, m in enumerate(messages) if m.role == "user"), None)
        recent = {i for r in segments[-cfg.keep_rounds :] for i in r.indices}
        pinned = {i for i, m in enumerate(messages) if m.role == "system"} | {first_user}
        old = [m for i, m in enumerate(messages) if i not in recent and i not in pinned]
        if not old:
            return
        request = SummaryRequest(
            strategy=self.name,
            layer="summary",
            prompt="Summarise this conversation:\n"
            + "\n".join(f"[{m.role}] {m.content}" for m in old),
            messages=tuple(old),
            sections=("Task", "Files and values", "Errors", "Next steps"),
            max_tokens=cfg.summary_tokens,
            key=ctx.request_key("summary"),
        )
        try:
            notes = [Message("user", "Summary of earlier work:\n" + ctx.summarize(request))]
        except SummarizerError:
            notes = []  # the summarizer failed: drop the old rounds without a summary
        head = [m for i, m in enumerate(messages) if i in pinned]
        tail = [m for i, m in enumerate(messages) if i in recent and i not in pinned]
        ctx.apply("keep_recent", [*head, *notes, *tail], note=f"{len(old)} messages summarised")
