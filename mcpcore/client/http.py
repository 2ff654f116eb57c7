"""Streamable HTTP for the client: one ``httpx.AsyncClient``, every request through it.

``HttpTransport.exchange(method, body=..., headers=...)`` makes one HTTP request (POST,
GET or DELETE) and hands back an ``Exchange``: the status, the headers and the messages
of the body, whether the server answered ``application/json`` (one message, or a batch)
or ``text/event-stream`` (each ``message`` event, decoded by the sans-I/O ``SseDecoder``;
the stream's last event id and ``retry`` stay readable for resumption). The eras decide
what to send and what the messages mean (``modern.py``, ``legacy.py``); this module
knows neither.

HTTP failures are mapped here, once:

- 401 and 403 raise ``HttpError`` with the parsed ``WWW-Authenticate`` challenges (and
  the JSON-RPC code if the body carried one); so does any other status >= 400 whose body
  is not a JSON-RPC error. A JSON-RPC error body with a 4xx (e.g. 400 with ``-32022``,
  404 with ``-32601``) is a message like any other: the era turns it into
  ``RemoteProtocolError`` with ``http_status``, and reads the era from it.
- httpx timeouts become ``RequestTimeout``, connection failures ``TransportError``.

``max_body_bytes`` and ``max_event_bytes`` bound one response; a ``HeldBytes`` shared
by the transport's requests (``held_bytes``) bounds what all of them hold at once (the
JSON bodies being read and decoded, the events being assembled), however many are in
flight: past it, ``ResponseTooLarge`` for the request that would go over.

``auth`` (any ``httpx.Auth``, e.g. an OAuth flow) is applied to every request this
transport makes: the POSTs, the 2025-era GET stream and the DELETE.

With the connection pool of its own (no ``http_client`` given, no proxy) and httptools
installed, requests take the pool's lean lane (``Pool.send_lean``: no httpx request or
response model per request), unless ``auth`` is a general ``httpx.Auth`` flow: a
``HeaderAuth`` (an auth that only sets header fields) is applied on the lean lane too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Mapping
from typing import Any, Final, cast

import httpx

from mcpcore import trace_context
from mcpcore.client.errors import (
    HttpError,
    LocalProtocolError,
    RemoteProtocolError,
    RequestTimeout,
    ResponseTooLarge,
    TransportError,
)
from mcpcore.client.pool import LeanResponse, Pool
from mcpcore.client.sse import MAX_EVENT_BYTES, SseDecoder, SseError, SseTooLarge
from mcpcore.client.wire import decode_json
from mcpcore.timing import SYSTEM_CLOCK, Clock

#: Largest JSON response body (or error body) read from the server.
MAX_BODY_BYTES: Final = 64 * 1024 * 1024
#: How much of a failure body is read to explain it.
ERROR_BODY_BYTES: Final = 64 * 1024

_PROXY_VARIABLES: Final = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                            "http_proxy", "https_proxy", "all_proxy")
_SSE: Final = "text/event-stream"
_SPACE: Final = re.compile(rb"\s*")
_JSON: Final = "application/json"


class HeaderAuth(httpx.Auth):
    """An ``httpx.Auth`` that only sets header fields, from nothing but the request's
    headers (a bearer token it holds, say): ``apply`` sets them on a plain dict, so
    ``HttpTransport`` applies it without building an ``httpx.Request``; as an httpx flow
    it is the same ``apply``."""

    requires_request_body = False
    requires_response_body = False

    @property
    def lean(self) -> bool:
        """Whether ``apply`` is all it does (a subclass whose flow does more, a signed
        proof say, answers False and takes httpx's path)."""
        return True

    async def apply(self, headers: dict[str, str]) -> None:
        """Set (or remove) this auth's fields in ``headers``."""
        raise NotImplementedError

    def sync_auth_flow(self, request: httpx.Request
                       ) -> Generator[httpx.Request, httpx.Response, None]:
        raise RuntimeError("a HeaderAuth is for async clients")
        yield request  # pragma: no cover - makes this a generator

    async def async_auth_flow(self, request: httpx.Request
                              ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        headers = dict(request.headers.items())
        await self.apply(headers)
        request.headers = httpx.Headers(headers)
        yield request


class HeldBytes:
    """What the responses read through one transport hold at once, in bytes, and its
    ``limit`` (module docstring). ``take`` raises ``ResponseTooLarge`` past the limit.

    >>> held = HeldBytes(100)
    >>> held.take(60)
    >>> try:
    ...     held.take(60)
    ... except ResponseTooLarge as exc:
    ...     print(exc.limit, held.held)
    100 60
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def take(self, size: int) -> None:
        if size > 0 and self.held + size > self.limit:
            raise ResponseTooLarge(f"the responses in flight would hold more than "
                                   f"{self.limit} bytes together", limit=self.limit)
        self.held += size

    def give(self, size: int) -> None:
        self.held -= size


class Exchange:
    """One HTTP response being read: ``status``, ``headers``, then ``messages()``.
    ``held``: what it holds is counted there too (``HeldBytes``)."""

    def __init__(self, response: httpx.Response | LeanResponse, error_body: object = None, *,
                 max_body_bytes: int = MAX_BODY_BYTES,
                 max_event_bytes: int = MAX_EVENT_BYTES,
                 held: HeldBytes | None = None) -> None:
        self.response = response
        self.status = response.status_code
        self.headers = response.headers
        self._error_body = error_body
        self._max_body = max_body_bytes
        self._held = held
        media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        self.media_type = media
        self.decoder: SseDecoder | None = (
            SseDecoder(max_event_bytes=max_event_bytes)
            if media == _SSE and error_body is None else None)
        self._reading: AsyncGenerator[object, None] | None = None

    @property
    def last_event_id(self) -> str | None:
        """The last SSE event id seen on this stream (for ``Last-Event-ID``)."""
        return None if self.decoder is None else self.decoder.last_event_id

    @property
    def retry_ms(self) -> int | None:
        """The server's last SSE ``retry`` value, in milliseconds."""
        return None if self.decoder is None else self.decoder.retry

    def messages(self) -> AsyncIterator[object]:
        """Each JSON value of the body: SSE ``message`` events, or the one JSON body.
        A body that is empty (202, 204, a notification's answer) yields nothing. A
        reader may stop early (its response came): ``HttpTransport.exchange`` closes
        the iteration as the exchange ends (``aclose``)."""
        self._reading = reading = self._messages()
        return reading

    async def aclose(self) -> None:
        """End a ``messages()`` iteration its reader left: closed here, at once, rather
        than by the event loop's finalizer of abandoned async generators, which makes a
        task (and wakes the loop through its self-pipe) for each one."""
        reading, self._reading = self._reading, None
        if reading is not None:
            await reading.aclose()

    async def _messages(self) -> AsyncGenerator[object, None]:
        if self._error_body is not None:
            yield self._error_body
            return
        status = self.status
        if self.decoder is not None:
            decoder = self.decoder
            held, counted = self._held, 0
            try:
                async with contextlib.aclosing(_chunks(self.response)) as chunks:
                    async for chunk in chunks:
                        events = decoder.feed(chunk)
                        if held is not None:  # what the decoder keeps of an unfinished event
                            held.take(decoder.pending - counted)
                            counted = decoder.pending
                        for event in events:
                            if event.event == "message" and event.data.strip():
                                yield decode_json(event.data, http_status=status)
                for event in decoder.close():
                    if event.event == "message" and event.data.strip():
                        yield decode_json(event.data, http_status=status)
            except SseTooLarge as exc:
                raise ResponseTooLarge(f"bad event stream: {exc}", limit=exc.limit,
                                       http_status=status) from None
            except SseError as exc:
                raise RemoteProtocolError(f"bad event stream: {exc}",
                                          http_status=status) from None
            finally:
                if held is not None:
                    held.give(counted)
            return
        raw = await _read(self.response, self._max_body, self._held)
        try:  # the body stays counted until it is decoded
            space = _SPACE.match(raw)  # leading whitespace, found without a copy
            start = space.end() if space is not None else 0
            if start == len(raw):
                return
            if self.media_type not in (_JSON, "") and raw[start] not in b"{[":
                snippet = raw[:200].decode("utf-8", "replace").strip()
                raise RemoteProtocolError(
                    f"HTTP {status} with content-type {self.media_type!r}, not JSON or an "
                    f"event stream: {snippet}", http_status=status)
            value = decode_json(raw, http_status=status)
        finally:
            if self._held is not None:
                self._held.give(len(raw))
        yield value


class HttpTransport:
    """Streamable HTTP: requests to one MCP endpoint through one ``httpx.AsyncClient``.

    ``http_client`` lets you bring your own client (proxies, TLS, an in-process
    ``httpx.ASGITransport``); the transport then leaves closing it to you. ``auth`` is
    passed to every request (see the module docstring). ``max_connections`` bounds the
    connection pool of the client this transport creates. ``max_body_bytes`` bounds a
    JSON response body, ``max_event_bytes`` one event of an event stream (its ``data``
    lines together); past either, ``ResponseTooLarge``. ``held_bytes``: what all
    responses in flight may hold together (``HeldBytes``; None: no bound but each
    one's). ``clock``: what the pool's keep-alive expiry is measured on
    (``mcpcore.timing``).
    """

    uses_headers = True

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        auth: httpx.Auth | None = None,
        connect_timeout: float | None = 10.0,
        max_connections: int = 32,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_event_bytes: int = MAX_EVENT_BYTES,
        held_bytes: int | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise LocalProtocolError(f"not an http(s) URL: {url!r}")
        self.url = url
        self._url = httpx.URL(url)  # parsed once, not on every request
        self.headers = dict(headers or {})
        self.auth = auth
        self._client = http_client
        self._owns_client = http_client is None
        #: The pool of its own, when requests take its lean lane (module docstring).
        self._lean: Pool | None = None
        self._connect_timeout = connect_timeout
        self._max_connections = max_connections
        self.max_body_bytes = max_body_bytes
        self.max_event_bytes = max_event_bytes
        #: What the responses in flight hold together (None: unbounded but each one).
        self.held = HeldBytes(held_bytes) if held_bytes is not None else None
        self._timeouts: dict[float | None, httpx.Timeout] = {}
        #: The pool's clock (its keep-alive expiry).
        self.clock = clock

    async def open(self) -> None:
        if self._client is None:
            if any(os.environ.get(name) for name in _PROXY_VARIABLES):
                # Proxies configured: httpx's own transport honours them; ours does not.
                limits = httpx.Limits(max_connections=self._max_connections,
                                      max_keepalive_connections=self._max_connections)
                self._client = httpx.AsyncClient(follow_redirects=False, limits=limits)
            else:
                pool = Pool(max_connections=self._max_connections, clock=self.clock)
                self._client = httpx.AsyncClient(follow_redirects=False, trust_env=False,
                                                 transport=pool)
                if pool.lean:
                    self._lean = pool
            self._owns_client = True

    async def close(self) -> None:
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None
            self._lean = None

    def _timeout(self, timeout: float | None) -> httpx.Timeout:
        cached = self._timeouts.get(timeout)
        if cached is None:
            cached = self._timeouts[timeout] = httpx.Timeout(timeout, connect=self._connect_timeout)
        return cached

    @contextlib.asynccontextmanager
    async def exchange(
        self,
        method: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str],
        timeout: float | None,
        what: str,
    ) -> AsyncIterator[Exchange]:
        """Make one request; yield its ``Exchange`` (see the module docstring for errors).

        ``what`` names the request in error messages (``"tools/call"``, ``"GET stream"``).
        """
        client = self._client
        if client is None:
            raise LocalProtocolError("the client is not open: use `async with Client...`")
        sent = dict(self.headers)
        # The current trace context as W3C headers (a no-op unless tracing is on); the
        # request's own headers win.
        trace_context.propagate(sent)
        sent.update(headers)
        response: httpx.Response | LeanResponse
        try:
            lean = self._lean
            auth = self.auth
            if lean is not None and (auth is None or (isinstance(auth, HeaderAuth)
                                                       and auth.lean)):
                if auth is not None:
                    await auth.apply(sent)
                response = await lean.send_lean(method, self._url, sent, body or b"",
                                                connect_timeout=self._connect_timeout,
                                                read_timeout=timeout)
            else:
                extra: dict[str, Any] = {}
                if auth is not None:
                    extra["auth"] = auth
                request = client.build_request(method, self._url, content=body,
                                               headers=sent, timeout=self._timeout(timeout))
                response = await client.send(request, stream=True, **extra)
        except httpx.TimeoutException:
            raise RequestTimeout(f"{what}: no response within {timeout} s") from None
        except httpx.TransportError as exc:
            raise TransportError(f"{what}: HTTP transport failed: {exc!r}") from exc
        try:
            error_body = None
            if response.status_code >= 400:
                error_body = await _failure(response, what)
            exchange = Exchange(response, error_body, max_body_bytes=self.max_body_bytes,
                                max_event_bytes=self.max_event_bytes, held=self.held)
            try:
                yield exchange
            finally:
                with contextlib.suppress(Exception):  # the response is closed below
                    await exchange.aclose()
        except httpx.TimeoutException:
            raise RequestTimeout(f"{what}: no response within {timeout} s") from None
        except httpx.TransportError as exc:
            raise TransportError(f"{what}: HTTP transport failed: {exc!r}") from exc
        finally:
            if isinstance(response, LeanResponse):
                response.close()  # nothing to wait for: no task to shield it in
            else:
                # Shielded: a caller cancelled while the response closes must not leave
                # the connection checked out of the pool (it would never come back).
                await asyncio.shield(response.aclose())


def _chunks(response: httpx.Response | LeanResponse) -> AsyncGenerator[bytes, None]:
    """The body's chunks, as the async generator both kinds of response make (closed
    with ``aclosing`` where the reader may stop early)."""
    return cast(AsyncGenerator[bytes, None], response.aiter_bytes())


async def _read(response: httpx.Response | LeanResponse, limit: int,
                held: HeldBytes | None = None) -> bytearray:
    """The body, at most ``limit`` bytes, counted in ``held`` (the caller gives them
    back once done with them; on a failure here they are given back at once). One
    buffer grown in place: a list of chunks joined at the end held the body twice."""
    body = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            if len(body) + len(chunk) > limit:
                raise ResponseTooLarge(f"response body larger than {limit} bytes",
                                       limit=limit, http_status=response.status_code)
            if held is not None:
                held.take(len(chunk))
            body += chunk
    except BaseException:
        if held is not None:
            held.give(len(body))
        raise
    return body


async def _failure(response: httpx.Response | LeanResponse, what: str) -> object:
    """A failure status: return its JSON-RPC error body, or raise ``HttpError``."""
    status = response.status_code
    raw = b""
    async with contextlib.aclosing(_chunks(response)) as chunks:
        async for chunk in chunks:
            raw += chunk
            if len(raw) >= ERROR_BODY_BYTES:
                break
    body: object = None
    with contextlib.suppress(RemoteProtocolError):
        body = decode_json(raw, http_status=status)
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    if isinstance(code, bool) or not isinstance(code, int):
        code = None
    if code is not None and status not in (401, 403):
        return body
    reason = response.reason_phrase or "error"
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        detail = error["message"]
    else:
        detail = raw[:200].decode("utf-8", "replace").strip()
    message = f"{what}: {reason}" + (f": {detail}" if detail else "")
    raise HttpError(message, status=status, headers=dict(response.headers.items()), code=code,
                    data=error.get("data") if isinstance(error, dict) else None)


__all__ = ["ERROR_BODY_BYTES", "MAX_BODY_BYTES", "Exchange", "HeaderAuth", "HeldBytes",
           "HttpTransport"]
