"""2025-era clients over stdio: the byte plumbing around ``mcpcore.legacy``.

An ``initialize`` line switches the process into the era (one session per process);
after it, requests go to the dispatcher with a ``Bridge`` whose questions are written as
lines, and the client's response lines resolve them directly (no Store, no re-encoding).
A line with a modern marker in ``_meta`` is still served as 2026-07-28.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Protocol

from mcpcore import jsonrpc
from mcpcore.errors import InvalidRequest
from mcpcore.jsonrpc import Message, Notification, Request, Response
from mcpcore.legacy.bridge import Bridge
from mcpcore.legacy.dispatch import SessionDispatcher
from mcpcore.legacy.era import has_modern_marker
from mcpcore.legacy.notifications import render
from mcpcore.legacy.sessions import SessionManager, SessionRecord
from mcpcore.principal import Principal
from mcpcore.server import Server
from mcpcore.stores.base import StoreError, SubscriptionLagged
from mcpcore.stores.memory import MemoryStore
from mcpcore.subscriptions import CHANNEL, decode_event


class LineSession(Protocol):
    """What the era needs of the stdio line session that feeds it
    (``mcpcore.transports.stdio.StdioSession``, which imports this module, not the
    reverse): write a line, run a request's work, cancel one, and who the peer is."""

    principal: Principal

    async def write(self, message: bytes) -> None: ...

    def spawn(self, request_id: jsonrpc.RequestId, work: Awaitable[bytes]) -> None: ...

    def cancel(self, request_id: jsonrpc.RequestId) -> None: ...


class StdioLegacy:
    """``initialize`` on stdio switches this process into the 2025 era.

    >>> await serve_stdio(server, legacy=StdioLegacy(server, response_timeout=60))
    ... # doctest: +SKIP
    """

    def __init__(self, server: Server, *, response_timeout: float = 300.0) -> None:
        self.server = server
        self.sessions = SessionManager(MemoryStore())
        self.dispatcher = SessionDispatcher(server, self.sessions)
        self.response_timeout = response_timeout
        self.record: SessionRecord | None = None
        self._pending: dict[jsonrpc.RequestId, asyncio.Future[Response]] = {}
        self._events: asyncio.Task[None] | None = None

    def claims(self, message: Message) -> bool:
        if isinstance(message, Response):
            return message.id in self._pending or self.record is not None
        if has_modern_marker(message):
            return False
        return self.record is not None or (
            isinstance(message, Request) and message.method == "initialize")

    async def feed(self, session: LineSession, message: Message) -> None:
        if isinstance(message, Response):
            future = self._pending.get(message.id)
            if future is not None and not future.done():
                future.set_result(message)
            return
        if isinstance(message, Notification):
            if self.record is not None:
                target = await self.dispatcher.notification(self.record, message)
                if target is not None:
                    session.cancel(target)
            return
        if message.method == "initialize":
            await self._initialize(session, message)
            return
        record = self.record
        assert record is not None

        async def exchange(request_id: str, payload: bytes) -> Response:
            future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
            self._pending[request_id] = future
            try:
                await session.write(payload)
                return await future
            finally:
                self._pending.pop(request_id, None)

        bridge = Bridge(record.version, exchange, timeout=self.response_timeout,
                        max_rounds=self.server.mrtr.max_rounds)
        session.spawn(message.id, self.dispatcher.request(
            record, message, sink=session.write, inputs=bridge, principal=session.principal))

    async def _initialize(self, session: LineSession, request: Request) -> None:
        if self.record is not None:
            await session.write(self.dispatcher.error(
                request.id, InvalidRequest("This process is already initialized")))
            return
        try:
            self.record, payload = await self.dispatcher.initialize(request, session.principal)
        except Exception as exc:
            payload = self.dispatcher.error(request.id, exc)
        await session.write(payload)
        if self.record is not None:
            self._events = asyncio.ensure_future(self._forward_events(session))

    async def _forward_events(self, session: LineSession) -> None:
        """Unsolicited notifications (list changes, subscribed updates)."""
        store = self.server.subscriptions.store
        with contextlib.suppress(StoreError, SubscriptionLagged):
            async with store.subscribe(CHANNEL) as sub:
                async for raw in sub:
                    record = self.record
                    event = decode_event(raw)
                    if record is None or event is None:
                        continue
                    message = render(event, record.subscriptions)
                    if message is not None:
                        await session.write(message)

    async def aclose(self) -> None:
        # The one session ends with the process: its resource subscriptions go too.
        self.dispatcher.release_all()
        if self._events is not None:
            self._events.cancel()
            with contextlib.suppress(BaseException):
                await self._events


__all__ = ["StdioLegacy"]
