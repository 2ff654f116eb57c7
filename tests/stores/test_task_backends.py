"""One contract, both task backends: ``LocalTaskBackend`` (in a ``MemoryStore``) and
``RedisTaskBackend`` (Lua scripts, a hash and a stream per task) behave the same.

Memory lets time pass through the injected clock; Redis uses real TTLs of ~100 ms and
bounded polling. The Redis-only tests look behind the backend's back: hash tags, TTLs
in Redis, and no key left once tasks expire.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
import redis.asyncio as aioredis
from storekit import free_port

from mcpcore.stores import (
    LocalTaskBackend,
    MemoryStore,
    RedisStore,
    Store,
    StoreUnavailable,
    TaskBackend,
    task_backend,
)
from mcpcore.stores.redis_tasks import RedisTaskBackend


@dataclass
class Backend:
    kind: str
    store: Store
    backend: TaskBackend
    now: list[float] = field(default_factory=lambda: [0.0])

    async def advance(self, seconds: float) -> None:
        if self.kind == "memory":
            self.now[0] += seconds
        else:
            await asyncio.sleep(seconds)

    async def wait_gone(self, task_id: str, within: float = 2.0) -> None:
        deadline = time.monotonic() + within
        while await self.backend.load(task_id) is not None:
            assert time.monotonic() < deadline, f"{task_id} did not expire"
            await asyncio.sleep(0.01)


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
async def b(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    prefix = f"test-{uuid.uuid4().hex[:8]}:"
    store: Store
    if request.param == "memory":
        now = [0.0]
        store = MemoryStore(prefix=prefix, clock=lambda: now[0])
        harness = Backend("memory", store, task_backend(store), now)
    else:
        store = RedisStore.from_url(request.getfixturevalue("redis_url"), prefix=prefix)
        harness = Backend("redis", store, task_backend(store))
    yield harness
    await store.close()


async def test_each_store_gets_its_own_kind_of_backend(b: Backend) -> None:
    expected = LocalTaskBackend if b.kind == "memory" else RedisTaskBackend
    assert isinstance(b.backend, expected)
    assert isinstance(b.backend, TaskBackend)


def test_a_store_without_a_task_backend_is_refused() -> None:
    class Elsewhere:
        pass

    with pytest.raises(TypeError, match="no task backend for Elsewhere"):
        task_backend(Elsewhere())  # type: ignore[arg-type]


async def test_insert_once_then_load(b: Backend) -> None:
    assert await b.backend.load("t1") is None
    assert await b.backend.insert("t1", b"first", ttl_ms=60_000) is True
    assert await b.backend.insert("t1", b"second", ttl_ms=60_000) is False
    stored = await b.backend.load("t1")
    assert stored is not None and stored.version == 1 and stored.data == b"first"


async def test_replace_is_compare_and_set(b: Backend) -> None:
    await b.backend.insert("t", b"v1", ttl_ms=60_000)
    assert await b.backend.replace("t", 1, b"v2", ttl_ms=60_000) is True
    assert await b.backend.replace("t", 1, b"stale", ttl_ms=60_000) is False
    stored = await b.backend.load("t")
    assert stored == (2, b"v2")
    assert await b.backend.replace("missing", 1, b"x", ttl_ms=60_000) is False
    assert await b.backend.load("missing") is None


async def test_exactly_one_concurrent_replace_wins(b: Backend) -> None:
    await b.backend.insert("race", b"v1", ttl_ms=60_000)
    results = await asyncio.gather(*(
        b.backend.replace("race", 1, f"writer {i}".encode(), ttl_ms=60_000)
        for i in range(20)))
    assert results.count(True) == 1
    stored = await b.backend.load("race")
    assert stored is not None and stored.version == 2


async def test_answers_are_logged_with_the_write_and_read_from_a_cursor(b: Backend) -> None:
    await b.backend.insert("t", b"r1", ttl_ms=60_000)
    assert await b.backend.answers("t") == []
    assert await b.backend.replace("t", 1, b"r2", ttl_ms=60_000, answers=b'{"a":1}')
    # A lost compare-and-set logs nothing.
    assert not await b.backend.replace("t", 1, b"r2'", ttl_ms=60_000, answers=b'{"lost":1}')
    assert await b.backend.replace("t", 2, b"r3", ttl_ms=60_000, answers=b'{"b":2}')
    log = await b.backend.answers("t")
    assert [batch for _, batch in log] == [b'{"a":1}', b'{"b":2}']
    first_cursor = log[0][0]
    assert [batch for _, batch in await b.backend.answers("t", first_cursor)] == [b'{"b":2}']
    assert await b.backend.answers("t", log[1][0]) == []


async def test_finishing_deletes_the_answer_log(b: Backend) -> None:
    await b.backend.insert("t", b"r1", ttl_ms=60_000)
    await b.backend.replace("t", 1, b"r2", ttl_ms=60_000, answers=b"{}")
    assert await b.backend.replace("t", 2, b"done", ttl_ms=60_000, finished=True)
    assert await b.backend.answers("t") == []
    assert await b.backend.load("t") == (3, b"done")


async def test_records_and_logs_expire_with_the_task(b: Backend) -> None:
    await b.backend.insert("short", b"r1", ttl_ms=100)
    await b.backend.replace("short", 1, b"r2", ttl_ms=100, answers=b"{}")
    await b.backend.insert("long", b"r1", ttl_ms=60_000)
    await b.advance(0.15)
    await b.wait_gone("short")
    assert await b.backend.answers("short") == []
    assert await b.backend.load("long") is not None


async def test_replace_sets_the_remaining_life(b: Backend) -> None:
    await b.backend.insert("t", b"r1", ttl_ms=100)
    assert await b.backend.replace("t", 1, b"r2", ttl_ms=60_000)
    await b.advance(0.15)
    assert await b.backend.load("t") == (2, b"r2")


redis_only = pytest.mark.integration


@redis_only
async def test_redis_keys_share_a_hash_tag_and_carry_the_ttl(
        redis_url: str, raw_redis: aioredis.Redis) -> None:
    store = RedisStore.from_url(redis_url, prefix="tags:")
    backend = task_backend(store)
    try:
        await backend.insert("abc", b"r", ttl_ms=30_000)
        await backend.replace("abc", 1, b"r2", ttl_ms=20_000, answers=b"{}")
        assert sorted(await raw_redis.keys("tags:*")) == [b"tags:task:{abc}",
                                                          b"tags:task:{abc}:answers"]
        assert await raw_redis.type("tags:task:{abc}") == b"hash"
        assert await raw_redis.type("tags:task:{abc}:answers") == b"stream"
        for key in ("tags:task:{abc}", "tags:task:{abc}:answers"):
            assert 19_000 < await raw_redis.pttl(key) <= 20_000
    finally:
        await store.close()


@redis_only
async def test_two_redis_stores_see_one_task(redis_url: str) -> None:
    """Two instances of a fleet: a write on one is what the other reads, and a stale
    write from either loses."""
    prefix = f"fleet-{uuid.uuid4().hex[:6]}:"
    one = RedisStore.from_url(redis_url, prefix=prefix)
    two = RedisStore.from_url(redis_url, prefix=prefix)
    try:
        a, c = task_backend(one), task_backend(two)
        assert await a.insert("t", b"r1", ttl_ms=60_000)
        assert await c.load("t") == (1, b"r1")
        assert await c.replace("t", 1, b"r2", ttl_ms=60_000, answers=b'{"k":1}')
        assert not await a.replace("t", 1, b"stale", ttl_ms=60_000)
        assert [batch for _, batch in await a.answers("t")] == [b'{"k":1}']
    finally:
        await one.close()
        await two.close()


@redis_only
async def test_a_thousand_expired_tasks_leave_no_key(
        redis_url: str, raw_redis: aioredis.Redis) -> None:
    store = RedisStore.from_url(redis_url, prefix="expiry:")
    backend = task_backend(store)
    try:
        async def one(i: int) -> None:
            await backend.insert(f"t{i}", b"r", ttl_ms=3000)
            if i % 2:
                await backend.replace(f"t{i}", 1, b"r2", ttl_ms=3000, answers=b"{}")

        for start in range(0, 1000, 100):
            await asyncio.gather(*(one(i) for i in range(start, start + 100)))
        assert len(await raw_redis.keys("expiry:*")) == 1500
        deadline = time.monotonic() + 10.0
        while await raw_redis.keys("expiry:*"):
            assert time.monotonic() < deadline, "task keys outlived their TTL"
            await asyncio.sleep(0.05)
    finally:
        await store.close()


@redis_only
async def test_redis_down_is_store_unavailable() -> None:
    store = RedisStore.from_url(f"redis://127.0.0.1:{free_port()}/0", connect_timeout=0.2)
    backend = task_backend(store)
    try:
        for call in (backend.load("t"), backend.insert("t", b"r", ttl_ms=10),
                     backend.replace("t", 1, b"r", ttl_ms=10), backend.answers("t")):
            with pytest.raises(StoreUnavailable, match=r"Redis at 127\.0\.0\.1"):
                await call
    finally:
        await store.close()
