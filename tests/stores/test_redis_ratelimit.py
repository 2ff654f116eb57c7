"""``RedisRateLimiter`` against a real redis-server: atomic across clients, one round trip,
Redis's own clock, keys that expire and name no one, and fail closed (or open)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import redis.asyncio as aioredis

from mcpcore.policy import MemoryRateLimiter, RateLimit
from mcpcore.stores import RedisStore, StoreUnavailable
from mcpcore.stores.redis_ratelimit import RedisRateLimiter

pytestmark = pytest.mark.integration


def _store(url: str) -> RedisStore:
    return RedisStore.from_url(url, prefix=f"rl-{uuid.uuid4().hex[:6]}:")


async def test_exactly_the_limit_is_admitted_across_many_clients(redis_url: str) -> None:
    """Three "instances" (stores with their own pools) race 60 calls for 25 places."""
    prefix = f"rl-{uuid.uuid4().hex[:6]}:"
    stores = [RedisStore.from_url(redis_url, prefix=prefix) for _ in range(3)]
    limiters = [RedisRateLimiter(s) for s in stores]
    limit = RateLimit(25, 60)
    try:
        answers = await asyncio.gather(*(
            limiters[i % 3].acquire("alice|tool", limit, 0.0) for i in range(60)))
        assert sum(a.allowed for a in answers) == 25
        refused = [a for a in answers if not a.allowed]
        assert all(0 < a.retry_after <= 60 for a in refused)
        other = await limiters[0].acquire("bob|tool", limit, 0.0)
        assert other.allowed   # keys are independent
    finally:
        for s in stores:
            await s.close()


async def test_the_window_slides_on_redis_time(redis_url: str,
                                               raw_redis: aioredis.Redis) -> None:
    store = _store(redis_url)
    limiter = RedisRateLimiter(store)
    limit = RateLimit(2, 0.3)
    try:
        assert [(await limiter.acquire("k", limit, 0)).allowed for _ in range(3)] == [
            True, True, False]
        key = limiter.key("k")
        assert key.startswith(store.prefix + "rl:") and "k" not in key[len(store.prefix):]
        ttl = await raw_redis.pttl(key)
        assert 0 < ttl <= 300   # gone one window after the last admitted call
        await asyncio.sleep(0.35)  # Redis's clock, not ours: nothing to advance
        assert (await limiter.acquire("k", limit, 0)).allowed
    finally:
        await store.close()


async def test_one_round_trip_per_call(redis_url: str, raw_redis: aioredis.Redis) -> None:
    store = _store(redis_url)
    limiter = RedisRateLimiter(store)
    limit = RateLimit(100, 60)
    try:
        await limiter.acquire("warm", limit, 0)   # loads the script (NOSCRIPT once)
        before = await raw_redis.info("commandstats")
        for _ in range(10):
            await limiter.acquire("k", limit, 0)
        after = await raw_redis.info("commandstats")
        calls = {name: after[name]["calls"] - before.get(name, {"calls": 0})["calls"]
                 for name in after if name.startswith("cmdstat_")}
        # Ten EVALSHA sent, and nothing else: the other counted commands run inside
        # the script, on the server (and the INFO calls are ours).
        assert calls.get("cmdstat_evalsha") == 10
        inside = {f"cmdstat_{c}" for c in ("time", "zremrangebyscore", "zcard", "zadd",
                                            "pexpire", "zrange")}
        assert {n for n, c in calls.items() if c} <= {"cmdstat_evalsha", "cmdstat_info",
                                                      *inside}
    finally:
        await store.close()


async def test_redis_down_fails_closed_unless_told_otherwise() -> None:
    dead = RedisStore.from_url("redis://127.0.0.1:9/0", connect_timeout=0.2,
                               command_timeout=0.2, retries=0)
    try:
        with pytest.raises(StoreUnavailable):
            await RedisRateLimiter(dead).acquire("k", RateLimit(1, 1), 0)
        assert (await RedisRateLimiter(dead, fail_open=True).acquire(
            "k", RateLimit(1, 1), 0)).allowed
    finally:
        await dead.close()


async def test_memory_limiter_gives_the_same_retry_hint() -> None:
    limiter = MemoryRateLimiter()
    limit = RateLimit(2, 10)
    assert (await limiter.acquire("k", limit, 100.0)).allowed
    assert (await limiter.acquire("k", limit, 104.0)).allowed
    refused = await limiter.acquire("k", limit, 107.0)
    assert (refused.allowed, refused.retry_after) == (False, 3.0)
