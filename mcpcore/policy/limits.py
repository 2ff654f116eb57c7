"""Rate limiters: how many calls a (principal, tool) made in the last window.

What lives here: the ``RateLimiter`` protocol the gate uses, its answer (``RateAdmission``:
allowed, or refused with how long until a call would be allowed), and the in-process
sliding-window log. The fleet-wide limiter is ``mcpcore.stores.redis_ratelimit
.RedisRateLimiter`` (one atomic script on Redis, one round trip per call).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from mcpcore.policy.engine import RateLimit


@dataclass(frozen=True, slots=True)
class RateAdmission:
    """A limiter's answer: ``allowed``, else ``retry_after`` seconds until a call would be
    (for the error's ``data`` and the ``Retry-After`` header)."""

    allowed: bool
    retry_after: float = 0.0


ALLOWED = RateAdmission(True)


@runtime_checkable
class RateLimiter(Protocol):
    """Counts calls per key. ``acquire`` records one at ``now`` if it is within ``limit``
    and says so; a refused call is not recorded."""

    async def acquire(self, key: str, limit: RateLimit, now: float) -> RateAdmission: ...


class MemoryRateLimiter:
    """A sliding-window log per key, in this process (a fleet gets one per instance).

    Memory is bounded by ``limit.calls`` timestamps per key and ``max_keys`` keys; the
    oldest key is dropped when full (erring towards allowing, never towards a crash).
    """

    def __init__(self, max_keys: int = 100_000) -> None:
        self.max_keys = max_keys
        self._log: dict[str, deque[float]] = {}

    async def acquire(self, key: str, limit: RateLimit, now: float) -> RateAdmission:
        return self.check(key, limit, now)

    def hit(self, key: str, limit: RateLimit, now: float) -> bool:
        """``acquire`` without the await: True if the call was within the limit."""
        return self.check(key, limit, now).allowed

    def check(self, key: str, limit: RateLimit, now: float) -> RateAdmission:
        stamps = self._log.get(key)
        if stamps is None:
            if len(self._log) >= self.max_keys:
                self._log.pop(next(iter(self._log)))
            stamps = self._log[key] = deque()
        while stamps and stamps[0] <= now - limit.seconds:
            stamps.popleft()
        if len(stamps) >= limit.calls:
            return RateAdmission(False, max(0.0, stamps[0] + limit.seconds - now))
        stamps.append(now)
        return ALLOWED


__all__ = ["ALLOWED", "MemoryRateLimiter", "RateAdmission", "RateLimiter"]
