"""RedisStore specifics: real TTLs in Redis, prefixes, PUBSUB NUMSUB after unsubscribe,
clear, credential-free ``StoreUnavailable`` errors when Redis is gone, outages logged
once and recovered from without a restart, bounded operations, the Sentinel and Cluster
URLs (a real three-node cluster), and writes that wait for replicas."""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from mcpcore.stores import RedisStore, StoreUnavailable
from tests.support.processes import answers_ping, free_port
from tests.support.redis_topologies import RedisNode, redis_cluster

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


# -- outages: bounded, typed, logged once, recovered without a restart -----------------------
async def test_an_outage_is_logged_once_and_its_end_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    node = RedisNode(tmp_path / "redis")
    node.start()
    store = RedisStore.from_url(node.url, prefix="outage:")
    try:
        await store.set("kept", b"v", ttl=60)
        node.stop()  # saves its data, like any graceful stop
        caplog.clear()
        for _ in range(20):
            with pytest.raises(StoreUnavailable):
                await store.get("kept")
        assert not store.available
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1, [r.getMessage() for r in errors]
        assert "logged once per outage" in errors[0].getMessage()
        node.start()
        assert await store.get("kept") == b"v"  # reconnected by itself, data back
        assert store.available
        (back,) = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert "reachable again after" in back.getMessage()
        assert "20 operations failed" in back.getMessage()
    finally:
        await store.close()
        node.stop()


async def test_every_operation_is_bounded_even_when_redis_never_answers() -> None:
    """A server that accepts connections and never replies (a hung Redis, a black hole
    behind a proxy): each operation fails within ``operation_timeout``."""
    accepted: list[asyncio.StreamWriter] = []

    async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        await reader.read(-1)

    server = await asyncio.start_server(mute, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    store = RedisStore.from_url(f"redis://127.0.0.1:{port}/0", command_timeout=30.0,
                                operation_timeout=0.3)
    try:
        for operation in (store.get("k"), store.set("k", b"v", ttl=1), store.ping()):
            started = time.monotonic()
            with pytest.raises(StoreUnavailable):
                await operation
            assert time.monotonic() - started < 1.5
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            async with store.subscribe("c"):
                pass
        assert time.monotonic() - started < 7.0  # the subscribe confirmation's bound
    finally:
        await store.close()
        server.close()
        for writer in accepted:
            writer.close()
        await server.wait_closed()


# -- where Redis is: URLs --------------------------------------------------------------------
async def test_sentinel_and_cluster_urls_build_redis_pys_own_clients() -> None:
    from redis.asyncio.cluster import RedisCluster
    from redis.asyncio.sentinel import SentinelConnectionPool

    sentinel = RedisStore.from_url(
        "redis+sentinel://:pw@127.0.0.1:26379,127.0.0.1:26380/mymaster/2"
        "?wait_replicas=1&wait_timeout=0.25&sentinel_password=spw")
    try:
        pool = sentinel.client.connection_pool
        assert isinstance(pool, SentinelConnectionPool) and pool.service_name == "mymaster"
        assert pool.connection_kwargs["db"] == 2
        assert pool.connection_kwargs["password"] == "pw"
        assert sentinel._wait == (1, 250)
        assert "mymaster" in sentinel.address and "pw" not in sentinel.address
    finally:
        await sentinel.close()
    cluster = RedisStore.from_url("redis+cluster://127.0.0.1:7000,127.0.0.1:7001")
    try:
        assert isinstance(cluster.client, RedisCluster)
        assert cluster.address == "cluster 127.0.0.1:7000,127.0.0.1:7001"
    finally:
        await cluster.close()
    with pytest.raises(ValueError, match="names the service"):
        RedisStore.from_url("redis+sentinel://127.0.0.1:26379")
    with pytest.raises(ValueError, match="not supported with Redis Cluster"):
        RedisStore.from_url("redis+cluster://127.0.0.1:7000?wait_replicas=1")
    with pytest.raises(ValueError, match="unsupported Redis URL scheme"):
        RedisStore.from_url("memcached://127.0.0.1")
    with pytest.raises(ValueError, match="hash tags"):
        RedisStore.from_url("redis://127.0.0.1", prefix="app{1}:")


async def test_wait_replicas_refuses_a_write_no_replica_holds(redis_url: str) -> None:
    """A primary without replicas: with ``wait_replicas=1`` no write counts as done."""
    store = RedisStore.from_url(redis_url + "?wait_replicas=1&wait_timeout=0.05",
                                prefix="wait:")
    try:
        with pytest.raises(StoreUnavailable, match="reached 0 of the 1 replicas"):
            await store.set("k", b"v", ttl=10)
        assert await store.get("k") == b"v"  # reads need no replica
    finally:
        await store.close()


async def test_redis_cluster_keeps_each_operation_on_one_slot(tmp_path: Path) -> None:
    """A real three-node cluster: keys, set-if-absent, pub/sub and the task backend's
    two-key scripts (``task:{id}`` and ``task:{id}:answers`` share a hash tag)."""
    from mcpcore.stores import task_backend

    with redis_cluster(tmp_path) as cluster:
        store = RedisStore.from_url(cluster.url, prefix="cl:")
        try:
            for i in range(20):  # keys on every node
                await store.set(f"k{i}", str(i).encode(), ttl=30)
            assert [await store.get(f"k{i}") for i in range(20)] == [
                str(i).encode() for i in range(20)]
            assert await store.set_if_absent("once", b"1", ttl=30)
            assert not await store.set_if_absent("once", b"1", ttl=30)
            assert await store.delete("once")
            async with store.subscribe("events") as sub:
                await store.publish("events", b"hello")
                assert await asyncio.wait_for(anext(sub), 5) == b"hello"
            backend = task_backend(store)
            for task_id in ("a1", "b2", "c3"):
                assert await backend.insert(task_id, b"d", ttl_ms=30_000)
                assert await backend.replace(task_id, 1, b"d2", ttl_ms=30_000, answers=b"x")
                assert [a for _, a in await backend.answers(task_id)] == [b"x"]
                assert await backend.replace(task_id, 2, b"d3", ttl_ms=30_000,
                                             finished=True)
                assert await backend.answers(task_id) == []
            await store.ping()
        finally:
            await store.close()
