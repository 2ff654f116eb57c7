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
import re
import select
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final

import h11
import httpx

from mcpcore.timing import SYSTEM_CLOCK, Clock

try:
    import httptools
except ImportError:  # pragma: no cover - without the `fast` extra: h11 only
    httptools = None  # type: ignore[assignment]

READ_CHUNK: Final = 64 * 1024
#: How long an idle connection is kept for reuse: below the 5 s idle timeout of uvicorn
#: and Node's HTTP server, so that the pool does not send a request on a connection the
#: server is closing that instant (the request would fail: never sent twice).
KEEPALIVE_EXPIRY: Final = 4.0
#: The largest response head (status line and header fields) the lean lane reads.
MAX_HEAD_BYTES: Final = 64 * 1024
Origin = tuple[str, str, int]
#: A header field name (RFC 9110 §5.1: a token) and what a field value must not hold.
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FORBIDDEN_IN_VALUE: Final = re.compile(r"[\x00\r\n]")
_USER_AGENT: Final = b"User-Agent: mcpcore\r\n"


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

    def __init__(self, *, max_connections: int = 32,
                 keepalive_expiry: float = KEEPALIVE_EXPIRY,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        #: What ``keepalive_expiry`` is measured on.
        self.clock = clock
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[Origin, list[_Connection]] = {}
        self._expiry = keepalive_expiry
        self._ssl: ssl.SSLContext | None = None
        self._closed = False
        #: Whether ``send_lean`` can be used (httptools is installed).
        self.lean = httptools is not None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise httpx.ConnectError("the connection pool is closed", request=request)
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        body = await request.aread()
        connection, release = await self._written(
            _origin(request.url), timeouts.get("connect"), request,
            lambda connection: _h11_request(connection, request, body))
        try:
            head = await self._response_head(connection, request, timeouts.get("read"))
        except BaseException:
            # Written: the server may have it. Never sent twice (module docstring).
            connection.close()
            release()
            raise
        stream = _Body(self, connection, timeouts.get("read"), release, request)
        return httpx.Response(head.status_code, headers=head.headers, stream=stream,
                              extensions={"http_version": b"HTTP/1.1",
                                          "reason_phrase": head.reason})

    async def send_lean(self, method: str, url: httpx.URL, headers: Mapping[str, str],
                        body: bytes, *, connect_timeout: float | None,
                        read_timeout: float | None) -> LeanResponse:
        """One request on the lean lane (module docstring): its response, once its head
        is read; the body is read through ``LeanResponse.aiter_bytes``, and the
        connection goes back to the pool when it is read to its end."""
        if self._closed:
            raise httpx.ConnectError("the connection pool is closed")
        head = _request_head(method, url, headers, body)
        connection, release = await self._written(_origin(url), connect_timeout, None,
                                                   lambda connection: head)
        response = LeanResponse(self, connection, read_timeout, release)
        try:
            await response._read_head()
        except BaseException:
            connection.close()  # written: never sent twice (module docstring)
            release()
            raise
        return response

    async def _written(self, origin: Origin, connect_timeout: float | None,
                       request: httpx.Request | None,
                       encode: Callable[[_Connection], bytes]
                       ) -> tuple[_Connection, Callable[[], None]]:
        """A slot and a connection to ``origin`` on which the request (``encode``'s
        bytes for that connection) is written, and the slot's ``release`` (idempotent).
        A write that fails on a kept-alive connection never reached the server: it is
        made once more on a fresh one; one that fails on a fresh connection raises
        ``httpx.WriteError``. Once written, a request is never written again (module
        docstring): what follows is the caller's."""
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
                connection = idle or await self._connect(origin, connect_timeout, request)
                try:
                    connection.writer.write(encode(connection))
                    await connection.writer.drain()
                    return connection, release
                except (ConnectionError, OSError) as exc:
                    connection.close()
                    if idle is None:
                        raise httpx.WriteError(f"sending the request failed: {exc}",
                                               request=request) from exc
                    idle = None  # the write failed on a kept-alive connection: the
                    # server never got this request; once more, fresh
                except BaseException:
                    connection.close()
                    raise
        except BaseException:
            release()
            raise

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
                       request: httpx.Request | None) -> _Connection:
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

    def _keep_lean(self, connection: _Connection) -> None:
        """A connection whose lean response was read to its end, back to the pool."""
        if self._closed:
            connection.close()
            return
        connection.idle_since = self.clock.monotonic()
        self._idle.setdefault(connection.origin, []).append(connection)

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


def _origin(url: httpx.URL) -> Origin:
    return (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))


def _h11_request(connection: _Connection, request: httpx.Request, body: bytes) -> bytes:
    """``request`` with ``body`` framed by the connection's h11 state."""
    conn = connection.h11
    headers = list(request.headers.raw)
    if (body or request.method in ("POST", "PUT", "PATCH")) and not any(
            k.lower() == b"content-length" for k, _ in headers):
        headers.append((b"Content-Length", str(len(body)).encode()))
    out = conn.send(h11.Request(method=request.method.encode(), target=request.url.raw_path,
                                headers=headers))
    if body:
        out += conn.send(h11.Data(data=body))
    return out + conn.send(h11.EndOfMessage())


def _request_head(method: str, url: httpx.URL, headers: Mapping[str, str],
                  body: bytes) -> bytes:
    """The request's bytes (head and body), every header checked (module docstring)."""
    lines = [f"{method} {url.raw_path.decode('ascii')} HTTP/1.1\r\n".encode("ascii"),
             b"Host: ", url.netloc, b"\r\n"]
    agent = length = False
    for name, value in headers.items():
        if _TOKEN.fullmatch(name) is None or _FORBIDDEN_IN_VALUE.search(value) is not None:
            raise httpx.LocalProtocolError(f"illegal header field {name[:60]!r}")
        lowered = name.lower()
        if lowered == "host":
            raise httpx.LocalProtocolError("the Host header is the URL's")
        agent = agent or lowered == "user-agent"
        length = length or lowered == "content-length"
        lines.append(f"{name}: {value}\r\n".encode())
    if not agent:
        lines.append(_USER_AGENT)
    if not length and (body or method in ("POST", "PUT", "PATCH")):
        lines.append(b"Content-Length: %d\r\n" % len(body))
    lines.append(b"\r\n")
    lines.append(body)
    return b"".join(lines)


class LeanHeaders(dict[str, str]):
    """A response's header fields, by lower-case name (repeated fields joined with
    ``", "``, RFC 9110 §5.3); ``get`` takes any case."""

    def get(self, key: str, default: Any = None) -> Any:
        return dict.get(self, key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return dict.__getitem__(self, key.lower())

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key.lower() if isinstance(key, str) else key)


class LeanResponse:
    """A response read on the lean lane: ``status_code``, ``reason_phrase``, ``headers``
    (``LeanHeaders``), then ``aiter_bytes()`` once, and ``aclose()`` (the connection is
    closed unless the body was read to its end). Parsed by httptools; its callbacks
    are the ``on_*`` methods."""

    def __init__(self, pool: Pool, connection: _Connection, read_timeout: float | None,
                 release: Callable[[], None]) -> None:
        self._pool = pool
        self._connection: _Connection | None = connection
        self._timeout = read_timeout
        self._release = release
        #: ``None`` once the response is over: the parser holds our callbacks, and a
        #: reference cycle left per call is work for the collector (a guard:
        #: tests/gateway/test_hot_path.py).
        self._parser: httptools.HttpResponseParser | None = httptools.HttpResponseParser(
            self)
        self.status_code = 0
        self.reason_phrase = ""
        self._reason = b""
        self._fields: list[tuple[bytes, bytes]] = []
        self.headers = LeanHeaders()
        self._head_bytes = 0
        self._head_done = False
        self._chunks: list[bytes] = []
        self._complete = False
        self._messages = 0  # messages begun: 1xx heads, the response, anything after
        self._informational = 0
        #: Bytes after the response that do not parse: the connection is not reused.
        self._dirty = False
        self._framed = False
        self._keep_alive = False

    # -- httptools callbacks ------------------------------------------------------------
    def on_message_begin(self) -> None:
        self._messages += 1

    def on_status(self, status: bytes) -> None:
        self._reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        self._fields.append((name, value))

    def on_headers_complete(self) -> None:
        assert self._parser is not None  # called by the parser
        status = self._parser.get_status_code()
        if 100 <= status < 200:  # informational (RFC 9110 §15.2): the response follows
            self._informational += 1
            self._fields.clear()
            self._reason = b""
            return
        self.status_code = status
        self.reason_phrase = self._reason.decode("latin-1")
        headers = self.headers
        for raw_name, raw_value in self._fields:
            name = raw_name.decode("latin-1").lower()
            value = raw_value.decode("latin-1").strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        self._framed = "content-length" in headers or "transfer-encoding" in headers
        self._head_done = True

    def on_body(self, body: bytes) -> None:
        self._chunks.append(body)

    def on_message_complete(self) -> None:
        if self._head_done and not self._complete:
            self._complete = True
            # Read now: the parser forgets it once the message is over.
            assert self._parser is not None
            self._keep_alive = self._parser.should_keep_alive()

    # -- reading --------------------------------------------------------------------------
    async def _read_head(self) -> None:
        while not self._head_done:
            data = await self._receive()
            if not data:
                raise httpx.ReadError("the server closed the connection before answering")
            self._head_bytes += len(data)
            self._feed(data)
            if not self._head_done and self._head_bytes > MAX_HEAD_BYTES:
                raise httpx.RemoteProtocolError(
                    f"the response head is larger than {MAX_HEAD_BYTES} bytes")
        coding = self.headers.get("content-encoding", "identity").strip().lower()
        if coding not in ("", "identity"):
            raise httpx.DecodingError(f"content coding {coding[:40]!r} was not asked for")

    def _feed(self, data: bytes) -> None:
        assert self._parser is not None  # fed only until the response is over
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            if self._complete:  # garbage after a whole response: it stands, unreused
                self._dirty = True
                return
            raise httpx.RemoteProtocolError(f"bad HTTP from the server: {exc}") from None

    async def _receive(self) -> bytes:
        assert self._connection is not None
        reader = self._connection.reader
        try:
            if self._timeout is None:
                return await reader.read(READ_CHUNK)
            async with asyncio.timeout(self._timeout):
                return await reader.read(READ_CHUNK)
        except TimeoutError:
            raise httpx.ReadTimeout("the server sent nothing in time") from None
        except (ConnectionError, OSError) as exc:
            raise httpx.ReadError(f"reading from the server failed: {exc}") from exc

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body, as it arrives."""
        while True:
            if self._chunks:
                chunks, self._chunks = self._chunks, []
                for chunk in chunks:
                    yield chunk
            if self._complete:
                self._finish(reusable=self._reusable())
                return
            if self._connection is None:
                return
            data = await self._receive()
            if not data:
                if self._framed:
                    raise httpx.RemoteProtocolError(
                        "the server closed the connection mid-body")
                self._complete = True  # delimited by the close (RFC 9112 §6.3)
                self._finish(reusable=False)
                return
            self._feed(data)

    def _reusable(self) -> bool:
        """Whether the connection may carry another request, the response being whole:
        nothing after it, no second message, and the server keeps it alive."""
        return (not self._dirty and self._messages == 1 + self._informational
                and self._keep_alive)

    def _finish(self, *, reusable: bool) -> None:
        self._parser = None
        connection, self._connection = self._connection, None
        if connection is not None:
            if reusable:
                self._pool._keep_lean(connection)
            else:
                connection.close()
        self._release()

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        """``aclose`` without awaiting: nothing in it waits. A response whose reader
        stopped at its last event, the whole message already parsed (an event stream
        whose end came in the same read), leaves its connection to the pool as one read
        to its end does; any other is closed."""
        if self._complete and self._connection is not None:
            self._finish(reusable=self._reusable())
            return
        self._parser = None
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()  # not read to its end: the connection cannot be reused
        self._release()


__all__ = ["KEEPALIVE_EXPIRY", "MAX_HEAD_BYTES", "LeanHeaders", "LeanResponse", "Pool"]
