"""Admission: how much one instance takes on, and what it refuses instead of queueing.

``Admission`` is an ASGI layer around any ASGI app; ``StreamableHTTP`` puts one around its
own request path (the same layer: one ladder of admit → serve → 408 → leave). It counts
what is being served, in two kinds:

- **requests**: every POST but a listen, and DELETE: short-lived, each holding at most
  one body (``Limits.max_body_bytes``) in memory;
- **streams**: ``subscriptions/listen`` (a POST whose ``Mcp-Method`` header says so) and
  legacy GET streams: long-lived, each holding one Store subscription and a bounded queue.

Above ``max_requests`` (or ``max_streams``) a new one is answered at once with HTTP 503,
``Retry-After`` and an id-less JSON-RPC error (``mcpcore.errors.Overloaded``): nothing
ran, so a client or load balancer may retry it on any instance. Memory stays bounded by
the limits times what each holds, however many clients arrive.

A request body must arrive within ``body_timeout`` seconds of the request's start (a
client sending it byte by byte holds no slot for longer): else HTTP 408 and the
connection is closed (``mcpcore.errors.BodyTimeout``). One watchdog per event loop
checks the bodies still arriving, so the common case, a body that is already there, arms
no timer at all.

``drain()`` starts a shutdown: new streams get 503 with reason ``shutting_down``
(``ShuttingDown``); requests are still served, each answered with ``Connection: close``
so that proxies stop reusing connections to this instance.

Limits of the server process itself (connections, idle and header timeouts, the
shutdown grace period) belong to the server that runs the app: ``mcpcore.serving``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from mcpcore.errors import BodyTimeout, ConfigError, McpError, Overloaded, ShuttingDown
from mcpcore.timing import SYSTEM_CLOCK, Clock
from mcpcore.transports.asgi import (
    RESPONSE_START,
    ASGIApp,
    ASGIMessage,
    Receive,
    Scope,
    Send,
    request_headers,
)
from mcpcore.transports.error_reply import send_error

LISTEN: Final = "subscriptions/listen"
#: Where the admission ladder leaves a POST's decoded headers (``request_headers``).
HEADERS_SCOPE_KEY: Final = "mcpcore.headers"
#: Where the admission ladder leaves the request's asyncio task for the app it admits to.
TASK_SCOPE_KEY: Final = "mcpcore.task"


@dataclass(frozen=True, slots=True)
class AdmissionLimits:
    """What one instance takes on at once (``None``: no limit). Defaults suit a small
    instance; raise them with the memory you give it (docs/deploying.md)."""

    #: Concurrent requests (each holds at most one request body in memory).
    max_requests: int | None = 256
    #: Concurrent listen streams plus legacy GET streams (each holds one Store
    #: subscription: with Redis, one connection).
    max_streams: int | None = 1024
    #: Seconds a refused client is told to wait (``Retry-After``).
    retry_after: int = 1
    #: Seconds a request body may take to arrive, counted from the request's start.
    body_timeout: float | None = 30.0

    def __post_init__(self) -> None:
        for name in ("max_requests", "max_streams"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1 (or None for no limit)")
        if self.retry_after < 0:
            raise ValueError("retry_after must be 0 or more seconds")
        if self.body_timeout is not None and not self.body_timeout > 0:
            raise ValueError("body_timeout must be a positive number of seconds or None")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> AdmissionLimits:
        """Read ``MCPCORE_MAX_REQUESTS``, ``MCPCORE_MAX_STREAMS``,
        ``MCPCORE_RETRY_AFTER`` and ``MCPCORE_BODY_TIMEOUT`` (``none`` lifts a limit);
        what is not set keeps its default."""
        default = cls()

        def number(name: str, kind: type[int] | type[float], fallback: float | None
                   ) -> float | None:
            raw = environ.get(name, "").strip()
            if not raw:
                return fallback
            if raw.lower() == "none":
                return None
            try:
                return kind(raw)
            except ValueError:
                raise ConfigError(f"{name}={raw!r} is not a number; set a "
                                  f"{'whole ' if kind is int else ''}number, 'none' for no "
                                  "limit, or unset it for the default") from None

        retry = number("MCPCORE_RETRY_AFTER", int, default.retry_after)
        try:
            return cls(
                max_requests=_int(number("MCPCORE_MAX_REQUESTS", int, default.max_requests)),
                max_streams=_int(number("MCPCORE_MAX_STREAMS", int, default.max_streams)),
                retry_after=default.retry_after if retry is None else int(retry),
                body_timeout=number("MCPCORE_BODY_TIMEOUT", float, default.body_timeout),
            )
        except ValueError as exc:  # a number out of range (__post_init__): name the variable
            text = str(exc)
            for field in ("max_requests", "max_streams", "retry_after", "body_timeout"):
                text = text.replace(field, f"MCPCORE_{field.upper()}")
            raise ConfigError(text) from None


#: The limits ``StreamableHTTP`` applies unless told otherwise.
DEFAULT_ADMISSION: Final = AdmissionLimits()


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


class Admitted(Protocol):
    """An ASGI app served behind an ``Admission``: the ``Admission`` itself (around any
    app), or ``StreamableHTTP`` (around its own request path)."""

    @property
    def admission(self) -> Admission | None: ...

    @property
    def app(self) -> ASGIApp: ...


async def serve_admitted(self: Admitted, scope: Scope, receive: Receive, send: Send
                         ) -> None:
    """The admission ladder, written once and used as the ``__call__`` of both
    ``Admission`` and ``StreamableHTTP`` (so the endpoint's request path takes one
    coroutine frame for it, not two): admit the request (or answer the refusal),
    serve ``self.app``, answer a body deadline's cancellation with 408, and count
    the request out, whatever happened. Without an ``admission`` (or for a scope that
    is not HTTP) ``self.app`` is served as it is."""
    app = self.app
    admission = self.admission
    if admission is None or scope["type"] != "http":
        await app(scope, receive, send)
        return
    task = asyncio.current_task()
    assert task is not None
    method = scope["method"]
    if method == "POST":  # a listen stream names itself in a header (is_stream)
        # Decoded once, and left for the app (StreamableHTTP reads them from there).
        headers = scope[HEADERS_SCOPE_KEY] = request_headers(scope)
        named = headers.get("mcp-method")
        stream = named is not None and named.strip() == LISTEN
    else:
        stream = method == "GET"
    refusal = admission.admit(task, stream)
    if refusal is not None:
        await send_error(send, refusal)
        return
    scope[TASK_SCOPE_KEY] = task  # the app need not look it up again (a Python call)
    try:
        if not (stream or admission.reports_body or admission.limits.body_timeout is None):
            receive = admission.watched(receive, task)
        await app(scope, receive, admission.closing(send) if admission.draining else send)
    except asyncio.CancelledError:
        late = admission.timed_out(task)
        if late is None:
            raise
        with contextlib.suppress(RuntimeError, OSError):  # a response had started
            await send_error(send, late)
    finally:
        admission.leave(task, stream)


class Admission:
    """``AdmissionLimits`` applied: the counts, the body deadlines and their watchdog.

    As an ASGI layer around ``app`` (module docstring):

    >>> app = Admission(my_asgi_app, AdmissionLimits(max_requests=64))  # doctest: +SKIP

    ``__call__`` is the one ladder: ``admit`` before anything else (or the refusal),
    the app, ``timed_out`` on a cancellation (the 408) and ``leave`` at the end,
    whatever happened. An app made to report its body's end (``reports_body=True``,
    as ``StreamableHTTP`` is) calls ``body_complete`` itself.
    """

    def __init__(self, app: ASGIApp, limits: AdmissionLimits = DEFAULT_ADMISSION,
                 *, reports_body: bool = False, clock: Clock = SYSTEM_CLOCK) -> None:
        self.app = app
        self.limits = limits
        #: What the body deadlines are measured on, and the watchdog sleeps on.
        self.clock = clock
        #: ``True``: ``app`` calls ``body_complete()`` itself once a request's body is in,
        #: so ``receive`` reaches it unwrapped; otherwise every ``receive`` is watched for
        #: the body's end.
        self.reports_body = reports_body
        #: What is being served now, by kind (for metrics and tests).
        self.requests = 0
        self.streams = 0
        #: Set by ``drain()``: no new streams; every response closes its connection.
        self.draining = False
        # Requests whose body is still arriving → their deadline (``clock`` time).
        self._reading: dict[asyncio.Task[Any] | asyncio.Future[Any], float] = {}
        self._expired: set[asyncio.Task[Any] | asyncio.Future[Any]] = set()
        self._watchdog: asyncio.Task[None] | None = None

    def drain(self) -> None:
        """Begin a shutdown: refuse new streams, close connections after responses."""
        self.draining = True

    def admit(self, task: asyncio.Task[Any], stream: bool) -> McpError | None:
        """Count a new request (``stream``: a stream) in and start its body deadline, or
        return why not: the refusal to answer with (then nothing was counted)."""
        limits = self.limits
        if stream:
            if self.draining:
                return ShuttingDown(retry_after=limits.retry_after)
            if limits.max_streams is not None and self.streams >= limits.max_streams:
                return Overloaded("streams", retry_after=limits.retry_after)
            self.streams += 1
            return None
        if limits.max_requests is not None and self.requests >= limits.max_requests:
            return Overloaded("requests", retry_after=limits.retry_after)
        self.requests += 1
        timeout = limits.body_timeout
        if timeout is not None:
            loop = task.get_loop()
            self._reading[task] = self.clock.monotonic() + timeout
            watchdog = self._watchdog
            if watchdog is None or watchdog.done() or watchdog.get_loop() is not loop:
                self._watchdog = loop.create_task(self._expire(min(1.0, timeout / 4)),
                                                  name="mcpcore-body-timeouts")
        return None

    def body_complete(self, task: asyncio.Task[Any] | None = None) -> None:
        """The current request's body is in: its body deadline no longer applies (for
        an app made with ``reports_body=True``; harmless for any other). ``task``: the
        request's task, if the caller has it at hand (else it is looked up)."""
        if self._reading:
            self._reading.pop(task or asyncio.current_task(), None)  # type: ignore[arg-type]

    def timed_out(self, task: asyncio.Task[Any]) -> BodyTimeout | None:
        """For a request cancelled while ``admit``ted: the 408 to answer with if the
        cancellation was its body deadline (the task is then uncancelled), else ``None``
        (someone else cancelled it: let the cancellation go on)."""
        if task not in self._expired:
            return None
        task.uncancel()
        return BodyTimeout(f"Request body not received within "
                           f"{self.limits.body_timeout:g} s")

    def leave(self, task: asyncio.Task[Any], stream: bool) -> None:
        """The request (or stream) ``admit`` counted in has ended, however it ended."""
        if stream:
            self.streams -= 1
            return
        self.requests -= 1
        if self._reading:
            self._reading.pop(task, None)
        if self._expired:
            self._expired.discard(task)

    def closing(self, send: Send) -> Send:
        """``send`` that adds ``Connection: close`` (for every response while draining)."""

        async def closing(message: ASGIMessage) -> None:
            if message["type"] == RESPONSE_START:
                headers = [h for h in message.get("headers", ()) if h[0] != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        return closing

    #: The one admission ladder (``serve_admitted``): an ``Admission`` is its own
    #: ``admission`` and serves its ``app``.
    __call__ = serve_admitted

    @property
    def admission(self) -> Admission:
        return self

    def watched(self, receive: Receive, task: asyncio.Task[Any]) -> Receive:
        """``receive`` that ends the body deadline once the body is complete."""
        reading = self._reading

        async def receive_body() -> ASGIMessage:
            message = await receive()
            if not message.get("more_body", False):
                reading.pop(task, None)  # the body is complete (or the client is gone)
            return message

        return receive_body

    async def _expire(self, tick: float) -> None:
        """Cancel requests whose body is late; ends after a tick in which no body was
        arriving. It sleeps before it looks: a request whose body came at once is gone
        by the first look, and a watchdog that ended at that look would be made again by
        the next request (a task per request, ~10 us each, on the hot path)."""
        loop = asyncio.get_running_loop()
        reading = self._reading
        clock = self.clock
        while True:
            await clock.sleep(tick)
            if not reading:
                return
            now = clock.monotonic()
            for task, deadline in list(reading.items()):
                if deadline <= now and task.get_loop() is loop:
                    del reading[task]
                    self._expired.add(task)
                    task.cancel()


def is_stream(method: str, mcp_method: str | None) -> bool:
    """Whether a request of HTTP ``method`` with this ``Mcp-Method`` header is a stream:
    a listen POST or a GET (a legacy stream)."""
    if method == "POST":
        return mcp_method is not None and mcp_method.strip() == LISTEN
    return method == "GET"


__all__ = [
    "DEFAULT_ADMISSION",
    "TASK_SCOPE_KEY",
    "Admission",
    "AdmissionLimits",
    "Admitted",
    "is_stream",
    "serve_admitted",
]
