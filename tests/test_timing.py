"""The clock seam (mcpcore.timing): the system clock is the event loop's, and the manual
clock of the tests keeps asyncio.timeout's meaning."""

from __future__ import annotations

import asyncio

import pytest

from mcpcore.timing import SYSTEM_CLOCK, Clock
from tests.support.clock import ManualClock


async def test_the_system_clock_is_the_event_loops() -> None:
    loop = asyncio.get_running_loop()
    before = loop.time()
    now = SYSTEM_CLOCK.monotonic()
    assert before <= now <= loop.time()
    with pytest.raises(TimeoutError):
        async with SYSTEM_CLOCK.timeout(0):
            await asyncio.Event().wait()
    async with SYSTEM_CLOCK.timeout(None):
        await SYSTEM_CLOCK.sleep(0)


async def test_a_manual_timeout_fires_when_the_clock_passes_it_and_not_before() -> None:
    clock: Clock = ManualClock()
    assert isinstance(clock, ManualClock)
    outcome: list[str] = []

    async def bounded() -> None:
        try:
            async with clock.timeout(10):
                await asyncio.Event().wait()
        except TimeoutError:
            outcome.append(f"timed out at {clock.monotonic():g}")

    task = asyncio.ensure_future(bounded())
    await clock.until_sleeping(1)
    await clock.advance(9.9)
    assert outcome == [] and not task.done()
    await clock.advance(0.1)
    await task
    assert outcome == ["timed out at 10"]


async def test_a_manual_timeout_lets_other_cancellations_through() -> None:
    clock = ManualClock()

    async def bounded() -> None:
        async with clock.timeout(10):
            await asyncio.Event().wait()

    task = asyncio.ensure_future(bounded())
    await clock.until_sleeping(1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert clock.sleeping == 0  # the alarm went with it
    async with clock.timeout(5):
        pass  # a block that ends in time leaves nothing behind
    assert clock.sleeping == 0
