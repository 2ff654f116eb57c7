"""One session request in, its encoded response out: the 2025 era's dispatcher.

``initialize`` opens a session (version negotiation among the era's revisions, the
client's capabilities, a record in the Store); ``ping``, ``logging/setLevel`` and
``resources/subscribe``/``unsubscribe`` are the session's own; every other method goes
through ``Server.dispatch`` with the session's revision and capabilities as its meta, so
the same handlers serve both eras. Results keep the era's shape: the route's body as it
is (the 2026-07-28 stamps ``resultType``, cache hints and ``serverInfo`` are never
added), and a missing resource is -32002, the code the era uses for it.

Shared by both transports (``transports/legacy_http.py`` and ``legacy_stdio.py``), which
only move the bytes.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import msgspec

from mcpcore import jsonrpc
from mcpcore.context import Context, InputStrategy, Sink
from mcpcore.errors import (
    InternalError,
    InvalidParams,
    InvalidRequest,
    McpError,
    ResourceNotFound,
    as_mcp_error,
)
from mcpcore.jsonrpc import Notification, Request, RequestId
from mcpcore.legacy.sessions import SessionManager, SessionRecord
from mcpcore.principal import Principal
from mcpcore.server import Server
from mcpcore.stores.base import StoreError

log = logging.getLogger("mcpcore.legacy")

#: 2025-era code for a resource that does not exist (2025-11-25 resources.mdx, "Error
#: Handling"); 2026-07-28 uses -32602.
RESOURCE_NOT_FOUND: Final = -32002

class _InitializeParams(msgspec.Struct, rename="camel"):
    protocol_version: Any = None
    capabilities: Any = None
    client_info: Any = None


class _LevelParams(msgspec.Struct):
    level: str


class _UriParams(msgspec.Struct):
    uri: str


class _CancelParams(msgspec.Struct, rename="camel"):
    request_id: int | str | None = None


class SessionResourceNotFound(McpError):
    """-32002 with ``data.uri``: what the era expects for a missing resource."""

    code = RESOURCE_NOT_FOUND

    def __init__(self, uri: str) -> None:
        super().__init__("Resource not found", data={"uri": uri})


def _params(request: Request, type_: type[Any]) -> Any:
    try:
        return msgspec.json.decode(request.params or b"{}", type=type_)
    except msgspec.ValidationError as exc:
        raise InvalidParams(f"Invalid params: {exc}") from None


class SessionDispatcher:
    """Session-scoped methods plus the engine, for HTTP and stdio alike."""

    def __init__(self, server: Server, sessions: SessionManager) -> None:
        self.server = server
        self.sessions = sessions
        #: The resource URIs this instance holds (``Server.subscribe``) for each session
        #: id: each released when its session unsubscribes, ends, or is found gone
        #: (``sweep``: a session that expires sends no word of it).
        self.held: dict[str, set[str]] = {}
        #: Whose each session's held URIs are (a session is one principal's), for the
        #: hub's ``release``.
        self.holders: dict[str, Principal] = {}

    # -- opening a session ---------------------------------------------------------------
    def initialize_result(self, version: str) -> dict[str, Any]:
        result: dict[str, Any] = {"protocolVersion": version,
                                  "capabilities": self.server.capabilities(version),
                                  "serverInfo": self.server.server_info}
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    async def initialize(self, request: Request, principal: Principal
                         ) -> tuple[SessionRecord, bytes]:
        """Negotiate, create the session record; the record and the encoded response."""
        params = _params(request, _InitializeParams)
        if params.capabilities is not None and not isinstance(params.capabilities, dict):
            raise InvalidParams("initialize: capabilities must be an object")
        version = self.sessions.negotiate(params.protocol_version)
        info = params.client_info if isinstance(params.client_info, dict) else None
        record = await self.sessions.create(version=version,
                                            capabilities=params.capabilities or {},
                                            client_info=info, principal=principal.key)
        return record, jsonrpc.encode_result(request.id, self.initialize_result(version))

    # -- a session's messages ------------------------------------------------------------
    async def request(self, record: SessionRecord, request: Request, *, sink: Sink,
                      inputs: InputStrategy, principal: Principal) -> bytes:
        """Serve one request of a session; the encoded response (result or error)."""
        try:
            result = await self._serve(record, request, sink=sink, inputs=inputs,
                                       principal=principal)
        except Exception as exc:
            return self.error(request.id, exc)
        return jsonrpc.encode_result(request.id, result)

    async def _serve(self, record: SessionRecord, request: Request, *, sink: Sink,
                     inputs: InputStrategy, principal: Principal) -> dict[str, Any]:
        method = request.method
        await self.sessions.apply(record, "request")
        if method == "ping":
            return {}
        if method == "initialize":
            raise InvalidRequest("The session is already initialized")
        if method == "logging/setLevel":
            await self.sessions.set_log_level(record, _params(request, _LevelParams).level)
            return {}
        if method == "resources/subscribe":
            uri = _params(request, _UriParams).uri
            if uri in record.subscriptions:
                return {}
            held: list[str] = []
            if uri not in self.held.get(record.id, ()):  # never held twice here
                # Through the server's policy gate (one audit event), then held until the
                # unsubscribe or the session's end.
                held = await self.server.subscribe(
                    Context(request.id, method, record.meta(), principal), [uri])
            try:
                await self.sessions.subscribe(record, uri)
            except BaseException:
                self.server.subscriptions.release(held, principal)
                raise
            if held:
                self.held.setdefault(record.id, set()).update(held)
                self.holders.setdefault(record.id, principal)
            return {}
        if method == "resources/unsubscribe":
            uri = _params(request, _UriParams).uri
            if uri in record.subscriptions:
                await self.sessions.unsubscribe(record, uri)
            self._drop(record.id, {uri})
            return {}
        outcome = await self.server.dispatch(request, meta=record.meta(), inputs=inputs,
                                             principal=principal, sink=sink)
        return outcome.body

    async def close(self, record: SessionRecord) -> None:
        """End the session (its client's DELETE): its resource subscriptions go too (the
        ones another instance holds go at that instance's next ``sweep``)."""
        await self.sessions.apply(record, "delete")
        self._drop(record.id, self.held.get(record.id, set()))

    # -- the resource subscriptions this instance holds ----------------------------------
    def _drop(self, session_id: str, uris: set[str]) -> None:
        """Release what this instance holds of ``uris`` for the session."""
        mine = self.held.get(session_id)
        if mine is None:
            return
        gone = mine & uris
        mine -= gone
        principal = self.holders[session_id]
        if not mine:
            del self.held[session_id]
            del self.holders[session_id]
        self.server.subscriptions.release(sorted(gone), principal)

    async def sweep(self) -> int:
        """Release what this instance holds for sessions that are gone (expired in the
        Store without a DELETE, or deleted through another instance) and for URIs their
        session no longer subscribes to (unsubscribed through another instance): one
        Store read per session that holds something here. The number of URIs released;
        a session the Store cannot be asked about now keeps its URIs until next time."""
        released = 0
        for session_id in list(self.held):
            # What was held before the read: a subscription made meanwhile is not judged
            # against a record read before it was saved.
            candidates = set(self.held.get(session_id, ()))
            try:
                record = await self.sessions.load(session_id)
            except StoreError as exc:
                log.warning("could not look up a legacy session's subscriptions: %s", exc)
                continue
            gone = candidates - (set(record.subscriptions) if record is not None else set())
            self._drop(session_id, gone)
            released += len(gone)
        return released

    def release_all(self) -> None:
        """Release everything this instance holds (its sessions end with it)."""
        for session_id in list(self.held):
            self._drop(session_id, set(self.held[session_id]))

    async def notification(self, record: SessionRecord, message: Notification
                           ) -> RequestId | None:
        """Apply a client notification; the id of the request to cancel, if it is
        ``notifications/cancelled`` (the transport owns the tasks)."""
        if message.method == "notifications/initialized":
            await self.sessions.apply(record, "initialized")
            return None
        if message.method == "notifications/cancelled":
            try:
                return msgspec.json.decode(message.params or b"{}",
                                           type=_CancelParams).request_id
            except msgspec.DecodeError:
                return None  # an invalid cancellation is ignored
        await self.sessions.apply(record, "notification")
        return None

    def error(self, request_id: RequestId | None, exc: BaseException) -> bytes:
        """The era's one mapping of an exception to a JSON-RPC error response."""
        if isinstance(exc, ResourceNotFound):
            exc = SessionResourceNotFound(exc.uri)
        elif isinstance(exc, StoreError):
            log.error("store failure in a session request: %s", exc)
            exc = InternalError()
        return jsonrpc.encode_error(request_id, as_mcp_error(exc, "session request"))


__all__ = ["RESOURCE_NOT_FOUND", "SessionDispatcher", "SessionResourceNotFound"]
