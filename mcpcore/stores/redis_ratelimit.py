"""``RedisRateLimiter``: one rate limit for a whole fleet, on the Redis it shares.

A sliding-window log in a sorted set per (principal, tool): one Lua script drops the
stamps that left the window, counts what is left, and either adds this call or answers
how long until the oldest stamp leaves. The script runs atomically on the server, so N
instances calling at once admit exactly ``limit.calls`` per window between them, and it
is one round trip per call (``EVALSHA``; redis-py loads the script once on
``NOSCRIPT``). Time is the Redis server's own (``TIME``), so the instances' clocks need
not agree; the ``now`` the policy passes is not used.

Keys: ``<prefix>rl:<sha256 of the key>``: fixed length, and no subject or tenant in
clear in Redis. Each key expires one window after its last admitted call. When Redis
cannot be reached the call fails with ``StoreUnavailable`` (fail closed), unless the
limiter was made with ``fail_open=True`` (then it is admitted and a warning logged).
"""

from __future__ import annotations

import hashlib
import logging
import os

from mcpcore.policy.engine import RateLimit
from mcpcore.policy.limits import ALLOWED, RateAdmission
from mcpcore.stores.base import StoreUnavailable
from mcpcore.stores.redis import RedisStore

log = logging.getLogger("mcpcore.stores.ratelimit")

# KEYS[1] the window. ARGV[1] calls allowed, ARGV[2] window ms, ARGV[3] a unique tag.
# Returns {1, 0} when admitted, else {0, ms until a call would be}.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now, now .. ':' .. ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, tonumber(oldest[2]) + window - now}
"""


class RedisRateLimiter:
    """The policy's ``RateLimiter`` for a fleet.

    >>> store = RedisStore.from_url("redis://127.0.0.1:6379/0")           # doctest: +SKIP
    >>> Policy(rules, limiter=RedisRateLimiter(store))                  # doctest: +SKIP
    """

    def __init__(self, store: RedisStore, *, fail_open: bool = False) -> None:
        self.store = store
        self.fail_open = fail_open
        self._script = store.client.register_script(_ACQUIRE)
        self._tag = os.urandom(4).hex()
        self._count = 0

    def key(self, key: str) -> str:
        return f"{self.store.prefix}rl:{hashlib.sha256(key.encode()).hexdigest()[:32]}"

    async def acquire(self, key: str, limit: RateLimit, now: float) -> RateAdmission:
        self._count += 1
        tag = f"{self._tag}{self._count:x}"  # unique per call across the fleet
        try:
            keys = [self.key(key)]
            args = [limit.calls, max(1, round(limit.seconds * 1000)), tag]
            # Bounded and mapped like every other store operation (a write: it waits
            # out a Sentinel failover's pause like the rest).
            allowed, wait_ms = await self.store.run(
                lambda c: self._script(keys=keys, args=args, client=c), write=True)
        except StoreUnavailable:
            if not self.fail_open:
                raise
            log.warning("rate limiter: Redis unavailable, admitting the call (fail_open)")
            return ALLOWED
        if int(allowed) == 1:
            return ALLOWED
        return RateAdmission(False, max(0.0, int(wait_ms) / 1000))


__all__ = ["RedisRateLimiter"]
