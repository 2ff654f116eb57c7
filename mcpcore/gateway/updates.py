"""Resource updates through the gateway (server/resources "Subscriptions").

A downstream client that subscribes to a URI (2026-07-28: ``subscriptions/listen`` with
``resourceSubscriptions``; 2025: ``resources/subscribe``) reaches ``acquire`` here
through the engine hub's seam (``SubscriptionHub.interest``). The first listener of a
URI makes the gateway subscribe to the upstream the catalog routes the URI to (its
client's ``listen({"resourceSubscriptions": [uri]})``, which is ``resources/subscribe``
on a 2025 upstream); each ``notifications/resources/updated`` the upstream sends for
that URI (or one below it) is announced on the gateway's own hub
(``server.notify_resource_updated``), which delivers it to the listeners of either
era. The last listener's ``release`` drops the upstream subscription.

Bounds: at most ``max_per_upstream`` URIs subscribed at each upstream (a further one
is refused with ``TooManySubscriptions``, -32600), and at most ``max_per_principal``
of them held by one principal (``TooManyCallerSubscriptions``, -32600): one caller
cannot take every slot of an upstream and keep the others from its updates (a URI
another principal holds already costs the upstream nothing, but counts for each
principal that listens to it). Anonymous callers (a gateway without ``auth``) cannot
be told apart: they share one principal's bound. An update the upstream sends for a
URI it was not asked about is dropped (an upstream speaks only for what it owns and was
asked). Each subscription has been judged before it reaches ``acquire``: by the
engine's one policy seam (``Server.subscribe``: as a ``resources/read`` of its URI, one
audit event, ``PolicyDenied`` unless allowed). An upstream that is down or whose listen
ends is listened to again after a delay growing to ``RETRY_MAX`` seconds, on the
gateway's clock; updates meanwhile are lost (a client re-reads).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from mcpcore.errors import ErrorCode, McpError, ResourceNotFound
from mcpcore.gateway.upstreams import Upstream
from mcpcore.principal import Principal
from mcpcore.resources import ResourceRegistry
from mcpcore.subscriptions import covers
from mcpcore.timing import Clock

log = logging.getLogger("mcpcore.gateway.updates")

#: URIs subscribed at one upstream at once, by default.
MAX_PER_UPSTREAM: Final = 256
#: URIs of one upstream one principal may hold at once, by default.
MAX_PER_PRINCIPAL: Final = 32
#: Seconds before listening again to an upstream whose listen failed: doubling from
#: ``RETRY_MIN`` up to ``RETRY_MAX``.
RETRY_MIN: Final = 1.0
RETRY_MAX: Final = 60.0
UPDATED: Final = "notifications/resources/updated"


class TooManySubscriptions(McpError):
    """The upstream that owns the URI already has as many subscriptions as the gateway
    keeps at one upstream. A well-formed request refused (as ``PolicyDenied``): HTTP
    200 with the JSON-RPC error."""

    code = ErrorCode.INVALID_REQUEST

    def __init__(self, upstream: str, limit: int) -> None:
        super().__init__(
            f"Too many resource subscriptions at upstream {upstream!r} (at most {limit}); "
            "unsubscribe from another of its resources first",
            data={"upstream": upstream, "reason": "too_many_subscriptions", "limit": limit})


class TooManyCallerSubscriptions(McpError):
    """The caller already holds as many subscriptions to the upstream that owns the
    URI as one principal may (``MAX_PER_PRINCIPAL``). A well-formed request refused:
    HTTP 200 with the JSON-RPC error."""

    code = ErrorCode.INVALID_REQUEST

    def __init__(self, upstream: str, limit: int) -> None:
        super().__init__(
            f"Too many resource subscriptions of yours at upstream {upstream!r} (at most "
            f"{limit} per caller); unsubscribe from another of its resources first",
            data={"upstream": upstream, "reason": "too_many_caller_subscriptions",
                  "limit": limit})


@dataclass
class _Held:
    upstream: str
    listeners: int = 0
    #: The listeners of each principal (by ``Principal.key``).
    principals: dict[str, int] = field(default_factory=dict)
    follower: asyncio.Task[None] | None = field(default=None, repr=False)


class ResourceUpdates:
    """The gateway's ``ResourceInterest`` (``mcpcore.subscriptions``): upstream
    subscriptions while downstream listeners want them (module docstring).

    ``resources``: the served catalog's resources, read at each ``acquire`` (the
    registry is swapped on each refresh: ``lambda: server.resources``); ``publish``:
    the gateway server's ``notify_resource_updated``."""

    def __init__(self, upstreams: Mapping[str, Upstream],
                 resources: Callable[[], ResourceRegistry],
                 publish: Callable[[str], Awaitable[None]], *, clock: Clock,
                 max_per_upstream: int = MAX_PER_UPSTREAM,
                 max_per_principal: int = MAX_PER_PRINCIPAL) -> None:
        self.upstreams = upstreams
        self.max_per_upstream = max_per_upstream
        self.max_per_principal = max_per_principal
        self._resources = resources
        self._publish = publish
        self._clock = clock
        self._held: dict[str, _Held] = {}
        #: How many URIs of each upstream each principal holds: (key, upstream) → count.
        self._counts: dict[tuple[str, str], int] = {}

    def subscribed(self, upstream: str) -> list[str]:
        """The URIs subscribed at ``upstream`` now."""
        return [uri for uri, held in self._held.items() if held.upstream == upstream]

    async def acquire(self, uri: str, principal: Principal) -> None:
        resource = self._resources().resolve(uri)[0]  # ResourceNotFound
        owner = resource.upstream
        if owner is None or owner not in self.upstreams:
            raise ResourceNotFound(uri)
        held = self._held.get(uri)
        key = principal.key
        if (held is None or key not in held.principals) \
                and self._counts.get((key, owner), 0) >= self.max_per_principal:
            raise TooManyCallerSubscriptions(owner, self.max_per_principal)
        if held is None:
            if len(self.subscribed(owner)) >= self.max_per_upstream:
                raise TooManySubscriptions(owner, self.max_per_upstream)
            held = self._held[uri] = _Held(owner)
            held.follower = asyncio.ensure_future(
                self._follow(self.upstreams[owner], uri))
        if key not in held.principals:
            self._counts[(key, owner)] = self._counts.get((key, owner), 0) + 1
        held.principals[key] = held.principals.get(key, 0) + 1
        held.listeners += 1

    def release(self, uri: str, principal: Principal) -> None:
        held = self._held.get(uri)
        key = principal.key
        if held is None or key not in held.principals:
            return
        held.principals[key] -= 1
        if held.principals[key] <= 0:
            del held.principals[key]
            count = self._counts.get((key, held.upstream), 0) - 1
            if count > 0:
                self._counts[(key, held.upstream)] = count
            else:
                self._counts.pop((key, held.upstream), None)
        held.listeners -= 1
        if held.listeners <= 0:
            del self._held[uri]
            if held.follower is not None:
                held.follower.cancel()

    async def aclose(self) -> None:
        """Drop every upstream subscription (the gateway is closing)."""
        held, self._held = list(self._held.values()), {}
        self._counts.clear()
        for entry in held:
            if entry.follower is not None:
                entry.follower.cancel()
        for entry in held:
            if entry.follower is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await entry.follower

    async def _follow(self, upstream: Upstream, uri: str) -> None:
        delay = RETRY_MIN
        while True:
            client = upstream.client
            if client is not None:
                try:
                    async with client.listen({"resourceSubscriptions": [uri]}) as sub:
                        delay = RETRY_MIN
                        async for note in sub:
                            params = note.params if isinstance(note.params, dict) else {}
                            changed = params.get("uri")
                            if note.method == UPDATED and isinstance(changed, str) \
                                    and covers(uri, changed):
                                await self._publish(changed)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.info("upstream %s: updates of %s not followed (%s); trying again",
                             upstream.name, uri, exc, extra={"upstream": upstream.name})
            await self._clock.sleep(delay)
            delay = min(delay * 2, RETRY_MAX)


__all__ = ["MAX_PER_PRINCIPAL", "MAX_PER_UPSTREAM", "ResourceUpdates",
           "TooManyCallerSubscriptions", "TooManySubscriptions"]
