"""How mcpcore waits: through an injectable ``sleep`` or ``Clock``, so tests advance a clock.

Every wait of the transports (keep-alive comments, the legacy bridge's answer timeout,
the GET stream's idle checks) goes through a ``Sleep``: ``asyncio.sleep`` in production,
a manual clock's in tests (``tests/support/clock.py``), so no test sleeps for real.

Code that also reads the time or bounds a wait (the client's heartbeat, backoff, task
polling, list deadlines and caches; admission's body deadlines) takes a ``Clock``: the
three together. ``SYSTEM_CLOCK`` is the event loop's own (``time.monotonic``,
``asyncio.sleep``, ``asyncio.timeout``); the manual clock of the tests is another.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Final, Protocol

#: ``asyncio.sleep`` or a test clock's.
Sleep = Callable[[float], Awaitable[None]]
#: ``asyncio.timeout`` or a test clock's (``Clock.timeout``).
Timeout = Callable[[float | None], AbstractAsyncContextManager[Any]]


class Clock(Protocol):
    """Time as an input: what it is, how to wait, how to bound a wait."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (only differences mean anything)."""
        ...

    def sleep(self, seconds: float) -> Awaitable[None]:
        """Wait ``seconds``."""
        ...

    def timeout(self, seconds: float | None) -> AbstractAsyncContextManager[Any]:
        """``asyncio.timeout`` on this clock: the block is cancelled after ``seconds``
        and ``TimeoutError`` raised in its place (``None``: no bound)."""
        ...


class SystemClock:
    """The real clock: the event loop's time (``time.monotonic``), ``asyncio.sleep``,
    ``asyncio.timeout``."""

    monotonic = staticmethod(time.monotonic)
    sleep = staticmethod(asyncio.sleep)
    timeout = staticmethod(asyncio.timeout)


#: The clock everything uses unless given another.
SYSTEM_CLOCK: Final[Clock] = SystemClock()


async def wait_with_timeout(awaitable: Awaitable[Any], seconds: float, sleep: Sleep) -> Any:
    """``asyncio.wait_for`` on an injectable clock: the result of ``awaitable``, or
    ``TimeoutError`` after ``seconds`` of ``sleep`` (the work is then cancelled).
    Cancelling the caller cancels both."""
    work = asyncio.ensure_future(awaitable)
    timer = asyncio.ensure_future(sleep(seconds))
    try:
        await asyncio.wait((work, timer), return_when=asyncio.FIRST_COMPLETED)
    except BaseException:  # the caller is cancelled: so is everything it started
        timer.cancel()
        work.cancel()
        raise
    timer.cancel()
    if not work.done():
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await work
        raise TimeoutError
    return work.result()


__all__ = ["SYSTEM_CLOCK", "Clock", "Sleep", "SystemClock", "Timeout", "wait_with_timeout"]
