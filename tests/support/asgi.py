"""The one ASGI exchange driver of the tests, and an httpx transport built on it.

``Exchange`` runs one HTTP exchange against an ASGI app by hand: the request body goes
in, the response arrives piece by piece as the app sends it (status, headers, raw
chunks, SSE events, decoded JSON-RPC messages), and the client can hang up the way
uvicorn reports it: the app's ``receive`` returns ``http.disconnect``, later sends are
dropped and counted (or raise, with ``raise_after_hang_up=True``). httpx's own
``ASGITransport`` returns only once the app has finished, so it can deliver neither a
``subscriptions/listen`` stream nor a bridged question that waits for an answer.

``ExchangeTransport`` puts ``Exchange`` behind httpx: responses stream chunk by chunk,
and closing a response hangs up. Any httpx-based client (ours included) can talk to an
in-process app through it, including servers that misbehave on purpose (see the
class for what the client sees when the app ends early or raises).

    exchange = Exchange(app, "POST", headers=headers, body=body)
    first = await exchange.next()           # the first JSON-RPC message
    await exchange.hang_up()

Waiting is event-driven: every send wakes ``wait_for``; nothing polls with sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import httpx

from tests.support.schema import schema_checker
from tests.support.sse import SseParser

ASGIApp = Any


def http_scope(method: str, path: str, headers: Mapping[str, str] | list[tuple[str, str]],
               *, query: bytes = b"", root_path: str = "") -> dict[str, Any]:
    """A uvicorn-shaped HTTP scope (``Host: localhost`` unless given)."""
    pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in pairs]
    if not any(k == b"host" for k, _ in raw):
        raw.insert(0, (b"host", b"localhost"))
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
        "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
        "query_string": query, "root_path": root_path, "headers": raw,
        "client": ("127.0.0.1", 50000), "server": ("localhost", 80),
    }


class Exchange:
    """One HTTP exchange with an ASGI app, started at once."""

    def __init__(self, app: ASGIApp, method: str = "POST", *, path: str = "/mcp",
                 headers: Mapping[str, str] | list[tuple[str, str]] | None = None,
                 body: bytes = b"", query: bytes = b"", root_path: str = "",
                 raise_after_hang_up: bool = False) -> None:
        self.app = app
        self.scope = http_scope(method, path, headers or {}, query=query,
                                root_path=root_path)
        self.request_body = body
        self.raise_after_hang_up = raise_after_hang_up
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.chunks: list[bytes] = []
        self.events: list[str] = []
        self.complete = False
        self.sent_after_hang_up = 0
        #: The app's exception was raised to a client already (``ExchangeTransport``).
        self.failure_reported = False
        self._parser = SseParser()
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._changed = asyncio.Event()
        self._body_sent = False
        self._gone = asyncio.Event()
        self._over = asyncio.Event()  # hung up, or the response is complete
        try:
            parsed = json.loads(body) if body else None
        except (ValueError, RecursionError):
            parsed = None
        #: The request's JSON-RPC method, to schema-check its response.
        self.method = parsed.get("method") if isinstance(parsed, dict) else None
        self.task: asyncio.Task[None] = asyncio.ensure_future(
            self.app(self.scope, self._receive, self._send))
        self.task.add_done_callback(lambda _: self._changed.set())

    # -- the app's side ---------------------------------------------------------------
    async def _receive(self) -> dict[str, Any]:
        if not self._body_sent:
            self._body_sent = True
            return {"type": "http.request", "body": self.request_body, "more_body": False}
        # As uvicorn: once the response is complete (or the client has gone) there is
        # nothing more to receive but the disconnect.
        await self._over.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        if self._gone.is_set():
            if self.raise_after_hang_up:
                raise OSError("client disconnected")
            self.sent_after_hang_up += 1  # uvicorn drops these silently
            return
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                            for k, v in message.get("headers", [])}
        elif message["type"] == "http.response.body":
            chunk = message.get("body", b"")
            self.chunks.append(chunk)
            if not message.get("more_body", False):
                self.complete = True
                self._over.set()
            # Apps under test may send what is not JSON (the client's tests use broken
            # servers on purpose): such messages stay in ``events``/``body`` only.
            if self.is_sse:
                for data in self._parser.feed(chunk):
                    self.events.append(data)
                    self._queue_json(data)
            elif self.complete and self.body and (
                    self.header("content-type") or "").startswith("application/json"):
                self._queue_json(self.body)
        self._changed.set()

    def _queue_json(self, data: str | bytes) -> None:
        with contextlib.suppress(ValueError, RecursionError):
            self._queue.put_nowait(json.loads(data))

    # -- what arrived -----------------------------------------------------------------
    @property
    def is_sse(self) -> bool:
        return self.headers.get("content-type", "").startswith("text/event-stream")

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    @property
    def hung_up(self) -> bool:
        """The client has gone (``hang_up``)."""
        return self._gone.is_set()

    @property
    def comments(self) -> int:
        """SSE comment lines (keep-alives) so far."""
        return self._parser.comments

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def json(self) -> Any:
        return json.loads(self.body)

    async def wait_for(self, condition: Callable[[], bool],
                       timeout: float | None = 5.0) -> None:
        """Until ``condition()`` holds; re-checked after every message the app sends and
        when the app ends (then its own failure is raised, if it had one)."""
        async with asyncio.timeout(timeout):
            while not condition():
                if self.task.done():
                    self.task.result()
                    raise AssertionError("the app finished before the condition held")
                self._changed.clear()
                await self._changed.wait()

    async def started(self, timeout: float = 5.0) -> None:
        await self.wait_for(lambda: self.status is not None, timeout)

    async def next(self, timeout: float = 5.0) -> dict[str, Any]:
        """The next JSON-RPC message (an SSE event, or the JSON body)."""
        return await asyncio.wait_for(self._queue.get(), timeout)

    def pending(self) -> list[dict[str, Any]]:
        """Messages received and not taken yet."""
        out = []
        while not self._queue.empty():
            out.append(self._queue.get_nowait())
        return out

    async def wait_events(self, n: int, timeout: float = 5.0) -> list[str]:
        await self.wait_for(lambda: len(self.events) >= n, timeout)
        return self.events

    def messages(self) -> list[dict[str, Any]]:
        """Every message received so far, each checked against the 2026-07-28 schema."""
        if self.is_sse:
            out = [json.loads(e) for e in self.events]
        elif self.complete and (self.header("content-type") or "").startswith(
                "application/json"):
            out = [self.json()]
        else:
            return []
        checker = schema_checker()
        for message in out:
            checker.check(message, None if "method" in message else self.method)
        return out

    # -- the client's side ------------------------------------------------------------
    async def finished(self, timeout: float = 5.0) -> None:
        await asyncio.wait_for(asyncio.shield(self.task), timeout)

    async def run(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Wait for the app to finish; the schema-checked messages."""
        await self.finished(timeout)
        return self.messages()

    async def hang_up(self) -> None:
        """The client goes away: the app's ``receive`` reports ``http.disconnect``."""
        self._gone.set()
        self._over.set()
        await asyncio.sleep(0)

    async def disconnect(self, timeout: float = 5.0) -> None:
        """Hang up and wait for the app to finish."""
        await self.hang_up()
        await self.finished(timeout)


#: How long closing a response waits for the app to notice the hang-up before it is
#: cancelled (an app that never reads ``receive`` again, like a deliberately deaf one).
CLOSE_GRACE = 5.0


class _Body(httpx.AsyncByteStream):
    """The response body as the app sends it; closing it hangs up."""

    def __init__(self, exchange: Exchange) -> None:
        self._exchange = exchange
        self._taken = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        exchange = self._exchange
        while True:
            await exchange.wait_for(lambda: len(exchange.chunks) > self._taken
                                    or exchange.complete or exchange.task.done(), None)
            while self._taken < len(exchange.chunks):
                self._taken += 1
                yield exchange.chunks[self._taken - 1]
            if exchange.complete:
                return
            if exchange.task.done():
                _raise_failure(exchange)
                # The app returned mid-body: what a client sees when the server closes
                # the connection before the end of the body.
                raise httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body")

    async def aclose(self) -> None:
        """Hang up, then wait (at most ``CLOSE_GRACE``) for the app to end; cancel it if
        it does not. This often runs in the caller's own task (httpx closes a stream it
        has read to the end): the caller's cancellation must pass through untouched, so
        the app is awaited with ``asyncio.wait``, which never raises the app's outcome.
        An app that failed is reported here unless the body already reported it."""
        exchange = self._exchange
        await exchange.hang_up()
        await _end(exchange.task)
        _raise_failure(exchange)


async def _end(*tasks: asyncio.Task[None]) -> None:
    """Until ``tasks`` are done: they get ``CLOSE_GRACE`` to end by themselves, then
    are cancelled (and get as long again to unwind)."""
    running = {task for task in tasks if not task.done()}
    if running:
        _, running = await asyncio.wait(running, timeout=CLOSE_GRACE)
    for task in running:
        task.cancel()
    if running:
        await asyncio.wait(running, timeout=CLOSE_GRACE)


def _raise_failure(exchange: Exchange) -> None:
    """Raise the app's own exception, once (its bug is the test's failure)."""
    task = exchange.task
    if exchange.failure_reported or not task.done() or task.cancelled():
        return
    failure = task.exception()
    if failure is not None:
        exchange.failure_reported = True
        raise failure


class ExchangeTransport(httpx.AsyncBaseTransport):
    """httpx in front of an in-process ASGI app, streaming: each request is an
    ``Exchange``; the body arrives as the app sends it; closing the response hangs up.

    An app that raises has its exception raised to the client (where it is first seen:
    the request, the body, or closing the response): a test double's bug fails the test.
    An app that returns without a response, or in the middle of its body, is a server
    that closed the connection: ``httpx.RemoteProtocolError``, as from a real socket.
    Closing the transport (the ``httpx.AsyncClient``) ends every app still running.

    >>> client = httpx.AsyncClient(transport=ExchangeTransport(app),
    ...                            base_url="http://localhost")      # doctest: +SKIP
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.exchanges: list[Exchange] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        headers = [(k.decode("latin-1"), v.decode("latin-1"))
                   for k, v in request.headers.raw]
        exchange = Exchange(self.app, request.method, path=request.url.path, headers=headers,
                            body=body, query=request.url.query)
        self.exchanges.append(exchange)
        try:
            await exchange.wait_for(
                lambda: exchange.status is not None or exchange.task.done(), None)
        except BaseException:
            # The caller gave up waiting (cancelled, timed out): it hangs up.
            await exchange.hang_up()
            raise
        if exchange.status is None:
            _raise_failure(exchange)
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
        return httpx.Response(exchange.status, headers=list(exchange.headers.items()),
                              stream=_Body(exchange), request=request)

    async def aclose(self) -> None:
        """Hang up on every app still running and end it (``CLOSE_GRACE``); then raise
        the first app failure no client has seen yet."""
        running = [exchange for exchange in self.exchanges if not exchange.task.done()]
        for exchange in running:
            await exchange.hang_up()
        await _end(*(exchange.task for exchange in running))
        for exchange in self.exchanges:
            _raise_failure(exchange)


__all__ = ["Exchange", "ExchangeTransport", "http_scope"]
