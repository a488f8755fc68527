"""The replay context: what a strategy sees and the only way it acts on the prompt.

This is the plug-in API ``docs/plugins.md`` documents: the run's settings, the prompt as it
stands (``view``), ``apply`` / ``reassemble`` to change it, summaries, files and events. The
engine's own bookkeeping behind it (trace indices, the history, the recorded events and files)
is :class:`ctxbench.engine.recorder.Recorder`. Pure: nothing here touches the disk or the clock.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ctxbench.counting.base import TokenCounter
from ctxbench.engine import events as ev
from ctxbench.engine.files import indented_json, json_file, safe_component, safe_path, unused_path
from ctxbench.engine.prompt import Prompt
from ctxbench.engine.recorder import Recorder, check_messages
from ctxbench.engine.view import ContextView
from ctxbench.errors import SummarizerError
from ctxbench.summarizers.base import (
    Summarizer,
    SummaryRequest,
    call_summarizer,
    failure_text,
    summary_source,
)
from ctxbench.trace import Message, ToolSpec

if TYPE_CHECKING:
    from ctxbench.engine.strategy import Strategy

#: the file helpers strategies import from here
__all__ = ["ReplayContext", "indented_json", "json_file", "safe_component", "safe_path"]


class ReplayContext:
    """Everything a strategy may read or do during one replay."""

    def __init__(
        self,
        *,
        trace_id: str,
        strategy: Strategy[Any],
        estimator: TokenCounter,
        true_counter: TokenCounter,
        window: int,
        reserved: int,
        tools: Sequence[ToolSpec],
        n_calls: int,
        summarizer: Summarizer | None,
        seed: int,
        contents_until: int | None = None,
    ) -> None:
        self.trace_id = trace_id
        self.strategy = strategy
        self.estimator = estimator
        self._true_counter = true_counter
        self.window = window
        self.reserved = reserved
        self.tools = tuple(tools)
        self.n_calls = n_calls
        self.summarizer = summarizer
        self.seed = seed
        self.view = ContextView(estimator, true_counter, tools)
        self.call = 0
        self._recorder = Recorder(self.view)
        #: the last call whose files keep their contents (None: every file's); a file written
        #: later is recorded by path and hash alone (:attr:`written`)
        self.contents_until = contents_until

    @property
    def events(self) -> Sequence[ev.Event]:
        """The events recorded so far, in order."""
        return self._recorder.events

    @property
    def files(self) -> dict[str, bytes]:
        """The files written so far (:meth:`write_file`), by path (a file a strategy appends
        to in place, as AgentScope's offload does, is set here with its ``snapshot`` event).
        A replay whose caller keeps no file holds only the contents that the probes scored at
        a later call may read (``contents_until``): every file's path is in :attr:`written`."""
        return self._recorder.files

    @property
    def written(self) -> dict[str, str]:
        """Every file :meth:`write_file` recorded so far, by path: its sha256 (read it, do not
        edit it)."""
        return self._recorder.written

    @property
    def history(self) -> tuple[Message, ...]:
        """Every message the replay appended so far, in order, whatever the strategy dropped
        since: the full history an agent that keeps its own log would hold (tool results as
        ``on_tool_result`` kept them). ``view.messages`` is the prompt as it stands. The
        engine only appends to the prompt between two hooks: what is new since a strategy last
        looked is the tail past the length it left."""
        return tuple(self._recorder.history)

    # -- events ---------------------------------------------------------------------------------
    def emit(self, event: ev.Event | str, /, **data: Any) -> ev.Event:
        """Record ``event`` at the current call, as the next step; returns it as recorded.

        Strategies may record events of their own (``strategy.*``): a subclass of
        :class:`~ctxbench.engine.events.Event`, or ``emit("strategy.NAME", **fields)``, which
        records an event of that type (its class when one knows the type, else an
        :class:`~ctxbench.engine.events.UnknownEvent`); that string form is also how code
        written before the event classes keeps working (transitional)."""
        events = self._recorder.events
        if isinstance(event, str):
            event = ev.event_of(event, data, step=len(events), call=self.call)
        else:
            event = event.stamped(len(events), self.call)
        events.append(event)
        return event

    def status(self, layer: str | None = None) -> ev.Event:
        """Emit ``context.status`` with exactly DB-GPT's fields, by the strategy's estimate."""
        used = self.view.estimated_tokens
        budget = self.strategy.budget(self)
        ratio = used / budget if budget > 0 else float("inf")
        return self.emit(
            ev.ContextStatus(
                used=used,
                budget=budget,
                ratio=round(ratio, 4) if budget > 0 else None,
                state=self.strategy.state_of(ratio, budget),
                compact_layer=layer,
            )
        )

    # -- the one way to change the prompt ---------------------------------------------------------
    def apply(
        self,
        layer: str,
        messages: Sequence[Message],
        *,
        note: str = "",
        sources: Sequence[Message | None] | None = None,
    ) -> bool:
        """Replace the view with ``messages`` as compaction ``layer``.

        Emits a ``compaction`` event when anything changed (with estimated and true tokens
        before and after, messages dropped or changed, and the pairing check), then a
        ``context.status``. Returns whether anything changed. ``sources[i]``, when given, is
        the message ``messages[i]`` stands for (a part of a message the layer cut in two);
        None leaves it to the alignment (a rewrite in place stands for what it replaced).
        """
        if not isinstance(messages, Prompt):
            check_messages(self, layer, messages)
        changed, fields = self._recorder.replace(messages, sources)
        if changed:
            self.emit(ev.Compaction(layer=layer, **fields, note=note))
        self.status(layer)
        return changed

    def reassemble(self, messages: Sequence[Message], sources: Sequence[Message | None]) -> None:
        """Replace the view without a compaction event: the system rebuilt its prompt from its
        own memory (DB-GPT's ReAct agent at every call). ``sources[i]`` is the message
        ``messages[i]`` stands for (None: new); a recorded message the memory keeps in its own
        form (a task-progress block in the system prompt) keeps its trace index."""
        self._recorder.inherit_all(messages, sources)
        before = self.view.messages
        if len(before) != len(messages) or not all(map(operator.is_, before, messages)):
            self.view.replace(messages)

    def tool_result_changed(
        self, layer: str, original: Message, kept: Message, *, note: str = ""
    ) -> None:
        """Record that ``on_tool_result`` shrank or offloaded a result before it was appended."""
        est_o, est_k = self.estimator.count_message(original), self.estimator.count_message(kept)
        true_o, true_k = (
            self._true_counter.count_message(original),
            self._true_counter.count_message(kept),
        )
        n = len(self.view)
        self.emit(
            ev.Compaction(
                layer=layer,
                est_before=self.view.estimated_tokens + est_o,
                est_after=self.view.estimated_tokens + est_k,
                true_before=self.view.true_tokens + true_o,
                true_after=self.view.true_tokens + true_k,
                messages_before=n + 1,
                messages_after=n + 1,
                dropped=0,
                changed=1,
                added=0,
                dropped_messages=[],
                pairing_violations=0,
                system_kept=True,
                note=note,
            )
        )

    # -- summaries ----------------------------------------------------------------------------------
    def summarize(self, request: SummaryRequest) -> str:
        """Call the summarizer, record a ``summary`` event, and return the text.

        Raises :class:`SummarizerError` (after recording it) when there is no summarizer or it
        fails; each strategy handles that by its own rule (breaker, fallback, abort).
        """
        counter = self._true_counter
        input_tokens = counter.count(request.prompt)
        try:
            text = call_summarizer(self.summarizer, request, counter)
        except SummarizerError as exc:
            self.emit(
                ev.Summary(
                    layer=request.layer,
                    ok=False,
                    input_tokens=0 if self.summarizer is None else input_tokens,
                    output_tokens=0,
                    error=failure_text(exc),
                )
            )
            raise
        said = summary_source(text)
        self.emit(
            ev.Summary(
                layer=request.layer,
                ok=True,
                input_tokens=input_tokens,
                output_tokens=counter.count(text),
                error=None,
                source=said.get("source", ""),
                why=said.get("why", ""),
            )
        )
        return text

    def summary_request(
        self,
        strategy: str,
        layer: str,
        messages: Sequence[Message],
        *,
        prompt: str,
        sections: tuple[str, ...],
        max_tokens: int | None,
        previous_summary: str | None = None,
    ) -> SummaryRequest:
        """The request of one summary of ``messages``, keyed by this call and ``layer``."""
        return SummaryRequest(
            strategy=strategy,
            layer=layer,
            prompt=prompt,
            messages=tuple(messages),
            sections=sections,
            max_tokens=max_tokens,
            previous_summary=previous_summary,
            key=self.request_key(layer),
        )

    def request_key(self, layer: str) -> str:
        """A stable key for a summary request: trace, call, layer and seed."""
        return f"{self.trace_id}:{self.call}:{layer}:{self.seed}"

    # -- files at the edge ---------------------------------------------------------------------------
    def write_file(self, relative_path: str, content: bytes, *, sha256: str | None = None) -> str:
        """Record a file (snapshot, offload) to be written under the run's output directory.

        ``relative_path`` components are sanitised; the returned path is what the prompt cites.
        ``sha256``: the content's, when the caller has it (:func:`json_file` gives it).
        """
        if sha256 is None:
            sha256 = hashlib.sha256(content).hexdigest()
        return self._record(relative_path, sha256, len(content), content)

    @property
    def keeps_contents(self) -> bool:
        """Whether a file written now keeps its content (``contents_until``): when not, a
        strategy that holds its files' contents for later replays (DB-GPT's snapshots) may
        record one by :meth:`name_file`, from its size and hash alone."""
        return self.contents_until is None or self.call <= self.contents_until

    def name_file(self, relative_path: str, size: int, sha256: str) -> str:
        """:meth:`write_file` of a content of ``size`` bytes and ``sha256`` that this replay
        does not keep (:attr:`keeps_contents` is False): the same path and ``snapshot``
        event, the content never built."""
        if self.keeps_contents:
            raise ValueError(f"{relative_path}: this replay keeps the contents: write_file it")
        return self._record(relative_path, sha256, size, None)

    def write_json(self, relative_path: str, payload: Any) -> str:
        """:meth:`write_file` of ``payload`` as indented JSON."""
        content, sha256 = json_file(payload)
        return self._record(relative_path, sha256, len(content), content)

    def _record(self, relative_path: str, sha256: str, size: int, content: bytes | None) -> str:
        """Record a file of ``size`` bytes and ``sha256``, and its ``content`` when the replay
        keeps it (None: named by :meth:`name_file`, never built)."""
        files, written = self._recorder.files, self._recorder.written

        def free(path: str) -> bool:  # no file there, or one with this content
            held = written.get(path)
            if held is not None:
                return held == sha256
            # a file set in place (appended to) is known by its content
            return path not in files or (content is not None and files[path] == content)

        path = unused_path(safe_path(relative_path), free)
        written[path] = sha256
        if content is not None and self.keeps_contents:
            files[path] = content
        self.emit(ev.Snapshot(path=path, bytes=size, sha256=sha256))
        return path
