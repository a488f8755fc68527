"""The answerer: an OpenAI-compatible chat endpoint asked about the prompts a replay scored.

``--answerer MODEL@URL`` names the model id the endpoint serves and its base URL (``.../v1``);
requests go to ``{URL}/chat/completions`` through the summarizer client's transport
(:class:`~ctxbench.summarizers.openai_compat.OpenAISummarizer`): the same trust rules hold.
The key is read at call time from the environment variable ``--answerer-key-env`` names (the
URL and the variable come from the command line only, never from a file), it is never cached
or stored, and it is scrubbed from every message; redirects are not followed; a request is
bounded as a whole by ``timeout``; timeouts, connection errors, 429 and 5xx are retried
``max_retries`` times with exponential backoff.

Replies are cached on disk (:mod:`ctxbench.answering.cache`) by the request body, which holds
everything that decides the answer: the endpoint's model id, the prompt, the question, the
tools offered and the sampling settings (temperature 0 and a seed by default). The URL is not
part of the key: the same model served elsewhere answers from the same cache. ``offline``
fails on a cache miss instead of calling. A :class:`Meter` counts the requests actually sent,
their tokens (as the endpoint reported them) and their cost; past ``max_cost`` no further
request is sent.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxbench.answering.cache import AnswerCache, Reply
from ctxbench.errors import ConfigError, CtxbenchError, SummarizerError
from ctxbench.summarizers.openai_compat import EXCERPT_BYTES, OpenAISummarizer, _excerpt
from ctxbench.summarizers.secret import Secret

#: The default seed sent with every request (servers that honour it answer reproducibly).
DEFAULT_SEED = 0


class AnswererError(CtxbenchError):
    """Asking the answerer failed (unreachable, HTTP error, over budget, not cached offline).

    ``kind`` is the summarizer client's (``timeout``, ``http``, ``auth``, ``connection``,
    ``malformed``, ``too_large``, ``empty``) or ``offline`` (a cache miss under ``--offline``)
    or ``budget`` (``--max-cost`` reached)."""

    def __init__(self, message: str, *, kind: str = "error", hint: str | None = None) -> None:
        self.kind = kind
        super().__init__(message, hint=hint)


@dataclass(frozen=True)
class AnswererSettings:
    """Where answers come from and how they are asked; picklable (a sweep's workers build
    their own client from it). ``model`` alone enters a cell's identity; ``base_url`` and
    ``api_key_env`` come from the command line only."""

    model: str
    base_url: str = ""
    api_key_env: str = ""
    temperature: float = 0.0
    seed: int = DEFAULT_SEED
    max_tokens: int = 256
    timeout: float = 120.0
    max_retries: int = 2
    backoff: float = 1.0
    concurrency: int = 4
    cache_dir: str = ""
    offline: bool = False
    max_cost: float | None = None
    #: USD per million prompt / completion tokens (the meter's cost; 0: a local server)
    price_in: float = 0.0
    price_out: float = 0.0

    def sampling(self) -> dict[str, Any]:
        """The body's sampling settings (part of every cache key)."""
        return {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens}


def parse_answerer(value: str) -> tuple[str, str]:
    """``MODEL@URL`` as ``(model, base_url)``; the model id may itself hold ``@``
    (``org/model@rev@http://...``): the URL starts at the last ``@http``."""
    at = max(value.rfind("@http://"), value.rfind("@https://"))
    model, url = (value[:at], value[at + 1 :]) if at > 0 else (value, "")
    parts = urllib.parse.urlsplit(url) if url else None
    if not model or parts is None or not parts.hostname:
        raise ConfigError(
            f"--answerer takes MODEL@URL, not {value!r}",
            key="answerer",
            hint="for example --answerer qwen2.5:0.5b@http://127.0.0.1:11434/v1 (Ollama) or "
            "--answerer Qwen/Qwen2.5-0.5B-Instruct@http://127.0.0.1:8000/v1 (vLLM)",
        )
    return model, url.rstrip("/")


@dataclass
class Meter:
    """Requests sent (cache hits send none), their tokens and cost; thread-safe."""

    requests: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def hit(self) -> None:
        with self._lock:
            self.cache_hits += 1

    def add(self, reply: Reply, settings: AnswererSettings) -> None:
        with self._lock:
            self.requests += 1
            self.prompt_tokens += reply.prompt_tokens
            self.completion_tokens += reply.completion_tokens
            self.cost_usd += (
                reply.prompt_tokens * settings.price_in
                + reply.completion_tokens * settings.price_out
            ) / 1e6

    def describe(self) -> str:
        cost = f", ${self.cost_usd:.4f}" if self.cost_usd else ""
        return (
            f"{self.requests} requests sent ({self.cache_hits} answered from the cache), "
            f"{self.prompt_tokens:,} prompt + {self.completion_tokens:,} completion tokens{cost}"
        )


class _Transport(OpenAISummarizer):
    """The summarizer client's HTTP machinery, returning the whole reply body (scrubbed)."""

    def _text(self, raw: bytes, secret: Secret) -> str:
        try:
            payload = json.loads(raw.decode("utf-8"))
            message = payload["choices"][0]["message"]
            if not isinstance(message, dict):
                raise TypeError(message)
        except (UnicodeDecodeError, ValueError, KeyError, IndexError, TypeError, RecursionError):
            snippet = _excerpt(raw[:EXCERPT_BYTES].decode("utf-8", "replace"), secret, 200)
            raise SummarizerError(
                f"malformed response from {self.endpoint} (expected choices[0].message): "
                f"{snippet!r}",
                kind="malformed",
            ) from None
        return secret.scrub(json.dumps(payload, ensure_ascii=False))


class Answerer:
    """Asks chat-completion requests, from the cache first; see the module docstring."""

    def __init__(self, settings: AnswererSettings) -> None:
        if settings.concurrency < 1 or settings.max_tokens < 1:
            raise ConfigError(
                "the answerer's concurrency and max_tokens must be at least 1",
                key="answerer_concurrency" if settings.concurrency < 1 else "answerer_max_tokens",
            )
        self.settings = settings
        self.cache = AnswerCache(Path(settings.cache_dir) if settings.cache_dir else default_dir())
        self.meter = Meter()
        self._transport: _Transport | None = None
        if settings.base_url:
            self._transport = _Transport(
                base_url=settings.base_url,
                model=settings.model,
                api_key_env=settings.api_key_env,
                timeout=settings.timeout,
                max_retries=settings.max_retries,
                backoff=settings.backoff,
            )
        self._budget = threading.Lock()

    @property
    def endpoint(self) -> str:
        return self._transport.endpoint if self._transport else "(no endpoint: cache only)"

    def body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The request body: the model id, the messages, the tools offered, the sampling."""
        body: dict[str, Any] = {"model": self.settings.model, "messages": messages}
        if tools:
            body["tools"] = tools
        body.update(self.settings.sampling())
        return body

    def ask(self, body: dict[str, Any]) -> Reply:
        """The reply to ``body``: cached, or asked (and cached)."""
        key = self.cache.key(body)
        cached = self.cache.get(key)
        if cached is not None:
            self.meter.hit()
            return cached
        if self.settings.offline or self._transport is None:
            raise AnswererError(
                f"no cached answer of {self.settings.model} for this prompt, and "
                + ("--offline forbids calling" if self.settings.offline else "no endpoint given"),
                kind="offline",
                hint="run once without --offline (or give --answerer MODEL@URL) to fill the cache",
            )
        with self._budget:
            limit = self.settings.max_cost
            if limit is not None and self.meter.cost_usd >= limit:
                raise AnswererError(
                    f"--max-cost {limit} USD reached ({self.meter.describe()})",
                    kind="budget",
                    hint="raise --max-cost, or rerun: answers already received are cached",
                )
        transport = self._transport
        secret_error: AnswererError | None = None
        try:
            secret = Secret.from_env(transport.api_key_env, transport.endpoint)
        except SummarizerError as exc:
            secret_error = AnswererError(exc.message, kind=exc.kind, hint=_KEY_HINT)
        if secret_error is not None:
            raise secret_error
        try:
            raw = transport._post(body, secret)
        except SummarizerError as exc:
            raise AnswererError(
                f"answerer {secret.scrub(exc.message)}", kind=exc.kind, hint=_hint(exc.kind)
            ) from None
        except Exception as exc:  # whatever http.client raises must not carry the key out
            raise AnswererError(
                secret.scrub(f"answerer request to {transport.endpoint} failed: {exc!r}"),
                kind="connection",
            ) from None
        reply = Reply.from_payload(json.loads(raw))
        self.meter.add(reply, self.settings)
        self.cache.put(key, reply, model=self.settings.model)
        return reply


_KEY_HINT = (
    "set the variable --answerer-key-env names (a local server needs no key: omit the option)"
)


def _hint(kind: str) -> str:
    return {
        "timeout": "raise --answerer-timeout, or check the server is not overloaded",
        "connection": "is the server running at that address? (curl URL/models)",
        "http": "check the URL ends with /v1 and the model id is one the server serves",
        "auth": _KEY_HINT,
    }.get(kind, "check the server with: curl URL/models")


def default_dir() -> Path:
    """``$CTXBENCH_CACHE/answers`` (default ``~/.cache/ctxbench/answers``)."""
    root = os.environ.get("CTXBENCH_CACHE") or "~/.cache/ctxbench"
    return Path(root).expanduser() / "answers"


#: One client per settings per process: a sweep's tasks share its meter and its cache.
_CLIENTS: dict[AnswererSettings, Answerer] = {}
_CLIENTS_LOCK = threading.Lock()


def answerer_for(settings: AnswererSettings) -> Answerer:
    """This process's client for ``settings``."""
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(settings)
        if client is None:
            client = _CLIENTS[settings] = Answerer(settings)
        return client


def client_of(settings: AnswererSettings) -> Answerer | None:
    """This process's client for ``settings`` when one was built (its meter says what it sent)."""
    with _CLIENTS_LOCK:
        return _CLIENTS.get(settings)


def forget_client(settings: AnswererSettings) -> None:
    """Drop this process's client for ``settings`` (a new sweep starts a new meter)."""
    with _CLIENTS_LOCK:
        _CLIENTS.pop(settings, None)


__all__ = [
    "Answerer",
    "AnswererError",
    "AnswererSettings",
    "Meter",
    "answerer_for",
    "client_of",
    "default_dir",
    "forget_client",
    "parse_answerer",
]
