"""Helpers for the store tests (a module name of its own, so ``import`` never picks up
another directory's conftest): a throwaway redis-server's URL and the test ``Harness``.
``tests/tasks`` uses them too (as ``tests.stores.storekit``). Processes and ports come
from ``tests.support.processes``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from mcpcore.stores import Store
from tests.support.processes import free_port
from tests.support.processes import redis_server as start_redis

__all__ = ["Harness", "free_port", "redis_server"]


@contextmanager
def redis_server() -> Iterator[str]:
    """A throwaway redis-server's URL (the one launcher: ``tests.support.processes``)."""
    with start_redis() as redis:
        yield redis.url


@dataclass
class Harness:
    """A store plus a way to let time pass that suits its backend."""

    kind: str
    store: Store
    now: list[float] = field(default_factory=lambda: [0.0])

    async def advance(self, seconds: float) -> None:
        if self.kind == "memory":
            self.now[0] += seconds
        else:
            await asyncio.sleep(seconds)

    async def wait_absent(self, key: str, *, within: float = 2.0) -> None:
        """Memory: expiry is exact, the clock was advanced. Redis: poll, bounded."""
        deadline = time.monotonic() + within
        while await self.store.get(key) is not None:
            assert time.monotonic() < deadline, f"{key!r} did not expire within {within}s"
            await asyncio.sleep(0.01)
