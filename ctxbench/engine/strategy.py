"""The strategy protocol: a compaction policy built from a frozen config.

A strategy instance lives for one replay (it may keep state, such as a summary or a failure
counter). The engine calls its hooks in this order for every recorded model call:

1. ``on_tool_results(batch, ctx)`` for the tool results (or DB-GPT ``Observation:`` messages)
   of one turn, appended since the last call; by default each goes through
   ``on_tool_result(message, ctx)``, which returns the message to keep (maybe truncated);
2. ``before_call(ctx)``: proactive compaction of ``ctx.view`` through ``ctx.apply``;
3. the provider checks the prompt; ``after_call(call, ctx)`` then receives its verdict and the
   counts of that attempt (a :class:`ProviderCall`), accepted or not;
4. on an overflow, ``on_overflow(error, attempt, ctx)`` may compact and returns True to retry,
   False to give up (the call fails).

A hook that must fail the call the way the system's own exception does (not reaching the
provider, or not retrying) raises :class:`ReplyAborted` with that exception's text.

Strategies change the view only through ``ctx.apply(layer, messages)``, which records the
compaction event and the ``context.status`` that follows it. The class is the one place its
name, summary and source are written; the registry keeps only its import path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from ctxbench.trace import Message, Usage

if TYPE_CHECKING:
    from ctxbench.engine.context import ReplayContext
    from ctxbench.errors import ProviderOverflowError
    from ctxbench.summarizers.base import SummaryRequest

#: DB-GPT's state thresholds, used to label ``context.status`` for every strategy.
DEFAULT_STATE_THRESHOLDS: tuple[tuple[float, str], ...] = (
    (1.0, "overflow"),
    (0.95, "critical"),
    (0.90, "error"),
    (0.70, "warning"),
)


class ReplyAborted(Exception):
    """The system's own code failed this call before (another) provider attempt; the text is
    the exception the framework raised, recorded as the ``call.failed`` event's ``error``.

    Raised by ``before_call`` when the reply ends before the model is called (AgentScope's
    ``RuntimeError`` on an empty context over the threshold, Hermes' ``compression_exhausted``,
    a released framework raising inside its context manager): kind ``aborted``, no provider
    attempt. Raised by ``on_overflow`` when reacting to the overflow raises instead of retrying
    (DB-GPT 0.8.2's ``thinking()`` turning the provider error into a ``ValueError``): kind
    ``overflow``, no retry."""


@dataclass(frozen=True)
class TraceDefault:
    """A knob value a strategy takes from the trace it replays (:meth:`Strategy.trace_defaults`):
    the knob, its value and why (shown by ``run``)."""

    key: str
    value: Any
    why: str


@dataclass(frozen=True)
class Starter:
    """How ``ctxbench init``'s starter sweep proposes a strategy for any traces
    (:attr:`Strategy.starter`): its place among the proposed ones, the comment that says why,
    and the ``params`` it sweeps (a TOML inline table with its comment; "" for none)."""

    rank: int
    why: str
    params: str = ""


@dataclass(frozen=True)
class NoConfig:
    """A strategy without knobs."""


@dataclass(frozen=True)
class ProviderCall:
    """One provider attempt as ``after_call`` sees it: the verdict and the counts of the
    prompt just sent (the same numbers as its ``provider.call`` event)."""

    call: int
    attempt: int
    #: prompt tokens by the provider's TRUE counter, and by the strategy's estimator
    true_tokens: int
    estimated_tokens: int
    limit: int
    accepted: bool
    #: the provider's overflow error when the prompt was rejected
    error: ProviderOverflowError | None
    #: prompt tokens a provider cache would serve (the prefix sent before; 0 when rejected)
    cached_tokens: int
    #: what the recorded trace's provider reported for this call, when the trace has it
    recorded_usage: Usage | None

    @property
    def overflow(self) -> bool:
        return self.error is not None


C = TypeVar("C")


class Strategy(Generic[C]):
    """Base class. Subclasses set ``name``, ``summary``, ``source``, ``Config`` and hooks;
    ``Strategy[MyConfig]`` types ``self.config`` as ``MyConfig``."""

    name: ClassVar[str] = "strategy"
    summary: ClassVar[str] = ""
    source: ClassVar[str] = ""
    Config: ClassVar[type[Any]] = NoConfig
    #: the estimator the real system uses to decide (a counter spec)
    default_estimator: ClassVar[str] = "chars4"

    #: the trace formats (``meta.imported_from.format``, as ``ctxbench import`` names them)
    #: whose recording agent this strategy reproduces, and why: ``ctxbench init`` proposes it
    #: for such traces, ``recorded`` and ``summaries`` replay them with it
    reproduces: ClassVar[tuple[str, ...]] = ()
    reproduces_why: ClassVar[str] = ""
    #: proposed by ``ctxbench init`` for any traces (None: only where it reproduces the agent)
    starter: ClassVar[Starter | None] = None
    #: the dotted key of the real system's own configuration section (DB-GPT's
    #: ``service.web.agent_context``): a ``--config`` file that has it gives the knobs there;
    #: "" for none (the file's top-level keys are the knobs)
    native_section: ClassVar[str] = ""
    #: what to try when a run's ``strategy.error`` text holds the key (``run`` prints it under
    #: the line on why the run's calls failed: a release's known defect and the knob around it)
    failure_hints: ClassVar[Mapping[str, str]] = {}

    def __init__(self, config: C | None = None) -> None:
        self.config: C = config if config is not None else self.Config()

    @classmethod
    def recorded_summary_request(
        cls, history: tuple[Message, ...], *, trace_id: str, call: int, first: bool
    ) -> SummaryRequest | None:
        """The summary request this strategy makes of ``history``, the messages a recorded
        agent compacted at model call ``call`` (after the system prompt, its previous summary
        as a user message unless this is the ``first`` compaction): its own prompt, sections
        and default summary budget, keyed as a replay keys it with seed 0 (``ctxbench
        summaries``). None: it makes no summary. Default: None."""
        return None

    @classmethod
    def trace_defaults(cls, meta: Mapping[str, Any]) -> tuple[TraceDefault, ...]:
        """Knob values this strategy takes from a trace's ``meta`` (a session's recorded CLI
        version, the real system's output reserve for its model). Each applies only where the
        run leaves the knob at None (``--set`` and sweep files win), the same in ``run``,
        sweeps and ``recorded`` (:func:`ctxbench.trace_defaults.trace_params`); such knobs
        default to None. Default: none."""
        return ()

    # -- hooks ----------------------------------------------------------------------------------
    def on_start(self, ctx: ReplayContext) -> None:
        """Called once before the first message is appended."""

    def on_tool_result(self, message: Message, ctx: ReplayContext) -> Message:
        """Return the tool result to append (default: unchanged)."""
        return message

    def on_tool_results(self, messages: list[Message], ctx: ReplayContext) -> list[Message]:
        """Return the batch of results answering one assistant turn (parallel calls together).

        The default passes each through :meth:`on_tool_result`; override for per-turn budgets.
        """
        return [self.on_tool_result(m, ctx) for m in messages]

    def before_call(self, ctx: ReplayContext) -> None:
        """Compact ``ctx.view`` before a model call if the strategy's rules say so."""

    def after_call(self, call: ProviderCall, ctx: ReplayContext) -> None:
        """Called after every provider attempt with its verdict and counts (default: nothing).

        Strategies that calibrate on what the provider said (Hermes reads the last prompt's
        real size) use this instead of reading the engine's events."""

    def on_overflow(self, error: ProviderOverflowError, attempt: int, ctx: ReplayContext) -> bool:
        """React to a provider overflow; return True to retry the call."""
        return False

    def keeps_system(self) -> bool:
        """Whether this configuration promises to keep the system message (checked by the
        invariant tests; a strategy whose documented rule may drop it returns False)."""
        return True

    def sends_tool_roles(self) -> bool:
        """Whether the prompt reaches the provider as native tool calls and tool results. A
        framework that renders rounds as text (DB-GPT's ReAct agent: Thought / Action /
        Observation in user and assistant turns) sends no tool roles, so its prompt cannot break
        tool pairing and the provider does not check it."""
        return True

    def keeps_pairs(self) -> bool:
        """Whether this configuration promises prompts with intact tool pairs (a faithful
        reproduction of a system that sends broken pairs returns False; the provider then
        rejects such a prompt as a failed call of kind ``pairing``)."""
        return True

    # -- how status events are labelled ------------------------------------------------------
    def budget(self, ctx: ReplayContext) -> int:
        """The token budget the strategy compares its estimate with (default: window - reserved)."""
        return ctx.window - ctx.reserved

    def state_thresholds(self) -> tuple[tuple[float, str], ...]:
        """(ratio, state) from the highest: DB-GPT's defaults unless the strategy has its own
        (the report draws and compares each run's states with these)."""
        return DEFAULT_STATE_THRESHOLDS

    def state_of(self, ratio: float, budget: int) -> str:
        """The DB-GPT state name of a usage ratio."""
        if budget <= 0:
            return "overflow"
        for threshold, state in self.state_thresholds():
            if ratio >= threshold:
                return state
        return "normal"


#: What the engine calls on a strategy that does not subclass :class:`Strategy`.
PROTOCOL: tuple[str, ...] = (
    "name",
    "default_estimator",
    "on_start",
    "on_tool_results",
    "on_tool_result",
    "before_call",
    "after_call",
    "on_overflow",
    "budget",
    "state_of",
)
