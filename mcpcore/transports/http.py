"""Streamable HTTP (2026-07-28) as a raw ASGI application.

The hot path is an ASGI callable plus msgspec: no framework request objects. Per POST:

    admission (503: too many at once; 408: body too slow) → Origin/Host (403) → method
    (405) → Content-Type (415) / Accept (406) → bounded body (413) → JSON-RPC decode
    (400) → notification 202 → ``Server.handle`` → JSON or SSE

The response is plain JSON unless the handler emits a request-scoped notification
(progress, log): then the response switches to ``text/event-stream`` at that moment and
ends with the final response as the last event. A client closing the connection cancels
the handler task (streamable-http.mdx, "Cancellation"). Every exception is mapped to
status + JSON-RPC error in one function (``error_reply.error_reply``); anything but an ``McpError``
becomes -32603 without a traceback on the wire.

Mountable anywhere: with ``path=None`` it serves whatever path it is mounted at.

Admission (``mcpcore.transports.admission``) bounds what one instance takes on; an event
stream whose client stops reading for ``send_timeout`` seconds is dropped. ``drain()``
begins a graceful shutdown (``mcpcore.serving`` calls it on SIGTERM): listen streams end
with their result and legacy GET streams close, both with an SSE ``retry`` hint, so
their clients reconnect (to another instance).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import urlsplit

from mcpcore import jsonrpc
from mcpcore.errors import (
    ForbiddenOrigin,
    McpError,
    MethodNotAllowed,
    NotAcceptable,
    PayloadTooLarge,
    ResponseNotExpected,
    UnsupportedMediaType,
)
from mcpcore.jsonrpc import Limits, Notification, Request, Response
from mcpcore.principal import ANONYMOUS, CALL_SCOPES_KEY, PRINCIPAL_SCOPE_KEY
from mcpcore.server import Server
from mcpcore.timing import SYSTEM_CLOCK, Clock, Sleep
from mcpcore.transports.admission import (
    DEFAULT_ADMISSION,
    HEADERS_SCOPE_KEY,
    TASK_SCOPE_KEY,
    Admission,
    AdmissionLimits,
    serve_admitted,
)
from mcpcore.transports.asgi import (
    ASGIApp,
    DisconnectWatch,
    EventStream,
    Receive,
    Scope,
    Send,
    StreamStalled,
    read_body,
    request_headers,
    send_empty,
    send_json,
    send_plain,
)
from mcpcore.transports.error_reply import error_reply, send_error

#: Host names a local server accepts by default (DNS-rebinding protection:
#: streamable-http.mdx, "Security Warning").
LOCAL_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
#: Pass as ``allowed_hosts`` to accept any Host header (only behind a trusted proxy that
#: validates Host itself). Named so that the insecure choice is explicit.
ANY_HOST: Final = frozenset({"*"})



@functools.lru_cache(maxsize=256)
def _host_name(host: str) -> str:
    """``"127.0.0.1:8000"`` → ``"127.0.0.1"``; ``"[::1]:80"`` → ``"[::1]"`` (clients send
    the same few values over and over, so each is parsed once)."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[: end + 1] if end != -1 else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class StreamableHTTP:
    """The MCP endpoint as an ASGI app.

    >>> app = StreamableHTTP(server)                       # doctest: +SKIP
    >>> uvicorn.run(app, host="127.0.0.1", port=8000)      # doctest: +SKIP
    """

    #: Runs the per-call check auth middleware leaves in ``scope[CALL_SCOPES_KEY]``, so
    #: the middleware need not buffer and parse the body itself.
    checks_call_scopes = True

    def __init__(
        self,
        server: Server,
        *,
        path: str | None = "/mcp",
        limits: Limits = jsonrpc.DEFAULT_LIMITS,
        allowed_hosts: Iterable[str] = LOCAL_HOSTS,
        allowed_origins: Iterable[str] = (),
        legacy: Any = True,
        keepalive_seconds: float = 15.0,
        admission: AdmissionLimits | None = DEFAULT_ADMISSION,
        send_timeout: float | None = 30.0,
        reconnect_ms: int = 1000,
        sleep: Sleep | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.server = server
        #: What this app's deadlines are measured on and its waits are bounded by:
        #: admission's body deadlines, event streams' ``send_timeout`` (a test passes a
        #: manual clock).
        self.clock = clock
        #: How every wait of this app's streams sleeps: ``clock``'s, unless given.
        self.sleep = sleep if sleep is not None else clock.sleep
        self.path = path.rstrip("/") or "/" if path is not None else None
        self.limits = limits
        self.keepalive_seconds = keepalive_seconds
        self.allowed_hosts = frozenset(h.lower() for h in allowed_hosts)
        self.allowed_origins = frozenset(o.lower().rstrip("/") for o in allowed_origins)
        #: The legacy session shim for 2025-era clients: on by default (``True``), off
        #: with ``False`` (then GET/DELETE are 405), or a configured ``LegacyShim``.
        if legacy is True:
            from mcpcore.transports.legacy_http import LegacyShim

            legacy = LegacyShim(server, sleep=self.sleep)
        self.legacy = legacy or None
        #: Seconds an event stream may wait for its client to take a write.
        self.send_timeout = send_timeout
        #: The SSE ``retry`` (milliseconds) sent on streams ended by ``drain()``.
        self.reconnect_ms = reconnect_ms
        #: What this instance takes on at once (``None``: no admission layer): the
        #: ASGI admission layer around ``_respond``, which reports each body's end.
        self.admission = (Admission(self._respond, admission, reports_body=True,
                                    clock=clock)
                          if admission is not None else None)
        #: What ``__call__`` serves once a request is admitted.
        self.app: ASGIApp = self._respond
        self.draining = False

    # -- ASGI entry ---------------------------------------------------------------------
    #: The ASGI entry: the one admission ladder (``admission.serve_admitted``), which
    #: admits each request to ``app`` (this endpoint's request path, ``_respond``).
    __call__ = serve_admitted

    async def _respond(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Written flat on purpose: every line here runs for every request, and each
        # helper call or coroutine frame saved is measurable (docs/performance.md).
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self._lifespan(receive, send)
            return
        # Decoded once: by the admission ladder for a POST (it left them in the scope),
        # else here.
        headers = scope.get(HEADERS_SCOPE_KEY) or request_headers(scope)
        # Left in the scope by the admission ladder; without admission, looked up.
        task = scope.get(TASK_SCOPE_KEY) or asyncio.current_task()
        assert task is not None
        admission = self.admission
        request_id: jsonrpc.RequestId | None = None
        try:
            if (self.path is not None
                    and (scope.get("path") != self.path or scope.get("root_path"))
                    and self._route_path(scope) != self.path):
                await send_plain(send, 404, b"Not Found")
                return
            check_host_and_origin(headers, self.allowed_hosts, self.allowed_origins)
            method = scope["method"]
            if method != "POST":
                if self.legacy is not None and method in ("GET", "DELETE"):
                    await self.legacy.handle_other(scope, receive, send, headers)
                    return
                raise MethodNotAllowed()
            if headers.get("content-type") != "application/json":
                self._check_content_type(headers)  # parameters, case, or a refusal
            limit = self.limits.max_body_bytes
            declared = headers.get("content-length")
            if declared is not None:
                try:
                    too_large = int(declared) > limit
                except ValueError:
                    too_large = False  # the server below us frames the body
                if too_large:
                    raise PayloadTooLarge(f"Request body exceeds {limit} bytes")
            first = await receive()
            if first["type"] == "http.request" and not first.get("more_body", False):
                body: bytes = first.get("body", b"")  # the common case: one message
                if len(body) > limit:
                    raise PayloadTooLarge(f"Request body exceeds {limit} bytes")
            else:  # in pieces (or the client went away): the one body reader
                whole = await read_body(receive, limit, first)
                if whole is None:
                    if admission is not None:
                        admission.body_complete(task)
                    return  # client went away
                body = whole
            if admission is not None:  # the body deadline no longer applies
                admission.body_complete(task)
            # A modern request names its method in a header: then envelope and params
            # are decoded in one pass (a session's messages take the two-step path).
            expected = headers.get("mcp-method")
            params_type = (self.server.params_type(expected, headers.get("mcp-name"))
                           if expected is not None and "mcp-session-id" not in headers
                           else None)
            fused = (jsonrpc.decode_request_as(body, expected, params_type, self.limits)
                     if params_type is not None and expected is not None else None)
            if fused is not None:
                request, params = fused
            else:
                params = None
                try:
                    message = jsonrpc.decode_message(body, self.limits)
                except McpError:
                    if self.legacy is not None and self.legacy.claims_batch(body, headers):
                        await self.legacy.handle_post(scope, receive, send, headers, body,
                                                      None)
                        return
                    request_id = jsonrpc.peek_id(body)  # echo the id whenever readable
                    raise
                if isinstance(message, Request):
                    request_id = message.id
                if self.legacy is not None and self.legacy.claims(message, headers):
                    await self.legacy.handle_post(scope, receive, send, headers, body,
                                                  message)
                    return
                if isinstance(message, Notification):
                    # Accepted without header demands (streamable-http.mdx, "Sending
                    # Messages"); HTTP cancellation is closing the
                    # stream, so notifications/cancelled is ignored here.
                    await send_empty(send, 202)
                    return
                if isinstance(message, Response):
                    raise ResponseNotExpected()
                request = message
            request_id = request.id
            sse = self._check_accept(headers)
            # Serving the request, here rather than in a coroutine of its own (a frame
            # fewer per request). Plain JSON unless the handler emits a notification:
            # then SSE from that moment, and only then is the stream made (most
            # requests never stream).
            stream: EventStream | None = None

            def gone() -> None:  # the client closed the connection (or stopped reading)
                if stream is not None:
                    stream.abandon()
                task.cancel()

            async def sink(message: bytes) -> None:
                nonlocal stream
                if stream is None:
                    if watch.gone:
                        return  # the client is gone: nothing more is sent
                    stream = EventStream(send, keepalive=self.keepalive_seconds,
                                         sleep=self.sleep, send_timeout=self.send_timeout,
                                         on_stall=gone, timeout=self.clock.timeout)
                await stream.send(message)

            watch = DisconnectWatch(receive, gone)
            try:
                result = await self.server.handle(
                    request, principal=scope.get(PRINCIPAL_SCOPE_KEY) or ANONYMOUS,
                    headers=headers, authorize=scope.get(CALL_SCOPES_KEY),
                    # A client that accepts only JSON gets no stream, so no notifications.
                    sink=sink if sse else None, params=params)
            except asyncio.CancelledError:
                if watch.gone or (stream is not None and stream.stalled):
                    task.uncancel()
                    return  # the client cancelled, or stopped reading: send nothing more
                raise
            except StreamStalled:
                return  # the client stopped reading: dropped (the connection is closed)
            except Exception as exc:
                status, payload, extra = error_reply(exc, request.id, request.method)
            else:
                status, payload, extra = 200, jsonrpc.encode_result(request.id, result), []
            finally:
                watch.stop()
                if stream is not None:
                    stream.stop()
            if watch.gone or (stream is not None and stream.stalled):
                return
            if stream is not None and stream.started:
                await stream.close(payload,
                                   retry_ms=self.reconnect_ms if self.draining else None)
            else:
                await send_json(send, status, payload, extra)
        except Exception as exc:  # the outermost layer: no traceback on the wire
            await send_error(send, exc, request_id)

    async def drain(self) -> None:
        """Begin a graceful shutdown: take no new streams, end every listen stream with
        its result and every legacy GET stream, each after an SSE ``retry`` hint of
        ``reconnect_ms``. Requests in flight go on; the server stops accepting."""
        self.draining = True
        if self.admission is not None:
            self.admission.drain()
        await self.server.subscriptions.close()
        if self.legacy is not None:
            self.legacy.close_streams(self.reconnect_ms)

    def _route_path(self, scope: Scope) -> str:
        path: str = scope.get("path", "/")
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]
        return path.rstrip("/") or "/"

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- checks -------------------------------------------------------------------------
    @staticmethod
    def _check_content_type(headers: Mapping[str, str]) -> None:
        ctype = headers.get("content-type")
        if ctype is None:
            raise UnsupportedMediaType("Missing Content-Type: expected application/json")
        media = ctype.split(";", 1)[0].strip().lower()
        if media != "application/json":
            raise UnsupportedMediaType()

    @staticmethod
    def _check_accept(headers: Mapping[str, str]) -> bool:
        """406 unless the client accepts JSON or an event stream; whether it accepts an
        event stream (no Accept: both)."""
        accept = headers.get("accept")
        if accept is None:
            return True
        acceptable, sse = _accept(accept)
        if not acceptable:
            raise NotAcceptable()
        return sse


def check_host_and_origin(headers: Mapping[str, str], allowed_hosts: frozenset[str],
                          allowed_origins: frozenset[str]) -> None:
    """DNS-rebinding protection (streamable-http.mdx, "Security Warning"): ``Host``
    must be allowed, and a browser's
    ``Origin`` must be same-origin, an allowed host, or explicitly allowed."""
    if "*" not in allowed_hosts:
        host = headers.get("host")
        if host is None or _host_name(host) not in allowed_hosts:
            raise ForbiddenOrigin("Forbidden: Host header is not allowed")
    origin = headers.get("origin")
    if origin is None:
        return  # non-browser clients send none
    origin = origin.strip().lower().rstrip("/")
    if origin in allowed_origins:
        return
    try:
        parts = urlsplit(origin)
    except ValueError:
        raise ForbiddenOrigin("Forbidden: Origin is not allowed") from None
    netloc = parts.netloc
    if parts.scheme in ("http", "https") and netloc:
        # Same origin as the Host we answer for, or a host we explicitly allow.
        host = (headers.get("host") or "").strip().lower()
        if netloc == host or _host_name(netloc) in allowed_hosts:
            return
    raise ForbiddenOrigin("Forbidden: Origin is not allowed")


class OriginGuard:
    """The transport's Host/Origin check as middleware, for stacks that put other
    middleware (e.g. authentication) in front of the MCP endpoint: a forbidden Origin
    is answered 403 before anything else looks at the request.

    >>> app = OriginGuard(BearerAuthMiddleware(StreamableHTTP(server), config=cfg))
    ... # doctest: +SKIP
    """

    def __init__(self, app: Any, *, allowed_hosts: Iterable[str] = LOCAL_HOSTS,
                 allowed_origins: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed_hosts = frozenset(h.lower() for h in allowed_hosts)
        self.allowed_origins = frozenset(o.lower().rstrip("/") for o in allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                check_host_and_origin(request_headers(scope), self.allowed_hosts,
                                      self.allowed_origins)
            except McpError as exc:
                await send_error(send, exc)
                return
        await self.app(scope, receive, send)


@functools.lru_cache(maxsize=64)
def _accept(accept: str) -> tuple[bool, bool]:
    """(acceptable at all, allows an event stream) for one Accept value; clients send
    the same few values over and over, so each is parsed once."""
    types = {part.split(";", 1)[0].strip().lower() for part in accept.split(",")}
    sse = bool(types & {"text/event-stream", "text/*", "*/*"})
    return sse or bool(types & {"application/json", "application/*"}), sse


__all__ = ["ANY_HOST", "LOCAL_HOSTS", "OriginGuard", "StreamableHTTP", "check_host_and_origin"]
