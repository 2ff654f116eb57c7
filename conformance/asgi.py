"""An ASGI app run in-process, spoken to over HTTP without a socket: one exchange at a
time (``AppExchange``), and an httpx transport built on it (``StreamingASGITransport``).

httpx's own ``ASGITransport`` collects the whole response body before returning, so a
``subscriptions/listen`` stream (which never ends by itself) would hang it, and it cannot
tell the app that the client went away. Here the body is handed over chunk by chunk as
the app sends it, and closing the response hangs up the way uvicorn reports it (ASGI 3.0
specification, "HTTP" scope): the app's ``receive`` returns ``http.disconnect`` (which
the 2026-07-28 transport treats as cancellation), and what the app sends afterwards is
dropped and counted. The library API (``run_suite(app=...)``) audits an app through it,
and any httpx-based client (``mcpcore.Client`` included) can talk to an in-process app
through it, listen streams too:

    transport = StreamingASGITransport(app)
    async with httpx.AsyncClient(transport=transport) as http, \\
            Client.http("http://localhost/mcp", http_client=http) as client:
        ...

Waiting is event-driven: every message the app sends wakes ``AppExchange.wait_for``;
nothing polls with sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Final

import httpx

from mcpcore.asgi_types import ASGIApp, ASGIMessage, Scope

#: How long an app gets, once the client has hung up, to end by itself before it is
#: cancelled (an app that never reads ``receive`` again, like a deliberately deaf one);
#: as long again to unwind once cancelled.
CLOSE_GRACE: Final = 5.0
#: Body bytes an app may send ahead of the client's reading before its ``send`` waits
#: (a socket's flow control; uvicorn pauses its writes at 64 KiB as well).
HIGH_WATER: Final = 64 * 1024
_HTTP_PORTS: Final = {"http": 80, "https": 443}


def http_scope(method: str, path: str, headers: Mapping[str, str] | Iterable[tuple[str, str]],
               *, query: bytes = b"", root_path: str = "", raw_path: bytes | None = None,
               scheme: str = "http", server: tuple[str, int] = ("localhost", 80),
               client: tuple[str, int] = ("127.0.0.1", 50000)) -> Scope:
    """A uvicorn-shaped HTTP scope; header names lower-cased, ``Host: localhost`` added
    when ``headers`` has none."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in pairs]
    if not any(k == b"host" for k, _ in raw):
        raw.insert(0, (b"host", b"localhost"))
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
        "method": method, "scheme": scheme, "path": path,
        "raw_path": path.encode() if raw_path is None else raw_path,
        "query_string": query, "root_path": root_path, "headers": raw,
        "client": client, "server": server,
    }


class AppExchange:
    """One HTTP exchange with an ASGI app, started at once: the request body goes in,
    the response arrives as the app sends it (``status``, ``headers``, ``chunks``), and
    ``hang_up`` makes the client go away.

    After the hang-up the app's sends are dropped and counted in ``sent_after_hang_up``
    (as uvicorn does), or raise ``OSError`` with ``raise_after_hang_up=True`` (as a
    server whose socket write fails). With ``keep_body=False`` the chunks are not kept
    once ``take_chunks`` has handed them over (a long stream holds no memory), and with
    ``high_water`` the app's ``send`` waits while more than that many bytes are unread.
    """

    def __init__(self, app: ASGIApp, scope: Scope, body: bytes = b"", *,
                 raise_after_hang_up: bool = False, keep_body: bool = True,
                 high_water: int | None = None) -> None:
        self.app = app
        self.scope = scope
        self.request_body = body
        self.raise_after_hang_up = raise_after_hang_up
        self.status: int | None = None
        #: The response headers as sent, repeated names included.
        self.raw_headers: list[tuple[bytes, bytes]] = []
        #: The response headers by lower-case name (the last of a repeated name).
        self.headers: dict[str, str] = {}
        #: Every body chunk so far (none with ``keep_body=False``).
        self.chunks: list[bytes] = []
        self.complete = False
        self.sent_after_hang_up = 0
        #: The app's exception was raised to a client already.
        self.failure_reported = False
        self._keep_body = keep_body
        self._high_water = high_water
        self._unread: deque[bytes] = deque()
        #: Bytes sent by the app and not taken by ``take_chunks`` yet.
        self.unread = 0
        self._drained = asyncio.Event()
        self._changed = asyncio.Event()
        self._body_sent = False
        self._gone = asyncio.Event()
        self._over = asyncio.Event()  # hung up, or the response is complete
        self.task: asyncio.Task[None] = asyncio.ensure_future(
            self.app(self.scope, self._receive, self._send))
        self.task.add_done_callback(lambda _: self._changed.set())

    # -- the app's side ---------------------------------------------------------------
    async def _receive(self) -> ASGIMessage:
        if not self._body_sent:
            self._body_sent = True
            return {"type": "http.request", "body": self.request_body, "more_body": False}
        # As uvicorn: once the response is complete (or the client has gone) there is
        # nothing more to receive but the disconnect.
        await self._over.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: ASGIMessage) -> None:
        if self._gone.is_set():
            if self.raise_after_hang_up:
                raise OSError("client disconnected")
            self.sent_after_hang_up += 1  # uvicorn drops these silently
            return
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            self.raw_headers = [(bytes(k), bytes(v)) for k, v in message.get("headers", [])]
            self.headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                            for k, v in self.raw_headers}
        elif message["type"] == "http.response.body":
            chunk = bytes(message.get("body", b""))
            if self._keep_body:
                self.chunks.append(chunk)
            if chunk:
                self._unread.append(chunk)
                self.unread += len(chunk)
            if not message.get("more_body", False):
                self.complete = True
                self._over.set()
            self.chunk_arrived(chunk)
        self._changed.set()
        if self._high_water is not None:
            while self.unread > self._high_water and not self._gone.is_set():
                self._drained.clear()
                await self._drained.wait()

    def chunk_arrived(self, chunk: bytes) -> None:
        """Called with each body chunk as the app sends it, before waiters wake (a
        subclass parses the stream here)."""

    # -- what arrived -----------------------------------------------------------------
    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    @property
    def hung_up(self) -> bool:
        """The client has gone (``hang_up``)."""
        return self._gone.is_set()

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def take_chunks(self) -> list[bytes]:
        """The non-empty body chunks not taken yet, in order."""
        taken = list(self._unread)
        self._unread.clear()
        self.unread = 0
        self._drained.set()
        return taken

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

    # -- the client's side ------------------------------------------------------------
    async def finished(self, timeout: float = 5.0) -> None:
        await asyncio.wait_for(asyncio.shield(self.task), timeout)

    async def hang_up(self) -> None:
        """The client goes away: the app's ``receive`` reports ``http.disconnect``."""
        self._gone.set()
        self._over.set()
        self._drained.set()
        await asyncio.sleep(0)

    async def disconnect(self, timeout: float = 5.0) -> None:
        """Hang up and wait for the app to finish."""
        await self.hang_up()
        await self.finished(timeout)


async def _end(tasks: Iterable[asyncio.Task[None]], grace: float) -> None:
    """Until ``tasks`` are done: they get ``grace`` seconds to end by themselves, then
    are cancelled (and get as long again to unwind). This often runs in the caller's own
    task (httpx closes a stream it has read to the end): the caller's cancellation must
    pass through untouched, so the apps are awaited with ``asyncio.wait``, which never
    raises their outcome."""
    running = {task for task in tasks if not task.done()}
    if running:
        _, running = await asyncio.wait(running, timeout=grace)
    for task in running:
        task.cancel()
    if running:
        await asyncio.wait(running, timeout=grace)


class StreamingASGITransport(httpx.AsyncBaseTransport):
    """httpx in front of an in-process ASGI app, streaming: each request is an
    ``AppExchange``; the body arrives as the app sends it; closing the response hangs up
    and gives the app ``close_grace`` seconds to end before it is cancelled. Closing the
    transport (the ``httpx.AsyncClient``) ends every app still running.

    With ``raise_app_exceptions=True`` (the default, as httpx's ``ASGITransport``) an
    app that raises has its exception raised to the client, where it is first seen (the
    request, the body, or closing the response; else closing the transport): a test
    double's bug fails the test. An app that returns without a response, or in the
    middle of its body, is a server that closed the connection:
    ``httpx.RemoteProtocolError``, as from a real socket.

    With ``raise_app_exceptions=False`` the app is served as uvicorn serves it: an app
    that fails or returns before its response starts gets a 500 response, one that
    fails mid-body is a closed connection (``httpx.RemoteProtocolError``).

    Only the exchanges still running are held (and those whose failure no client has
    seen yet), and their chunks only until read; ``record=True`` keeps every exchange,
    body included, in ``exchanges`` for a test to inspect.

    >>> client = httpx.AsyncClient(transport=StreamingASGITransport(app),
    ...                            base_url="http://localhost")      # doctest: +SKIP
    """

    def __init__(self, app: ASGIApp, *, raise_app_exceptions: bool = True,
                 close_grace: float = CLOSE_GRACE, record: bool = False,
                 client: tuple[str, int] = ("127.0.0.1", 50000)) -> None:
        self.app = app
        self.raise_app_exceptions = raise_app_exceptions
        self.close_grace = close_grace
        self.client = client
        #: Every exchange, in order (``record=True`` only).
        self.exchanges: list[AppExchange] = []
        self._record = record
        #: The exchanges still running, or whose failure no client has seen (in order).
        self._live: dict[AppExchange, None] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        url = request.url
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        scope = http_scope(request.method, url.path, headers, query=url.query,
                           raw_path=url.raw_path.split(b"?", 1)[0], scheme=url.scheme,
                           server=(url.host, url.port or _HTTP_PORTS.get(url.scheme, 80)),
                           client=self.client)
        exchange = AppExchange(self.app, scope, body, keep_body=self._record,
                               high_water=HIGH_WATER)
        self._track(exchange)
        try:
            await exchange.wait_for(
                lambda: exchange.status is not None or exchange.task.done(), None)
        except BaseException:
            # The caller gave up waiting (cancelled, timed out): it hangs up.
            await exchange.hang_up()
            raise
        if exchange.status is None:
            self._raise_failure(exchange)
            if not self.raise_app_exceptions:  # uvicorn's answer to a failed app
                return httpx.Response(500, headers=[(b"content-type", b"text/plain")],
                                      content=b"Internal Server Error", request=request)
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
        return httpx.Response(exchange.status, headers=exchange.raw_headers,
                              stream=_Body(self, exchange), request=request)

    @property
    def held(self) -> int:
        """How many exchanges the transport holds: those still running, and those whose
        failure no client has seen yet (``record=True`` aside)."""
        return len(self._live)

    def _track(self, exchange: AppExchange) -> None:
        if self._record:
            self.exchanges.append(exchange)
        self._live[exchange] = None

        def ended(task: asyncio.Task[None]) -> None:
            if task.cancelled() or task.exception() is None or not self.raise_app_exceptions:
                self._live.pop(exchange, None)  # (task.exception() marks a failure seen)

        exchange.task.add_done_callback(ended)

    def _raise_failure(self, exchange: AppExchange) -> None:
        """Raise the app's own exception, once (its bug is the test's failure), unless
        the app is served as uvicorn would (then its failure is a status or a cut)."""
        task = exchange.task
        if exchange.failure_reported or not task.done() or task.cancelled():
            return
        failure = task.exception()
        if failure is not None:
            exchange.failure_reported = True
            self._live.pop(exchange, None)
            if self.raise_app_exceptions:
                raise failure

    async def close_exchange(self, exchange: AppExchange) -> None:
        """Hang up, then end the app (``close_grace``); its failure is raised here unless
        a client saw it already."""
        await exchange.hang_up()
        await _end((exchange.task,), self.close_grace)
        self._raise_failure(exchange)

    async def aclose(self) -> None:
        """Hang up on every app still running and end it (``close_grace``); then raise
        the first app failure no client has seen yet."""
        held = list(self._live)
        running = [exchange for exchange in held if not exchange.task.done()]
        for exchange in running:
            await exchange.hang_up()
        await _end((exchange.task for exchange in running), self.close_grace)
        for exchange in held:
            self._raise_failure(exchange)


class _Body(httpx.AsyncByteStream):
    """The response body as the app sends it; closing it hangs up."""

    def __init__(self, transport: StreamingASGITransport, exchange: AppExchange) -> None:
        self._transport = transport
        self._exchange = exchange

    async def __aiter__(self) -> AsyncIterator[bytes]:
        exchange = self._exchange
        while True:
            await exchange.wait_for(lambda: exchange.unread > 0 or exchange.complete
                                    or exchange.task.done(), None)
            for chunk in exchange.take_chunks():
                yield chunk
            if exchange.complete:
                return
            if exchange.task.done():
                self._transport._raise_failure(exchange)
                # The app returned mid-body: what a client sees when the server closes
                # the connection before the end of the body.
                raise httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body")

    async def aclose(self) -> None:
        await self._transport.close_exchange(self._exchange)


@contextlib.asynccontextmanager
async def lifespan(app: ASGIApp, *, grace: float = 1.0) -> AsyncIterator[None]:
    """Run the app's ASGI lifespan around a block (skipped if the app has none)."""
    events: asyncio.Queue[ASGIMessage] = asyncio.Queue()
    replies: asyncio.Queue[ASGIMessage] = asyncio.Queue()
    await events.put({"type": "lifespan.startup"})

    async def receive() -> ASGIMessage:
        return await events.get()

    async def send(message: ASGIMessage) -> None:
        await replies.put(message)

    async def run() -> None:
        with contextlib.suppress(Exception):
            await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
                      receive, send)
        await replies.put({"type": "lifespan.unsupported"})

    task = asyncio.create_task(run())
    first = await replies.get()
    if first["type"] == "lifespan.startup.failed":
        await _end((task,), grace)
        raise RuntimeError(f"the ASGI app failed to start: {first.get('message', '')}")
    try:
        yield
    finally:
        if first["type"] == "lifespan.startup.complete":
            await events.put({"type": "lifespan.shutdown"})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(replies.get(), 5)
        await _end((task,), grace)


__all__ = [
    "CLOSE_GRACE",
    "HIGH_WATER",
    "AppExchange",
    "StreamingASGITransport",
    "http_scope",
    "lifespan",
]
