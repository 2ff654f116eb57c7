"""RedisStore specifics: real TTLs in Redis, prefixes, PUBSUB NUMSUB after unsubscribe,
and clear, credential-free ``StoreUnavailable`` errors when Redis is gone."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence

import pytest
import redis.asyncio as aioredis

from mcpcore.stores import RedisStore, StoreUnavailable
from tests.support.processes import answers_ping, free_port

pytestmark = pytest.mark.integration


async def test_ttls_reach_redis_in_milliseconds(redis_url: str, raw_redis: aioredis.Redis) -> None:
    store = RedisStore.from_url(redis_url, prefix="ttl:")
    try:
        await store.set("a", b"v", ttl=30.0)
        assert 29_000 < await raw_redis.pttl("ttl:a") <= 30_000
        await store.set_if_absent("b", b"v", ttl=0.0001)  # rounds up to 1 ms, never 0
        await store.set("c", b"v", ttl=None)
        assert await raw_redis.pttl("ttl:c") == -1
    finally:
        await store.close()


async def test_keys_and_channels_are_prefixed(redis_url: str, raw_redis: aioredis.Redis) -> None:
    one = RedisStore.from_url(redis_url, prefix="one:")
    two = RedisStore.from_url(redis_url, prefix="two:")
    default = RedisStore.from_url(redis_url)
    try:
        await one.set("k", b"1", ttl=None)
        await two.set("k", b"2", ttl=None)
        assert await raw_redis.get("one:k") == b"1"
        assert await one.get("k") == b"1" and await two.get("k") == b"2"
        assert default.prefix == "mcpcore:"
        async with two.subscribe("ch") as sub:
            assert await raw_redis.pubsub_numsub("two:ch") == [(b"two:ch", 1)]
            await one.publish("ch", b"not for two")
            await two.publish("ch", b"for two")
            assert await asyncio.wait_for(anext(sub), 2.0) == b"for two"
    finally:
        for store in (one, two, default):
            await store.close()


async def test_unsubscribe_leaves_no_subscriber_in_redis(
    redis_url: str, raw_redis: aioredis.Redis
) -> None:
    store = RedisStore.from_url(redis_url, prefix="ns:")
    try:
        async with store.subscribe("c") as a, store.subscribe("c") as b:
            assert await raw_redis.pubsub_numsub("ns:c") == [(b"ns:c", 2)]
            await store.publish("c", b"m")
            assert await asyncio.wait_for(anext(a), 2.0) == b"m"
            assert await asyncio.wait_for(anext(b), 2.0) == b"m"
        assert await raw_redis.pubsub_numsub("ns:c") == [(b"ns:c", 0)]
        assert store._subscriptions == set()
    finally:
        await store.close()


async def test_close_releases_every_connection(redis_url: str, raw_redis: aioredis.Redis) -> None:
    def ours(clients: Sequence[Mapping[str, object]]) -> int:
        return sum(1 for c in clients if c.get("name") != "probe")

    await raw_redis.client_setname("probe")
    before = ours(await raw_redis.client_list())
    store = RedisStore.from_url(redis_url)
    async with store.subscribe("c"):
        await store.set("k", b"v", ttl=1.0)
        assert ours(await raw_redis.client_list()) == before + 2
    await store.close()
    deadline = time.monotonic() + 2.0
    while ours(await raw_redis.client_list()) != before:
        assert time.monotonic() < deadline, "connections still open after close()"
        await asyncio.sleep(0.01)


async def test_a_closed_port_fails_fast_with_a_clear_message() -> None:
    port = free_port()  # nothing listens here
    store = RedisStore.from_url(f"redis://app:s3cret-pw@127.0.0.1:{port}/0")
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable) as info:
            await store.set_if_absent("k", b"v", ttl=1.0)
        assert time.monotonic() - started < 1.0
        message = str(info.value)
        assert message.startswith(f"Redis at 127.0.0.1:{port} is unavailable: ")
        assert "s3cret" not in message and "app:" not in message
        for call in (store.get("k"), store.publish("c", b"m"), store.ping()):
            with pytest.raises(StoreUnavailable, match="is unavailable"):
                await call
        with pytest.raises(StoreUnavailable, match="is unavailable"):
            async with store.subscribe("c"):
                pass
        assert store._subscriptions == set()
    finally:
        await store.close()


async def test_a_subscriber_learns_when_redis_goes_away(redis_url: str) -> None:
    """A dedicated server, killed under a blocked subscriber: StoreUnavailable, not a hang."""
    binary = shutil.which("redis-server")  # present: the redis_url fixture checked
    assert binary is not None
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    store = RedisStore.from_url(f"redis://127.0.0.1:{port}/0", retries=0)
    try:
        deadline = time.monotonic() + 10.0
        while not answers_ping(port):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        async with store.subscribe("c") as sub:
            reader = asyncio.create_task(anext(sub))
            await asyncio.sleep(0.05)
            proc.kill()
            proc.wait()
            with pytest.raises(StoreUnavailable, match=f"Redis at 127.0.0.1:{port}"):
                await asyncio.wait_for(reader, 5.0)
        with pytest.raises(StoreUnavailable):
            await store.get("k")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        await store.close()


async def test_a_burst_beyond_the_pool_waits_for_connections(redis_url: str) -> None:
    """More concurrent commands than ``max_connections``: they queue for a connection
    instead of failing with "Too many connections" (a thousand tasks ending at once)."""
    store = RedisStore.from_url(redis_url, prefix="burst:", max_connections=2)
    try:
        await asyncio.gather(*(store.set(f"k{i}", b"v", ttl=10) for i in range(50)))
        values = await asyncio.gather(*(store.get(f"k{i}") for i in range(50)))
        assert values == [b"v"] * 50
    finally:
        await store.close()
