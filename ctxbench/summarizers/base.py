"""What a strategy asks of a summarizer, and the protocol every summarizer follows."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ctxbench.counting.base import TokenCounter
from ctxbench.errors import SummarizerError
from ctxbench.trace import Message


@dataclass(frozen=True)
class SummaryRequest:
    """One summarization call, as the strategy's real system would make it.

    ``prompt`` is the full text the real system sends to its LLM (its own summary prompt with
    the serialised history); LLM-backed summarizers send exactly this. ``messages`` and
    ``sections`` let offline summarizers lay out what the prompt asks for without an LLM.
    ``key`` is a stable identifier (trace, call, layer) for seeded randomness and caching.
    ``max_tokens`` is the summary's budget; ``send_max_tokens`` says whether the real system
    also caps the LLM response with it (Hermes deliberately sends no cap: its budget is only
    "Target ~N tokens" in the prompt), so offline summarizers always respect the budget and
    LLM-backed ones send it only when the real system does.
    """

    strategy: str
    layer: str
    prompt: str
    messages: tuple[Message, ...]
    sections: tuple[str, ...]
    max_tokens: int | None = None
    previous_summary: str | None = None
    key: str = ""
    send_max_tokens: bool = True


class SummaryText(str):
    """Summary text that says where it came from (``source``, and ``why`` for a fallback): the
    replay adds both to the ``summary`` event. A plain ``str`` says nothing (the event is as
    before)."""

    source: str = ""
    why: str = ""

    def __new__(cls, text: str, source: str, why: str = "") -> SummaryText:
        made = super().__new__(cls, text)
        made.source, made.why = source, why
        return made


def summary_source(text: str) -> dict[str, str]:
    """The ``summary`` event fields ``text`` carries (none for a plain ``str``)."""
    if not isinstance(text, SummaryText) or not text.source:
        return {}
    return {"source": text.source, **({"why": text.why} if text.why else {})}


class Summarizer(ABC):
    """Turns a :class:`SummaryRequest` into summary text, or raises ``SummarizerError``.

    ``Config`` is the frozen dataclass of its parameters. Unless a subclass sets one, it is
    made from the constructor's keyword parameters (types and defaults are written once,
    there; a callable parameter, such as a test's ``sleep``, is not a setting), so
    ``--summarizer-set`` and ``summarizer_params`` are typed and unknown keys are errors."""

    name: str = "summarizer"
    Config: ClassVar[type[Any]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "Config" not in cls.__dict__:
            cls.Config = config_of(cls)

    @abstractmethod
    def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
        """The summary text; ``counter`` measures the token budget ``request.max_tokens``."""

    def params(self) -> dict[str, object]:
        """The parameters that rebuild this summarizer (for result rows)."""
        return {}


def config_of(cls: type) -> type[Any]:
    """A frozen dataclass of ``cls``'s constructor settings (keyword parameters with a type)."""
    init = next(c.__dict__["__init__"] for c in cls.__mro__ if "__init__" in c.__dict__)
    hints = typing.get_type_hints(init) if init is not object.__init__ else {}
    fields = []
    for name, param in inspect.signature(cls).parameters.items():
        hint = hints.get(name)
        if (
            hint is None
            or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD)
            or typing.get_origin(hint) is Callable
        ):
            continue
        default = param.default if param.default is not param.empty else dataclasses.MISSING
        fields.append((name, hint, dataclasses.field(default=default)))
    config = dataclasses.make_dataclass(f"{cls.__name__}Config", fields, frozen=True)
    config.__module__ = cls.__module__
    return config


class _Refused(SummarizerError):
    """A summary :func:`call_summarizer` refused (no summarizer, an empty text), with the
    ``error`` its ``summary`` event records."""

    def __init__(self, message: str, *, kind: str, recorded: str) -> None:
        super().__init__(message, kind=kind)
        self.recorded = recorded


def call_summarizer(
    summarizer: Summarizer | None, request: SummaryRequest, counter: TokenCounter
) -> str:
    """``summarizer``'s text for ``request``, or a :class:`SummarizerError`: none configured
    (kind ``missing``), the summarizer's own, any other exception it raised (a plug-in's bug
    is a failed summary, not a crashed replay: kind ``crash``), or no text (kind ``empty``)."""
    if summarizer is None:
        raise _Refused("no summarizer configured", kind="missing", recorded="no summarizer")
    try:
        text = summarizer.summarize(request, counter)
    except SummarizerError:
        raise
    except Exception as exc:
        raise SummarizerError(
            f"the summarizer raised {type(exc).__name__}: {exc}", kind="crash"
        ) from exc
    if not isinstance(text, str) or not text.strip():
        raise _Refused(
            "the summarizer returned an empty summary",
            kind="empty",
            recorded="empty: the summarizer returned no text",
        )
    return text


def failure_text(error: SummarizerError) -> str:
    """The ``error`` a ``summary`` event records for a failed :func:`call_summarizer`."""
    return error.recorded if isinstance(error, _Refused) else f"{error.kind}: {error.message}"
