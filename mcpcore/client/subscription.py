"""``Subscription``: list changes and resource updates, the same iterator in both eras.

2026-07-28 has one request for it, ``subscriptions/listen`` (patterns/subscriptions): a
long-lived stream whose first message is ``notifications/subscriptions/acknowledged``
naming what the server will honour, and whose end (a graceful result, or us closing it)
ends the subscription.

A 2025 session has no such method: list changes arrive unasked (server/tools
"List Changed Notification"), and resource updates after ``resources/subscribe``
(server/resources "Subscriptions"). So the iterator subscribes each URI, acknowledges
what the server's capabilities allow (``listChanged``, ``subscribe``), yields the
session's notifications that match the filter (a ``resources/updated`` URI matches a
subscribed URI it equals or lies under), and unsubscribes when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from types import TracebackType
from typing import Any, Final, Protocol

import msgspec

from mcpcore import types
from mcpcore.client.era import Era
from mcpcore.client.errors import ClientError, RemoteProtocolError
from mcpcore.client.legacy import LegacyWire
from mcpcore.client.modern import ModernWire
from mcpcore.client.wire import Reply, result_of, to_notification

log = logging.getLogger("mcpcore.client")

ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
#: Notifications waiting for the reader of one 2025-session subscription; past this,
#: the oldest is dropped (logged, counted in ``Client.dropped_notifications``): a reader
#: that stops reading must not let the server fill memory.
MAX_BACKLOG: Final = 1024
#: Filter key → (the notification it asks for, the capability that allows it).
_LIST_KEYS: Final = {
    "toolsListChanged": ("notifications/tools/list_changed", "tools"),
    "promptsListChanged": ("notifications/prompts/list_changed", "prompts"),
    "resourcesListChanged": ("notifications/resources/list_changed", "resources"),
}


class ListeningClient(Protocol):
    """What a ``Subscription`` needs of the ``Client`` that made it (``client.py``
    imports this module, not the reverse)."""

    @property
    def era(self) -> Era | None: ...

    server: types.DiscoverResult | None
    listeners: set[asyncio.Queue[types.Notification]]

    def wire(self) -> ModernWire | LegacyWire: ...

    def invalidate(self, method: str) -> None: ...

    async def subscribe_resource(self, uri: str) -> None: ...

    async def unsubscribe_resource(self, uri: str) -> None: ...


class Subscription:
    """An async iterator of subscription notifications; see ``Client.listen``.

    >>> async with client.listen({"resourceSubscriptions": ["test://a"]}) as sub:  # doctest: +SKIP
    ...     first = await anext(sub)     # notifications/subscriptions/acknowledged
    """

    def __init__(self, client: ListeningClient, notifications: dict[str, Any], *,
                 meta: dict[str, Any] | None = None) -> None:
        self._client = client
        self._filter = notifications
        #: Added to the listen request's ``_meta`` (2026-07-28).
        self._meta = meta
        self._iterator: AsyncGenerator[types.Notification, None] | None = None
        #: The filter the server agreed to honour, once acknowledged.
        self.acknowledged: types.SubscriptionFilter | None = None
        #: The listen request's id, which tags the stream's notifications (2026-07-28).
        self.subscription_id: int | str | None = None
        #: The graceful ``SubscriptionsListenResult``, if the server ended the stream.
        self.result: dict[str, Any] | None = None

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> types.Notification:
        if self._iterator is None:
            self._iterator = (self._legacy() if self._client.era == "legacy"
                              else self._modern())
        return await self._iterator.__anext__()

    async def aclose(self) -> None:
        """End the subscription (2026-07-28: close the stream; 2025: unsubscribe)."""
        iterator, self._iterator = self._iterator, None
        if iterator is not None:
            await iterator.aclose()

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _modern(self) -> AsyncGenerator[types.Notification, None]:
        client = self._client
        wire = client.wire()
        assert isinstance(wire, ModernWire)
        retried = False
        while True:
            renegotiate = False
            params: dict[str, Any] = {"notifications": self._filter}
            if self._meta:
                params["_meta"] = self._meta
            stream = wire.stream("subscriptions/listen", params)
            try:
                request = await anext(stream)  # the request itself: learn its id
                assert isinstance(request, dict)
                self.subscription_id = request["id"]
                async for item in stream:
                    if isinstance(item, Reply):
                        try:
                            self.result = result_of(item, "subscriptions/listen")
                        except RemoteProtocolError as exc:
                            if (retried or self.acknowledged is not None
                                    or not wire.renegotiate(exc)):
                                raise
                            renegotiate = retried = True
                        break
                    note = to_notification(item)
                    if note is None:
                        continue
                    if note.method == ACKNOWLEDGED:
                        self.acknowledged = _acknowledged(note)
                    client.invalidate(note.method)
                    yield note
            finally:
                await stream.aclose()
            if not renegotiate:
                return

    async def _legacy(self) -> AsyncGenerator[types.Notification, None]:
        client = self._client
        capabilities = client.server.capabilities if client.server is not None else None
        honoured: dict[str, Any] = {}
        wanted: set[str] = set()
        for key, (method, kind) in _LIST_KEYS.items():
            capability = getattr(capabilities, kind, None)
            if self._filter.get(key) and getattr(capability, "list_changed", False) is True:
                honoured[key] = True
                wanted.add(method)
        uris: list[str] = []
        asked = self._filter.get("resourceSubscriptions")
        resources = getattr(capabilities, "resources", None)
        queue: asyncio.Queue[types.Notification] = asyncio.Queue(MAX_BACKLOG)
        client.listeners.add(queue)
        try:
            if isinstance(asked, list) and getattr(resources, "subscribe", False) is True:
                for uri in asked:
                    if isinstance(uri, str):
                        await client.subscribe_resource(uri)
                        uris.append(uri)
                honoured["resourceSubscriptions"] = uris
            ack = types.Notification(method=ACKNOWLEDGED, params={"notifications": honoured})
            self.acknowledged = _acknowledged(ack)
            yield ack
            while True:
                note = await queue.get()
                if note.method in wanted or (
                        note.method == "notifications/resources/updated"
                        and _covered(note, uris)):
                    yield note
        finally:
            client.listeners.discard(queue)
            for uri in uris:
                with contextlib.suppress(ClientError, TimeoutError):
                    async with asyncio.timeout(5.0):
                        await client.unsubscribe_resource(uri)


def _covered(note: types.Notification, uris: list[str]) -> bool:
    """Does an updated URI fall under a subscription? Servers may name a sub-resource of
    the subscribed URI (server/resources, "Subscriptions")."""
    params = note.params if isinstance(note.params, dict) else {}
    uri = params.get("uri")
    if not isinstance(uri, str):
        return False
    return any(uri == base or uri.startswith(base.rstrip("/") + "/") for base in uris)


def _acknowledged(note: types.Notification) -> types.SubscriptionFilter | None:
    params = note.params if isinstance(note.params, dict) else {}
    try:
        return msgspec.convert(params.get("notifications") or {}, types.SubscriptionFilter)
    except msgspec.ValidationError:
        return None


__all__ = ["ListeningClient", "Subscription"]
