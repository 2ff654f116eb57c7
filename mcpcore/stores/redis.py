"""``RedisStore``: the ``Store`` a fleet shares, over ``redis.asyncio``.

With ``mcpcore.stores.redis_tasks``, the only modules that import redis
(``mcpcore.stores`` imports them lazily, so the memory path never loads them). Keys:
GET, SET PX, SET NX PX (``set_if_absent`` is one atomic command, so exactly one instance
wins a replay race), DEL. Channels: PUBLISH/SUBSCRIBE.

Connections: commands share one pool (``max_connections``; more concurrent commands wait
for a free connection, up to the command timeout). Subscriptions get a
**dedicated pub/sub connection each**, from a second pool, so long-lived listeners never
starve commands. Why not one shared pub/sub connection with local fan-out? Dedicated
connections keep each subscriber isolated and its cleanup exact (UNSUBSCRIBE, confirmed,
then the connection is closed: ``PUBSUB NUMSUB`` drops to 0), need no reader task that
must be supervised and resubscribed after reconnects, and leave backpressure to Redis:
a subscriber that stops reading is cut off by the server's ``client-output-buffer-limit
pubsub`` instead of growing a queue here. The cost is one Redis connection per open
subscription; a subscriptions layer that expects thousands of listeners per process
should subscribe once per channel and fan out locally (``LocalSubscription``).

Errors: every redis ``ConnectionError``/``TimeoutError`` (and socket ``OSError``) becomes
``StoreUnavailable("Redis at host:port is unavailable: ...")``, never with credentials.
Retries are few and without backoff by default, so a dead Redis fails fast.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

try:
    import redis.asyncio as aioredis
except ImportError as exc:  # pragma: no cover - exercised by a plain install only
    raise ImportError("RedisStore needs the redis client: pip install 'mcpcore[redis]'") from exc
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from mcpcore.stores.base import DEFAULT_PREFIX, StoreUnavailable, check_ttl

_UNAVAILABLE = (RedisConnectionError, RedisTimeoutError, OSError, asyncio.TimeoutError)


def _describe(url: str) -> str:
    """``host:port`` (or the socket path) of ``url``, with no credentials."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return parts.path or "unix socket"
    host = parts.hostname or "localhost"
    try:
        port = parts.port or 6379
    except ValueError:
        port = 6379
    return f"{host}:{port}"


class _MapErrors:
    """``with self._errors:`` turns redis connectivity errors into ``StoreUnavailable``."""

    __slots__ = ("_address", "_secret")

    def __init__(self, address: str, secret: str | None) -> None:
        self._address = address
        self._secret = secret

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None and isinstance(exc, _UNAVAILABLE):
            raise self.unavailable(exc) from exc

    def unavailable(self, exc: BaseException) -> StoreUnavailable:
        detail = str(exc) or type(exc).__name__
        if self._secret:
            detail = detail.replace(self._secret, "***")
        return StoreUnavailable(f"Redis at {self._address} is unavailable: {detail}")


class RedisStore:
    """A ``Store`` on Redis; build it with ``RedisStore.from_url``.

    >>> store = RedisStore.from_url("redis://localhost:6379/0")  # doctest: +SKIP
    >>> await store.set_if_absent("rs:abc", b"1", ttl=600.0)    # doctest: +SKIP
    True
    """

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        pubsub_client: aioredis.Redis | None = None,
        prefix: str = DEFAULT_PREFIX,
        address: str = "unknown",
        secret: str | None = None,
        confirm_timeout: float = 5.0,
    ) -> None:
        self._client = client
        self._pubsub_client = pubsub_client or client
        self._prefix = prefix
        self._address = address
        self._errors = _MapErrors(address, secret)
        self._confirm_timeout = confirm_timeout
        self._subscriptions: set[RedisSubscription] = set()
        self._closed = False

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        max_connections: int = 64,
        connect_timeout: float = 2.0,
        command_timeout: float = 2.0,
        retries: int = 1,
        health_check_interval: float = 30.0,
    ) -> RedisStore:
        """Connect lazily to ``url`` (``redis://[user:pass@]host:port/db``, ``rediss://``,
        ``unix://``). Timeouts are seconds; ``retries`` are immediate (no backoff)."""
        options: dict[str, Any] = {
            "socket_connect_timeout": connect_timeout,
            "socket_timeout": command_timeout,
            "retry": Retry(NoBackoff(), retries),
            "health_check_interval": health_check_interval,
        }
        # Blocking: a burst of more than ``max_connections`` concurrent commands waits
        # (up to ``command_timeout``) for a connection instead of failing at once.
        commands = aioredis.BlockingConnectionPool.from_url(
            url, max_connections=max_connections, timeout=command_timeout, **options)
        subscriptions = aioredis.ConnectionPool.from_url(url, **options)
        return cls(
            aioredis.Redis(connection_pool=commands),
            pubsub_client=aioredis.Redis(connection_pool=subscriptions),
            prefix=prefix,
            address=_describe(url),
            secret=urlsplit(url).password,
        )

    @property
    def prefix(self) -> str:
        return self._prefix

    @property
    def address(self) -> str:
        """``host:port`` of the server, for messages and logs."""
        return self._address

    @property
    def client(self) -> aioredis.Redis:
        """The command client (the shared pool), for modules that run their own
        commands or scripts on this store (``mcpcore.stores.redis_tasks``)."""
        return self._client

    def guard(self) -> AbstractContextManager[None]:
        """``with store.guard():`` maps connectivity errors to ``StoreUnavailable``."""
        return self._errors

    # -- keys ---------------------------------------------------------------------------

    async def get(self, key: str) -> bytes | None:
        with self._errors:
            value = await self._client.get(self._prefix + key)
        # decode_responses is off: redis returns bytes.
        return value if value is None or isinstance(value, bytes) else value.encode()

    async def set(self, key: str, value: bytes, *, ttl: float | None) -> None:
        check_ttl(ttl)
        with self._errors:
            await self._client.set(self._prefix + key, value, px=_ms(ttl))

    async def set_if_absent(self, key: str, value: bytes, *, ttl: float | None) -> bool:
        check_ttl(ttl)
        with self._errors:
            stored = await self._client.set(self._prefix + key, value, px=_ms(ttl), nx=True)
        return bool(stored)

    async def delete(self, key: str) -> bool:
        with self._errors:
            removed: int = await self._client.delete(self._prefix + key)
        return removed > 0

    async def ping(self) -> None:
        """Raise ``StoreUnavailable`` unless the server answers (readiness checks)."""
        with self._errors:
            await self._client.ping()

    # -- pub/sub ------------------------------------------------------------------------

    async def publish(self, channel: str, message: bytes) -> None:
        if not isinstance(message, bytes):
            raise TypeError(f"messages are bytes, not {type(message).__name__}")
        with self._errors:
            await self._client.publish(self._prefix + channel, message)

    def subscribe(self, channel: str) -> RedisSubscription:
        return RedisSubscription(self, channel)

    async def close(self) -> None:
        """End every subscription and disconnect both pools. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for sub in tuple(self._subscriptions):
            await sub.aclose()
        await self._client.aclose(close_connection_pool=True)
        if self._pubsub_client is not self._client:
            await self._pubsub_client.aclose(close_connection_pool=True)

    def __repr__(self) -> str:
        return f"RedisStore(address={self._address!r}, prefix={self._prefix!r})"


class RedisSubscription:
    """One subscriber on its own pub/sub connection (see ``RedisStore``)."""

    def __init__(self, store: RedisStore, channel: str) -> None:
        self._store = store
        self._channel = channel
        self._key = (store._prefix + channel).encode()
        self._pubsub: Any = None  # redis.asyncio.client.PubSub (untyped upstream)
        self._state = "new"  # new -> open -> closed
        self._read_task: asyncio.Future[Any] | None = None

    @property
    def channel(self) -> str:
        return self._channel

    async def __aenter__(self) -> Self:
        if self._state != "new":
            raise RuntimeError("a subscription can be entered only once")
        if self._store._closed:
            raise StoreUnavailable(f"Redis at {self._store._address} is unavailable: closed")
        self._state = "open"
        self._pubsub = self._store._pubsub_client.pubsub()
        self._store._subscriptions.add(self)
        try:
            with self._store._errors:
                await self._pubsub.subscribe(self._key)
                # Wait for the server's confirmation: from here on a PUBLISH from any
                # connection reaches us.
                await self._await_reply("subscribe")
        except BaseException:
            await self._release()
            raise
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
        while self._state == "open":
            # The read runs as its own task so that aclose() from another task (e.g.
            # store.close()) can cancel it: a pending read is not woken by disconnecting.
            read = asyncio.ensure_future(
                self._pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
            )
            self._read_task = read
            try:
                message = await read
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if self._state == "open" or (current is not None and current.cancelling()):
                    raise  # our consumer was cancelled, not the subscription
                break  # closed under us: end quietly
            except Exception as exc:
                if self._state != "open":
                    break
                if isinstance(exc, _UNAVAILABLE):
                    await self._release()
                    raise self._store._errors.unavailable(exc) from exc
                raise
            finally:
                self._read_task = None
            if message is not None and message["type"] == "message":
                data: bytes = message["data"]
                return data
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """UNSUBSCRIBE (confirmed, unless a read is in flight), then close the connection."""
        if self._state != "open":
            self._state = "closed"
            return
        self._state = "closed"
        read, self._read_task = self._read_task, None
        if read is not None and not read.done():
            # Another task is blocked reading: stop it; redis-py drops the connection
            # on a cancelled read, so skip the polite UNSUBSCRIBE.
            read.cancel()
            await asyncio.wait((read,))
        else:
            try:
                await self._pubsub.unsubscribe(self._key)
                await self._await_reply("unsubscribe")
            except (*_UNAVAILABLE, RuntimeError):
                pass  # the connection is going away anyway; the server forgets us then
        await self._release()

    async def _await_reply(self, kind: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._store._confirm_timeout
        while (remaining := deadline - loop.time()) > 0:
            reply = await self._pubsub.get_message(timeout=remaining)
            if reply is not None and reply["type"] == kind and reply["channel"] == self._key:
                return
        raise RedisTimeoutError(f"no {kind} confirmation within the timeout")

    async def _release(self) -> None:
        self._state = "closed"
        self._store._subscriptions.discard(self)
        if self._pubsub is not None:
            pubsub, self._pubsub = self._pubsub, None
            await pubsub.aclose()


def _ms(ttl: float | None) -> int | None:
    # Round up: a TTL must never be shorter than asked, and PX 0 is an error.
    return None if ttl is None else max(1, math.ceil(ttl * 1000))


__all__ = ["RedisStore", "RedisSubscription"]
