"""Admission: how much one instance takes on, and what it refuses instead of queueing.

``Admission`` is an ASGI layer (``StreamableHTTP`` puts one in front of itself; any ASGI
app can be wrapped). It counts what is being served, in two kinds:

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
from typing import Any, Final

from mcpcore.errors import BodyTimeout, McpError, Overloaded, ShuttingDown
from mcpcore.transports.asgi import RESPONSE_START, ASGIApp, Message, Receive, Scope, Send

LISTEN: Final = b"subscriptions/listen"


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
                raise ValueError(f"{name}={raw!r} is not a number") from None

        retry = number("MCPCORE_RETRY_AFTER", int, default.retry_after)
        return cls(
            max_requests=_int(number("MCPCORE_MAX_REQUESTS", int, default.max_requests)),
            max_streams=_int(number("MCPCORE_MAX_STREAMS", int, default.max_streams)),
            retry_after=default.retry_after if retry is None else int(retry),
            body_timeout=number("MCPCORE_BODY_TIMEOUT", float, default.body_timeout),
        )


#: The limits ``StreamableHTTP`` applies unless told otherwise.
DEFAULT_ADMISSION: Final = AdmissionLimits()


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


class Admission:
    """The ASGI layer that applies ``AdmissionLimits`` to ``app`` (module docstring).

    >>> app = Admission(my_asgi_app, AdmissionLimits(max_requests=64))  # doctest: +SKIP
    """

    def __init__(self, app: ASGIApp, limits: AdmissionLimits = DEFAULT_ADMISSION, *,
                 reports_body: bool = False) -> None:
        self.app = app
        self.limits = limits
        #: ``True``: ``app`` calls ``body_complete()`` itself once a request's body is in
        #: (``StreamableHTTP`` does), so ``receive`` reaches it unwrapped; otherwise
        #: every ``receive`` is watched for the body's end.
        self.reports_body = reports_body
        #: What is being served now, by kind (for metrics and tests).
        self.requests = 0
        self.streams = 0
        #: Set by ``drain()``: no new streams; every response closes its connection.
        self.draining = False
        # Requests whose body is still arriving → their deadline (loop time).
        self._reading: dict[asyncio.Task[Any] | asyncio.Future[Any], float] = {}
        self._expired: set[asyncio.Task[Any] | asyncio.Future[Any]] = set()
        self._watchdog: asyncio.Task[None] | None = None

    def drain(self) -> None:
        """Begin a shutdown: refuse new streams, close connections after responses."""
        self.draining = True

    def body_complete(self, task: asyncio.Task[Any] | None = None) -> None:
        """The current request's body is in: its body deadline no longer applies (for
        an app made with ``reports_body=True``; harmless for any other). ``task``: the
        request's task, if the caller has it at hand (else it is looked up)."""
        if self._reading:
            self._reading.pop(task or asyncio.current_task(), None)  # type: ignore[arg-type]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limits = self.limits
        # While draining, every response closes its connection.
        reply = self._closing(send) if self.draining else send
        if _is_stream(scope):
            if self.draining:
                await _refuse(send, ShuttingDown(retry_after=limits.retry_after))
                return
            if limits.max_streams is not None and self.streams >= limits.max_streams:
                await _refuse(send, Overloaded("streams", retry_after=limits.retry_after))
                return
            self.streams += 1
            try:
                await self.app(scope, receive, reply)
            finally:
                self.streams -= 1
            return
        if limits.max_requests is not None and self.requests >= limits.max_requests:
            await _refuse(send, Overloaded("requests", retry_after=limits.retry_after))
            return
        self.requests += 1
        timeout = limits.body_timeout
        try:
            if timeout is None:
                await self.app(scope, receive, reply)
                return
            # Inline rather than another coroutine frame: this runs for every request.
            task = asyncio.current_task()
            assert task is not None
            loop = task.get_loop()
            reading = self._reading
            reading[task] = loop.time() + timeout
            watchdog = self._watchdog
            if watchdog is None or watchdog.done() or watchdog.get_loop() is not loop:
                self._watchdog = loop.create_task(self._expire(min(1.0, timeout / 4)),
                                                  name="mcpcore-body-timeouts")
            try:
                await self.app(scope, receive if self.reports_body else
                               self._watched(receive, task), reply)
            except asyncio.CancelledError:
                if task not in self._expired:
                    raise
                task.uncancel()
                error = BodyTimeout(f"Request body not received within {timeout:g} s")
                with contextlib.suppress(RuntimeError, OSError):  # a response had started
                    await _refuse(send, error)
            finally:
                reading.pop(task, None)
                if self._expired:
                    self._expired.discard(task)
        finally:
            self.requests -= 1

    def _closing(self, send: Send) -> Send:
        """``send`` that adds ``Connection: close`` (while draining)."""

        async def closing(message: Message) -> None:
            if message["type"] == RESPONSE_START:
                headers = [h for h in message.get("headers", ()) if h[0] != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        return closing

    def _watched(self, receive: Receive, task: asyncio.Task[Any]) -> Receive:
        """``receive`` that ends the body deadline once the body is complete."""
        reading = self._reading

        async def receive_body() -> Message:
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
        while True:
            await asyncio.sleep(tick)
            if not reading:
                return
            now = loop.time()
            for task, deadline in list(reading.items()):
                if deadline <= now and task.get_loop() is loop:
                    del reading[task]
                    self._expired.add(task)
                    task.cancel()


def _is_stream(scope: Scope) -> bool:
    method = scope["method"]
    if method == "GET":
        return True
    if method != "POST":
        return False
    for name, value in scope["headers"]:
        if name == b"mcp-method":
            return bool(value.strip() == LISTEN)
    return False


async def _refuse(send: Send, error: McpError) -> None:
    # The transport's one mapping of errors to HTTP (imported here: it imports us).
    from mcpcore.transports.http import send_error

    await send_error(send, error)


__all__ = ["DEFAULT_ADMISSION", "Admission", "AdmissionLimits"]
