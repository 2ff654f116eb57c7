"""``subscriptions/listen``: change notifications on a long-lived request stream.

A listen request names what it wants (``toolsListChanged``, ``promptsListChanged``,
``resourcesListChanged``, ``resourceSubscriptions``, and with the tasks extension
``taskIds``: ``notifications/tasks`` for those tasks, ``mcpcore.tasks.engine``). We
subscribe to the Store's event channel first, then send
``notifications/subscriptions/acknowledged`` with the subset we honour, so every change
announced after the acknowledgement is delivered. Every notification on the stream
carries ``_meta["io.modelcontextprotocol/subscriptionId"]`` = the listen request's id,
with its JSON type kept (subscriptions.mdx).

Server authors announce changes with ``server.notify_list_changed("tools")`` or
``server.notify_resource_updated(uri)``. With the in-memory store (the default) events
reach listeners of this process; with ``RedisStore`` they reach listeners on every
instance. The stream ends when the client goes away (task cancelled); gracefully with
the listen result when the server closes the hub (shutting down: subscriptions.mdx,
"Graceful Closure"); or with a JSON-RPC error when events were lost, so the client knows
to look again and listen again: the Store became unreachable (``StoreUnavailable``, HTTP
503 if nothing was sent yet), or the listener fell behind (bounded queue: a slow listener
is dropped, never grows memory).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

import msgspec

from mcpcore.errors import InternalError, NotAcceptable
from mcpcore.meta import SUBSCRIPTION_ID
from mcpcore.params import ListenParams, SubscriptionFilter
from mcpcore.principal import Principal
from mcpcore.stores.base import Store, SubscriptionLagged
from mcpcore.stores.memory import MemoryStore

if TYPE_CHECKING:
    from mcpcore.context import Context

log = logging.getLogger("mcpcore.subscriptions")

CHANNEL: Final = "events"
ListKind = Literal["tools", "prompts", "resources"]
#: The notification announcing each kind of list change.
LIST_CHANGED: Final = {
    "tools": "notifications/tools/list_changed",
    "prompts": "notifications/prompts/list_changed",
    "resources": "notifications/resources/list_changed",
}
_FILTER_FIELDS: Final = {
    "tools": "toolsListChanged",
    "prompts": "promptsListChanged",
    "resources": "resourcesListChanged",
}


class Event(msgspec.Struct, omit_defaults=True):
    """One change, as it travels through the Store."""

    kind: Literal["tools", "prompts", "resources", "updated", "task"]
    uri: str | None = None
    task_id: str | None = None


_encode_event = msgspec.json.Encoder().encode
_decode_event = msgspec.json.Decoder(Event).decode


class Watch(Protocol):
    """What a listen stream asks of the tasks it reports on (its ``taskIds``): the
    tasks extension's ``TaskWatch`` (``mcpcore.tasks.engine``, which imports this
    module, not the reverse)."""

    @property
    def interval(self) -> float | None:
        """Seconds between looks while an unfinished task is watched; else None."""
        ...

    async def acknowledge(self) -> list[str]: ...

    async def poll(self) -> list[dict[str, Any]]: ...

    async def changed(self, task_id: str) -> dict[str, Any] | None: ...


class ResourceInterest(Protocol):
    """Told when downstream clients start and stop wanting updates of a resource URI:
    a 2026-07-28 listen stream's ``resourceSubscriptions`` (for the stream's life), a
    2025 session's ``resources/subscribe`` (until ``resources/unsubscribe`` or the
    session's end). A gateway subscribes to the URI's owner upstream while anyone
    wants it (``mcpcore.gateway.updates``). Each ``acquire`` that returns is matched by
    exactly one ``release`` of the same URI and principal (so an interest can bound
    what each principal holds)."""

    async def acquire(self, uri: str, principal: Principal) -> None:
        """One more listener (``principal``'s) wants ``uri``; raise an ``McpError`` to
        refuse it."""
        ...

    def release(self, uri: str, principal: Principal) -> None:
        """One listener (``principal``'s) of ``uri`` went away."""
        ...


class SubscriptionGate(Protocol):
    """Judges one resource subscription before anyone holds it: the server's policy
    seam (``Server.subscribe``, which passes its gate to ``SubscriptionHub.acquire``
    and ``listen``). Runs ``acquire`` (the hub's hold on ``uri``) if the subscription is
    admitted, else raises the ``McpError`` that refuses it."""

    async def __call__(self, ctx: Context, uri: str,
                       acquire: Callable[[], Awaitable[None]]) -> None: ...


class SubscriptionHub:
    """Fan-out of change events to listen streams, through a ``Store``."""

    def __init__(self, store: Store | None = None) -> None:
        self.store: Store = store if store is not None else MemoryStore()
        # One future per open stream, made on the stream's own loop: a module-level
        # server may serve several event loops over its life (tests, reloads), so the
        # hub holds nothing bound to one loop.
        self._closers: set[asyncio.Future[None]] = set()
        self.active = 0
        #: Told of each URI downstream listeners subscribe to and leave (None: nobody).
        self.interest: ResourceInterest | None = None

    async def acquire(self, uris: Iterable[str], ctx: Context,
                      gate: SubscriptionGate | None = None) -> list[str]:
        """Tell ``interest`` that ``ctx``'s listener wants each of ``uris`` (each URI
        once), each first admitted by ``gate`` (the server's policy); the URIs
        acquired, for ``release``. If one is refused, the ones before it are released
        and the refusal is raised: all or nothing."""
        interest = self.interest
        held: list[str] = []
        if interest is None and gate is None:
            return held

        async def hold(uri: str) -> None:
            if interest is not None:
                await interest.acquire(uri, ctx.principal)
                held.append(uri)

        try:
            for uri in dict.fromkeys(uris):
                if gate is None:
                    await hold(uri)
                else:
                    await gate(ctx, uri, functools.partial(hold, uri))
        except BaseException:
            self.release(held, ctx.principal)
            raise
        return held

    def release(self, uris: Iterable[str], principal: Principal) -> None:
        """The listener of ``uris`` (what ``acquire`` returned for ``principal``'s
        request) went away."""
        if self.interest is not None:
            for uri in uris:
                self.interest.release(uri, principal)

    async def publish(self, event: Event) -> None:
        await self.store.publish(CHANNEL, _encode_event(event))

    async def close(self) -> None:
        """End every listen stream gracefully (each gets its listen result)."""
        for closer in list(self._closers):
            if not closer.done():
                closer.set_result(None)

    async def listen(self, params: ListenParams, ctx: Context,
                     capabilities: Mapping[str, Any], watch: Watch | None = None,
                     gate: SubscriptionGate | None = None) -> dict[str, Any]:
        """Serve one listen stream until it ends; the listen result's body.

        ``capabilities``: the server's, which say which list changes it announces;
        ``watch``: the tasks the stream reports on, if it asked for ``taskIds``;
        ``gate``: judges each of its ``resourceSubscriptions`` (``acquire``)."""
        if not ctx.streaming:
            raise NotAcceptable("subscriptions/listen answers with a stream: "
                                "Accept must allow text/event-stream")
        honoured = honoured_filter(capabilities, params.notifications)
        sub_meta = {SUBSCRIPTION_ID: ctx.request_id}
        held = await self.acquire(honoured.get("resourceSubscriptions", ()), ctx, gate)
        closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._closers.add(closed)
        self.active += 1
        try:
            async with self.store.subscribe(CHANNEL) as subscription:
                if watch is not None:
                    honoured["taskIds"] = await watch.acknowledge()
                await ctx.notify("notifications/subscriptions/acknowledged",
                                {"_meta": sub_meta, "notifications": honoured})
                if watch is not None:  # where each task is now: nothing is missed
                    await _send_tasks(ctx, sub_meta, await watch.poll())
                nxt: asyncio.Future[bytes] | None = None
                try:
                    while True:
                        if nxt is None:
                            nxt = asyncio.ensure_future(subscription.__anext__())
                        waiters: set[asyncio.Future[Any]] = {nxt, closed}
                        done, _ = await asyncio.wait(
                            waiters, timeout=watch.interval if watch is not None else None,
                            return_when=asyncio.FIRST_COMPLETED)
                        if closed in done:
                            break  # the hub is closing: end with the listen result
                        if not done:  # a look at the watched tasks (a dead worker)
                            assert watch is not None
                            await _send_tasks(ctx, sub_meta, await watch.poll())
                            continue
                        try:
                            raw = nxt.result()
                        except StopAsyncIteration:
                            break  # the store closed: a graceful end
                        except SubscriptionLagged:
                            log.warning("listen stream %r dropped: it fell behind",
                                        ctx.request_id)
                            raise ListenerLagged() from None
                        nxt = None
                        event = decode_event(raw)
                        if event is not None and event.kind == "task":
                            if watch is not None and event.task_id is not None:
                                body = await watch.changed(event.task_id)
                                await _send_tasks(ctx, sub_meta, [body] if body else [])
                            continue
                        notification = _notification_for(event, honoured)
                        if notification is not None:
                            method, body = notification
                            body["_meta"] = sub_meta
                            await ctx.notify(method, body)
                finally:
                    if nxt is not None and not nxt.done():
                        nxt.cancel()
                        nxt.add_done_callback(discard_outcome)
        finally:
            self._closers.discard(closed)
            closed.cancel()
            self.active -= 1
            self.release(held, ctx.principal)
        return {"_meta": dict(sub_meta)}


async def _send_tasks(ctx: Context, sub_meta: dict[str, Any],
                      bodies: list[dict[str, Any]]) -> None:
    for body in bodies:
        body["_meta"] = sub_meta
        await ctx.notify("notifications/tasks", body)


class ListenerLagged(InternalError):
    """A listen stream fell behind its bounded queue and was dropped: events were lost,
    so it ends with this error rather than a result; the client should read again what
    it watches and listen again."""

    default_message = ("Listen stream dropped: it fell behind and events were lost; "
                       "read again what you watch and listen again")

    def __init__(self) -> None:
        super().__init__(data={"reason": "lagged"})


def discard_outcome(future: asyncio.Future[Any]) -> None:
    """Mark a cancelled helper future's outcome as seen (no "never retrieved" noise)."""
    if not future.cancelled():
        future.exception()


def honoured_filter(caps: Mapping[str, Any], wanted: SubscriptionFilter) -> dict[str, Any]:
    """The part of a filter a server with capabilities ``caps`` can deliver (dropping
    the rest, as subscriptions.mdx allows: the acknowledgement says what is honoured)."""
    out: dict[str, Any] = {}
    for kind, field in _FILTER_FIELDS.items():
        value = getattr(wanted, _snake(field))
        if value and "listChanged" in caps.get(kind, {}):
            out[field] = True
    uris = wanted.resource_subscriptions
    if uris and caps.get("resources", {}).get("subscribe"):
        out["resourceSubscriptions"] = list(uris)
    return out


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def covers(subscribed: str, uri: str) -> bool:
    """Does a subscription to ``subscribed`` cover an update of ``uri``? The URI itself,
    or one below it: a change inside a subscribed directory counts."""
    return uri == subscribed or uri.startswith(subscribed.rstrip("/") + "/")


def decode_event(raw: bytes) -> Event | None:
    """One event from the Store's channel; ``None`` (logged) if it is malformed."""
    try:
        return _decode_event(raw)
    except msgspec.DecodeError:
        log.warning("ignoring a malformed event on the %r channel", CHANNEL)
        return None


def _notification_for(event: Event | None, honoured: Mapping[str, Any]
                      ) -> tuple[str, dict[str, Any]] | None:
    if event is None:
        return None
    if event.kind == "updated":
        uri = event.uri or ""
        if any(covers(s, uri) for s in honoured.get("resourceSubscriptions", ())):
            return "notifications/resources/updated", {"uri": uri}
        return None
    if honoured.get(_FILTER_FIELDS[event.kind]):
        return LIST_CHANGED[event.kind], {}
    return None


__all__ = ["CHANNEL", "LIST_CHANGED", "Event", "ListenerLagged", "ResourceInterest",
           "SubscriptionGate",
           "SubscriptionHub", "covers",
           "decode_event", "discard_outcome", "honoured_filter"]
