"""Fixtures for the task tests: a clock tests move by hand, managers on a
``MemoryStore`` that reads the same clock, and a real redis-server for the fleet tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest

from mcpcore.stores import MemoryStore
from mcpcore.tasks import TaskManager
from tests.stores.storekit import redis_server

#: Wall-clock start of every test (2026-07-28T00:00:00Z), so timestamps are readable.
EPOCH = 1_785_196_800.0


class Clock:
    """Seconds since the epoch, moved only by ``advance``."""

    def __init__(self) -> None:
        self.now = EPOCH

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def eventually(check: Callable[[], Awaitable[bool] | bool], within: float = 2.0
                     ) -> None:
    """Until ``check()`` (sync or async) is true; fails after ``within`` real seconds."""
    deadline = time.monotonic() + within
    while True:
        value = check()
        if not isinstance(value, bool):
            value = await value
        if value:
            return
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.001)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def memory_store(clock: Clock) -> AsyncIterator[MemoryStore]:
    store = MemoryStore(prefix="t:", clock=clock)
    yield store
    await store.close()


@pytest.fixture
async def managers(memory_store: MemoryStore, clock: Clock
                   ) -> AsyncIterator[Callable[..., TaskManager]]:
    """Make managers sharing the memory store and the clock (several "instances")."""
    made: list[TaskManager] = []

    def make(**options: object) -> TaskManager:
        options.setdefault("lease", 60.0)
        manager = TaskManager(memory_store, clock=clock, **options)  # type: ignore[arg-type]
        made.append(manager)
        return manager

    yield make
    for manager in made:
        await manager.aclose()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url
