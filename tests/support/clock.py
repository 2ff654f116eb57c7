"""A manual clock for code that waits through an injectable ``sleep`` (mcpcore.timing).

    clock = ManualClock()
    app = StreamableHTTP(server, legacy=LegacyShim(server, keepalive=15, sleep=clock.sleep))
    ...
    await clock.advance(15)          # every sleeper due by then wakes, in order

No test sleeps for real: time passes only when the test says so. It is a
``mcpcore.timing.Clock`` too (``monotonic``, ``sleep``, ``timeout``), for code that reads
the time and bounds its waits (``Client(..., clock=clock)``, ``Admission(..., clock=clock)``).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections.abc import AsyncIterator, Callable


class ManualClock:
    """``sleep`` parks the caller until ``advance`` moves ``now`` past its deadline."""

    def __init__(self) -> None:
        self.now = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + seconds, next(self._order), future))
        await future

    def monotonic(self) -> float:
        return self.now

    @contextlib.asynccontextmanager
    async def timeout(self, seconds: float | None) -> AsyncIterator[None]:
        """``asyncio.timeout`` on this clock: the block's task is cancelled once
        ``advance`` passes ``seconds``, and the cancellation becomes ``TimeoutError``."""
        if seconds is None:
            yield
            return
        task = asyncio.current_task()
        assert task is not None
        fired = False
        # Set now, like asyncio.timeout's timer: the order of equal deadlines is the
        # order in which they were set.
        alarm: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + seconds, next(self._order), alarm))

        def fire(alarm: asyncio.Future[None]) -> None:
            nonlocal fired
            if not alarm.cancelled():
                fired = True
                task.cancel()

        alarm.add_done_callback(fire)
        try:
            yield
        except asyncio.CancelledError:
            if fired and task.uncancel() == 0:
                raise TimeoutError from None
            raise
        finally:
            alarm.cancel()

    @property
    def sleeping(self) -> int:
        """How many callers are parked (cancelled ones excluded)."""
        return sum(1 for _, _, f in self._sleepers if not f.done())

    async def settle(self, passes: int = 20) -> None:
        """Let woken tasks run until they park again or finish."""
        for _ in range(passes):
            await asyncio.sleep(0)

    async def until_sleeping(self, count: int = 1, passes: int = 1000) -> None:
        """Wait (in loop passes, not seconds) until ``count`` callers are parked."""
        for _ in range(passes):
            if self.sleeping >= count:
                return
            await asyncio.sleep(0)
        raise AssertionError(f"only {self.sleeping} sleepers after {passes} loop passes")

    async def advance(self, seconds: float) -> None:
        """Move time forward; wake every sleeper due by then (earliest first)."""
        target = self.now + seconds
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, future = heapq.heappop(self._sleepers)
            self.now = max(self.now, deadline)
            if not future.done():
                future.set_result(None)
                await self.settle()
        self.now = target
        await self.settle()


async def settle(passes: int = 20) -> None:
    """A few passes of the event loop: started tasks reach their first real wait."""
    for _ in range(passes):
        await asyncio.sleep(0)


async def until(condition: Callable[[], bool], passes: int = 10_000) -> None:
    """Yield to the event loop until ``condition()`` holds: for work that needs only loop
    passes (in-memory fan-out, a task reaching its first await), never wall time."""
    for _ in range(passes):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"condition still false after {passes} loop passes")


__all__ = ["ManualClock", "settle", "until"]
