"""Health, readiness and metrics endpoints, in front of the rest of the app.

What lives here: ``Operations``, an ASGI wrapper that answers three paths itself and
hands everything else to the app it wraps (the MCP endpoint, usually behind auth):

- ``GET /healthz``: 200 ``ok`` while the process serves at all. No auth, no Host or
  Origin check: it says nothing but "up", so a load balancer or kubelet may ask it by
  any address.
- ``GET /readyz``: 200 ``ready`` when the Store answers (``ping`` within
  ``ready_timeout``; no Store configured: always ready) and the app's own ``ready``
  check passes, 503 otherwise, and 503 ``draining`` once ``drain()`` has been called
  (``mcpcore.serving.run`` calls it on SIGTERM, before it stops accepting connections:
  the balancer's probe sees it and takes the instance out). No auth, no Host check,
  same reason. With ``details`` the body is JSON instead:
  ``{"status": "ready"|"not ready"|"draining", "problem": ..., **details()}``
  (the gateway's per-upstream health: keep secrets and addresses out of it).
- ``GET /metrics``: the Prometheus exposition (``mcpcore.metrics``), made off the event
  loop. No auth, but the Host check of the MCP endpoint (DNS rebinding): a browser page
  must not read tool names and rule ids. Expose it to the scraper only (docs/operating.md
  has the nginx location for that).

Wrapped around the app (outside the auth middleware) it also counts every HTTP
response by status, and 401/403 answers by their reason, when ``metrics`` is given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from mcpcore.errors import McpError
from mcpcore.stores.base import Store, StoreError
from mcpcore.transports.asgi import (
    RESPONSE_START,
    ASGIApp,
    ASGIMessage,
    Receive,
    Scope,
    Send,
    respond,
)
from mcpcore.transports.error_reply import send_error
from mcpcore.transports.http import LOCAL_HOSTS, check_host_and_origin

if TYPE_CHECKING:
    from mcpcore.metrics import Metrics

_TEXT = b"text/plain; charset=utf-8"


class Operations:
    """``/healthz``, ``/readyz`` and ``/metrics`` in front of ``app``.

    >>> app = Operations(BearerAuthMiddleware(StreamableHTTP(server), config=cfg),
    ...                  store=store, metrics=Metrics(server))       # doctest: +SKIP

    ``allowed_hosts`` applies to ``/metrics`` (as ``StreamableHTTP``'s does to the MCP
    endpoint); ``paths`` renames the three endpoints (``{"health": "/livez"}``).
    """

    def __init__(self, app: ASGIApp, *, store: Store | None = None,
                 metrics: Metrics | None = None, ready_timeout: float = 2.0,
                 allowed_hosts: Iterable[str] = LOCAL_HOSTS,
                 paths: dict[str, str] | None = None,
                 ready: Callable[[], str | None] | None = None,
                 details: Callable[[], Mapping[str, Any]] | None = None) -> None:
        self.app = app
        #: The app's own readiness: None when ready, else what is wrong.
        self.ready = ready
        #: What ``/readyz`` adds to its body (which is then JSON).
        self.details = details
        self.store = store
        self.metrics = metrics
        self.ready_timeout = ready_timeout
        self.allowed_hosts = frozenset(h.lower() for h in allowed_hosts)
        names = {"health": "/healthz", "ready": "/readyz", "metrics": "/metrics",
                 **(paths or {})}
        self._routes = {names["health"]: self._health, names["ready"]: self._ready}
        if metrics is not None:
            self._routes[names["metrics"]] = self._metrics
        #: Set when shutting down (``drain()``): /readyz answers 503 so the balancer
        #: drains us.
        self.draining = False

    async def drain(self) -> None:
        """Begin a graceful shutdown: ``/readyz`` answers 503 ``draining`` from now on,
        and the wrapped app drains (its own ``drain()``, found through middleware)."""
        from mcpcore.serving import find_drain

        self.draining = True
        if self.metrics is not None:
            self.metrics.set_ready(False)
        inner = find_drain(self.app)
        if inner is not None:
            await inner()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            route = self._routes.get(scope.get("path", ""))
            if route is not None:
                if scope["method"] not in ("GET", "HEAD"):
                    await respond(send, 405, b"Method Not Allowed", content_type=_TEXT,
                                  headers=[(b"allow", b"GET, HEAD")])
                    return
                await route(scope, send)
                return
            if self.metrics is not None:
                counting = _Counting(send, self.metrics, scope)
                try:
                    await self.app(scope, receive, counting)
                finally:
                    counting.close()
                return
        await self.app(scope, receive, send)

    async def _health(self, scope: Scope, send: Send) -> None:
        await respond(send, 200, b"ok\n", content_type=_TEXT, head=scope["method"] == "HEAD")

    async def _ready(self, scope: Scope, send: Send) -> None:
        head = scope["method"] == "HEAD"
        if self.draining:
            await self._readiness(send, 503, "draining", None, head)
            return
        problem = await self.check()
        if problem is None and self.ready is not None:
            problem = self.ready()
        if self.metrics is not None:
            self.metrics.set_ready(problem is None)
        if self.details is not None:
            await self._readiness(send, 200 if problem is None else 503,
                                  "ready" if problem is None else "not ready", problem, head)
        elif problem is None:
            await respond(send, 200, b"ready\n", content_type=_TEXT, head=head)
        else:
            await respond(send, 503, f"not ready: {problem}\n".encode(), content_type=_TEXT,
                          head=head)

    async def _readiness(self, send: Send, status: int, text: str, problem: str | None,
                         head: bool) -> None:
        if self.details is None:
            await respond(send, status, f"{text}\n".encode(), content_type=_TEXT, head=head)
            return
        body = {"status": text, "problem": problem, **self.details()}
        await respond(send, status, msgspec.json.encode(body),
                      content_type=b"application/json", head=head)

    async def check(self) -> str | None:
        """None when ready, else what is wrong (no addresses, no credentials)."""
        store = self.store
        if store is None:
            return None
        ping = getattr(store, "ping", None)
        try:
            async with asyncio.timeout(self.ready_timeout):
                if ping is not None:
                    await ping()
                else:
                    await store.get("readyz")
        except (StoreError, OSError, TimeoutError) as exc:
            if self.metrics is not None:
                self.metrics.store_error(exc)
            return "the store is unavailable"
        return None

    async def _metrics(self, scope: Scope, send: Send) -> None:
        assert self.metrics is not None
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            check_host_and_origin(headers, self.allowed_hosts, frozenset())
        except McpError as exc:
            await send_error(send, exc)
            return
        from mcpcore.metrics import CONTENT_TYPE

        body = await self.metrics.render()
        await respond(send, 200, body, content_type=CONTENT_TYPE.encode(),
                      head=scope["method"] == "HEAD")


class _Counting:
    """A ``send`` that tells the metrics each response's status (and, for 401/403, the
    challenge), and counts 2025-era session streams and sessions created."""

    __slots__ = ("_metrics", "_scope", "_send", "_stream")

    def __init__(self, send: Send, metrics: Metrics, scope: Scope) -> None:
        self._send = send
        self._metrics = metrics
        self._scope = scope
        self._stream = False

    def __call__(self, message: ASGIMessage) -> Awaitable[None]:
        # Not a coroutine of its own: the app awaits the real send's, one frame less.
        kind = message["type"]
        if kind == RESPONSE_START:
            self._started(message)
        elif self._stream and kind == "http.response.body" and not message.get(
                "more_body", False):
            self.close()
        return self._send(message)

    def close(self) -> None:
        """The response ended (or the client went away): a counted stream is closed."""
        if self._stream:
            self._stream = False
            self._metrics.legacy_stream(False)

    def _started(self, message: ASGIMessage) -> None:
        status = int(message["status"])
        if status in (401, 403):
            challenge = next((v.decode("latin-1") for n, v in message.get("headers", ())
                              if n == b"www-authenticate"), None)
            self._metrics.http_response(status, challenge)
            return
        self._metrics.http_response(status)
        if status != 200:
            return
        # 2025-era sessions: a POST answered with a new Mcp-Session-Id created one; a
        # GET with one answered by an event stream is the session's stream.
        method = self._scope["method"]
        if method == "POST":
            for name, _ in message.get("headers", ()):
                if name == b"mcp-session-id":
                    if not _asked_session(self._scope):
                        self._metrics.legacy_created.inc()
                    return
        elif method == "GET" and _asked_session(self._scope):
            for name, value in message.get("headers", ()):
                if name == b"content-type" and value.startswith(b"text/event-stream"):
                    self._stream = True
                    self._metrics.legacy_stream(True)
                    return


def _asked_session(scope: Scope) -> bool:
    return any(n == b"mcp-session-id" for n, _ in scope.get("headers", ()))


__all__ = ["Operations"]
