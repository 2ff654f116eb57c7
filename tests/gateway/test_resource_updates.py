"""Resource updates through the gateway: a downstream client of either era subscribed to
a URI hears ``notifications/resources/updated`` when the upstream that owns it says it
changed (a 2026-07-28 upstream and a 2025 one); the upstream subscription lasts while a
downstream listener wants it; at most ``max_per_upstream`` of them per upstream."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Any

import pytest

from mcpcore import Server, StreamableHTTP
from mcpcore.client import Client
from mcpcore.client.errors import RemoteProtocolError
from mcpcore.gateway.app import Gateway
from mcpcore.gateway.policy import gateway_policy
from mcpcore.gateway.updates import MAX_PER_PRINCIPAL, MAX_PER_UPSTREAM, ResourceUpdates
from mcpcore.policy import MemoryAuditSink, Rule, Ruleset
from mcpcore.principal import ANONYMOUS, PRINCIPAL_SCOPE_KEY, Principal
from mcpcore.resources import ResourceRegistry
from mcpcore.stores.memory import MemoryStore
from mcpcore.timing import SYSTEM_CLOCK
from mcpcore.tools import CATEGORIES
from mcpcore.transports.legacy_http import SWEEP_SECONDS, LegacyShim
from mcpcore.types import Notification
from tests.gateway.inprocess import (
    URL,
    alpha_server,
    beta_server,
    downstream,
    http_client,
    serving,
    two_upstreams,
)
from tests.support.clock import ManualClock, until

ERAS = ["2026-07-28", "legacy"]
#: A URI each upstream owns: alpha speaks 2026-07-28, beta the 2025 wire.
OWNED = [("alpha", "mem://alpha/7"), ("beta", "mem://beta/notes")]
UPDATED = "notifications/resources/updated"


def upstream_servers() -> dict[str, Server]:
    return {"alpha": alpha_server(), "beta": beta_server()}


def apps(servers: dict[str, Server]) -> dict[str, object]:
    return {name: StreamableHTTP(server) for name, server in servers.items()}


async def eventually(check: Callable[[], bool], what: str) -> None:
    for _ in range(500):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"never: {what}")


async def next_update(sub: Any) -> Any:
    async with asyncio.timeout(30):
        async for note in sub:
            if note.method == UPDATED:
                return note
    raise AssertionError("the listen stream ended")


async def announce_until_heard(server: Server, uri: str, sub: Any) -> Any:
    """The upstream announces ``uri`` changed until the downstream hears it (the
    gateway's upstream subscription is made in the background, so the first
    announcements may come before it is in place)."""
    async def keep_announcing() -> None:
        while True:
            await server.notify_resource_updated(uri)
            await asyncio.sleep(0.05)

    announcer = asyncio.ensure_future(keep_announcing())
    try:
        return await next_update(sub)
    finally:
        announcer.cancel()


@pytest.mark.parametrize(("owner", "uri"), OWNED)
@pytest.mark.parametrize("mode", ERAS)
async def test_an_upstream_update_reaches_the_subscriber(mode: str, owner: str, uri: str
                                                         ) -> None:
    servers = upstream_servers()
    async with serving(two_upstreams(), apps(servers)) as gateway, \
            downstream(gateway, mode) as client:
        async with client.listen({"resourceSubscriptions": [uri]}) as sub:
            ack = await anext(sub)
            assert ack.params["notifications"]["resourceSubscriptions"] == [uri]
            assert gateway.updates.subscribed(owner) == [uri]
            note = await announce_until_heard(servers[owner], uri, sub)
            assert note.params["uri"] == uri
        # The last listener went: the upstream subscription goes too.
        await eventually(lambda: gateway.updates.subscribed(owner) == [],
                         "the gateway dropped its subscription")


async def test_the_upstream_subscription_lasts_while_anyone_listens() -> None:
    servers = upstream_servers()
    alpha_hub = servers["alpha"].subscriptions
    uri = "mem://alpha/7"
    async with serving(two_upstreams(), apps(servers)) as gateway, \
            downstream(gateway, "2026-07-28") as modern, \
            downstream(gateway, "legacy") as legacy:
        # The gateway follows alpha's list changes on one stream of its own.
        await eventually(lambda: alpha_hub.active == 1, "the gateway follows alpha's lists")
        async with modern.listen({"resourceSubscriptions": [uri]}) as first:
            await anext(first)
            await eventually(lambda: alpha_hub.active == 2, "one upstream subscription")
            async with legacy.listen({"resourceSubscriptions": [uri]}) as second:
                await anext(second)
                await announce_until_heard(servers["alpha"], uri, second)
                assert alpha_hub.active == 2  # shared: still one upstream subscription
            # One listener left: the upstream subscription stays, and still delivers.
            await asyncio.sleep(0.2)
            assert alpha_hub.active == 2
            assert gateway.updates.subscribed("alpha") == [uri]
            await announce_until_heard(servers["alpha"], uri, first)
        await eventually(lambda: alpha_hub.active == 1, "the upstream subscription ended")
        assert gateway.updates.subscribed("alpha") == []


async def test_a_2025_session_that_ends_drops_its_subscriptions() -> None:
    servers = upstream_servers()
    async with serving(two_upstreams(), apps(servers)) as gateway:
        async with downstream(gateway, "legacy") as client:
            await client.subscribe_resource("mem://beta/notes")
            assert gateway.updates.subscribed("beta") == ["mem://beta/notes"]
            await client.unsubscribe_resource("mem://beta/notes")
            assert gateway.updates.subscribed("beta") == []
            await client.subscribe_resource("mem://beta/notes")
            await client.subscribe_resource("mem://beta/notes")  # once is enough
        # The client closed its session (DELETE) without unsubscribing.
        await eventually(lambda: gateway.updates.subscribed("beta") == [],
                         "the ended session's subscription dropped")


@pytest.mark.parametrize("mode", ERAS)
async def test_subscriptions_per_upstream_are_bounded(mode: str) -> None:
    servers = upstream_servers()
    async with serving(two_upstreams(), apps(servers)) as gateway, \
            downstream(gateway, mode) as client:
        gateway.updates.max_per_upstream = 2
        async with client.listen({"resourceSubscriptions": ["mem://alpha/1",
                                                            "mem://alpha/2"]}) as sub:
            await anext(sub)
            with pytest.raises(RemoteProtocolError) as refused:
                async with client.listen({"resourceSubscriptions": ["mem://alpha/3"]}) \
                        as over:
                    await anext(over)
            assert refused.value.code == -32600
            assert refused.value.data == {"upstream": "alpha",
                                          "reason": "too_many_subscriptions", "limit": 2}
            # Another upstream's count is its own; a URI already held costs nothing (a
            # second client: a 2025 session's subscriptions are one set).
            async with downstream(gateway, mode) as other, \
                    other.listen({"resourceSubscriptions": ["mem://beta/notes",
                                                            "mem://alpha/1"]}) as more:
                await anext(more)
                assert gateway.updates.subscribed("beta") == ["mem://beta/notes"]
            assert sorted(gateway.updates.subscribed("alpha")) == ["mem://alpha/1",
                                                                   "mem://alpha/2"]
        await eventually(lambda: not gateway.updates.subscribed("alpha"), "all dropped")


def as_caller(app: Any, subject: str) -> Any:
    """``app`` behind what an auth middleware does: ``subject`` in the ASGI scope."""
    principal = Principal(subject, issuer="https://idp.example", auth_method="jwt")

    async def signed_in(scope: Any, receive: Any, send: Any) -> None:
        await app({**scope, PRINCIPAL_SCOPE_KEY: principal}, receive, send)

    return signed_in


@contextlib.asynccontextmanager
async def caller(gateway: Gateway, subject: str, mode: str) -> AsyncIterator[Client]:
    async with http_client(as_caller(StreamableHTTP(gateway.server), subject)) as http, \
            Client.http(URL, http_client=http, mode=mode, era_cache=None) as client:
        yield client


@pytest.mark.parametrize("mode", ERAS)
async def test_one_caller_cannot_take_every_subscription_of_an_upstream(mode: str) -> None:
    # The bound was per upstream only: one caller subscribing to MAX_PER_UPSTREAM URIs
    # locked every other caller out of that upstream's updates.
    servers = upstream_servers()
    async with serving(two_upstreams(), apps(servers)) as gateway, \
            caller(gateway, "mallory", mode) as mallory, \
            caller(gateway, "alice", mode) as alice:
        assert gateway.updates.max_per_principal == MAX_PER_PRINCIPAL < MAX_PER_UPSTREAM
        gateway.updates.max_per_upstream, gateway.updates.max_per_principal = 4, 2
        async with mallory.listen({"resourceSubscriptions": ["mem://alpha/1",
                                                             "mem://alpha/2"]}) as taken:
            await anext(taken)
            with pytest.raises(RemoteProtocolError) as refused:
                async with mallory.listen({"resourceSubscriptions": ["mem://alpha/3"]}) \
                        as over:
                    await anext(over)
            assert refused.value.code == -32600
            assert refused.value.data == {"upstream": "alpha", "limit": 2,
                                          "reason": "too_many_caller_subscriptions"}
            assert sorted(gateway.updates.subscribed("alpha")) == ["mem://alpha/1",
                                                                   "mem://alpha/2"]
            # Another caller still gets the upstream's updates: URIs of its own, and
            # one mallory holds (which counts for alice too).
            async with alice.listen({"resourceSubscriptions": ["mem://alpha/1",
                                                               "mem://alpha/9"]}) as sub:
                await anext(sub)
                note = await announce_until_heard(servers["alpha"], "mem://alpha/9", sub)
                assert note.params["uri"] == "mem://alpha/9"
                with pytest.raises(RemoteProtocolError) as full:
                    async with alice.listen({"resourceSubscriptions": ["mem://alpha/8"]}) \
                            as over:
                        await anext(over)
                assert full.value.data["reason"] == "too_many_caller_subscriptions"
        # Released: each caller's count went back down (mallory subscribes again).
        await eventually(lambda: not gateway.updates.subscribed("alpha"), "all dropped")
        async with mallory.listen({"resourceSubscriptions": ["mem://alpha/3",
                                                             "mem://alpha/4"]}) as again:
            await anext(again)


@pytest.mark.parametrize("mode", ERAS)
async def test_a_uri_the_catalog_does_not_route_is_refused(mode: str) -> None:
    async with serving(two_upstreams(), apps(upstream_servers())) as gateway, \
            downstream(gateway, mode) as client:
        with pytest.raises(RemoteProtocolError):
            async with client.listen({"resourceSubscriptions": ["mem://nowhere/x"]}) as sub:
                await anext(sub)
        assert all(not gateway.updates.subscribed(name) for name in ("alpha", "beta"))


@pytest.mark.parametrize("mode", ERAS)
async def test_a_subscription_goes_through_the_policy_like_a_read(mode: str) -> None:
    ruleset = Ruleset((Rule("no-beta", "deny", upstreams={"beta"}),
                       Rule("ask-for-seven", "confirm", tools={"mem://alpha/7"})),
                      default="allow", category_scopes={c: () for c in CATEGORIES})
    policy = gateway_policy(two_upstreams(), ruleset=ruleset, sinks=[MemoryAuditSink()])
    async with serving(two_upstreams(), apps(upstream_servers()), policy=policy) \
            as gateway, downstream(gateway, mode) as client:
        for uri, rule in (("mem://beta/notes", "no-beta"), ("mem://alpha/7", "ask-for-seven")):
            with pytest.raises(RemoteProtocolError) as refused:
                async with client.listen({"resourceSubscriptions": [uri]}) as sub:
                    await anext(sub)
            assert refused.value.code == -32600
            assert refused.value.data["rule"] == rule, uri
        assert not gateway.updates.subscribed("beta")
        assert not gateway.updates.subscribed("alpha")
        async with client.listen({"resourceSubscriptions": ["mem://alpha/8"]}) as sub:
            await anext(sub)
            assert gateway.updates.subscribed("alpha") == ["mem://alpha/8"]


class _Listening:
    """A hostile upstream's client: its listen stream sends ``notes`` then stays open."""

    def __init__(self, notes: list[Notification]) -> None:
        self.notes = notes
        self.asked: list[Any] = []

    @contextlib.asynccontextmanager
    async def listen(self, notifications: Any) -> AsyncIterator[AsyncIterator[Notification]]:
        self.asked.append(notifications)

        async def stream() -> AsyncIterator[Notification]:
            for note in self.notes:
                yield note
            await asyncio.Event().wait()

        yield stream()


async def test_an_upstream_speaks_only_for_what_it_was_asked() -> None:
    updated = [Notification(method=UPDATED, params={"uri": uri}) for uri in (
        "mem://other/secret", "mem://evil/doc-2", "mem://evil/doc/part", "mem://evil/doc")]
    client = _Listening([*updated, Notification(method=UPDATED),
                         Notification(method=UPDATED, params={"uri": 7})])
    upstream = SimpleNamespace(name="evil", client=client)
    resources = ResourceRegistry()
    resources.add_raw({"uri": "mem://evil/doc", "name": "doc"}, _unread, upstream="evil")
    relayed: list[str] = []
    heard = asyncio.Event()

    async def publish(uri: str) -> None:
        relayed.append(uri)
        if uri == "mem://evil/doc":
            heard.set()

    updates = ResourceUpdates({"evil": upstream}, lambda: resources,  # type: ignore[dict-item]
                              publish, clock=SYSTEM_CLOCK)
    await updates.acquire("mem://evil/doc", ANONYMOUS)
    try:
        async with asyncio.timeout(30):
            await heard.wait()
    finally:
        await updates.aclose()
    assert client.asked == [{"resourceSubscriptions": ["mem://evil/doc"]}]
    # Another URI, a sibling sharing a prefix, malformed notes: dropped. The URI and
    # one below it: relayed.
    assert relayed == ["mem://evil/doc/part", "mem://evil/doc"]


async def _unread(uri: str, ctx: Any) -> dict[str, Any]:
    raise AssertionError("not read")


def test_the_gateway_is_the_hubs_interest() -> None:
    gateway = Gateway(two_upstreams())
    assert gateway.server.subscriptions.interest is gateway.updates


# -- 2025 sessions that end without a word -------------------------------------------------
@contextlib.asynccontextmanager
async def legacy_session(app: Any) -> AsyncIterator[Client]:
    async with http_client(app) as http, \
            Client.http(URL, http_client=http, mode="legacy", era_cache=None) as client:
        yield client


async def test_a_2025_session_that_expires_without_a_delete_releases_its_subscriptions(
        ) -> None:
    """A session record expires in the Store after ``idle_ttl`` and nobody is told: the
    shim's sweep finds it gone and releases what this instance held for it (the
    upstream subscriptions end, and no longer count against the upstream's bound)."""
    clock = ManualClock()
    async with serving(two_upstreams(), apps(upstream_servers())) as gateway:
        shim = LegacyShim(gateway.server, store=MemoryStore(clock=clock.monotonic),
                          idle_ttl=600, sleep=clock.sleep)
        async with legacy_session(StreamableHTTP(gateway.server, legacy=shim)) as client:
            await client.subscribe_resource("mem://beta/notes")
            await client.subscribe_resource("mem://alpha/7")
            assert gateway.updates.subscribed("beta") == ["mem://beta/notes"]
            # Idle, but not yet expired: each sweep finds the session and keeps its URIs.
            await clock.advance(SWEEP_SECONDS * 9)
            assert gateway.updates.subscribed("alpha") == ["mem://alpha/7"]
            assert gateway.updates.subscribed("beta") == ["mem://beta/notes"]
            # The client is gone without a DELETE: the record expires, the sweep sees it.
            await clock.advance(600)
            await until(lambda: not shim.dispatcher.held)
            assert gateway.updates.subscribed("alpha") == []
            assert gateway.updates.subscribed("beta") == []
            # Nothing held: the sweeper has stopped.
            await until(lambda: shim._sweeper is not None and shim._sweeper.done())


class Balancer:
    """Two gateway instances behind one address; ``to`` says which gets the next
    request (a round-robin balancer, one step at a time)."""

    def __init__(self, *apps: Any) -> None:
        self.apps = apps
        self.to = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.apps[self.to](scope, receive, send)


async def test_a_2025_session_ended_through_another_instance_releases_its_subscriptions(
        ) -> None:
    """A session subscribes through instance A and is deleted through instance B: B
    holds nothing of it, so it releases nothing (before, B let go of a listener of its
    own, that another session's subscription needed); A's next sweep finds the session
    gone and releases its hold."""
    clock = ManualClock()
    sessions = MemoryStore(clock=clock.monotonic)  # the fleet's shared Store
    servers = upstream_servers()
    async with serving(two_upstreams(), apps(servers)) as first, \
            serving(two_upstreams(), apps(servers)) as second:
        shims = [LegacyShim(gateway.server, store=sessions, sleep=clock.sleep)
                 for gateway in (first, second)]
        balancer = Balancer(*(StreamableHTTP(shim.server, legacy=shim) for shim in shims))
        async with legacy_session(StreamableHTTP(second.server, legacy=shims[1])) as other:
            await other.subscribe_resource("mem://beta/notes")  # B holds it for `other`
            async with legacy_session(balancer) as client:
                await client.subscribe_resource("mem://beta/notes")  # held by A
                balancer.to = 1
                await client.unsubscribe_resource("mem://beta/notes")  # said to B
                await client.subscribe_resource("mem://beta/notes")  # B holds it now
                assert first.updates.subscribed("beta") == ["mem://beta/notes"]
                assert second.updates.subscribed("beta") == ["mem://beta/notes"]
            # The client's DELETE reached B: B lets go of its own hold for it, and keeps
            # the other session's.
            assert second.updates.subscribed("beta") == ["mem://beta/notes"]
            assert second.updates._held["mem://beta/notes"].listeners == 1
            # A still holds its hold until its sweep finds the session gone.
            assert first.updates.subscribed("beta") == ["mem://beta/notes"]
            await clock.advance(SWEEP_SECONDS)
            await until(lambda: not first.updates.subscribed("beta"))
            assert shims[0].dispatcher.held == {}
            assert second.updates.subscribed("beta") == ["mem://beta/notes"]
