"""``MemoryStore``: the default ``Store`` for a single process.

Everything lives in dicts on the event loop's thread. Each operation runs without an
``await`` in its critical section, so operations are atomic with respect to other
coroutines (asyncio-safe; not thread-safe — use it from one event loop).

Expiry is lazy (an expired key reads as absent and is removed when touched) plus a
bounded sweep: every write pops at most ``sweep_batch`` due entries off a heap of
deadlines, so memory held by dead keys stays bounded without a background task and no
single call does unbounded work.

Pub/sub fans out to the local subscribers of a channel, each with its own bounded queue
(``max_queue``). Drop policy: a subscriber whose queue is full when a message arrives is
*dropped* (unregistered and marked lagged); it drains what it had and then gets
``SubscriptionLagged``. Publishers never block and memory never grows with a slow
consumer. Nothing crosses processes: use ``RedisStore`` for a fleet.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable

from mcpcore.stores.base import (
    DEFAULT_MAX_QUEUE,
    DEFAULT_PREFIX,
    LocalSubscription,
    StoreUnavailable,
    check_ttl,
)


class MemoryStore:
    """An in-process ``Store`` with TTLs, set-if-absent and bounded pub/sub fan-out.

    >>> store = MemoryStore()
    >>> # await store.set_if_absent("rs:abc", b"1", ttl=600.0)  -> True, then False

    ``clock`` is monotonic seconds and injectable, so tests expire keys without sleeping.
    """

    def __init__(
        self,
        *,
        prefix: str = DEFAULT_PREFIX,
        clock: Callable[[], float] = time.monotonic,
        max_queue: int = DEFAULT_MAX_QUEUE,
        sweep_batch: int = 64,
    ) -> None:
        if max_queue < 1:
            raise ValueError("max_queue must be at least 1")
        self._prefix = prefix
        self._clock = clock
        self._max_queue = max_queue
        self._sweep_batch = sweep_batch
        # key -> (value, deadline or None)
        self._data: dict[str, tuple[bytes, float | None]] = {}
        # (deadline, key); entries go stale when a key is rewritten or deleted.
        self._deadlines: list[tuple[float, str]] = []
        self._channels: dict[str, set[LocalSubscription]] = {}
        self._closed = False

    @property
    def prefix(self) -> str:
        return self._prefix

    @property
    def max_queue(self) -> int:
        return self._max_queue

    def __len__(self) -> int:
        """Keys held, including expired ones not yet swept (for tests and metrics)."""
        return len(self._data)

    def subscriber_count(self, channel: str) -> int:
        """Local subscribers of ``channel`` (for tests and metrics)."""
        return len(self._channels.get(self._prefix + channel, ()))

    # -- keys ---------------------------------------------------------------------------

    async def get(self, key: str) -> bytes | None:
        self._check_open()
        k = self._prefix + key
        entry = self._data.get(k)
        if entry is None:
            return None
        value, deadline = entry
        if deadline is not None and deadline <= self._clock():
            del self._data[k]
            return None
        return value

    async def set(self, key: str, value: bytes, *, ttl: float | None) -> None:
        self._check_open()
        check_ttl(ttl)
        self._put(self._prefix + key, value, ttl, self._clock())

    async def set_if_absent(self, key: str, value: bytes, *, ttl: float | None) -> bool:
        self._check_open()
        check_ttl(ttl)
        k, now = self._prefix + key, self._clock()
        entry = self._data.get(k)
        if entry is not None and (entry[1] is None or entry[1] > now):
            return False
        self._put(k, value, ttl, now)
        return True

    async def delete(self, key: str) -> bool:
        self._check_open()
        entry = self._data.pop(self._prefix + key, None)
        return entry is not None and (entry[1] is None or entry[1] > self._clock())

    def _put(self, k: str, value: bytes, ttl: float | None, now: float) -> None:
        if not isinstance(value, bytes):
            raise TypeError(f"store values are bytes, not {type(value).__name__}")
        deadline = None if ttl is None else now + ttl
        self._data[k] = (value, deadline)
        if deadline is not None:
            heapq.heappush(self._deadlines, (deadline, k))
        self._sweep(now)

    def _sweep(self, now: float) -> None:
        heap, data = self._deadlines, self._data
        for _ in range(self._sweep_batch):
            if not heap or heap[0][0] > now:
                break
            deadline, k = heapq.heappop(heap)
            entry = data.get(k)
            if entry is not None and entry[1] == deadline:
                del data[k]
        # Rewrites leave stale heap entries behind; rebuild when they dominate.
        if len(heap) > 2 * len(data) + 64:
            self._deadlines = [(d, k) for k, (_, d) in data.items() if d is not None]
            heapq.heapify(self._deadlines)

    async def ping(self) -> None:
        """Always answers, unless the store was closed (``StoreUnavailable``)."""
        self._check_open()

    # -- pub/sub ------------------------------------------------------------------------

    async def publish(self, channel: str, message: bytes) -> None:
        self._check_open()
        if not isinstance(message, bytes):
            raise TypeError(f"messages are bytes, not {type(message).__name__}")
        subscribers = self._channels.get(self._prefix + channel)
        if subscribers:
            # offer() may unregister a lagging subscriber: iterate over a copy.
            for sub in tuple(subscribers):
                sub.offer(message)

    def subscribe(self, channel: str) -> LocalSubscription:
        self._check_open()
        return LocalSubscription(
            channel, max_queue=self._max_queue, on_open=self._attach, on_close=self._detach
        )

    def _attach(self, sub: LocalSubscription) -> None:
        self._check_open()
        self._channels.setdefault(self._prefix + sub.channel, set()).add(sub)

    def _detach(self, sub: LocalSubscription) -> None:
        k = self._prefix + sub.channel
        subscribers = self._channels.get(k)
        if subscribers is not None:
            subscribers.discard(sub)
            if not subscribers:
                del self._channels[k]

    async def close(self) -> None:
        """Drop all keys and end every subscription (their iterators stop)."""
        if self._closed:
            return
        self._closed = True
        channels, self._channels = self._channels, {}
        for subscribers in channels.values():
            for sub in subscribers:
                sub.end()
        self._data.clear()
        self._deadlines.clear()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailable("MemoryStore is closed")

    def __repr__(self) -> str:
        return f"MemoryStore(prefix={self._prefix!r}, keys={len(self._data)})"


__all__ = ["MemoryStore"]
