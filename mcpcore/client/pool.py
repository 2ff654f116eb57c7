"""A lean HTTP/1.1 connection pool for httpx: asyncio streams, framed by h11.

``HttpTransport`` plugs ``Pool`` into the ``httpx.AsyncClient`` it creates, so every
request still goes through httpx (``httpx.Auth`` flows, event hooks, the same
``httpx.Response``), but the bytes travel on keep-alive connections managed here rather
than by httpcore. Why: httpcore's pool walks every connection on each request and sets
up anyio primitives per request (its ``sniffio`` probe re-imports on every call when
``sniffio`` is absent); with sixteen requests in flight that cost more than the MCP call
itself (bench/bench_client.py, docs/performance.md).

What it does: HTTP/1.1 only (what MCP servers speak; h11 frames both directions), one
request per connection at a time, idle connections kept per origin for
``keepalive_expiry`` seconds and checked before reuse, at most ``max_connections`` open
at once (more requests wait). TLS through ``ssl.create_default_context()``. No proxies:
when a proxy environment variable is set, ``HttpTransport`` keeps httpx's own transport.
Timeouts: ``connect`` and ``read`` from the request's httpx timeout; errors are raised
as httpx's (``ConnectError``, ``ReadTimeout``, ``RemoteProtocolError``...), so callers
map one exception family.

A request is sent again (once, on a fresh connection) only when it cannot have reached
the server: the kept-alive connection it was given turned out closed before anything was
written (the check httpcore makes: at EOF, or readable while idle, which for an idle
HTTP/1.1 connection means closed), or writing it failed. Once the request is written,
a connection that breaks before the response is an error (``httpx.ReadError``), never a
second send: the server may have received the request and acted on it (a ``tools/call``
run twice), and a POST is not idempotent (RFC 9110 §9.2.2).
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import ssl
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import h11
import httpx

from mcpcore.timing import SYSTEM_CLOCK, Clock

READ_CHUNK: Final = 64 * 1024
Origin = tuple[str, str, int]


class _Connection:
    def __init__(self, origin: Origin, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.origin = origin
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(our_role=h11.CLIENT)
        self.idle_since = 0.0

    def usable(self, now: float, expiry: float) -> bool:
        return (now - self.idle_since < expiry and not self.reader.at_eof()
                and not self.writer.is_closing() and not self._readable())

    def _readable(self) -> bool:
        """Has the idle socket something to read (the server's FIN, or bytes nobody asked
        for) that the event loop has not handed to the reader yet? Either way, it is
        not a connection to send a request on."""
        sock = self.writer.get_extra_info("socket")
        if sock is None:
            return False
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return True  # closed under us
        return bool(readable)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class Pool(httpx.AsyncBaseTransport):
    """An ``httpx.AsyncBaseTransport``; see the module docstring."""

    def __init__(self, *, max_connections: int = 32, keepalive_expiry: float = 5.0,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        #: What ``keepalive_expiry`` is measured on.
        self.clock = clock
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[Origin, list[_Connection]] = {}
        self._expiry = keepalive_expiry
        self._ssl: ssl.SSLContext | None = None
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise httpx.ConnectError("the connection pool is closed", request=request)
        url = request.url
        origin: Origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        body = await request.aread()
        await self._slots.acquire()
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._slots.release()

        try:
            idle = self._take_idle(origin)
            while True:
                connection = idle or await self._connect(origin, timeouts.get("connect"),
                                                         request)
                try:
                    await self._send(connection, request, body)
                except (ConnectionError, OSError) as exc:
                    connection.close()
                    if idle is None:
                        raise httpx.WriteError(f"sending the request failed: {exc}",
                                               request=request) from exc
                    idle = None  # the write failed on a kept-alive connection: the
                    continue     # server never got this request; once more, fresh
                except BaseException:
                    connection.close()
                    raise
                try:
                    head = await self._response_head(connection, request,
                                                     timeouts.get("read"))
                    break
                except BaseException:
                    # Written: the server may have it. Never sent twice (module docstring).
                    connection.close()
                    raise
        except BaseException:
            release()
            raise
        stream = _Body(self, connection, timeouts.get("read"), release, request)
        return httpx.Response(head.status_code, headers=head.headers, stream=stream,
                              extensions={"http_version": b"HTTP/1.1",
                                          "reason_phrase": head.reason})

    def _take_idle(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        now = self.clock.monotonic()
        while idle:
            connection = idle.pop()
            if connection.usable(now, self._expiry):
                return connection
            connection.close()
        return None

    async def _connect(self, origin: Origin, timeout: float | None,
                       request: httpx.Request) -> _Connection:
        scheme, host, port = origin
        context = None
        if scheme == "https":
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            context = self._ssl
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=context, server_hostname=host if context else None,
                    limit=READ_CHUNK)
        except TimeoutError:
            raise httpx.ConnectTimeout(f"connecting to {host}:{port} timed out",
                                       request=request) from None
        except OSError as exc:
            raise httpx.ConnectError(f"cannot connect to {host}:{port}: {exc}",
                                     request=request) from exc
        return _Connection(origin, reader, writer)

    async def _send(self, connection: _Connection, request: httpx.Request,
                    body: bytes) -> None:
        conn = connection.h11
        target = request.url.raw_path
        headers = list(request.headers.raw)
        if (body or request.method in ("POST", "PUT", "PATCH")) and not any(
                k.lower() == b"content-length" for k, _ in headers):
            headers.append((b"Content-Length", str(len(body)).encode()))
        out = conn.send(h11.Request(method=request.method.encode(), target=target,
                                    headers=headers))
        if body:
            out += conn.send(h11.Data(data=body))
        out += conn.send(h11.EndOfMessage())
        connection.writer.write(out)
        await connection.writer.drain()

    async def _response_head(self, connection: _Connection, request: httpx.Request,
                             read_timeout: float | None) -> h11.Response:
        while True:
            event = await _next_event(connection, read_timeout, request)
            if isinstance(event, h11.Response):
                return event
            if isinstance(event, h11.InformationalResponse):
                continue
            raise httpx.RemoteProtocolError(f"unexpected {type(event).__name__} before the "
                                            "response head", request=request)

    def _keep(self, connection: _Connection) -> None:
        conn = connection.h11
        if (self._closed or conn.our_state is not h11.DONE
                or conn.their_state is not h11.DONE):
            connection.close()
            return
        try:
            conn.start_next_cycle()
        except h11.LocalProtocolError:
            connection.close()
            return
        connection.idle_since = self.clock.monotonic()
        self._idle.setdefault(connection.origin, []).append(connection)

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()


async def _next_event(connection: _Connection, read_timeout: float | None,
                      request: httpx.Request) -> Any:
    conn = connection.h11
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError as exc:
            raise httpx.RemoteProtocolError(f"bad HTTP from the server: {exc}",
                                            request=request) from None
        if event is not h11.NEED_DATA:
            return event
        try:
            if read_timeout is None:
                data = await connection.reader.read(READ_CHUNK)
            else:
                async with asyncio.timeout(read_timeout):
                    data = await connection.reader.read(READ_CHUNK)
        except TimeoutError:
            raise httpx.ReadTimeout("the server sent nothing in time", request=request) from None
        except (ConnectionError, OSError) as exc:
            raise httpx.ReadError(f"reading from the server failed: {exc}",
                                  request=request) from exc
        if not data and conn.their_state is h11.SEND_RESPONSE:
            raise httpx.ReadError("the server closed the connection before answering",
                                  request=request)
        conn.receive_data(data)


class _Body(httpx.AsyncByteStream):
    """A response body read off its connection; the connection goes back to the pool
    once the body is read to its end, and is closed if the reader stops early."""

    def __init__(self, pool: Pool, connection: _Connection, read_timeout: float | None,
                 release: Callable[[], None], request: httpx.Request) -> None:
        self._pool = pool
        self._connection: _Connection | None = connection
        self._timeout = read_timeout
        self._release = release
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        if connection is None:
            return
        while True:
            event = await _next_event(connection, self._timeout, self._request)
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self._connection = None
                self._pool._keep(connection)
                self._release()
                return
            elif isinstance(event, h11.ConnectionClosed):
                raise httpx.RemoteProtocolError("the server closed the connection mid-body",
                                                request=self._request)

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()  # not read to its end: the connection cannot be reused
        self._release()


__all__ = ["Pool"]
