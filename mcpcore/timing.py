"""How mcpcore waits: through an injectable ``sleep``, so tests advance a clock.

Every wait of the transports (keep-alive comments, the legacy bridge's answer timeout,
the GET stream's idle checks) goes through a ``Sleep``: ``asyncio.sleep`` in production,
a manual clock's in tests (``tests/support/clock.py``), so no test sleeps for real.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

#: ``asyncio.sleep`` or a test clock's.
Sleep = Callable[[float], Awaitable[None]]


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


__all__ = ["Sleep", "wait_with_timeout"]
