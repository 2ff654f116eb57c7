"""The legacy session shim: 2025-11-25, 2025-06-18 and 2025-03-26 clients, same handlers.

Era detection happens per message (core R4.6). On HTTP a message is legacy when it is an
``initialize`` request, or carries ``Mcp-Session-Id``, and has no modern marker (an
``MCP-Protocol-Version`` newer than 2025-11-25, or an ``io.modelcontextprotocol/`` key in
``_meta``); modern requests never reach this module beyond that cheap check. On stdio,
``initialize`` switches the process into the legacy era.

What the shim adds around the engine:

- ``initialize`` / ``notifications/initialized``, version negotiation among legacy
  versions, session records in the ``Store`` (so any instance serves any request of a
  session), DELETE, idle expiry, 404 for unknown sessions;
- ``ping``, ``logging/setLevel``, ``resources/subscribe`` / ``unsubscribe``; batches for
  2025-03-26 sessions only; ``-32002`` for missing resources; results without the
  2026-07-28 fields (``resultType``, cache hints);
- the GET stream: list changes and ``resources/updated`` for the session's subscriptions,
  without ``subscriptionId``;
- **one handler, both eras**: when a handler asks for input, the question goes to the
  client as a real server→client request (``elicitation/create``,
  ``sampling/createMessage``, ``roots/list``) on the request's SSE stream; the client's
  response POST may land on any instance and is routed back through the Store's
  pub/sub. The handler then runs again with the answer, exactly as a modern retry.

Closing a POST stream does not cancel a legacy request (T20): legacy clients cancel with
``notifications/cancelled``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any, Final

import msgspec

from mcpcore import jsonrpc
from mcpcore.errors import (
    BatchNotSupported,
    InternalError,
    InvalidParams,
    InvalidRequest,
    LegacyResourceNotFound,
    McpError,
    MethodNotAllowed,
    ParseError,
    ResourceNotFound,
)
from mcpcore.jsonrpc import Message, Notification, Request, Response
from mcpcore.meta import RESERVED_PREFIX
from mcpcore.mrtr import InputRequest
from mcpcore.principal import ANONYMOUS, PRINCIPAL_SCOPE_KEY, Principal
from mcpcore.server import Server
from mcpcore.sessions import SESSION_PREFIX, SessionManager, SessionRecord
from mcpcore.stores.base import Store, StoreError, SubscriptionLagged
from mcpcore.subscriptions import CHANNEL, Event, discard_outcome
from mcpcore.versions import LEGACY, is_modern_version

log = logging.getLogger("mcpcore.legacy")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Sink = Callable[[bytes], Awaitable[None]]

#: Fields of 2026-07-28 results that legacy schemas do not have.
_MODERN_RESULT_FIELDS: Final = ("resultType", "ttlMs", "cacheScope")
_SSE_HEADERS: Final = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"),
                       (b"x-accel-buffering", b"no")]
_LIST_NOTIFICATIONS: Final = {
    "tools": "notifications/tools/list_changed",
    "prompts": "notifications/prompts/list_changed",
    "resources": "notifications/resources/list_changed",
}
KEEPALIVE_SECONDS: Final = 15.0


class _Envelope(msgspec.Struct):
    _meta: Any = None


class _InitializeParams(msgspec.Struct, rename="camel"):
    protocol_version: Any = None
    capabilities: Any = None
    client_info: Any = None


class _UriParams(msgspec.Struct):
    uri: str


class _LevelParams(msgspec.Struct):
    level: str


class _CancelParams(msgspec.Struct, rename="camel"):
    request_id: int | str | None = None


def has_modern_marker(message: Message) -> bool:
    """Does the message's ``_meta`` carry an ``io.modelcontextprotocol/`` key?"""
    params = message.params if isinstance(message, (Request, Notification)) else None
    if params is None or RESERVED_PREFIX.encode() not in bytes(params):
        return False  # cheap: no reserved prefix anywhere in the params bytes
    try:
        meta = msgspec.json.decode(params, type=_Envelope)._meta
    except msgspec.DecodeError:
        return False
    return isinstance(meta, dict) and any(
        isinstance(k, str) and k.startswith(RESERVED_PREFIX) for k in meta)


def legacy_result(result: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 result as legacy clients expect it."""
    out = {k: v for k, v in result.items() if k not in _MODERN_RESULT_FIELDS}
    meta = out.get("_meta")
    if isinstance(meta, dict):
        rest = {k: v for k, v in meta.items() if not k.startswith(RESERVED_PREFIX)}
        if rest:
            out["_meta"] = rest
        else:
            del out["_meta"]
    return out


def legacy_error(exc: McpError) -> McpError:
    """Legacy sessions expect -32002 for a missing resource (T24)."""
    if isinstance(exc, ResourceNotFound):
        return LegacyResourceNotFound(exc.uri)
    return exc


class LegacyDispatcher:
    """Session-scoped methods plus the engine, for HTTP and stdio alike."""

    def __init__(self, server: Server, sessions: SessionManager, *,
                 response_timeout: float) -> None:
        self.server = server
        self.sessions = sessions
        self.response_timeout = response_timeout

    def capabilities(self) -> dict[str, Any]:
        caps = self.server.capabilities()
        caps.pop("extensions", None)
        return caps

    def initialize_result(self, version: str) -> dict[str, Any]:
        result: dict[str, Any] = {"protocolVersion": version,
                                  "capabilities": self.capabilities(),
                                  "serverInfo": self.server.server_info}
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    async def dispatch(self, record: SessionRecord, request: Request, *, sink: Sink,
                       bridge: Any, principal: Principal) -> bytes:
        """Serve one request of a session; the encoded response."""
        try:
            result = await self._dispatch(record, request, sink=sink, bridge=bridge,
                                          principal=principal)
        except McpError as exc:
            return jsonrpc.encode_error(request.id, legacy_error(exc))
        except StoreError as exc:
            log.error("store failure in legacy %s: %s", request.method, exc)
            return jsonrpc.encode_error(request.id, InternalError())
        return jsonrpc.encode_result(request.id, result)

    async def _dispatch(self, record: SessionRecord, request: Request, *, sink: Sink,
                        bridge: Any, principal: Principal) -> dict[str, Any]:
        method = request.method
        await self.sessions.apply(record, "request")
        if method == "ping":
            return {}
        if method == "initialize":
            raise InvalidRequest("The session is already initialized")
        if method == "logging/setLevel":
            level = jsonrpc.decode_params(request.params, _LevelParams).level
            await self.sessions.set_log_level(record, level)
            return {}
        if method in ("resources/subscribe", "resources/unsubscribe"):
            uri = jsonrpc.decode_params(request.params, _UriParams).uri
            if method == "resources/subscribe":
                await self.sessions.subscribe(record, uri)
            else:
                await self.sessions.unsubscribe(record, uri)
            return {}
        token = None
        if request.params is not None:
            meta = msgspec.json.decode(request.params, type=_Envelope)._meta
            if isinstance(meta, dict):
                candidate = meta.get("progressToken")
                if isinstance(candidate, (str, int)) and not isinstance(candidate, bool):
                    token = candidate
        result = await self.server.handle_legacy(request, meta=record.meta(token),
                                                 principal=principal, sink=sink,
                                                 bridge=bridge)
        return legacy_result(result)


class _Bridge:
    """Asks the client through server→client requests; answers come back via ``wait``."""

    def __init__(self, record: SessionRecord, sink: Sink,
                 wait: Callable[[str, Callable[[], Awaitable[None]]], Awaitable[bytes]],
                 timeout: float) -> None:
        self.record = record
        self.sink = sink
        self.wait = wait
        self.timeout = timeout
        #: Ids of server→client requests sent and not yet answered.
        self.outstanding: set[str] = set()

    async def ask(self, key: str, request: InputRequest) -> Any:
        request_id = f"mcpcore-{secrets.token_hex(8)}"
        params = dict(request.params)
        if request.method == "elicitation/create":
            if params.get("mode") == "url":
                # 2025-11-25 URL elicitation requires an id; 2026-07-28 has none (T30).
                params["elicitationId"] = secrets.token_urlsafe(16)
            elif self.record.version != "2025-11-25":
                params.pop("mode", None)  # 2025-06-18 forms have no mode field
        payload = jsonrpc.encode_request(request_id, request.method, params)

        async def send() -> None:
            self.outstanding.add(request_id)
            await self.sink(payload)

        try:
            raw = await asyncio.wait_for(self.wait(request_id, send), self.timeout)
        except TimeoutError:
            self.outstanding.discard(request_id)
            raise InternalError(f"Timed out after {self.timeout:g}s waiting for the "
                                f"client's answer to {request.method}") from None
        # Left in ``outstanding`` when cancelled, so the caller can withdraw it.
        self.outstanding.discard(request_id)
        message = jsonrpc.decode_message(raw)
        if not isinstance(message, Response):
            raise InternalError("Expected a JSON-RPC response from the client")
        if message.error is not None:
            error = jsonrpc.decode_any(message.error)
            text = error.get("message") if isinstance(error, dict) else None
            raise InternalError(f"The client answered {request.method} with an error: "
                                f"{text or 'unknown error'}")
        return jsonrpc.decode_any(message.result) if message.result is not None else {}


class _NoBridge:
    async def ask(self, key: str, request: InputRequest) -> Any:
        raise InternalError(f"{request.method} cannot be sent from inside a JSON-RPC batch; "
                            "send the request on its own")


class LegacyShim:
    """Serve legacy sessions from the same ``Server``; plug into ``StreamableHTTP``.

    >>> app = StreamableHTTP(server, legacy=LegacyShim(server))    # doctest: +SKIP
    """

    def __init__(self, server: Server, *, store: Store | None = None,
                 idle_ttl: float = 3600.0, response_timeout: float = 300.0,
                 keepalive: float = KEEPALIVE_SECONDS) -> None:
        self.server = server
        self.store = store if store is not None else server.subscriptions.store
        self.sessions = SessionManager(self.store, idle_ttl=idle_ttl)
        self.dispatcher = LegacyDispatcher(server, self.sessions,
                                           response_timeout=response_timeout)
        self.response_timeout = response_timeout
        self.keepalive = keepalive
        #: In-flight requests of this instance, for notifications/cancelled.
        self._inflight: dict[tuple[str, jsonrpc.RequestId], asyncio.Task[Any]] = {}

    # -- routing (called by StreamableHTTP for every message: keep it cheap) ------------
    def claims(self, message: Message, headers: Mapping[str, str] | None) -> bool:
        if headers is None:
            return False
        version = headers.get("mcp-protocol-version")
        if version is not None and is_modern_version(version.strip()):
            return False
        is_init = isinstance(message, Request) and message.method == "initialize"
        if not is_init and "mcp-session-id" not in headers:
            return False
        return not has_modern_marker(message)

    def claims_batch(self, body: bytes, headers: Mapping[str, str]) -> bool:
        version = headers.get("mcp-protocol-version")
        if version is not None and is_modern_version(version.strip()):
            return False  # a modern batch is -32600, never a legacy session's (R1.7)
        return "mcp-session-id" in headers and body.lstrip()[:1] == b"["

    # -- POST ---------------------------------------------------------------------------
    async def handle_post(self, scope: Scope, receive: Receive, send: Send,
                          headers: Mapping[str, str], body: bytes,
                          message: Message | None) -> None:
        principal = scope.get(PRINCIPAL_SCOPE_KEY) or ANONYMOUS
        if message is None:
            await self._batch(send, headers, body, principal)
            return
        if isinstance(message, Request) and message.method == "initialize":
            await self._initialize(send, message, principal)
            return
        version = headers.get("mcp-protocol-version")
        if version is not None and version.strip() not in LEGACY:
            raise InvalidRequest(f"Unsupported MCP-Protocol-Version {version.strip()!r} "
                                 f"for a legacy session; supported: {', '.join(LEGACY)}")
        record = await self._session(headers, principal)
        if record is None:
            await _json(send, 404, jsonrpc.encode_error(
                message.id if isinstance(message, Request) else None,
                InvalidRequest("Session not found: initialize a new session")))
            return
        if version is not None and version.strip() != record.version:
            # Within a session the negotiated version is authoritative (R12.10).
            raise InvalidRequest(f"MCP-Protocol-Version {version.strip()!r} differs from "
                                 f"the session's negotiated version {record.version!r}")
        if isinstance(message, Response):
            await self.store.publish(_reply_channel(record.id, message.id), body)
            await self.sessions.apply(record, "response")
            await _empty(send, 202)
            return
        if isinstance(message, Notification):
            await self._notification(record, message)
            await _empty(send, 202)
            return
        await self._request(send, record, message, principal)

    async def _session(self, headers: Mapping[str, str],
                       principal: Principal) -> SessionRecord | None:
        session_id = headers.get("mcp-session-id", "").strip()
        return await self.sessions.load(session_id, principal.key) if session_id else None

    async def _initialize(self, send: Send, request: Request, principal: Principal) -> None:
        params = jsonrpc.decode_params(request.params, _InitializeParams) if (
            request.params is not None) else _InitializeParams()
        if params.capabilities is not None and not isinstance(params.capabilities, dict):
            raise InvalidParams("initialize: capabilities must be an object")
        version = self.sessions.negotiate(params.protocol_version)
        info = params.client_info if isinstance(params.client_info, dict) else None
        record = await self.sessions.create(version=version,
                                            capabilities=params.capabilities or {},
                                            client_info=info, principal=principal.key)
        payload = jsonrpc.encode_result(request.id, self.dispatcher.initialize_result(version))
        await _json(send, 200, payload, [(b"mcp-session-id", record.id.encode())])

    async def _notification(self, record: SessionRecord, message: Notification) -> None:
        if message.method == "notifications/initialized":
            await self.sessions.apply(record, "initialized")
        elif message.method == "notifications/cancelled" and message.params is not None:
            with contextlib.suppress(msgspec.DecodeError):
                target = msgspec.json.decode(message.params, type=_CancelParams).request_id
                task = self._inflight.get((record.id, target)) if target is not None else None
                if task is not None:
                    task.cancel()
        else:
            await self.sessions.apply(record, "notification")

    async def _request(self, send: Send, record: SessionRecord, request: Request,
                       principal: Principal) -> None:
        streaming = False
        closed = False
        lock = asyncio.Lock()
        keepalive: asyncio.Task[None] | None = None

        async def ping() -> None:
            # A stream waiting on a human must not look idle to proxies (60 s in nginx).
            while True:
                await asyncio.sleep(self.keepalive)
                async with lock:
                    await send({"type": "http.response.body", "body": b": keepalive\n\n",
                                "more_body": True})

        async def sink(message: bytes) -> None:
            nonlocal streaming, keepalive
            async with lock:
                if closed:
                    return
                if not streaming:
                    streaming = True
                    await send({"type": "http.response.start", "status": 200,
                                "headers": [*_SSE_HEADERS,
                                            (b"mcp-session-id", record.id.encode())]})
                    keepalive = asyncio.ensure_future(ping())
                await send({"type": "http.response.body", "more_body": True,
                            "body": b"event: message\ndata: " + message + b"\n\n"})

        bridge = _Bridge(record, sink, self._wait_reply(record.id), self.response_timeout)
        key = (record.id, request.id)
        task = asyncio.ensure_future(self.dispatcher.dispatch(
            record, request, sink=sink, bridge=bridge, principal=principal))
        self._inflight[key] = task
        try:
            payload = await task
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
            # Cancelled by notifications/cancelled: no response (spec), but our own
            # questions still open at the client are withdrawn first (R12.26).
            async with lock:
                closed = True
                if streaming:
                    for question in sorted(bridge.outstanding):
                        withdraw = jsonrpc.encode_notification("notifications/cancelled", {
                            "requestId": question,
                            "reason": "The request that asked this was cancelled"})
                        await send({"type": "http.response.body", "more_body": True,
                                    "body": b"event: message\ndata: " + withdraw + b"\n\n"})
            if streaming:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            else:
                await _empty(send, 202)
            return
        finally:
            if keepalive is not None:
                keepalive.cancel()
            if self._inflight.get(key) is task:
                del self._inflight[key]
        closed = True
        if streaming:
            await send({"type": "http.response.body", "more_body": False,
                        "body": b"event: message\ndata: " + payload + b"\n\n"})
        else:
            await _json(send, 200, payload, [(b"mcp-session-id", record.id.encode())])

    def _wait_reply(self, session_id: str
                    ) -> Callable[[str, Callable[[], Awaitable[None]]], Awaitable[bytes]]:
        async def wait(request_id: str, send_request: Callable[[], Awaitable[None]]) -> bytes:
            # Subscribe before sending, so a fast answer on another instance is not lost.
            async with self.store.subscribe(_reply_channel(session_id, request_id)) as sub:
                await send_request()
                async for raw in sub:
                    return raw
            raise InternalError("The reply channel closed before the client answered")

        return wait

    async def _batch(self, send: Send, headers: Mapping[str, str], body: bytes,
                     principal: Principal) -> None:
        record = await self._session(headers, principal)
        if record is None:
            await _json(send, 404, jsonrpc.encode_error(
                None, InvalidRequest("Session not found: initialize a new session")))
            return
        if record.version != "2025-03-26":
            raise BatchNotSupported()  # only 2025-03-26 sessions may batch (T27)
        try:
            items = msgspec.json.decode(body, type=list[msgspec.Raw])
        except msgspec.DecodeError:
            raise ParseError("Parse error: invalid JSON batch") from None
        if not items:
            raise InvalidRequest("Empty batch")
        responses: list[bytes] = []

        async def no_stream(message: bytes) -> None:
            return None  # batched requests answer in one JSON array: no notifications

        bridge = _NoBridge()

        for raw in items:
            try:
                message = jsonrpc.decode_message(bytes(raw))
            except McpError as exc:
                responses.append(jsonrpc.encode_error(jsonrpc.peek_id(bytes(raw)), exc))
                continue
            if isinstance(message, Request):
                responses.append(await self.dispatcher.dispatch(
                    record, message, sink=no_stream, bridge=bridge, principal=principal))
            elif isinstance(message, Notification):
                await self._notification(record, message)
            else:
                await self.store.publish(_reply_channel(record.id, message.id), bytes(raw))
        if not responses:
            await _empty(send, 202)
            return
        await _json(send, 200, b"[" + b",".join(responses) + b"]")

    # -- GET (server stream) and DELETE -----------------------------------------------------
    async def handle_other(self, scope: Scope, receive: Receive, send: Send,
                           headers: Mapping[str, str]) -> None:
        if "mcp-session-id" not in headers:
            raise MethodNotAllowed()
        principal = scope.get(PRINCIPAL_SCOPE_KEY) or ANONYMOUS
        record = await self._session(headers, principal)
        if record is None:
            await _json(send, 404, jsonrpc.encode_error(
                None, InvalidRequest("Session not found: initialize a new session")))
            return
        if scope["method"] == "DELETE":
            await self.sessions.apply(record, "delete")
            await _empty(send, 200)
            return
        await self._server_stream(record, receive, send)

    async def _server_stream(self, record: SessionRecord, receive: Receive,
                             send: Send) -> None:
        """The GET stream: unsolicited notifications for this session.

        One GET stream per session, fleet-wide (a claim in the Store, refreshed by the
        keep-alive): a message must not be broadcast across streams (R12.14).
        """
        claim = f"{SESSION_PREFIX}{record.id}:get"
        claim_ttl = self.keepalive * 3
        if not await self.store.set_if_absent(claim, b"1", ttl=claim_ttl):
            await _json(send, 409, jsonrpc.encode_error(None, InvalidRequest(
                "This session already has a GET stream open")))
            return

        async def disconnected() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        gone = asyncio.ensure_future(disconnected())
        nxt: asyncio.Future[bytes] | None = None
        events = self.server.subscriptions.store  # where the server publishes changes
        try:
            async with events.subscribe(CHANNEL) as sub:
                await send({"type": "http.response.start", "status": 200,
                            "headers": [*_SSE_HEADERS,
                                        (b"mcp-session-id", record.id.encode())]})
                await send({"type": "http.response.body", "body": b": open\n\n",
                            "more_body": True})
                while True:
                    if nxt is None:
                        nxt = asyncio.ensure_future(sub.__anext__())
                    waiters: set[asyncio.Future[Any]] = {nxt, gone}
                    done, _ = await asyncio.wait(waiters, timeout=self.keepalive,
                                                 return_when=asyncio.FIRST_COMPLETED)
                    if gone in done:
                        break
                    if nxt not in done:  # idle: is the session still there?
                        if await self.sessions.load(record.id, record.principal) is None:
                            break
                        await self.store.set(claim, b"1", ttl=claim_ttl)
                        await send({"type": "http.response.body", "body": b": keepalive\n\n",
                                    "more_body": True})
                        continue
                    try:
                        raw = nxt.result()
                    except (StopAsyncIteration, SubscriptionLagged):
                        break
                    nxt = None
                    message = await self._legacy_notification(record, raw)
                    if message is not None:
                        await send({"type": "http.response.body", "more_body": True,
                                    "body": b"event: message\ndata: " + message + b"\n\n"})
        except StoreError as exc:
            log.error("legacy GET stream ended: %s", exc)
        finally:
            gone.cancel()
            if nxt is not None and not nxt.done():
                nxt.cancel()
                nxt.add_done_callback(discard_outcome)
            with contextlib.suppress(StoreError):
                await self.store.delete(claim)
        with contextlib.suppress(Exception):
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _legacy_notification(self, record: SessionRecord, raw: bytes) -> bytes | None:
        try:
            event = msgspec.json.decode(raw, type=Event)
        except msgspec.DecodeError:
            return None
        if event.kind == "updated":
            fresh = await self.sessions.load(record.id)
            subscribed = fresh.subscriptions if fresh is not None else []
            uri = event.uri or ""
            if not any(uri == s or uri.startswith(s.rstrip("/") + "/") for s in subscribed):
                return None
            return jsonrpc.encode_notification("notifications/resources/updated", {"uri": uri})
        return jsonrpc.encode_notification(_LIST_NOTIFICATIONS[event.kind], {})


class StdioLegacy:
    """``initialize`` on stdio switches this process into the legacy era (R4.6)."""

    def __init__(self, server: Server, *, response_timeout: float = 300.0) -> None:
        from mcpcore.stores.memory import MemoryStore

        self.server = server
        self.sessions = SessionManager(MemoryStore())
        self.dispatcher = LegacyDispatcher(server, self.sessions,
                                           response_timeout=response_timeout)
        self.response_timeout = response_timeout
        self.record: SessionRecord | None = None
        self._pending: dict[jsonrpc.RequestId, asyncio.Future[bytes]] = {}
        self._events: asyncio.Task[None] | None = None

    def claims(self, message: Message, headers: Mapping[str, str] | None) -> bool:
        if isinstance(message, Response):
            return message.id in self._pending or self.record is not None
        if has_modern_marker(message):
            return False
        return self.record is not None or (
            isinstance(message, Request) and message.method == "initialize")

    async def feed(self, session: Any, message: Message) -> None:
        if isinstance(message, Response):
            future = self._pending.get(message.id)
            if future is not None and not future.done():
                future.set_result(jsonrpc.encode(_response_dict(message)))
            return
        if isinstance(message, Notification):
            if message.method == "notifications/cancelled":
                session._on_notification(message)
            elif self.record is not None and message.method == "notifications/initialized":
                await self.sessions.apply(self.record, "initialized")
            return
        if message.method == "initialize":
            await self._initialize(session, message)
            return
        record = self.record
        assert record is not None

        async def wait(request_id: str, send_request: Callable[[], Awaitable[None]]) -> bytes:
            future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
            self._pending[request_id] = future
            try:
                await send_request()
                return await future
            finally:
                self._pending.pop(request_id, None)

        bridge = _Bridge(record, session.write, wait, self.response_timeout)
        session.spawn(message.id, self.dispatcher.dispatch(
            record, message, sink=session.write, bridge=bridge, principal=session.principal))

    async def _initialize(self, session: Any, request: Request) -> None:
        if self.record is not None:
            await session.write(jsonrpc.encode_error(
                request.id, InvalidRequest("This process is already initialized")))
            return
        params = jsonrpc.decode_params(request.params, _InitializeParams) if (
            request.params is not None) else _InitializeParams()
        version = self.sessions.negotiate(params.protocol_version)
        caps = params.capabilities if isinstance(params.capabilities, dict) else {}
        info = params.client_info if isinstance(params.client_info, dict) else None
        self.record = await self.sessions.create(version=version, capabilities=caps,
                                                 client_info=info,
                                                 principal=session.principal.key)
        await session.write(jsonrpc.encode_result(
            request.id, self.dispatcher.initialize_result(version)))
        self._events = asyncio.ensure_future(self._forward_events(session))

    async def _forward_events(self, session: Any) -> None:
        """Unsolicited legacy notifications (list changes, subscribed updates)."""
        store = self.server.subscriptions.store
        with contextlib.suppress(StoreError, SubscriptionLagged):
            async with store.subscribe(CHANNEL) as sub:
                async for raw in sub:
                    record = self.record
                    if record is None:
                        return
                    try:
                        event = msgspec.json.decode(raw, type=Event)
                    except msgspec.DecodeError:
                        continue
                    if event.kind == "updated":
                        uri = event.uri or ""
                        if any(uri == s or uri.startswith(s.rstrip("/") + "/")
                               for s in record.subscriptions):
                            await session.write(jsonrpc.encode_notification(
                                "notifications/resources/updated", {"uri": uri}))
                    else:
                        await session.write(jsonrpc.encode_notification(
                            _LIST_NOTIFICATIONS[event.kind], {}))

    async def aclose(self) -> None:
        if self._events is not None:
            self._events.cancel()
            with contextlib.suppress(BaseException):
                await self._events


def _response_dict(message: Response) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "id": message.id}
    if message.error is not None:
        out["error"] = jsonrpc.decode_any(message.error)
    else:
        out["result"] = jsonrpc.decode_any(message.result) if message.result else {}
    return out


def _reply_channel(session_id: str, request_id: jsonrpc.RequestId) -> str:
    return f"legacy-reply:{session_id}:{request_id}"


async def _json(send: Send, status: int, payload: bytes,
                extra: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(payload)).encode()), *(extra or [])]})
    await send({"type": "http.response.body", "body": payload})


async def _empty(send: Send, status: int) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


__all__ = ["LegacyDispatcher", "LegacyShim", "StdioLegacy", "has_modern_marker",
           "legacy_result"]
