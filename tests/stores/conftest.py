"""Fixtures for the store tests: a real ``redis-server`` per session, and a harness that
runs one contract suite against ``MemoryStore`` and ``RedisStore``.

No redis-server on PATH: the redis tests are skipped locally, and *fail* when ``CI`` is
set, so CI can never go green by silently skipping them.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import redis.asyncio as aioredis
from storekit import Harness, redis_server

from mcpcore.stores import MemoryStore, RedisStore


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """URL of a throwaway redis-server (no persistence) on a free port."""
    with redis_server() as url:
        yield url


@pytest.fixture
async def raw_redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    """A plain client, to look behind the store's back (TTLs, NUMSUB, prefixes)."""
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
async def harness(request: pytest.FixtureRequest) -> AsyncIterator[Harness]:
    # A fresh prefix per test keeps tests independent on the shared server.
    prefix = f"test-{uuid.uuid4().hex[:8]}:"
    if request.param == "memory":
        now = [0.0]
        h = Harness("memory", MemoryStore(prefix=prefix, clock=lambda: now[0]), now)
    else:
        url = request.getfixturevalue("redis_url")
        h = Harness("redis", RedisStore.from_url(url, prefix=prefix))
    yield h
    await h.store.close()
