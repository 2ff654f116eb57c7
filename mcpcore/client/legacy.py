"""The 2025 session wire (2025-11-25, 2025-06-18, 2025-03-26): a handshake, then a session.

What lives here (2025-11-25 basic/lifecycle and basic/transports):

- the handshake: ``initialize`` with the preferred version, our capabilities and client
  info; a version we do not speak in the answer is an ``EraNegotiationError``; then
  ``notifications/initialized``;
- over HTTP: the ``Mcp-Session-Id`` the server assigned and the negotiated
  ``MCP-Protocol-Version`` on every later request; the GET stream for messages that
  belong to no request (reconnected with the server's ``retry``, else exponential backoff
  with jitter, and ``Last-Event-ID``); a POST stream that breaks before its response is
  resumed with a GET carrying ``Last-Event-ID``, after ``retry`` milliseconds
  ("Resumability and Redelivery"); 404 for our session id means the session is gone:
  one fresh ``initialize``, the request sent again, and ``SessionExpired`` if that fails
  too ("Session Management"); DELETE on close;
- server-to-client requests (``ping``, ``elicitation/create``, ``sampling/createMessage``,
  ``roots/list``) answered through the client's resolvers, concurrently; a server's
  ``notifications/cancelled`` stops the matching answer; a request for a capability the
  client did not declare gets a JSON-RPC error back. What a server can make the client
  do is bounded: at most ``max_answering`` requests are answered at once, at most
  ``max_waiting`` more wait their turn, and any beyond those are dropped unanswered
  (logged with a count: a server with that many questions open is flooding, and
  answering each with an error would be the same flood of POSTs). Over HTTP the answers
  (and our ``notifications/cancelled``) travel one at a time on a side channel of
  their own, so they never take the connections the client's own requests need;
- ``notifications/cancelled`` when a request of ours is abandoned (timeout,
  cancellation): in this era closing a stream does not cancel (basic/utilities/
  cancellation);
- an optional heartbeat ``ping`` (basic/utilities/ping): a session that misses two is
  reaped (its waiting requests fail with ``TransportError``; over HTTP the next request
  starts a new session, over stdio the server process is stopped);
- JSON-RPC batches (arrays) from the server are routed message by message (2025-03-26
  allows them).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from mcpcore.client.errors import (
    ClientError,
    EraNegotiationError,
    HttpError,
    LocalProtocolError,
    RemoteProtocolError,
    RequestTimeout,
    SessionExpired,
    TransportError,
)
from mcpcore.client.http import Exchange, HttpTransport
from mcpcore.client.modern import pipe_request
from mcpcore.client.resolvers import Unanswerable
from mcpcore.client.stdio import StdioTransport
from mcpcore.client.wire import (
    REQUEST_SCOPED,
    Answerer,
    Inbox,
    MessageHandler,
    Pending,
    Reply,
    answers,
    encode_message,
    error_response,
    id_key,
    is_notification,
    is_request,
    is_response,
    milestone,
    request_message,
    result_of,
)
from mcpcore.timing import SYSTEM_CLOCK, Clock
from mcpcore.versions import LEGACY

log = logging.getLogger("mcpcore.client")

INTERNAL_ERROR: Final = -32603
#: Resumption attempts for one broken POST stream before the request fails.
MAX_RESUME_ATTEMPTS: Final = 5
#: Server-to-client requests answered at once, and more waiting their turn; past both,
#: a server request is dropped unanswered (module docstring).
MAX_ANSWERING: Final = 8
MAX_WAITING: Final = 64



class _SessionGone(Exception):
    """Internal: the server answered 404 for the session id a request carried."""

    def __init__(self, session_id: str | None) -> None:
        super().__init__(session_id)
        self.session_id = session_id


class Backoff:
    """Reconnection delays: the server's ``retry`` first (the spec's MUST), then
    exponential growth with full jitter, capped.

    >>> b = Backoff(base=0.5, cap=8.0, rng=random.Random(7))
    >>> b.delay(0, retry_ms=500)
    0.5
    >>> 0.5 <= b.delay(3) <= 4.0
    True
    """

    def __init__(self, *, base: float = 0.5, cap: float = 30.0,
                 rng: random.Random | None = None) -> None:
        self.base = base
        self.cap = cap
        self._rng = rng or random.Random()

    def delay(self, attempt: int, retry_ms: int | None = None) -> float:
        first = retry_ms / 1000 if retry_ms is not None else self.base
        if attempt == 0:
            return first
        # Later attempts grow from no less than ``base``: a server's ``retry: 0`` must not
        # turn a stream that keeps failing into a busy loop of reconnections.
        grow = max(first, self.base)
        ceiling = min(self.cap, grow * 2 ** attempt)
        return max(first, self._rng.uniform(ceiling / 2, ceiling))


class LegacyWire:
    """A 2025-era session over an ``HttpTransport`` or a ``StdioTransport``."""

    era: Final = "legacy"

    def __init__(
        self,
        transport: HttpTransport | StdioTransport,
        *,
        ids: itertools.count[int],
        capabilities: dict[str, Any],
        client_info: dict[str, Any],
        answer: Answerer,
        on_unclaimed: Callable[[dict[str, Any]], None],
        version: str = LEGACY[0],
        heartbeat: float | None = 15.0,
        init_timeout: float | None = 30.0,
        backoff: Backoff | None = None,
        clock: Clock = SYSTEM_CLOCK,
        max_answering: int = MAX_ANSWERING,
        max_waiting: int = MAX_WAITING,
    ) -> None:
        if version not in LEGACY:
            raise LocalProtocolError(
                f"{version!r} is not a 2025-era protocol version ({', '.join(LEGACY)})")
        self.transport = transport
        self.preferred_version = version
        #: The negotiated version, once initialized.
        self.protocol_version = version
        self.capabilities = capabilities
        self.client_info = client_info
        #: The server's ``InitializeResult``, once initialized.
        self.initialize_result: dict[str, Any] | None = None
        #: The HTTP session id the server assigned (``None`` over stdio or if none).
        self.session_id: str | None = None
        #: The session's log level as set with ``logging/setLevel`` (None: not set; a
        #: new session starts without one).
        self.log_level: str | None = None
        self.heartbeat = heartbeat
        self.init_timeout = init_timeout
        self.backoff = backoff or Backoff()
        #: What the heartbeat, the backoff and every timeout are measured on.
        self.clock = clock
        self._ids = ids
        self._answer = answer
        self._on_unclaimed = on_unclaimed
        self._pending = Pending()
        self._is_http = isinstance(transport, HttpTransport)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._answering: dict[tuple[type, object], asyncio.Task[Any]] = {}
        #: Server requests waiting their turn, each with who answers it.
        self._waiting: collections.deque[tuple[dict[str, Any], Answerer | None]] = \
            collections.deque()
        self._max_answering = max_answering
        self._max_waiting = max_waiting
        self._in_flight = 0  # answers running (ids may repeat: not len(_answering))
        #: Server requests dropped unanswered because too many were open (see above).
        self.dropped_requests = 0
        #: One answer (or cancellation) on the wire at a time: our own requests keep
        #: their connections, however many questions the server asks.
        self._side_channel = asyncio.Semaphore(1)
        self._listener: asyncio.Task[None] | None = None
        self._heart: asyncio.Task[None] | None = None
        self._init_lock = asyncio.Lock()
        self._stale = False  # the session must be re-initialized before the next request
        self._dead: str | None = None
        self._closing = False

    def attach(self) -> None:
        """Take over the stdio pipe's incoming messages (no-op over HTTP)."""
        if isinstance(self.transport, StdioTransport):
            self.transport.on_message = self._route_value
            self.transport.on_close = self._pending.fail_all

    # -- lifecycle --------------------------------------------------------------------------
    async def connect(self) -> dict[str, Any]:
        """The handshake; returns the ``InitializeResult``."""
        return await self._initialize()

    async def close(self) -> None:
        self._closing = True
        self._waiting.clear()
        tasks = [t for t in (self._heart, self._listener) if t is not None]
        tasks += list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        self._pending.fail_all()
        if self._is_http and self.session_id is not None:
            await self._delete_session(self.session_id)

    @property
    def dead(self) -> str | None:
        """Why the session was reaped, if it was."""
        return self._dead

    async def _initialize(self) -> dict[str, Any]:
        params = {"protocolVersion": self.preferred_version,
                  "capabilities": _legacy_capabilities(self.capabilities),
                  "clientInfo": self.client_info}
        message = request_message(next(self._ids), "initialize", params)
        if isinstance(self.transport, HttpTransport):
            self.session_id = None
            reply, session_id = await self._post_initialize(message)
        else:
            reply = await pipe_request(self.transport, self._pending, message, None,
                                       self.init_timeout, self.clock)
            session_id = None
        result = result_of(reply, "initialize")
        version = result.get("protocolVersion")
        if version not in LEGACY:
            raise EraNegotiationError(
                "the server answered initialize with a protocol version this client does "
                "not speak", attempts=[(f"initialize at {self.preferred_version}",
                                        f"protocolVersion {version!r}")])
        self.protocol_version = version
        self.initialize_result = result
        self.session_id = session_id
        self.log_level = None
        self._stale = False
        self._dead = None
        await self.notify("notifications/initialized", None)
        if self.heartbeat and (self._heart is None or self._heart.done()):
            # (Re)started with every session: a reaped one's loop has ended.
            self._heart = asyncio.ensure_future(self._heartbeat_loop(self.heartbeat))
        if isinstance(self.transport, HttpTransport):
            ready = asyncio.Event()
            self._listener = asyncio.ensure_future(self._listen_loop(ready))
            # Wait until the GET stream is open (or refused), so that what the server
            # sends outside requests from now on has a stream to travel on.
            with contextlib.suppress(TimeoutError):
                async with self.clock.timeout(10.0):
                    await ready.wait()
        return result

    async def _post_initialize(self, message: dict[str, Any]) -> tuple[Reply, str | None]:
        assert isinstance(self.transport, HttpTransport)
        headers = {"Accept": "application/json, text/event-stream",
                   "Content-Type": "application/json"}
        try:
            async with self.clock.timeout(self.init_timeout), self.transport.exchange(
                    "POST", body=encode_message(message), headers=headers,
                    timeout=self.init_timeout, what="initialize") as exchange:
                session_id = exchange.headers.get("mcp-session-id")
                if session_id is not None and not _visible_ascii(session_id):
                    raise RemoteProtocolError(
                        "initialize: the Mcp-Session-Id is not visible ASCII",
                        http_status=exchange.status)
                async for value in exchange.messages():
                    for item in _items(value):
                        if is_response(item) and answers(item, message["id"]):
                            return Reply(item, exchange.status), session_id
                        self._route(item)
                status = exchange.status
        except TimeoutError:
            raise RequestTimeout(f"initialize: no response within {self.init_timeout} s") from None
        raise RemoteProtocolError("initialize: the server sent no response", http_status=status)

    async def _reinitialize(self, gone: str | None) -> None:
        """Start a new session, unless another request already did. The old session's
        log level is set on the new one (best effort: a failure leaves it unset)."""
        async with self._init_lock:
            if not self._stale and self.session_id != gone:
                return
            log.info("session %s is gone; initializing a new one", gone)
            if self._listener is not None:
                self._listener.cancel()
                with contextlib.suppress(BaseException):
                    await self._listener
            level = self.log_level
            result = await self._initialize()
            offers = result.get("capabilities")
            if level is not None and isinstance(offers, dict) and "logging" in offers:
                message = request_message(next(self._ids), "logging/setLevel",
                                          {"level": level})
                with contextlib.suppress(ClientError, TimeoutError, _SessionGone):
                    result_of(await self._send(message, None, self.init_timeout, None),
                              "logging/setLevel")
                    self.log_level = level

    async def _delete_session(self, session_id: str) -> None:
        assert isinstance(self.transport, HttpTransport)
        with contextlib.suppress(ClientError, TimeoutError):
            async with self.clock.timeout(5.0), self.transport.exchange(
                    "DELETE", headers=self._headers(session_id), timeout=5.0,
                    what="DELETE session") as exchange:
                async for _ in exchange.messages():
                    pass

    # -- sending ----------------------------------------------------------------------------
    def _headers(self, session_id: str | None, *, sse_only: bool = False) -> dict[str, str]:
        headers = {"Accept": "text/event-stream" if sse_only
                   else "application/json, text/event-stream",
                   "MCP-Protocol-Version": self.protocol_version}
        if not sse_only:
            headers["Content-Type"] = "application/json"
        if session_id is not None:
            headers["Mcp-Session-Id"] = session_id
        return headers

    async def request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        headers: Mapping[str, str],
        on_message: MessageHandler | None,
        timeout: float | None,
        on_request: Answerer | None = None,
    ) -> dict[str, Any]:
        """Send one request in the session and return its ``result`` (errors raise).
        ``on_request`` answers the server requests that belong to it (``Pending.answerer``)
        instead of the client's resolvers."""
        for attempt in (0, 1):
            if self._dead is not None and not self._is_http:
                raise TransportError(f"the session was reaped: {self._dead}")
            if self._stale:
                await self._reinitialize(self.session_id)
            message = request_message(next(self._ids), method, params)
            try:
                reply = await self._send(message, on_message, timeout, on_request)
            except _SessionGone as gone:
                if attempt == 0:
                    self._stale = True
                    await self._reinitialize(gone.session_id)
                    continue
                raise SessionExpired(
                    f"{method}: the server ended the session (HTTP 404 for its session "
                    "id), and again for a fresh one", http_status=404) from None
            return result_of(reply, method)
        raise AssertionError("unreachable")

    async def notify(self, method: str, params: Mapping[str, Any] | None) -> None:
        """Send a notification (HTTP: a POST answered 202)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self._send_one_way(message)

    async def _send_one_way(self, message: dict[str, Any], *, side: bool = False) -> None:
        """Send a notification or a response; ``side``: on the side channel (one at a
        time), for what the server's traffic makes us send (answers, cancellations)."""
        if isinstance(self.transport, StdioTransport):
            await self.transport.write(message)
            return
        if side:
            async with self._side_channel:
                await self._post_one_way(message)
        else:
            await self._post_one_way(message)

    async def _post_one_way(self, message: dict[str, Any]) -> None:
        assert isinstance(self.transport, HttpTransport)
        what = message.get("method") or "response"
        async with self.transport.exchange(
                "POST", body=encode_message(message), headers=self._headers(self.session_id),
                timeout=30.0, what=str(what)) as exchange:
            async for value in exchange.messages():
                for item in _items(value):
                    if is_response(item) and "error" in item:
                        log.warning("the server rejected our %s: %.200r", what, item["error"])
                    else:
                        self._route(item)

    async def _send(self, message: dict[str, Any], on_message: MessageHandler | None,
                    timeout: float | None, on_request: Answerer | None = None) -> Reply:
        if isinstance(self.transport, StdioTransport):
            return await pipe_request(self.transport, self._pending, message, on_message,
                                      timeout, self.clock, on_request)
        method = message["method"]
        inbox = self._pending.open(message, answer=on_request)
        reader = self._spawn(self._post(message, inbox, self.session_id))
        answered = False
        try:
            async with self.clock.timeout(timeout):
                while True:
                    item = await inbox.next(lambda: "the session ended")
                    if isinstance(item, Reply):
                        answered = True
                        return item
                    if on_message is not None:
                        await on_message(item)
        except TimeoutError:
            raise RequestTimeout(f"{method}: no response within {timeout} s") from None
        except _SessionGone:
            answered = True  # the server never took the request: nothing to cancel
            raise
        finally:
            self._pending.discard(message["id"])
            # Answered or not, this request's POST reader has nothing left to deliver:
            # a response on the session's GET stream leaves the request's own stream
            # open, and a server may keep it open and silent forever (each such stream
            # would hold a task and a pool connection). Closing it does not cancel the
            # request in this era (basic/utilities/cancellation); the transport closes
            # the response shielded, so the connection goes back to the pool.
            if not reader.done():
                reader.cancel()
            if not answered and method != "initialize" and not self._closing:
                self._spawn(self._cancel(message["id"]))

    async def _cancel(self, request_id: object) -> None:
        with contextlib.suppress(ClientError, TimeoutError):
            async with self.clock.timeout(10.0):
                await self._send_one_way(
                    {"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": request_id,
                                "reason": "the client stopped waiting"}}, side=True)

    async def _post(self, message: dict[str, Any], inbox: Inbox, session_id: str | None) -> None:
        """Read one request's POST stream, routing every message; resume it if it breaks
        before the response. Failures go to the waiting request."""
        assert isinstance(self.transport, HttpTransport)
        method = message["method"]
        try:
            try:
                async with self.transport.exchange(
                        "POST", body=encode_message(message), headers=self._headers(session_id),
                        timeout=None, what=method) as exchange:
                    if exchange.status == 404 and session_id is not None:
                        raise _SessionGone(session_id)
                    await self._read(exchange, inbox)
                    last_id, retry, status = (exchange.last_event_id, exchange.retry_ms,
                                              exchange.status)
            except HttpError as exc:
                if exc.status == 404 and session_id is not None:
                    raise _SessionGone(session_id) from None
                raise
            if inbox.answered:
                return
            if last_id is None:
                raise RemoteProtocolError(
                    f"{method}: the server answered HTTP {status} without the response"
                    if status in (202, 204) else
                    f"{method}: the stream ended before the response, and cannot be resumed "
                    "(no event id)", http_status=status)
            await self._resume(method, inbox, session_id, last_id, retry)
        except Exception as exc:  # whatever broke the reader reaches the waiting request
            inbox.fail(exc)

    async def _resume(self, method: str, inbox: Inbox, session_id: str | None,
                      last_id: str, retry: int | None) -> None:
        assert isinstance(self.transport, HttpTransport)
        for attempt in range(MAX_RESUME_ATTEMPTS):
            await self.clock.sleep(self.backoff.delay(attempt, retry))
            headers = {**self._headers(session_id, sse_only=True), "Last-Event-ID": last_id}
            try:
                async with self.transport.exchange(
                        "GET", headers=headers, timeout=None,
                        what=f"{method} (resumed stream)") as exchange:
                    if exchange.status >= 400:
                        if exchange.status == 404 and session_id is not None:
                            raise _SessionGone(session_id)
                        raise RemoteProtocolError(
                            f"{method}: the stream broke before the response and the "
                            "server would not resume it", http_status=exchange.status)
                    await self._read(exchange, inbox)
                    last_id = exchange.last_event_id or last_id
                    retry = exchange.retry_ms if exchange.retry_ms is not None else retry
            except HttpError as exc:
                if exc.status == 404 and session_id is not None:
                    raise _SessionGone(session_id) from None
                raise
            except TransportError as exc:
                log.info("resuming %s failed (%s); retrying", method, exc)
            if inbox.answered:
                return
        raise TransportError(f"{method}: the stream broke before the response and "
                             f"{MAX_RESUME_ATTEMPTS} attempts to resume it failed")

    async def _read(self, exchange: Exchange, own: Inbox | None) -> int:
        """Route every message of one stream; stop once ``own`` has its response. Each
        message gives the other tasks a turn: a stream that floods cannot starve the
        client's own requests. Returns how many JSON values the stream carried."""
        count = 0
        async for value in exchange.messages():
            count += 1
            for item in _items(value):
                self._route(item, own, exchange.status)
            if own is not None and own.answered:
                return count
            await asyncio.sleep(0)
        return count

    # -- the GET stream and the heartbeat ----------------------------------------------------
    async def _listen_loop(self, ready: asyncio.Event) -> None:
        """The GET stream: messages outside requests; reconnected until the session ends."""
        assert isinstance(self.transport, HttpTransport)
        session_id = self.session_id
        last_id: str | None = None
        retry: int | None = None
        failures = 0
        try:
            while True:
                headers = self._headers(session_id, sse_only=True)
                if last_id is not None:
                    headers["Last-Event-ID"] = last_id
                try:
                    async with self.transport.exchange(
                            "GET", headers=headers, timeout=None, what="GET stream") as exchange:
                        if exchange.status == 404 and session_id is not None:
                            self._stale = True
                            return
                        if exchange.status >= 300 or exchange.decoder is None:
                            log.debug("no GET stream (HTTP %s)", exchange.status)
                            return  # 405: the server offers none; anything else: none either
                        ready.set()
                        delivered = await self._read(exchange, None)
                        # A stream that ends having brought nothing is a failure, so the
                        # backoff grows (a server that answers each GET with an empty
                        # stream would otherwise have us reconnect in a loop).
                        failures = 0 if delivered else failures + 1
                        last_id = exchange.last_event_id or last_id
                        retry = exchange.retry_ms if exchange.retry_ms is not None else retry
                except HttpError as exc:
                    if exc.status == 404 and session_id is not None:
                        self._stale = True
                        return
                    if exc.status < 500:
                        log.info("GET stream refused: %s", exc)
                        return
                    failures += 1
                except (TransportError, RemoteProtocolError) as exc:
                    log.info("GET stream broke: %s", exc)
                    failures += 1
                ready.set()
                await self.clock.sleep(self.backoff.delay(failures, retry))
        finally:
            ready.set()

    async def _heartbeat_loop(self, interval: float) -> None:
        misses = 0
        while True:
            await self.clock.sleep(interval)
            try:
                await self.request("ping", {}, headers={}, on_message=None, timeout=interval)
                misses = 0
            except (RequestTimeout, TransportError):
                misses += 1
                log.warning("heartbeat ping missed (%d in a row)", misses)
                if misses >= 2:
                    await self._reap(f"the server missed {misses} heartbeat pings")
                    return
            except RemoteProtocolError:
                misses = 0  # an error answer is still an answer

    async def _reap(self, reason: str) -> None:
        self._dead = reason
        log.warning("reaping the session: %s", reason)
        self._pending.fail_waiting(TransportError(f"the session was reaped: {reason}"))
        if isinstance(self.transport, StdioTransport):
            await self.transport.close()
            return
        if self._listener is not None:
            self._listener.cancel()
        old, self._stale = self.session_id, True
        if old is not None:
            self._spawn(self._delete_session(old))

    # -- incoming ---------------------------------------------------------------------------
    def _route_value(self, value: object) -> None:
        for item in _items(value):
            self._route(item)

    def _route(self, message: dict[str, Any], own: Inbox | None = None,
               http_status: int | None = None) -> None:
        if is_response(message):
            if not self._pending.response(message, http_status):
                log.warning("response for unknown request id %.80r", message.get("id"))
        elif is_request(message):
            self._serve(message, self._pending.answerer(own))
        elif is_notification(message):
            method = message["method"]
            if method == "notifications/cancelled":
                params = message.get("params")
                target = params.get("requestId") if isinstance(params, dict) else None
                key = id_key(target)
                task = self._answering.pop(key, None)
                if task is not None:
                    task.cancel()
                for waiting in self._waiting:
                    if id_key(waiting[0]["id"]) == key:
                        self._waiting.remove(waiting)  # never started: nothing to answer
                        break
                return
            if own is not None and method in REQUEST_SCOPED:
                own.notify(message)
            elif not self._pending.notification(message):
                self._on_unclaimed(message)
        else:
            log.warning("ignoring a message that is not JSON-RPC: %.200r", message)

    def _serve(self, message: dict[str, Any], answer: Answerer | None) -> None:
        """Answer a server request now, or queue it, or drop it (module docstring);
        ``answer``: who answers it (``None``: the client's resolvers)."""
        if self._closing:
            return  # arrived while the session closes: nobody is left to answer
        if self._in_flight < self._max_answering:
            self._start_answer(message, answer)
        elif len(self._waiting) < self._max_waiting:
            self._waiting.append((message, answer))
        else:
            self.dropped_requests += 1
            if milestone(self.dropped_requests):
                log.warning("the server has more than %d requests open; dropping %s "
                            "unanswered (%d dropped so far)",
                            self._max_answering + self._max_waiting, message["method"],
                            self.dropped_requests)

    def _start_answer(self, message: dict[str, Any], answer: Answerer | None) -> None:
        key = id_key(message["id"])
        self._in_flight += 1
        task = self._spawn(self._answer_request(message, answer))
        self._answering[key] = task

        def finished(_: asyncio.Task[Any]) -> None:
            self._in_flight -= 1
            if self._answering.get(key) is task:
                del self._answering[key]
            if self._waiting and not self._closing:
                self._start_answer(*self._waiting.popleft())

        task.add_done_callback(finished)

    async def _answer_request(self, message: dict[str, Any], answer: Answerer | None
                              ) -> None:
        request_id, method = message["id"], message["method"]
        params = message.get("params")
        params = dict(params) if isinstance(params, dict) else {}
        try:
            if method == "ping":
                result: dict[str, Any] = {}
            else:
                result = await (answer or self._answer)(method, params)
            response: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "result": result}
        except Unanswerable as exc:
            response = error_response(request_id, exc.code, str(exc))
        except Exception as exc:  # the user's resolver failed: tell the server, not a hang
            log.exception("answering the server's %s failed", method)
            response = error_response(request_id, INTERNAL_ERROR,
                                      f"the client could not answer {method}: {exc}")
        try:
            await self._send_one_way(response, side=True)
        except ClientError as exc:
            log.warning("could not send the answer to the server's %s: %s", method, exc)

    def _spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


def _items(value: object) -> list[dict[str, Any]]:
    """The messages of one JSON value: itself, or the members of a batch."""
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, dict)]
    log.warning("ignoring a JSON value that is not a JSON-RPC message: %.200r", value)
    return []


def _legacy_capabilities(capabilities: dict[str, Any]) -> dict[str, Any]:
    """2025-era ``ClientCapabilities`` have no ``extensions`` (2025-11-25 schema)."""
    return {k: v for k, v in capabilities.items() if k != "extensions"}


def _visible_ascii(value: str) -> bool:
    return bool(value) and all(0x21 <= ord(ch) <= 0x7E for ch in value)


__all__ = ["Answerer", "Backoff", "LegacyWire"]
