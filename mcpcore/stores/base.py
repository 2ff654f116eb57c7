"""The ``Store`` protocol: the little state a fleet of stateless servers must share.

The stateless request path never touches a store. Three features do: MRTR replay
markers (``set_if_absent`` with a TTL), legacy HTTP sessions (``get``/``set``/``delete``
with a TTL) and ``subscriptions/listen`` fan-out (``publish``/``subscribe``). So the
protocol is exactly that and no more: byte values, seconds for TTLs, one prefix that
namespaces every key and channel so several deployments can share one backend.

Also here, because both backends use them: ``StoreError`` and its subclasses, and
``LocalSubscription``, the bounded per-subscriber queue behind ``MemoryStore`` fan-out.

Subscriptions are async context managers and async iterators::

    async with store.subscribe("resources/updated") as sub:
        async for message in sub:          # bytes
            ...

Entering registers the subscriber and returns once the backend confirmed it, so a
``publish`` made after ``__aenter__`` returns is delivered; leaving unsubscribes and frees
everything (queue, connection). A subscriber that falls ``max_queue`` messages behind is
dropped: its iterator yields what was buffered, then raises ``SubscriptionLagged`` (never
an unbounded queue, never a silent gap). Store failures surface as ``StoreUnavailable``,
which is also the error a peer is sent: a ``ServiceUnavailable`` (HTTP 503, Retry-After)
whose wire message names no backend, while ``str()`` (for logs) keeps the detail.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from mcpcore.errors import ServiceUnavailable

DEFAULT_PREFIX = "mcpcore:"
DEFAULT_MAX_QUEUE = 1024


class StoreError(Exception):
    """Base of store failures. Not an ``McpError`` itself: the outermost layer maps an
    unexpected one to -32603 (``StoreUnavailable`` is sent as what it is)."""


class StoreUnavailable(StoreError, ServiceUnavailable):
    """The backend cannot be reached (connection refused, timeout, lost connection).

    ``str(exc)`` names the backend and its address (never credentials), for logs; the
    peer is sent a ``ServiceUnavailable`` with reason ``store_unavailable`` that names
    neither. Every request that needs the Store fails with it while the Store is down;
    requests that do not need it are unaffected.

    >>> StoreUnavailable("Redis at 10.0.0.5:6379 is unavailable: refused").to_error()["data"]
    {'reason': 'store_unavailable', 'retryAfter': 1}
    """

    reason = "store_unavailable"
    default_message = "Service unavailable: the shared store cannot be reached; retry shortly"

    def __init__(self, detail: str, *, retry_after: int = 1) -> None:
        ServiceUnavailable.__init__(self, None, retry_after=retry_after)
        self.detail = detail

    def __str__(self) -> str:
        return self.detail


class SubscriptionLagged(StoreError):
    """The subscriber fell too far behind; it was dropped and messages were lost."""


@runtime_checkable
class ChannelSubscription(Protocol):
    """One subscriber to one channel (see the module docstring for the lifecycle)."""

    @property
    def channel(self) -> str:
        """The channel name as given to ``subscribe`` (without the store prefix)."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def __aiter__(self) -> AsyncIterator[bytes]: ...

    async def __anext__(self) -> bytes: ...

    async def aclose(self) -> None:
        """Unsubscribe and free everything; idempotent (``__aexit__`` calls it)."""
        ...


@runtime_checkable
class Store(Protocol):
    """Async key/value with TTLs, set-if-absent, and pub/sub. Every key is prefixed.

    TTLs are seconds (``None``: no expiry). Raises ``StoreUnavailable`` when the backend
    is down.
    """

    @property
    def prefix(self) -> str:
        """Prepended to every key and channel (default ``"mcpcore:"``)."""
        ...

    async def get(self, key: str) -> bytes | None:
        """The value, or None if absent or expired."""
        ...

    async def set(self, key: str, value: bytes, *, ttl: float | None) -> None:
        """Store ``value``, replacing any previous one and its TTL."""
        ...

    async def set_if_absent(self, key: str, value: bytes, *, ttl: float | None) -> bool:
        """Store ``value`` only if ``key`` is absent; True if this call stored it.

        Atomic across every client of the backend: exactly one concurrent caller wins.
        """
        ...

    async def delete(self, key: str) -> bool:
        """Remove ``key``; True if it existed."""
        ...

    async def publish(self, channel: str, message: bytes) -> None:
        """Deliver ``message`` to every current subscriber of ``channel`` (at most once)."""
        ...

    def subscribe(self, channel: str) -> ChannelSubscription:
        """A subscription to ``channel``; use it with ``async with``."""
        ...

    async def ping(self) -> None:
        """Return if the backend answers, raise ``StoreUnavailable`` if not: the one
        question readiness checks ask (bounded by the backend's timeouts)."""
        ...

    async def close(self) -> None:
        """Release connections and end all subscriptions. Idempotent."""
        ...


def check_ttl(ttl: float | None) -> None:
    """Reject TTLs that no backend can honour (zero, negative, NaN)."""
    if ttl is not None and not ttl > 0:
        raise ValueError(f"ttl must be a positive number of seconds or None, not {ttl!r}")


class LocalSubscription:
    """An in-process subscriber with a bounded queue, fed by ``offer``.

    ``on_open``/``on_close`` are the owner's (un)registration hooks. ``offer`` never
    blocks and never grows the queue beyond ``max_queue``: on overflow the subscriber
    is marked lagged and unregistered, its consumer drains what was buffered and then
    gets ``SubscriptionLagged``.
    """

    def __init__(
        self,
        channel: str,
        *,
        max_queue: int,
        on_open: Callable[[LocalSubscription], None],
        on_close: Callable[[LocalSubscription], None],
    ) -> None:
        if max_queue < 1:
            raise ValueError("max_queue must be at least 1")
        self._channel = channel
        self._max_queue = max_queue
        self._on_open = on_open
        self._on_close = on_close
        self._queue: deque[bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._state = "new"  # new -> open -> (lagged | closed)

    @property
    def channel(self) -> str:
        return self._channel

    @property
    def lagged(self) -> bool:
        """True once the subscriber overflowed and was dropped."""
        return self._state == "lagged"

    @property
    def pending(self) -> int:
        """Messages buffered and not yet consumed."""
        return len(self._queue)

    async def __aenter__(self) -> Self:
        if self._state != "new":
            raise RuntimeError("a subscription can be entered only once")
        self._state = "open"
        self._on_open(self)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        if self._state == "new":
            raise RuntimeError("use 'async with store.subscribe(channel) as sub' first")
        while True:
            if self._queue:
                return self._queue.popleft()
            if self._state == "lagged":
                raise SubscriptionLagged(
                    f"subscriber to {self._channel!r} fell more than {self._max_queue} "
                    "messages behind and was dropped"
                )
            if self._state == "closed":
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def offer(self, message: bytes) -> None:
        """Queue ``message`` for the consumer (called by the publisher's side)."""
        if self._state != "open":
            return
        if len(self._queue) >= self._max_queue:
            self._state = "lagged"
            self._on_close(self)
        else:
            self._queue.append(message)
        self._wake()

    def end(self) -> None:
        """End the stream from the owner's side (store closing): iteration stops."""
        if self._state in ("new", "open"):
            self._state = "closed"
            self._wake()

    async def aclose(self) -> None:
        if self._state == "open":
            self._on_close(self)
        if self._state != "lagged":
            self._state = "closed"
        self._queue.clear()
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


__all__ = [
    "DEFAULT_MAX_QUEUE",
    "DEFAULT_PREFIX",
    "ChannelSubscription",
    "LocalSubscription",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "SubscriptionLagged",
    "check_ttl",
]
