"""Sessions of the 2025 era (2025-11-25, 2025-06-18, 2025-03-26): records, their state
table, and the errors a session can meet.

A legacy client opens a session with ``initialize``; the server mints an unguessable
``Mcp-Session-Id`` and remembers the negotiated version, the client's capabilities, its
log level and its resource subscriptions. The record lives in the ``Store`` (memory by
default, Redis for a fleet) under ``session:<id>`` with an idle TTL, so any instance can
serve any request of the session.

Everything that affects the session lifecycle lives in this file (as h11/_state.py does
for HTTP/1.1): the ``TRANSITIONS`` table maps (phase, event) to the next phase; anything
not in it is a protocol error.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

import msgspec

from mcpcore.errors import InvalidParams, InvalidRequest
from mcpcore.meta import LOG_LEVEL_RANK, RequestMeta
from mcpcore.stores.base import Store, StoreError
from mcpcore.versions import LEGACY, negotiate_legacy

Phase = Literal["initializing", "ready", "closed"]
SessionEvent = Literal["initialized", "request", "notification", "response", "delete"]

#: (phase, event) → next phase. Requests are allowed before ``notifications/initialized``
#: because clients commonly pipeline them right after the initialize response.
TRANSITIONS: Final[dict[tuple[Phase, SessionEvent], Phase]] = {
    ("initializing", "initialized"): "ready",
    ("initializing", "request"): "initializing",
    ("initializing", "notification"): "initializing",
    ("initializing", "response"): "initializing",
    ("initializing", "delete"): "closed",
    ("ready", "initialized"): "ready",
    ("ready", "request"): "ready",
    ("ready", "notification"): "ready",
    ("ready", "response"): "ready",
    ("ready", "delete"): "closed",
}

SESSION_PREFIX: Final = "session:"
DEFAULT_IDLE_TTL: Final = 3600.0


class SessionStateError(InvalidRequest):
    """An event the session's phase does not allow."""


class SessionNotFound(InvalidRequest):
    """Unknown, expired, deleted, or someone else's session: HTTP 404, so the client
    starts a new one (2025-11-25 transports.mdx, "Session Management")."""

    http_status = 404
    default_message = "Session not found: initialize a new session"


class StreamAlreadyOpen(InvalidRequest):
    """A second GET stream for a session: HTTP 409 (one stream per session, fleet-wide,
    so no message is broadcast across streams)."""

    http_status = 409
    default_message = "This session already has a GET stream open"


def next_phase(phase: Phase, event: SessionEvent) -> Phase:
    try:
        return TRANSITIONS[(phase, event)]
    except KeyError:
        raise SessionStateError(f"Session is {phase}: {event} is not allowed") from None


class SessionRecord(msgspec.Struct, kw_only=True):
    id: str
    version: str
    capabilities: dict[str, Any]
    client_info: dict[str, Any] | None = None
    #: ``Principal.key`` of whoever opened the session; only they may use it.
    principal: str = ""
    log_level: str | None = None
    subscriptions: list[str] = msgspec.field(default_factory=list)
    phase: Phase = "initializing"
    created: float = 0.0
    #: When the record was last written; activity refreshes the idle TTL.
    touched: float = 0.0

    def meta(self, progress_token: str | int | None = None) -> RequestMeta:
        """What the engine needs per request, taken from the session."""
        # Capability shapes are the same in both eras (``elicitation: {}`` = form only).
        return RequestMeta(protocol_version=self.version,
                           client_capabilities=self.capabilities,
                           client_info=self.client_info, log_level=self.log_level,
                           progress_token=progress_token)


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(SessionRecord).decode


@dataclass
class SessionManager:
    """Create, load, update and end session records in a ``Store``."""

    store: Store
    idle_ttl: float = DEFAULT_IDLE_TTL
    supported: tuple[str, ...] = LEGACY
    clock: Callable[[], float] = time.time

    def negotiate(self, requested: Any) -> str:
        return negotiate_legacy(requested if isinstance(requested, str) else "",
                                self.supported)

    async def create(self, *, version: str, capabilities: dict[str, Any],
                     client_info: dict[str, Any] | None, principal: str = ""
                     ) -> SessionRecord:
        record = SessionRecord(
            # 256 bits, URL-safe: visible ASCII only, as the transport requires.
            id=secrets.token_urlsafe(32), version=version, capabilities=capabilities,
            client_info=client_info, principal=principal, created=self.clock(),
        )
        try:
            await self.save(record)
        except StoreError:
            # The write may have landed though its answer did not (a timeout as Redis
            # comes back): the client is told to retry and opens another session, so
            # this one is removed now rather than left to its idle TTL (best effort).
            with contextlib.suppress(StoreError):
                await self.store.delete(SESSION_PREFIX + record.id)
            raise
        return record

    async def load(self, session_id: str, principal: str | None = None
                   ) -> SessionRecord | None:
        """The session, or None if unknown, expired, or (when ``principal`` is given)
        opened by someone else: a stolen session id is as good as none."""
        if not session_id or len(session_id) > 128:
            return None
        raw = await self.store.get(SESSION_PREFIX + session_id)
        if raw is None:
            return None
        try:
            record = _decode(raw)
        except msgspec.DecodeError:
            return None
        if principal is not None and not secrets.compare_digest(record.principal, principal):
            return None
        return record

    async def save(self, record: SessionRecord) -> None:
        record.touched = self.clock()
        await self.store.set(SESSION_PREFIX + record.id, _encode(record), ttl=self.idle_ttl)

    async def apply(self, record: SessionRecord, event: SessionEvent) -> SessionRecord:
        phase = next_phase(record.phase, event)
        if phase == "closed":
            await self.store.delete(SESSION_PREFIX + record.id)
        elif phase != record.phase:
            record.phase = phase
            await self.save(record)
        elif self.clock() - record.touched > self.idle_ttl / 10:
            # Activity keeps a session alive; rewriting at most every tenth of the TTL
            # keeps the Store traffic of a busy session low.
            await self.save(record)
        return record

    async def set_log_level(self, record: SessionRecord, level: Any) -> None:
        if level not in LOG_LEVEL_RANK:
            raise InvalidParams(f"Invalid log level: {level!r}")
        record.log_level = level
        await self.save(record)

    async def subscribe(self, record: SessionRecord, uri: str) -> None:
        if uri not in record.subscriptions:
            record.subscriptions.append(uri)
            await self.save(record)

    async def unsubscribe(self, record: SessionRecord, uri: str) -> None:
        if uri in record.subscriptions:
            record.subscriptions.remove(uri)
            await self.save(record)


__all__ = ["SESSION_PREFIX", "TRANSITIONS", "SessionManager", "SessionNotFound",
           "SessionRecord", "SessionStateError", "StreamAlreadyOpen", "next_phase"]
