"""The fleet's second level for the callers' upstream tokens (``token_cache.py``): two
gateway instances on one Store, against the project's own authorization server. A
token one instance exchanged is used by the other with no request to the
authorization server; it sits in the Store sealed, under a hash; a tampered or
foreign entry, or a Store that is down, costs an exchange, never the call."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpcore import StreamableHTTP
from mcpcore.auth.issuer.authorization_server import LocalAuthorizationServer
from mcpcore.gateway.app import Gateway
from mcpcore.gateway.config import GatewayConfig, SecretRef, UpstreamConfig
from mcpcore.gateway.credentials import UpstreamCredential
from mcpcore.gateway.token_cache import SealedTokenCache
from mcpcore.sealing import KeyRing, Sealer
from mcpcore.stores.base import Store, StoreUnavailable
from mcpcore.stores.memory import MemoryStore
from tests.gateway.inprocess import URL, alpha_server, http_client
from tests.gateway.test_credentials import (
    ALPHA,
    ENVIRON,
    GATEWAY,
    Recording,
    auth_server,
    caller,
    claims,
    exchanges,
    oauth,
    protected,
    text,
)
from tests.stores.storekit import redis_server

__all__ = ["auth_server"]  # the fixture, shared with test_credentials


def config(issuer: str, **gateway: Any) -> GatewayConfig:
    return GatewayConfig(upstreams=(UpstreamConfig(
        "alpha", url=URL, credentials=oauth("token_exchange", issuer, ALPHA)),), **gateway)


def token_requests(server: LocalAuthorizationServer) -> int:
    return sum(1 for r in server.requests if r.path == "/token")


@contextlib.asynccontextmanager
async def fleet(cfg: GatewayConfig, upstream: Any, *, store: Store | None = None,
                environ: dict[str, str] | None = None) -> AsyncIterator[list[Gateway]]:
    """Two gateway instances over the same upstream and Store."""
    async with contextlib.AsyncExitStack() as stack:
        gateways = []
        for _ in range(2):
            client = http_client(upstream)
            stack.push_async_callback(client.aclose)
            gateway = Gateway(cfg, http_clients={"alpha": client}, store=store,
                              environ={**ENVIRON, **(environ or {})})
            stack.push_async_callback(gateway.aclose)
            await gateway.start()
            gateways.append(gateway)
        yield gateways


def shared_of(gateway: Gateway) -> SealedTokenCache:
    credential = gateway.credentials["alpha"]
    assert isinstance(credential, UpstreamCredential) and credential.shared is not None
    return credential.shared


async def call_on(gateway: Gateway, issuer: str, token: str, n: int = 1) -> None:
    async with caller(protected(gateway, issuer), token, "2026-07-28") as client:
        for i in range(n):
            assert await text(client, "alpha__add", {"a": i, "b": 1}) == str(i + 1)


class RecordingStore(MemoryStore):
    """A MemoryStore that records each ``set``'s TTL, and can be "down"."""

    def __init__(self) -> None:
        super().__init__()
        self.ttls: list[float | None] = []
        self.down = False

    async def get(self, key: str) -> bytes | None:
        if self.down:
            raise StoreUnavailable("Redis at 127.0.0.1:1 is unavailable: refused")
        return await super().get(key)

    async def set(self, key: str, value: bytes, *, ttl: float | None) -> None:
        if self.down:
            raise StoreUnavailable("Redis at 127.0.0.1:1 is unavailable: refused")
        self.ttls.append(ttl)
        await super().set(key, value, ttl=ttl)

    def entries(self) -> dict[str, bytes]:
        return {k: v for k, (v, _) in self._data.items()}


async def test_a_token_one_instance_exchanged_is_used_by_the_other_without_the_as(
        auth_server: LocalAuthorizationServer) -> None:
    issuer = auth_server.issuer
    alpha = Recording(StreamableHTTP(alpha_server()))
    store = RecordingStore()
    alice = auth_server.mint(sub="alice", aud=GATEWAY, scope="mcp")
    async with fleet(config(issuer), alpha, store=store) as (one, two):
        before = token_requests(auth_server)
        await call_on(one, issuer, alice, 2)
        assert token_requests(auth_server) == before + 1  # one exchange, then a hit
        await call_on(two, issuer, alice, 3)
        # The other instance: no request at all to the authorization server.
        assert token_requests(auth_server) == before + 1
        assert shared_of(two).counts["hit"] == 1  # then its own in-process cache
        assert shared_of(one).counts["stored"] == 1
        # The Store holds the token sealed, under a hash: neither the token, the
        # caller's token nor the principal's identifiers appear in it.
        entries = store.entries()
        tokens = [t for t in alpha.tokens() if claims(t)["sub"] == "alice"]
        assert len(set(tokens)) == 1
        (name, blob), = [(k, v) for k, v in entries.items() if "gw:token:" in k]
        for secret in (tokens[0], alice, "alice", issuer, ALPHA):
            assert secret not in name and secret.encode() not in blob
        # TTL: the token's remaining life (300 s at this AS) minus the margin (30 s).
        assert store.ttls and 250 < store.ttls[-1] <= 270  # type: ignore[operator]
    # Both instances sent the upstream the same exchanged token, never alice's own.
    assert alice not in alpha.tokens()
    assert {claims(t)["aud"] for t in tokens} == {ALPHA}


async def test_principals_never_share_an_entry(auth_server: LocalAuthorizationServer) -> None:
    issuer = auth_server.issuer
    alpha = Recording(StreamableHTTP(alpha_server()))
    alice = auth_server.mint(sub="alice", aud=GATEWAY, scope="mcp")
    bob = auth_server.mint(sub="bob", aud=GATEWAY, scope="mcp")
    async with fleet(config(issuer), alpha, store=MemoryStore()) as (one, two):
        before = len(exchanges(auth_server))
        await call_on(one, issuer, alice)
        await call_on(two, issuer, bob)  # bob is not a hit on alice's entry
        assert len(exchanges(auth_server)) == before + 2
        await call_on(two, issuer, alice)
        await call_on(one, issuer, bob)
        assert len(exchanges(auth_server)) == before + 2
    subjects = {t: claims(t)["sub"] for t in alpha.tokens()}
    assert set(subjects.values()) >= {"alice", "bob"}


async def test_a_tampered_entry_is_ignored_and_replaced(
        auth_server: LocalAuthorizationServer, caplog: pytest.LogCaptureFixture) -> None:
    issuer = auth_server.issuer
    alpha = Recording(StreamableHTTP(alpha_server()))
    store = RecordingStore()
    alice = auth_server.mint(sub="alice", aud=GATEWAY, scope="mcp")
    async with fleet(config(issuer), alpha, store=store) as (one, two):
        before = len(exchanges(auth_server))
        await call_on(one, issuer, alice)
        (name, blob), = [(k, v) for k, v in store.entries().items() if "gw:token:" in k]
        flipped = blob[:-5] + (b"A" if blob[-5:-4] != b"A" else b"B") + blob[-4:]
        await store.set(name.removeprefix(store.prefix), flipped, ttl=60)
        with caplog.at_level(logging.WARNING, logger="mcpcore.gateway"):
            await call_on(two, issuer, alice)
        assert len(exchanges(auth_server)) == before + 2  # exchanged again
        assert shared_of(two).counts["rejected"] == 1
        assert "a shared token entry is ignored" in caplog.text
        assert store.entries()[name] != flipped  # replaced by a good one


async def test_an_entry_copied_under_another_key_does_not_open(
        auth_server: LocalAuthorizationServer) -> None:
    issuer = auth_server.issuer
    alpha = Recording(StreamableHTTP(alpha_server()))
    store = RecordingStore()
    alice = auth_server.mint(sub="alice", aud=GATEWAY, scope="mcp")
    bob = auth_server.mint(sub="bob", aud=GATEWAY, scope="mcp")
    async with fleet(config(issuer), alpha, store=store) as (one, two):
        await call_on(one, issuer, alice)
        (alices, blob), = [(k, v) for k, v in store.entries().items() if "gw:token:" in k]
        await call_on(one, issuer, bob)
        bobs = next(k for k in store.entries() if "gw:token:" in k and k != alices)
        # Someone with write access to the Store puts alice's entry under bob's key.
        await store.set(bobs.removeprefix(store.prefix), blob, ttl=60)
        before = len(exchanges(auth_server))
        await call_on(two, issuer, bob)
        assert len(exchanges(auth_server)) == before + 1
        assert shared_of(two).counts["rejected"] == 1
    bob_calls = [t for t in alpha.tokens() if claims(t)["sub"] != "gateway"]
    assert claims(bob_calls[-1])["sub"] == "bob"


async def test_an_entry_sealed_with_an_unknown_key_is_ignored(
        auth_server: LocalAuthorizationServer) -> None:
    issuer = auth_server.issuer
    alpha = Recording(StreamableHTTP(alpha_server()))
    alice = auth_server.mint(sub="alice", aud=GATEWAY, scope="mcp")
    async with fleet(config(issuer), alpha, store=MemoryStore()) as (one, two):
        # Another deployment's ring (or a key rotated out) on the second instance.
        two.server.mrtr.sealer = Sealer(KeyRing([("other", bytes(range(32)))]))
        before = len(exchanges(auth_server))
        await call_on(one, issuer, alice)
        await call_on(two, issuer, alice)
        assert len(exchanges(auth_server)) == before + 2
        assert shared_of(two).counts["rejected"] == 1


async def test_a_store_that_is_down_costs_an_exchange_never_the_call(
        auth_server: LocalAuthorizationServer, caplog: pytest.LogCaptureFixture) -> None:
    issuer = auth_server.issuer
    alpha = Recording(StreamableHTTP(alpha_server()))
    store = RecordingStore()
    alice = auth_server.mint(sub="alice", aud=GATEWAY, scope="mcp")
    bob = auth_server.mint(sub="bob", aud=GATEWAY, scope="mcp")
    async with fleet(config(issuer), alpha, store=store) as (one, two):
        shared_of(one).store = shared_of(two).store = store
        store.down = True
        before = len(exchanges(auth_server))
        with caplog.at_level(logging.WARNING, logger="mcpcore.gateway"):
            await call_on(one, issuer, alice)
            await call_on(one, issuer, bob)
            await call_on(two, issuer, alice)
        assert len(exchanges(auth_server)) == before + 3
        assert shared_of(one).counts["error"] == 4  # two reads, two writes
        # One line when the outage starts, not one per call.
        assert caplog.text.count("the shared token cache failed") == 2  # per instance
        store.down = False
        await call_on(two, issuer, bob)
        assert len(exchanges(auth_server)) == before + 4
        assert shared_of(two).counts["stored"] == 1
        assert "answers again" in caplog.text


async def test_without_a_store_nothing_is_shared(auth_server: LocalAuthorizationServer) -> None:
    alpha = Recording(StreamableHTTP(alpha_server()))
    async with fleet(config(auth_server.issuer), alpha) as (one, _):
        credential = one.credentials["alpha"]
        assert isinstance(credential, UpstreamCredential) and credential.shared is None


@pytest.mark.integration
async def test_two_gateways_on_a_real_redis_share_one_exchange(
        auth_server: LocalAuthorizationServer) -> None:
    from redis.asyncio import Redis

    issuer = auth_server.issuer
    alpha = Recording(StreamableHTTP(alpha_server()))
    alice = auth_server.mint(sub="alice", aud=GATEWAY, scope="mcp")
    with redis_server() as url:
        cfg = config(issuer, store_url=SecretRef(env="GW_REDIS"))
        async with fleet(cfg, alpha, environ={"GW_REDIS": url}) as (one, two):
            assert type(one.store).__name__ == "RedisStore"
            before = token_requests(auth_server)
            await call_on(one, issuer, alice)
            await call_on(two, issuer, alice, 2)
            assert token_requests(auth_server) == before + 1
            assert shared_of(two).counts["hit"] == 1
            raw = Redis.from_url(url)
            try:
                keys = [k.decode() for k in await raw.keys("*gw:token:*")]
                assert len(keys) == 1
                ttl = await raw.ttl(keys[0])
                value = await raw.get(keys[0])
            finally:
                await raw.aclose()
            assert 250 < ttl <= 270
            token = next(t for t in alpha.tokens() if claims(t)["sub"] == "alice")
            for secret in (token, alice, "alice"):
                assert secret not in keys[0] and secret.encode() not in value


async def test_the_shared_cache_is_counted_on_metrics(
        auth_server: LocalAuthorizationServer) -> None:
    from prometheus_client import CollectorRegistry

    from mcpcore.gateway.metrics import GatewayMetrics

    issuer = auth_server.issuer
    alpha = Recording(StreamableHTTP(alpha_server()))
    alice = auth_server.mint(sub="alice", aud=GATEWAY, scope="mcp")
    async with fleet(config(issuer), alpha, store=MemoryStore()) as (one, two):
        registry = CollectorRegistry()
        GatewayMetrics(two, registry=registry)
        await call_on(one, issuer, alice)
        await call_on(two, issuer, alice)
        value = registry.get_sample_value("mcpcore_gateway_token_cache_total",
                                          {"upstream": "alpha", "outcome": "hit"})
        assert value == 1.0
