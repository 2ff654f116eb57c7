"""ASGI responses: the one module in mcpcore that starts an HTTP response.

What lives here: sending a whole response (JSON, empty, plain text), a server-sent event
stream that starts on its first event, sends keep-alive comments while it waits,
serialises every write with one lock, drops writes once it is closed and gives up on a
client that stops reading (``StreamStalled``), and a watch that notices the client going
away. What must not: JSON-RPC, MCP methods, or the choice
of a status code (callers choose it: they know why).

Time is an input: every wait goes through a ``sleep`` function (``mcpcore.timing``), by
default ``asyncio.sleep``, so tests advance a manual clock instead of sleeping.

    >>> await send_json(send, 200, b'{"ok":true}')                    # doctest: +SKIP
    >>> stream = EventStream(send, keepalive=15.0)                     # doctest: +SKIP
    >>> await stream.send(b'{"jsonrpc":"2.0","method":"notifications/progress"}')
    >>> await stream.close(final_payload)                              # doctest: +SKIP

SSE framing follows the WHATWG HTML "Server-sent events" section: one event per
JSON-RPC message (``event: message``, the JSON on one ``data:`` line), comments start
with a colon.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Final

from mcpcore.asgi_types import ASGIApp, ASGIMessage, RawHeaders, Receive, Scope, Send
from mcpcore.errors import PayloadTooLarge
from mcpcore.timing import Sleep, Timeout

log = logging.getLogger("mcpcore.asgi")


JSON: Final = b"application/json"
#: The ASGI message that starts a response: only this module sends one; middleware that
#: must notice it (e.g. to add a header) compares with this name.
RESPONSE_START: Final = "http.response.start"
SSE_HEADERS: Final = (
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    # Proxies such as nginx buffer responses unless told not to (streamable-http.mdx,
    # "Receiving messages": SHOULD send X-Accel-Buffering: no on SSE streams).
    (b"x-accel-buffering", b"no"),
)
KEEPALIVE: Final = b": keepalive\n\n"


class StreamStalled(OSError):
    """The client took no write for ``send_timeout`` seconds: the stream was abandoned.

    Whoever serves the request returns without completing the response; the server
    closes the connection (uvicorn logs that once), freeing what the stream held.
    """


def sse_event(message: bytes) -> bytes:
    """One JSON-RPC message as one SSE event."""
    return b"event: message\ndata: " + message + b"\n\n"


async def respond(send: Send, status: int, body: bytes = b"", *,
                  content_type: bytes | None = None, headers: RawHeaders = (),
                  head: bool = False) -> None:
    """Send a whole response. ``head=True``: the length of ``body``, but no body (HEAD)."""
    fields = [(b"content-type", content_type)] if content_type is not None else []
    fields.extend(headers)
    fields.append((b"content-length", b"%d" % len(body)))
    await send({"type": RESPONSE_START, "status": status, "headers": fields})
    await send({"type": "http.response.body", "body": b"" if head else body})


async def send_json(send: Send, status: int, payload: bytes, headers: RawHeaders = ()) -> None:
    """A whole JSON response (``respond``'s work, written out: every request's answer)."""
    fields = [(b"content-type", JSON), *headers, (b"content-length", b"%d" % len(payload))]
    await send({"type": RESPONSE_START, "status": status, "headers": fields})
    await send({"type": "http.response.body", "body": payload})


async def send_empty(send: Send, status: int, headers: RawHeaders = ()) -> None:
    await respond(send, status, headers=headers)


async def send_plain(send: Send, status: int, text: bytes) -> None:
    await respond(send, status, text, content_type=b"text/plain")


class EventStream:
    """An SSE response that starts with its first event (or ``open``).

    Every write takes one lock, so keep-alive comments never split an event; once
    ``close`` or ``abandon`` ran, writes are dropped. ``keepalive`` seconds of silence
    send a comment, so idle proxies do not cut a stream that waits on a person.
    """

    __slots__ = ("_headers", "_keepalive", "_lock", "_on_stall", "_send", "_send_timeout",
                 "_sleep", "_ticker", "_timeout", "closed", "stalled", "started")

    def __init__(self, send: Send, *, headers: RawHeaders = (), keepalive: float | None = None,
                 sleep: Sleep = asyncio.sleep, send_timeout: float | None = None,
                 on_stall: Callable[[], None] | None = None,
                 timeout: Timeout = asyncio.timeout) -> None:
        self._send = send
        self._send_timeout = send_timeout
        #: What bounds a write by ``send_timeout`` (a ``Clock``'s ``timeout``).
        self._timeout = timeout
        self._on_stall = on_stall
        self.stalled = False
        self._headers = headers  # joined to SSE_HEADERS only if the stream starts
        self._keepalive = keepalive
        self._sleep = sleep
        self._lock: asyncio.Lock | None = None  # made by the first write that needs it
        self._ticker: asyncio.Task[None] | None = None
        self.started = False
        self.closed = False

    async def _start(self) -> None:  # the lock is held, if there is one yet
        self.started = True
        await self._send({"type": RESPONSE_START, "status": 200,
                          "headers": [*SSE_HEADERS, *self._headers]})
        if self._keepalive is not None:
            self._ticker = asyncio.ensure_future(self._tick(self._keepalive))

    def _locked(self) -> asyncio.Lock:
        # Most responses never stream: no lock until the first write needs one.
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def open(self, comment: bytes | None = None) -> None:
        """Start the stream now (a stream that may stay silent for long)."""
        async with self._locked():
            if not self.started and not self.closed:
                await self._start()
                if comment is not None:
                    await self._write(comment)

    async def send(self, message: bytes) -> None:
        """One JSON-RPC message as one event; dropped once the stream is closed (and
        ``StreamStalled`` once the client stopped reading)."""
        async with self._locked():
            if self.closed:
                if self.stalled:
                    raise StreamStalled("the client stopped reading this stream")
                return
            if not self.started:
                await self._start()
            await self._write(sse_event(message))

    async def comment(self, text: bytes = KEEPALIVE) -> None:
        async with self._locked():
            if self.started and not self.closed:
                await self._write(text)

    async def _write(self, body: bytes, more: bool = True) -> None:
        message = {"type": "http.response.body", "body": body, "more_body": more}
        if self._send_timeout is None:
            await self._send(message)
            return
        # A write waits only while the client's socket buffer is full (flow control):
        # a client that stops reading gets ``send_timeout`` seconds, then is dropped.
        try:
            async with self._timeout(self._send_timeout):
                await self._send(message)
        except TimeoutError:
            self.stalled = True
            self.abandon()
            raise StreamStalled(f"the client took no data for {self._send_timeout:g} s"
                                ) from None

    async def _tick(self, seconds: float) -> None:
        on_stall = self._on_stall  # stop() drops the stream's own reference
        try:
            while True:
                await self._sleep(seconds)
                await self.comment()
        except StreamStalled:
            if on_stall is not None:
                on_stall()  # a quiet stream's writer must hear of it too
        except OSError as exc:  # the client is gone; the request's own path notices too
            log.debug("keepalive stopped: %s", exc)

    async def close(self, final: bytes | None = None, *, retry_ms: int | None = None
                    ) -> None:
        """End the stream, ``final`` (a JSON-RPC message) as its last event; with
        ``retry_ms``, after an SSE ``retry`` field (the client's reconnection delay)."""
        self.stop()
        if not self.started:  # nothing was ever written: nothing to end
            self.closed = True
            return
        async with self._locked():
            if self.closed:
                return
            self.closed = True
            body = b"retry: %d\n\n" % retry_ms if retry_ms is not None else b""
            if final is not None:
                body += sse_event(final)
            # A client that stopped reading at the very end: nothing left to finish.
            with contextlib.suppress(StreamStalled):
                await self._write(body, more=False)

    def abandon(self) -> None:
        """The client went away: drop every later write, send nothing more."""
        self.closed = True
        self.stop()

    def stop(self) -> None:
        """Stop the keep-alive comments (safe to call any number of times).

        Also drops ``on_stall``, which only keep-alives call: it usually points back at
        whoever holds this stream, and without the cycle a request's objects are freed
        the moment it ends instead of by the garbage collector, later."""
        self._on_stall = None
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None


class DisconnectWatch:
    """Calls ``on_gone`` once when ``receive`` reports ``http.disconnect``.

    Watching starts on the next pass of the event loop, not now: a handler that never
    waits finishes first and no task is made at all (one task per request is a
    measurable cost); one that waits gets the watcher before its first await returns,
    so an early disconnect is still seen. The watches made in one pass are started
    together, by one callback (a callback per request cost more than the rest of the
    watch).
    """

    __slots__ = ("_batch", "_on_gone", "_receive", "_task", "gone")

    def __init__(self, receive: Receive, on_gone: Callable[[], None]) -> None:
        self._receive = receive
        self._on_gone = on_gone
        self._task: asyncio.Task[None] | None = None
        self.gone = False
        loop = asyncio.get_running_loop()
        batch = _UNSTARTED.get(loop)
        if batch is None:
            batch = _UNSTARTED[loop] = set()
            loop.call_soon(_start_watches, loop)
        batch.add(self)
        #: The set this watch waits in until it starts (``None`` once it started or
        #: stopped: the set and the watch hold each other only until then).
        self._batch: set[DisconnectWatch] | None = batch

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._batch = None
        self._task = loop.create_task(self._watch())

    async def _watch(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass
        self.gone = True
        self._on_gone()

    def stop(self) -> None:
        """Stop watching; ``on_gone`` is dropped (no reference cycle outlives the
        request: see ``EventStream.stop``)."""
        self._on_gone = _ignore
        batch = self._batch
        if batch is not None:
            batch.discard(self)
            self._batch = None
        elif self._task is not None:
            # Dropped too: the cancelled task keeps its exception, whose traceback
            # holds ``_watch``'s frame, which holds this watch (a cycle per request).
            task, self._task = self._task, None
            task.cancel()


#: The watches made in this pass of each running event loop, to start on its next pass
#: (``_start_watches`` takes a loop's set out as it runs).
_UNSTARTED: dict[asyncio.AbstractEventLoop, set[DisconnectWatch]] = {}


def _start_watches(loop: asyncio.AbstractEventLoop) -> None:
    for watch in _UNSTARTED.pop(loop, ()):
        watch._start(loop)


def _ignore() -> None:
    """What a stopped watch calls (nothing)."""


#: Header names as text, by their bytes: clients send the same few names again and
#: again, and a look-up costs less than a decode. Bounded: past the bound, names are
#: decoded each time.
_NAMES: dict[bytes, str] = {}
_MAX_NAMES: Final = 512


def _name(raw: bytes) -> str:
    name = raw.decode("latin-1")
    if len(_NAMES) < _MAX_NAMES:
        _NAMES[raw] = name
    return name


async def read_body(receive: Receive, limit: int, first: ASGIMessage | None = None
                    ) -> bytes | None:
    """A request's whole body, read to its end (``first``: its first message, if it was
    received already): ``None`` if the client went away (``http.disconnect``), and
    ``PayloadTooLarge`` (413) as soon as it passes ``limit`` bytes, without reading on.
    The one body reader of the transports and the auth middleware."""
    message = first if first is not None else await receive()
    chunks: list[bytes] = []
    size = 0
    while True:
        if message["type"] == "http.disconnect":
            return None
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"Request body exceeds {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
        message = await receive()


def request_headers(scope: Scope) -> dict[str, str]:
    """Header names (lower case, as the ASGI spec has them) to values."""
    raw = scope["headers"]
    names = _NAMES
    out = {}
    for raw_name, raw_value in raw:
        name = names.get(raw_name)
        out[name if name is not None else _name(raw_name)] = raw_value.decode("latin-1")
    if len(out) == len(raw):
        return out
    out = {}
    for raw_name, raw_value in raw:
        name = raw_name.decode("latin-1")
        value = raw_value.decode("latin-1")
        # Repeated fields combine as a list (RFC 9110 §5.3); for our single-valued
        # headers that makes a mismatch, never a silent pick of one copy.
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


__all__ = [
    "JSON",
    "KEEPALIVE",
    "RESPONSE_START",
    "SSE_HEADERS",
    "ASGIApp",
    "ASGIMessage",
    "DisconnectWatch",
    "EventStream",
    "RawHeaders",
    "Receive",
    "Scope",
    "Send",
    "StreamStalled",
    "read_body",
    "request_headers",
    "respond",
    "send_empty",
    "send_json",
    "send_plain",
    "sse_event",
]
