"""2025-era sessions over HTTP: the byte plumbing around ``mcpcore.legacy``.

``StreamableHTTP`` hands this shim every message ``mcpcore.legacy.era`` says belongs to
a session (``claims``, ``claims_batch``), and GET/DELETE. What it does with them:

- POST ``initialize``: a new session, its id in ``Mcp-Session-Id``;
- POST with a session: responses to our own requests go to the Store's reply channel
  (any instance may be waiting for them), notifications to the dispatcher, requests to
  the dispatcher with a ``Bridge`` whose questions go out on the POST's SSE stream;
  batches for 2025-03-26 sessions only;
- GET: the session's notification stream (one per session, fleet-wide); DELETE: the end.
  The server may end a GET stream at any time (2025-11-25 transports.mdx, "Listening for
  Messages from the Server"): when the Store fails, the session ends, or the instance
  drains (``close_streams``), it sends an SSE ``retry`` field first, and the client
  reconnects after that many milliseconds (to another instance, behind a balancer).

Closing a POST stream does not cancel a request here (2025-11-25 transports.mdx,
"Cancellation"): these clients cancel with ``notifications/cancelled``. Errors are
raised as ``McpError`` and answered by ``StreamableHTTP``'s one mapping.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from mcpcore import jsonrpc
from mcpcore.errors import BatchNotSupported, InvalidRequest, MethodNotAllowed, ParseError
from mcpcore.headers import named_by_name
from mcpcore.jsonrpc import Message, Notification, Request, Response
from mcpcore.legacy import era
from mcpcore.legacy.bridge import Bridge, NoBridge
from mcpcore.legacy.dispatch import SessionDispatcher
from mcpcore.legacy.notifications import render
from mcpcore.legacy.sessions import (
    SESSION_PREFIX,
    SessionManager,
    SessionNotFound,
    SessionRecord,
    StreamAlreadyOpen,
)
from mcpcore.principal import (
    ANONYMOUS,
    CALL_SCOPES_KEY,
    PRINCIPAL_SCOPE_KEY,
    Authorize,
    Principal,
)
from mcpcore.server import Server
from mcpcore.stores.base import Store, StoreError, SubscriptionLagged
from mcpcore.subscriptions import CHANNEL, decode_event, discard_outcome
from mcpcore.timing import Sleep
from mcpcore.transports.asgi import (
    DisconnectWatch,
    EventStream,
    Receive,
    Scope,
    Send,
    StreamStalled,
    send_empty,
    send_json,
)
from mcpcore.versions import LEGACY

log = logging.getLogger("mcpcore.legacy")

KEEPALIVE_SECONDS: Final = 15.0
#: Seconds between two looks for ended sessions' resource subscriptions.
SWEEP_SECONDS: Final = 60.0


class LegacyShim:
    """Serve 2025-era sessions from the same ``Server``; plug into ``StreamableHTTP``.

    >>> app = StreamableHTTP(server, legacy=LegacyShim(server, idle_ttl=600))  # doctest: +SKIP

    ``store`` holds the session records and carries replies between instances (default:
    the server's subscription store); ``response_timeout`` bounds the wait for a
    client's answer to our question; ``keepalive`` spaces the comments on idle streams;
    a GET stream whose client takes no write for ``send_timeout`` seconds is dropped;
    ``reconnect_ms`` is the SSE ``retry`` sent before the server ends a GET stream;
    every ``sweep_interval`` seconds while this instance holds resource subscriptions
    for sessions, it releases those of sessions that ended without a DELETE (their
    record expired after ``idle_ttl``) or through another instance
    (``SessionDispatcher.sweep``).
    """

    def __init__(self, server: Server, *, store: Store | None = None,
                 idle_ttl: float = 3600.0, response_timeout: float = 300.0,
                 keepalive: float = KEEPALIVE_SECONDS, send_timeout: float | None = 30.0,
                 reconnect_ms: int = 1000, sleep: Sleep = asyncio.sleep,
                 sweep_interval: float = SWEEP_SECONDS) -> None:
        self.server = server
        self.store = store if store is not None else server.subscriptions.store
        self.sessions = SessionManager(self.store, idle_ttl=idle_ttl)
        self.dispatcher = SessionDispatcher(server, self.sessions)
        self.response_timeout = response_timeout
        self.keepalive = keepalive
        self.send_timeout = send_timeout
        self.reconnect_ms = reconnect_ms
        self.sleep = sleep
        # One future per open GET stream; resolving it (with a retry hint) ends it.
        self._streams: set[asyncio.Future[int]] = set()
        #: In-flight requests of this instance (the tasks serving them), for
        #: notifications/cancelled; and those the client cancelled.
        self._inflight: dict[tuple[str, jsonrpc.RequestId], asyncio.Task[Any]] = {}
        self._cancelled: set[tuple[str, jsonrpc.RequestId]] = set()
        self.sweep_interval = sweep_interval
        #: Runs while this instance holds resource subscriptions (``_sweep``).
        self._sweeper: asyncio.Task[None] | None = None

    # -- routing (called by StreamableHTTP for every message: keep it cheap) ------------
    def claims(self, message: Message, headers: Mapping[str, str] | None) -> bool:
        return headers is not None and era.http_session_message(message, headers)

    def claims_batch(self, body: bytes, headers: Mapping[str, str]) -> bool:
        return era.http_session_batch(body, headers)

    # -- POST ---------------------------------------------------------------------------
    async def handle_post(self, scope: Scope, receive: Receive, send: Send,
                          headers: Mapping[str, str], body: bytes,
                          message: Message | None) -> None:
        principal = scope.get(PRINCIPAL_SCOPE_KEY) or ANONYMOUS
        authorize: Authorize | None = scope.get(CALL_SCOPES_KEY)
        if message is None:
            await self._batch(send, headers, body, principal, authorize)
            return
        if authorize is not None and not isinstance(message, Response):
            authorize(message.method, _name_of(message))  # before anything runs
        if isinstance(message, Request) and message.method == "initialize":
            record, payload = await self.dispatcher.initialize(message, principal)
            await send_json(send, 200, payload, _session_header(record))
            return
        version = _version_header(headers)
        if version is not None and version not in LEGACY:
            raise InvalidRequest(f"Unsupported MCP-Protocol-Version {version!r} for a "
                                 f"legacy session; supported: {', '.join(LEGACY)}")
        record = await self._session(headers, principal)
        if version is not None and version != record.version:
            # Within a session the negotiated version is authoritative.
            raise InvalidRequest(f"MCP-Protocol-Version {version!r} differs from the "
                                 f"session's negotiated version {record.version!r}")
        if isinstance(message, Response):
            await self.store.publish(_reply_channel(record.id, message.id), body)
            await self.sessions.apply(record, "response")
            await send_empty(send, 202)
            return
        if isinstance(message, Notification):
            self._cancel(record, await self.dispatcher.notification(record, message))
            await send_empty(send, 202)
            return
        await self._request(send, record, message, principal)

    async def _session(self, headers: Mapping[str, str], principal: Principal
                       ) -> SessionRecord:
        session_id = headers.get("mcp-session-id", "").strip()
        record = await self.sessions.load(session_id, principal.key) if session_id else None
        if record is None:
            raise SessionNotFound()
        return record

    def _cancel(self, record: SessionRecord, target: jsonrpc.RequestId | None) -> None:
        key = (record.id, target) if target is not None else None
        task = self._inflight.get(key) if key is not None else None
        if key is not None and task is not None:
            self._cancelled.add(key)
            task.cancel()

    async def _request(self, send: Send, record: SessionRecord, request: Request,
                       principal: Principal) -> None:
        # JSON unless something goes out first (a notification, or our own question).
        stream = EventStream(send, headers=_session_header(record), keepalive=self.keepalive,
                             sleep=self.sleep)
        bridge = Bridge(record.version, self._exchange(record.id, stream),
                        timeout=self.response_timeout,
                        max_rounds=self.server.mrtr.max_rounds, sleep=self.sleep)
        key = (record.id, request.id)
        task = asyncio.current_task()
        assert task is not None
        self._inflight[key] = task
        try:
            payload = await self.dispatcher.request(record, request, sink=stream.send,
                                                    inputs=bridge, principal=principal)
        except asyncio.CancelledError:
            if key not in self._cancelled:
                raise  # not the client's notifications/cancelled: let it propagate
            task.uncancel()
            # Cancelled by the client: no response, but our own questions still open at
            # the client are withdrawn first.
            if stream.started:
                for question in sorted(bridge.outstanding):
                    await stream.send(jsonrpc.encode_notification("notifications/cancelled", {
                        "requestId": question,
                        "reason": "The request that asked this was cancelled"}))
                await stream.close()
            else:
                stream.abandon()
                await send_empty(send, 202)
            return
        finally:
            stream.stop()
            self._cancelled.discard(key)
            if self._inflight.get(key) is task:
                del self._inflight[key]
        self._sweep_while_held()
        if stream.started:
            await stream.close(payload)
        else:
            stream.abandon()
            await send_json(send, 200, payload, _session_header(record))

    def _sweep_while_held(self) -> None:
        """Start the sweeper if this instance holds subscriptions and none runs."""
        if self.dispatcher.held and (self._sweeper is None or self._sweeper.done()):
            self._sweeper = asyncio.ensure_future(self._sweep())

    async def _sweep(self) -> None:
        """A session that expires says nothing: look for gone ones every
        ``sweep_interval`` seconds, until nothing is held here."""
        while self.dispatcher.held:
            await self.sleep(self.sweep_interval)
            try:
                released = await self.dispatcher.sweep()
            except Exception:  # a bug: logged, and the next round tries again
                log.exception("sweeping legacy sessions' subscriptions failed")
                continue
            if released:
                log.info("released %d resource subscriptions of ended legacy sessions",
                         released)

    def _exchange(self, session_id: str, stream: EventStream) -> Any:
        async def exchange(request_id: str, payload: bytes) -> Response:
            # Subscribe before sending, so a fast answer on another instance is not lost.
            async with self.store.subscribe(_reply_channel(session_id, request_id)) as sub:
                await stream.send(payload)
                async for raw in sub:
                    message = jsonrpc.decode_message(raw)
                    if isinstance(message, Response):
                        return message
            raise StoreError("the reply channel closed before the client answered")

        return exchange

    async def _batch(self, send: Send, headers: Mapping[str, str], body: bytes,
                     principal: Principal, authorize: Authorize | None) -> None:
        record = await self._session(headers, principal)
        if record.version != "2025-03-26":
            raise BatchNotSupported()  # only 2025-03-26 sessions may batch
        try:
            items = msgspec.json.decode(body, type=list[msgspec.Raw])
        except msgspec.DecodeError:
            raise ParseError("Parse error: invalid JSON batch") from None
        if not items:
            raise InvalidRequest("Empty batch")
        messages: list[Message | Exception] = []
        for raw in items:
            try:
                messages.append(jsonrpc.decode_message(bytes(raw)))
            except Exception as exc:
                messages.append(exc)
        if authorize is not None:  # a batched call cannot hide from its scopes
            for message in messages:
                if isinstance(message, (Request, Notification)):
                    authorize(message.method, _name_of(message))
        responses: list[bytes] = []

        async def no_stream(message: bytes) -> None:
            return None  # batched requests answer in one JSON array: no notifications

        for raw, message in zip(items, messages, strict=True):
            item = bytes(raw)
            if isinstance(message, Exception):
                responses.append(self.dispatcher.error(jsonrpc.peek_id(item), message))
                continue
            if isinstance(message, Request):
                responses.append(await self.dispatcher.request(
                    record, message, sink=no_stream, inputs=NoBridge(), principal=principal))
            elif isinstance(message, Notification):
                self._cancel(record, await self.dispatcher.notification(record, message))
            else:
                await self.store.publish(_reply_channel(record.id, message.id), item)
        self._sweep_while_held()
        if not responses:
            await send_empty(send, 202)
            return
        await send_json(send, 200, b"[" + b",".join(responses) + b"]")

    def close_streams(self, retry_ms: int | None = None) -> None:
        """End every GET stream of this instance (draining): each sends an SSE
        ``retry`` of ``retry_ms`` (default ``reconnect_ms``) and closes."""
        for closing in list(self._streams):
            if not closing.done():
                closing.set_result(self.reconnect_ms if retry_ms is None else retry_ms)

    # -- GET (the session's stream) and DELETE --------------------------------------------
    async def handle_other(self, scope: Scope, receive: Receive, send: Send,
                           headers: Mapping[str, str]) -> None:
        if "mcp-session-id" not in headers:
            raise MethodNotAllowed()
        principal = scope.get(PRINCIPAL_SCOPE_KEY) or ANONYMOUS
        record = await self._session(headers, principal)
        if scope["method"] == "DELETE":
            await self.dispatcher.close(record)
            await send_empty(send, 200)
            return
        await self._server_stream(record, receive, send)

    async def _server_stream(self, record: SessionRecord, receive: Receive,
                             send: Send) -> None:
        """Unsolicited notifications for this session, until the client goes away or the
        session ends (checked at each keep-alive). One stream per session, fleet-wide
        (a claim in the Store, refreshed by the keep-alive): a message must not be
        broadcast across streams."""
        claim = f"{SESSION_PREFIX}{record.id}:get"
        claim_ttl = self.keepalive * 3
        if not await self.store.set_if_absent(claim, b"1", ttl=claim_ttl):
            raise StreamAlreadyOpen()
        loop = asyncio.get_running_loop()
        gone: asyncio.Future[None] = loop.create_future()

        def hung_up() -> None:
            if not gone.done():
                gone.set_result(None)

        watch = DisconnectWatch(receive, hung_up)
        stream = EventStream(send, headers=_session_header(record),
                             send_timeout=self.send_timeout)
        events = self.server.subscriptions.store  # where the server publishes changes
        closing: asyncio.Future[int] = loop.create_future()
        self._streams.add(closing)
        retry: int | None = self.reconnect_ms  # sent before we end the stream ourselves
        nxt: asyncio.Future[bytes] | None = None
        tick: asyncio.Future[None] | None = None
        try:
            async with events.subscribe(CHANNEL) as sub:
                await stream.open(b": open\n\n")
                while True:
                    if nxt is None:
                        nxt = asyncio.ensure_future(sub.__anext__())
                    if tick is None:
                        tick = asyncio.ensure_future(self.sleep(self.keepalive))
                    waiters: set[asyncio.Future[Any]] = {nxt, gone, tick, closing}
                    done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                    if gone in done:
                        break
                    if closing in done:
                        retry = closing.result()
                        break
                    if nxt not in done:  # idle: is the session still there?
                        tick = None
                        if await self.sessions.load(record.id, record.principal) is None:
                            break
                        await self.store.set(claim, b"1", ttl=claim_ttl)
                        await stream.comment()
                        continue
                    try:
                        raw = nxt.result()
                    except (StopAsyncIteration, SubscriptionLagged):
                        break
                    nxt = None
                    event = decode_event(raw)
                    if event is None:
                        continue
                    subscribed: list[str] = []
                    if event.kind == "updated":
                        fresh = await self.sessions.load(record.id)
                        subscribed = fresh.subscriptions if fresh is not None else []
                    message = render(event, subscribed)
                    if message is not None:
                        await stream.send(message)
        except StoreError as exc:
            # The store logs its outage once; the client reconnects after ``retry``.
            log.debug("legacy GET stream ended: %s", exc)
        except StreamStalled:
            log.info("legacy GET stream dropped: its client stopped reading")
        finally:
            self._streams.discard(closing)
            closing.cancel()
            watch.stop()
            if tick is not None:
                tick.cancel()
            if nxt is not None and not nxt.done():
                nxt.cancel()
                nxt.add_done_callback(discard_outcome)
            with contextlib.suppress(StoreError):
                await self.store.delete(claim)
        if not gone.done():
            with contextlib.suppress(Exception):
                await stream.close(retry_ms=retry)


def _name_of(message: Request | Notification) -> str | None:
    """The tool or prompt a call names, for the per-call scope check."""
    return None if message.params is None else named_by_name(message.method, message.params)


def _version_header(headers: Mapping[str, str]) -> str | None:
    version = headers.get("mcp-protocol-version")
    return version.strip() if version is not None else None


def _session_header(record: SessionRecord) -> list[tuple[bytes, bytes]]:
    return [(b"mcp-session-id", record.id.encode())]


def _reply_channel(session_id: str, request_id: jsonrpc.RequestId) -> str:
    return f"legacy-reply:{session_id}:{request_id}"


__all__ = ["KEEPALIVE_SECONDS", "SWEEP_SECONDS", "LegacyShim"]
