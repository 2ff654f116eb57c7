"""What a run is pointed at: a URL, a command (stdio), or an in-process ASGI app.

A ``Target`` knows how to make a ``Transport`` (a fresh one per era on stdio, where
``initialize`` would turn the process into a legacy session) and carries the
credentials every request presents (``Authorization: Bearer …``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from mcpcore.conformance.transport import HttpProbe, StdioProbe, Transport


@dataclass
class Target:
    """A server under test; build one with ``http``, ``asgi`` or ``stdio``."""

    description: str
    kind: str                                   #: "http" or "stdio"
    factory: Callable[[Mapping[str, str]], Transport] = field(repr=False)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)   #: sent on every request
    bearer: str | None = None

    @classmethod
    def http(cls, url: str, *, bearer: str | None = None,
             headers: Mapping[str, str] | None = None,
             client: Callable[[], httpx.AsyncClient] | None = None) -> Target:
        """A Streamable HTTP endpoint, e.g. ``http://127.0.0.1:8000/mcp``."""
        def make(extra: Mapping[str, str]) -> Transport:
            return HttpProbe(url, client=client() if client else None, headers=extra)

        return cls(url, "http", make, url, dict(headers or {}), bearer)

    @classmethod
    def asgi(cls, app: Any, *, url: str = "http://127.0.0.1:8000/mcp",
             bearer: str | None = None, headers: Mapping[str, str] | None = None) -> Target:
        """An ASGI app run in-process (no socket); ``url`` sets the Host and path."""
        from mcpcore.conformance.asgi import StreamingASGITransport

        def client() -> httpx.AsyncClient:
            # Served as uvicorn would serve it: a failing app is a 500 or a cut
            # connection, for the checks to report; a lingering one gets 1 s after a
            # hang-up (the audit makes thousands of requests).
            transport = StreamingASGITransport(app, raise_app_exceptions=False,
                                               close_grace=1.0)
            return httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(15.0))

        target = cls.http(url, bearer=bearer, headers=headers, client=client)
        target.description = f"ASGI app {getattr(app, '__class__', type(app)).__name__} at {url}"
        return target

    @classmethod
    def stdio(cls, command: str, *, env: Mapping[str, str] | None = None) -> Target:
        """A server started as ``command`` speaking newline-delimited JSON-RPC."""
        def make(extra: Mapping[str, str]) -> Transport:
            return StdioProbe(command, env=env)

        return cls(command, "stdio", make)

    # -- facts about the target ------------------------------------------------------
    @property
    def loopback(self) -> bool:
        """The URL's host is loopback (DNS-rebinding checks only mean something there)."""
        if not self.url:
            return False
        host = (urlsplit(self.url).hostname or "").strip("[]")
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    @property
    def authority(self) -> str:
        """``host:port`` of the URL."""
        parts = urlsplit(self.url or "")
        return parts.netloc.rsplit("@", 1)[-1]

    def transport(self, *, with_credentials: bool = True) -> Transport:
        extra = dict(self.headers)
        if self.bearer and with_credentials:
            extra["Authorization"] = f"Bearer {self.bearer}"
        return self.factory(extra)


__all__ = ["Target"]
