"""The route of a summarizer request: straight to the endpoint, or through the user's proxy.

The proxy comes from the environment only (``HTTPS_PROXY`` / ``HTTP_PROXY``, lower case too,
minus the hosts ``NO_PROXY`` lists), read by :func:`urllib.request.getproxies_environment`
and :func:`urllib.request.proxy_bypass_environment`, so ctxbench proxies exactly as
``urllib`` and ``requests`` do. An ``https`` endpoint is reached through a ``CONNECT`` tunnel
(RFC 9110 section 9.3.6): the proxy relays TLS bytes and never sees the request, so the API
key only travels, encrypted, to the endpoint's own origin. An ``http`` endpoint is asked for
in absolute form (RFC 9112 section 3.2.2), the way plain-HTTP proxies work: the proxy the user
configured sees that request. Either way the request target is the endpoint itself and no
redirect is followed, so the key never goes to an origin other than the endpoint's. Proxy
credentials in the proxy URL (``http://user:pass@proxy:3128``) become ``Proxy-Authorization``
for the proxy alone and never appear in messages. Only ``http://`` proxies are supported.
"""

from __future__ import annotations

import base64
import http.client
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field

from ctxbench.errors import SummarizerError


@dataclass(frozen=True)
class Route:
    """Where the connection goes and what the request line asks for."""

    secure: bool
    host: str
    port: int | None
    #: the request target: the path (origin form), or the whole URL through an http proxy
    target: str
    #: ``(host, port)`` to CONNECT to through the proxy (https endpoints behind a proxy)
    tunnel: tuple[str, int] | None = None
    #: the proxy as ``http://host:port`` (no credentials), for messages; "" when direct
    proxy: str = ""
    #: headers for the proxy alone: sent with CONNECT, or with an absolute-form request
    proxy_headers: Mapping[str, str] = field(default_factory=dict)

    def connection(self, timeout: float) -> http.client.HTTPConnection:
        """A new, unconnected connection along this route."""
        if not self.secure:
            return http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        connection = http.client.HTTPSConnection(self.host, self.port, timeout=timeout)
        if self.tunnel is not None:
            connection.set_tunnel(*self.tunnel, headers=dict(self.proxy_headers))
        return connection

    @property
    def request_headers(self) -> dict[str, str]:
        """Headers the request itself carries for the proxy (absolute form only)."""
        return dict(self.proxy_headers) if self.proxy and self.tunnel is None else {}

    @property
    def via(self) -> str:
        return f" (via proxy {self.proxy})" if self.proxy else ""


def route_to(endpoint: str) -> Route:
    """The route to ``endpoint`` under the environment's proxy settings."""
    parts = urllib.parse.urlsplit(endpoint)
    secure = parts.scheme == "https"
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.hostname or ""
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme, "")
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    if not proxy or bypass(host, proxies):
        return Route(secure, host, parts.port, path)
    through = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    try:
        proxy_port = through.port or 80
    except ValueError:
        proxy_port = -1
    label = f"{through.scheme}://{through.hostname}:{proxy_port}"
    if through.scheme != "http" or not through.hostname or proxy_port < 0:
        raise SummarizerError(
            f"the {parts.scheme}_proxy setting {label} is not an http://host:port proxy; "
            f"{endpoint} was not called",
            kind="connection",
        )
    headers: dict[str, str] = {}
    if through.username is not None:
        pair = f"{urllib.parse.unquote(through.username)}:{urllib.parse.unquote(through.password or '')}"
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    if secure:
        tunnel = (host, parts.port or 443)
        return Route(True, through.hostname, proxy_port, path, tunnel, label, headers)
    absolute = urllib.parse.urlunsplit(
        (parts.scheme, parts.netloc.rpartition("@")[2], path, "", "")
    )
    return Route(False, through.hostname, proxy_port, absolute, None, label, headers)


__all__ = ["Route", "route_to"]
