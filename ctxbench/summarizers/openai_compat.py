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

Errors become :class:`SummarizerError` with ``kind``: ``timeout``, ``http`` (non-2xx status,
or a redirect), ``auth`` (401/402/403, or the key's variable is unset or not a valid key),
``connection`` (refused, unreachable, cut mid-response), ``empty`` (no text), ``malformed`` (not
a chat-completion body, or not HTTP), ``too_large`` (over :data:`MAX_RESPONSE_BYTES`) or
``offline`` (not cached, and the endpoint was named by a file: :func:`cached_only`).
Timeouts, connection errors, 429 and 5xx are retried ``max_retries`` times with exponential
backoff (``backoff * 2**attempt`` seconds).

Limits (issue 22): ``timeout`` bounds each request as a whole (connect, send, headers and
body), not each socket read, so a server trickling a byte at a time cannot hold a replay; a
reply over :data:`MAX_RESPONSE_BYTES` is refused while it is read; redirects are never
followed, so the key never goes to an address the endpoint chose. ``HTTPS_PROXY`` /
``HTTP_PROXY`` / ``NO_PROXY`` are honoured (:mod:`ctxbench.summarizers.proxy`: a CONNECT
tunnel for https endpoints, absolute-form requests for http ones).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxbench.counting.base import TokenCounter
from ctxbench.errors import ConfigError, SummarizerError
from ctxbench.jsontext import attrs
from ctxbench.summarizers.base import Summarizer, SummaryRequest
from ctxbench.summarizers.proxy import route_to
from ctxbench.summarizers.secret import Secret

DEFAULT_CACHE_DIR = Path("~/.cache/ctxbench/summaries")
CACHE_SCHEMA = "ctxbench.summary-cache/1"
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
AUTH_STATUS = frozenset({401, 402, 403})
#: How much of a failed response is read for its error message.
EXCERPT_BYTES = 65_536
#: The largest reply read: a summary is a few thousand tokens; 100 MB replies exhausted memory.
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
_READ_CHUNK = 65_536


#: The parameters that say where summaries are sent and which key goes with them: never taken
#: from a file (a row, a results directory, a sweep file) unless the command line gives them.
ENDPOINT_KEYS: tuple[str, ...] = ("base_url", "api_key_env")


@dataclass
class CachedOnly:
    """While :func:`cached_only` holds: the endpoints a cache miss did not call."""

    refused: list[str] = field(default_factory=list)


_cached_only: CachedOnly | None = None


@contextlib.contextmanager
def cached_only() -> Iterator[CachedOnly]:
    """Serve summaries from the cache only: for a summarizer whose endpoint and key variable
    come from a file (a row re-run with ``--from-row``), never from the user."""
    global _cached_only
    previous, _cached_only = _cached_only, CachedOnly()
    try:
        yield _cached_only
    finally:
        _cached_only = previous


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
        if not base_url.startswith(("http://", "https://")) or not _host(base_url):
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
            **attrs(
                self, "base_url model api_key_env timeout max_retries backoff cache_dir temperature"
            ),
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
        if _cached_only is not None:
            _cached_only.refused.append(self.endpoint)
            raise SummarizerError(
                f"no cached summary, and {self.endpoint} (named by a file) is not called",
                kind="offline",
            )
        secret = Secret.from_env(self.api_key_env, self.endpoint)
        try:
            text = self._post(body, secret)
        except SummarizerError as exc:
            raise SummarizerError(secret.scrub(exc.message), kind=exc.kind) from None
        except Exception as exc:  # whatever http.client raises must not carry the key out
            raise SummarizerError(
                secret.scrub(f"request to {self.endpoint} failed: {type(exc).__name__}: {exc}"),
                kind="connection",
            ) from None
        self._store(key, text)
        return text

    def _post(self, body: dict[str, Any], secret: Secret) -> str:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if secret.value:
            headers["Authorization"] = f"Bearer {secret.value}"
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

    def _once(self, data: bytes, headers: dict[str, str], secret: Secret) -> str:
        """One request, bounded as a whole by ``timeout``: a watchdog shuts the socket down
        when the deadline passes, whatever read is blocked then."""
        self.requests_sent += 1
        try:
            route = route_to(self.endpoint)
            connection = route.connection(self.timeout)
        except (ValueError, http.client.InvalidURL) as exc:
            raise SummarizerError(
                f"bad endpoint {self.endpoint}: {exc}", kind="connection"
            ) from None
        watchdog = _Watchdog(self.timeout)
        response: http.client.HTTPResponse | None = None
        try:
            connection.connect()
            watchdog.watch(connection.sock)
            connection.request(
                "POST", route.target, body=data, headers={**headers, **route.request_headers}
            )
            response = connection.getresponse()
            status = response.status
            raw = _read_capped(response, MAX_RESPONSE_BYTES if status < 300 else EXCERPT_BYTES)
        except _TooLarge as exc:
            raise SummarizerError(
                f"the response from {self.endpoint} is over {exc.limit:,} bytes "
                f"(declared {exc.declared})"
                if exc.declared
                else f"the response from {self.endpoint} is over {exc.limit:,} bytes",
                kind="too_large",
            ) from None
        except TimeoutError as exc:
            raise _Retryable(self._timeout(exc)) from None
        except http.client.IncompleteRead as exc:
            if watchdog.fired:
                raise _Retryable(self._timeout(exc)) from None
            raise _Retryable(
                SummarizerError(
                    f"the connection to {self.endpoint} broke after {len(exc.partial)} bytes "
                    "of the response",
                    kind="connection",
                )
            ) from None
        except OSError as exc:  # refused, reset (RemoteDisconnected), unreachable
            if watchdog.fired:
                raise _Retryable(self._timeout(exc)) from None
            raise _Retryable(
                SummarizerError(
                    f"cannot reach {self.endpoint}{route.via}: {secret.scrub(str(exc))}",
                    kind="connection",
                )
            ) from None
        except http.client.HTTPException as exc:  # not HTTP at all (a bad status line, ...)
            if watchdog.fired:
                raise _Retryable(self._timeout(exc)) from None
            raise SummarizerError(
                f"malformed HTTP response from {self.endpoint}: {type(exc).__name__} "
                f"{_excerpt(str(exc), secret, 200)!r}",
                kind="malformed",
            ) from None
        finally:
            watchdog.cancel()
            if response is not None:
                response.close()  # it holds the socket open, whatever the connection does
            connection.close()
        if watchdog.fired:  # the deadline passed as the last byte came in
            raise _Retryable(self._timeout(TimeoutError()))
        if 300 <= status < 400:
            target = response.getheader("Location") or "?"
            raise SummarizerError(
                f"HTTP {status} from {self.endpoint}: redirects are not followed (to "
                f"{_excerpt(_origin(target), secret, 200)}); give the final URL as base_url",
                kind="http",
            )
        if status >= 400 or status < 200:
            detail = _excerpt(raw.decode("utf-8", "replace"), secret, 300)
            error = SummarizerError(
                f"HTTP {status} from {self.endpoint}: {detail}".rstrip(": "),
                kind="auth" if status in AUTH_STATUS else "http",
            )
            if status in RETRYABLE_STATUS:
                raise _Retryable(error)
            raise error
        return self._text(raw, secret)

    def _timeout(self, exc: BaseException) -> SummarizerError:
        return SummarizerError(
            f"no complete response from {self.endpoint} within {self.timeout} s "
            f"({type(exc).__name__})",
            kind="timeout",
        )

    def _text(self, raw: bytes, secret: Secret) -> str:
        try:
            payload = json.loads(raw.decode("utf-8"))
            content = payload["choices"][0]["message"]["content"]
        except (UnicodeDecodeError, ValueError, KeyError, IndexError, TypeError, RecursionError):
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
        return secret.scrub(content)  # a proxy echoing the request must not cache the key


class _Watchdog:
    """Shuts the request's socket down at its deadline, unblocking any read. It holds the
    socket itself: ``http.client`` drops the connection's reference once a response that
    closes the connection is being read."""

    def __init__(self, seconds: float) -> None:
        self.fired = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket | None) -> None:
        with self._lock:
            self._sock = sock
            if self.fired:
                self._shutdown()

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            self._shutdown()

    def _shutdown(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        self._timer.cancel()


class _TooLarge(Exception):
    def __init__(self, limit: int, declared: str | None) -> None:
        super().__init__(limit)
        self.limit = limit
        self.declared = declared


def _read_capped(response: http.client.HTTPResponse, limit: int) -> bytes:
    """The body, refused as soon as it (or its declared length) is over ``limit`` bytes;
    error bodies are cut at ``limit`` instead."""
    declared = response.getheader("Content-Length")
    refuse = limit == MAX_RESPONSE_BYTES
    if refuse and declared and declared.strip().isdigit() and int(declared) > limit:
        raise _TooLarge(limit, declared.strip())
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = response.read1(_READ_CHUNK)
        if not chunk:
            if response.length:  # the server closed before the length it declared
                raise http.client.IncompleteRead(b"".join(chunks), response.length)
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            if refuse:
                raise _TooLarge(limit, None)
            break
    return b"".join(chunks)[:limit]


def _host(url: str) -> str:
    try:
        return urllib.parse.urlsplit(url).hostname or ""
    except ValueError:
        return ""


def _origin(url: str) -> str:
    """scheme://host:port of a URL (no path or query: they may hold anything)."""
    try:
        parts = urllib.parse.urlsplit(url)
        return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}" if parts.netloc else "?"
    except ValueError:
        return "?"


class _Retryable(Exception):
    """Carries a SummarizerError worth another attempt."""

    def __init__(self, error: SummarizerError) -> None:
        super().__init__(error.message)
        self.error = error


def _excerpt(text: str, secret: Secret, limit: int) -> str:
    """The start of a server's text for an error message: scrubbed first, then cut, so a cut
    never leaves a piece of the key."""
    return secret.scrub(text)[:limit]


__all__ = ["MAX_RESPONSE_BYTES", "OpenAISummarizer", "cached_only"]
