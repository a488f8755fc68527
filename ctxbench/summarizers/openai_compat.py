"""``openai``: any OpenAI-compatible chat endpoint (OpenAI, vLLM, llama.cpp, LiteLLM, ...).

The strategy's real summary prompt is sent as one user message to ``{base_url}/chat/completions``
with ``temperature`` 0, and ``max_tokens`` when the real system caps its summary call. Responses
are cached on disk by a hash of the endpoint, the model and the request body (prompt, cap,
temperature), so a replay is reproducible and free the second time: the cache is checked
before any network access, and a cached summary is returned even when the key is unset.

The API key is read from the environment variable named by ``api_key_env`` at call time. It is
never stored on the summarizer, never part of :meth:`params`, never written to the cache, and
scrubbed (before any cut) from error messages, which end up in events and result rows, and from
the summary itself (a proxy that echoes the request must not put the key in the cache).

Errors become :class:`SummarizerError` with ``kind``: ``timeout``, ``http`` (non-2xx status),
``auth`` (401/402/403, or the key's variable is unset), ``connection`` (refused, unreachable,
cut mid-response), ``empty`` (no text) or ``malformed`` (not a chat-completion body, or not
HTTP). Timeouts, connection errors, 429 and 5xx are retried ``max_retries`` times with
exponential backoff (``backoff * 2**attempt`` seconds).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ctxbench.counting.base import TokenCounter
from ctxbench.errors import ConfigError, SummarizerError
from ctxbench.summarizers.base import Summarizer, SummaryRequest

DEFAULT_CACHE_DIR = Path("~/.cache/ctxbench/summaries")
CACHE_SCHEMA = "ctxbench.summary-cache/1"
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
AUTH_STATUS = frozenset({401, 402, 403})
#: How much of a failed response is read for its error message.
EXCERPT_BYTES = 65_536


class OpenAISummarizer(Summarizer):
    """Summaries from an OpenAI-compatible chat endpoint, cached on disk."""

    name = "openai"

    def __init__(
        self,
        base_url: str = "https://api.openai.com/v1",
        model: str = "",
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 2,
        backoff: float = 1.0,
        cache_dir: str | None = None,
        temperature: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model:
            raise ConfigError(
                "the openai summarizer needs a model name",
                key="model",
                hint='pass summarizer params such as {"model": "gpt-4o-mini", "base_url": "..."}',
            )
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"base_url must be an http(s) URL, not {base_url!r}",
                key="base_url",
                hint="for example http://127.0.0.1:8000/v1 for a local vLLM server",
            )
        if timeout <= 0 or max_retries < 0 or backoff < 0:
            raise ConfigError(
                "timeout must be positive, max_retries and backoff >= 0",
                key="timeout" if timeout <= 0 else "max_retries" if max_retries < 0 else "backoff",
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.cache_dir = cache_dir
        self.temperature = temperature
        self._sleep = sleep
        #: HTTP requests actually sent (cache hits send none)
        self.requests_sent = 0

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    def params(self) -> dict[str, object]:
        return {
            "base_url": self.base_url,
            "model": self.model,
            "api_key_env": self.api_key_env,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "backoff": self.backoff,
            "cache_dir": self.cache_dir,
            "temperature": self.temperature,
        }

    # -- the cache ---------------------------------------------------------------------------------
    def _cache_root(self) -> Path:
        return (
            Path(self.cache_dir).expanduser() if self.cache_dir else DEFAULT_CACHE_DIR.expanduser()
        )

    def cache_key(self, body: dict[str, Any]) -> str:
        """sha256 of the endpoint, the model and the request body (never the key)."""
        material = json.dumps(
            {"endpoint": self.endpoint, "model": self.model, "body": body},
            ensure_ascii=False,
            sort_keys=True,
            separators=(",", ":"),
        )
        return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()

    def _cache_path(self, key: str) -> Path:
        return self._cache_root() / key[:2] / f"{key}.json"

    def _cached(self, key: str) -> str | None:
        path = self._cache_path(key)
        try:
            entry = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            return None
        text = entry.get("summary") if isinstance(entry, dict) else None
        return text if isinstance(text, str) and text.strip() else None

    def _store(self, key: str, text: str) -> None:
        path = self._cache_path(key)
        entry = {
            "schema": CACHE_SCHEMA,
            "endpoint": self.endpoint,
            "model": self.model,
            "summary": text,
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text(json.dumps(entry, ensure_ascii=False, indent=1), "utf-8")
            os.replace(tmp, path)
        except OSError:
            return  # an unwritable cache costs a repeat call, never the summary

    # -- the call ------------------------------------------------------------------------------------
    def body(self, request: SummaryRequest) -> dict[str, Any]:
        """The chat-completion request body for ``request``."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": request.prompt}],
            "temperature": self.temperature,
        }
        if request.max_tokens is not None and request.send_max_tokens:
            body["max_tokens"] = request.max_tokens
        return body

    def summarize(self, request: SummaryRequest, counter: TokenCounter) -> str:
        body = self.body(request)
        key = self.cache_key(body)
        cached = self._cached(key)
        if cached is not None:
            return cached
        secret = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        if self.api_key_env and not secret:
            raise SummarizerError(
                f"environment variable {self.api_key_env} is not set (the API key for "
                f"{self.endpoint})",
                kind="auth",
            )
        text = self._post(body, secret)
        self._store(key, text)
        return text

    def _post(self, body: dict[str, Any], secret: str) -> str:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if secret:
            headers["Authorization"] = f"Bearer {secret}"
        last: SummarizerError | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._sleep(self.backoff * 2 ** (attempt - 1))
            try:
                return self._once(data, headers, secret)
            except _Retryable as exc:
                last = exc.error
        assert last is not None
        raise last

    def _once(self, data: bytes, headers: dict[str, str], secret: str) -> str:
        request = urllib.request.Request(self.endpoint, data=data, headers=headers, method="POST")
        self.requests_sent += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = _excerpt(_error_body(exc), secret, 300)
            error = SummarizerError(
                f"HTTP {exc.code} from {self.endpoint}: {detail}".rstrip(": "),
                kind="auth" if exc.code in AUTH_STATUS else "http",
            )
            if exc.code in RETRYABLE_STATUS:
                raise _Retryable(error) from None
            raise error from None
        except TimeoutError as exc:
            raise _Retryable(self._timeout(exc)) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise _Retryable(self._timeout(exc.reason)) from None
            reason = _scrub(str(exc.reason), secret)
            raise _Retryable(
                SummarizerError(f"cannot reach {self.endpoint}: {reason}", kind="connection")
            ) from None
        except OSError as exc:
            raise _Retryable(
                SummarizerError(
                    f"connection to {self.endpoint} failed: {_scrub(str(exc), secret)}",
                    kind="connection",
                )
            ) from None
        except http.client.IncompleteRead as exc:
            raise _Retryable(
                SummarizerError(
                    f"the connection to {self.endpoint} broke after {len(exc.partial)} bytes "
                    "of the response",
                    kind="connection",
                )
            ) from None
        except http.client.HTTPException as exc:  # not HTTP at all (a bad status line, ...)
            raise SummarizerError(
                f"malformed HTTP response from {self.endpoint}: {type(exc).__name__} "
                f"{_excerpt(str(exc), secret, 200)!r}",
                kind="malformed",
            ) from None
        return self._text(raw, secret)

    def _timeout(self, exc: BaseException) -> SummarizerError:
        return SummarizerError(
            f"no response from {self.endpoint} within {self.timeout} s ({type(exc).__name__})",
            kind="timeout",
        )

    def _text(self, raw: bytes, secret: str) -> str:
        try:
            payload = json.loads(raw.decode("utf-8"))
            content = payload["choices"][0]["message"]["content"]
        except (UnicodeDecodeError, ValueError, KeyError, IndexError, TypeError):
            snippet = _excerpt(raw[:EXCERPT_BYTES].decode("utf-8", "replace"), secret, 200)
            raise SummarizerError(
                f"malformed response from {self.endpoint} (expected choices[0].message.content): "
                f"{snippet!r}",
                kind="malformed",
            ) from None
        if isinstance(content, list):  # content parts
            content = "".join(
                str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
            )
        if not isinstance(content, str) or not content.strip():
            raise SummarizerError(f"empty summary from {self.endpoint}", kind="empty")
        return _scrub(content, secret)  # a proxy echoing the request must not cache the key


class _Retryable(Exception):
    """Carries a SummarizerError worth another attempt."""

    def __init__(self, error: SummarizerError) -> None:
        super().__init__(error.message)
        self.error = error


def _scrub(text: str, secret: str) -> str:
    return text.replace(secret, "***") if secret else text


def _excerpt(text: str, secret: str, limit: int) -> str:
    """The start of a server's text for an error message: scrubbed first, then cut, so a cut
    never leaves a piece of the key."""
    return _scrub(text, secret)[:limit]


def _error_body(error: urllib.error.HTTPError) -> str:
    """The start of an error response's body ("" when even that cannot be read)."""
    try:
        return error.read(EXCERPT_BYTES).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return ""


__all__ = ["OpenAISummarizer"]
