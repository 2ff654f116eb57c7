"""``RedisStore``: the ``Store`` a fleet shares, over ``redis.asyncio``.

With ``mcpcore.stores.redis_tasks``, the only modules that import redis
(``mcpcore.stores`` imports them lazily, so the memory path never loads them). Keys:
GET, SET PX, SET NX PX (``set_if_absent`` is one atomic command, so exactly one instance
wins a replay race), DEL. Channels: PUBLISH/SUBSCRIBE.

Where Redis is (``RedisStore.from_url``), all through redis-py's own clients:

- ``redis://[user:pass@]host:port/db``, ``rediss://`` (TLS), ``unix:///path``: one server;
- ``redis+sentinel://[user:pass@]host:port[,host:port...]/service[/db]`` (and
  ``rediss+sentinel://``): the primary of ``service`` as Redis Sentinel names it
  (``redis.asyncio.sentinel``). redis-py asks the Sentinels for the primary only when it
  opens a connection, and a failover that leaves the old primary running (``SENTINEL
  FAILOVER``) does not close connections to it until Sentinel reconfigures it, about
  ten seconds later: meanwhile it would take writes that the new primary never sees.
  So the store also listens to the Sentinels: from ``+try-failover`` to
  ``+switch-master`` writes fail fast (``StoreUnavailable``), then it drops its
  connections and the next operation reaches the new primary;
- ``redis+cluster://[user:pass@]host:port[,host:port...]`` (and ``rediss+cluster://``):
  a Redis Cluster (``redis.asyncio.cluster``). Every operation touches one key, or keys
  that share a hash tag (the task backend's ``task:{id}`` and ``task:{id}:answers``), so
  each lands on one slot; the prefix therefore may not contain ``{`` or ``}``.

Connections: commands share one pool (``max_connections``; with one server more
concurrent commands wait for a free connection). Subscriptions get a **dedicated pub/sub
connection each**, from a second pool, so long-lived listeners never starve commands.
Why not one shared pub/sub connection with local fan-out? Dedicated connections keep each
subscriber isolated and its cleanup exact (UNSUBSCRIBE, confirmed, then the connection is
closed: ``PUBSUB NUMSUB`` drops to 0), need no reader task that must be supervised and
resubscribed after reconnects, and leave backpressure to Redis: a subscriber that stops
reading is cut off by the server's ``client-output-buffer-limit pubsub`` instead of
growing a queue here. The cost is one Redis connection per open subscription.

Failures (docs/deploying.md, "When things fail"): every operation is bounded by
``operation_timeout`` (default 3 s, retries and Sentinel look-ups included), and every
connectivity failure becomes ``StoreUnavailable`` (sent to peers as HTTP 503 with
``Retry-After``, no backend named). The first failure of an outage is logged once, at
ERROR, and the first success after it once, at WARNING, with the outage's length; the
requests in between log nothing. Nothing needs a restart when Redis returns: the pools
reconnect on the next command. Open subscriptions end with ``StoreUnavailable`` (a gap
is never silent: redis-py's own reconnect-and-resubscribe is turned off for them); their
owners subscribe again.

Acknowledged writes: Redis replicates asynchronously, so a failover can lose a write
the old primary acknowledged. With ``wait_replicas=N`` every write is followed by
``WAIT N`` on the same connection, and counts as done only once N replicas hold it;
otherwise it fails with ``StoreUnavailable`` (and the request with it).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

try:
    import redis.asyncio as aioredis
except ImportError as exc:  # pragma: no cover - exercised by a plain install only
    raise ImportError("RedisStore needs the redis client: pip install 'mcpcore[redis]'") from exc
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import NoBackoff
from redis.exceptions import ClusterError, ReadOnlyError, ResponseError, SlotNotCoveredError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from mcpcore.stores.base import DEFAULT_PREFIX, StoreUnavailable, check_ttl

log = logging.getLogger("mcpcore.stores")

_UNAVAILABLE = (RedisConnectionError, RedisTimeoutError, OSError, asyncio.TimeoutError,
                ReadOnlyError, ClusterError, SlotNotCoveredError)
#: Replies of a server that is up but cannot take the command now (replication,
#: loading, cluster reconfiguration): an outage too, not a bug.
_TRANSIENT_REPLIES = ("NOREPLICAS", "MASTERDOWN", "LOADING", "CLUSTERDOWN", "TRYAGAIN")
_SCHEMES = {"redis": "redis", "rediss": "rediss", "unix": "unix",
            "redis+sentinel": "redis", "rediss+sentinel": "rediss",
            "redis+cluster": "redis", "rediss+cluster": "rediss"}

#: A ``Redis`` or ``RedisCluster`` client (both untyped upstream where it matters).
RedisConnection = Any


def is_outage(exc: BaseException) -> bool:
    """Is ``exc`` Redis being unreachable or unable to serve now (not a bug of ours)?"""
    if isinstance(exc, _UNAVAILABLE):
        return True
    return isinstance(exc, ResponseError) and str(exc).startswith(_TRANSIENT_REPLIES)


class _Health:
    """``with health:`` turns connectivity errors into ``StoreUnavailable`` and logs each
    outage twice: when it starts (ERROR) and when the next operation succeeds (WARNING)."""

    __slots__ = ("_address", "_down_since", "_failures", "_secret")

    def __init__(self, address: str, secret: str | None) -> None:
        self._address = address
        self._secret = secret
        self._down_since: float | None = None
        self._failures = 0

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is None:
            if self._down_since is not None:
                self.recovered()
        elif is_outage(exc):
            raise self.unavailable(exc) from exc

    def unavailable(self, exc: BaseException | str) -> StoreUnavailable:
        """The error for ``exc``, counted against the current outage (started if none)."""
        detail = exc if isinstance(exc, str) else (str(exc) or type(exc).__name__)
        if self._secret:
            detail = detail.replace(self._secret, "***")
        error = StoreUnavailable(f"Redis at {self._address} is unavailable: {detail}")
        self._failures += 1
        if self._down_since is None:
            self._down_since = time.monotonic()
            log.error("%s; requests that need the Store fail with HTTP 503 until it is back "
                      "(logged once per outage)", error)
        return error

    def recovered(self) -> None:
        if self._down_since is None:
            return
        log.warning("Redis at %s is reachable again after %.1f s (%d operations failed "
                    "meanwhile)", self._address, time.monotonic() - self._down_since,
                    self._failures)
        self._down_since = None
        self._failures = 0


class RedisStore:
    """A ``Store`` on Redis; build it with ``RedisStore.from_url``.

    >>> store = RedisStore.from_url("redis://localhost:6379/0")  # doctest: +SKIP
    >>> await store.set_if_absent("rs:abc", b"1", ttl=600.0)    # doctest: +SKIP
    True
    """

    def __init__(
        self,
        client: RedisConnection,
        *,
        pubsub_client: RedisConnection | None = None,
        prefix: str = DEFAULT_PREFIX,
        address: str = "unknown",
        secret: str | None = None,
        confirm_timeout: float = 5.0,
        operation_timeout: float = 3.0,
        wait_replicas: int = 0,
        wait_timeout: float = 0.5,
        owned: tuple[Any, ...] = (),
    ) -> None:
        if "{" in prefix or "}" in prefix:
            raise ValueError("the prefix may not contain '{' or '}': they are Redis "
                             "Cluster hash tags, and keys must choose their own")
        if wait_replicas < 0:
            raise ValueError("wait_replicas must be 0 or more")
        self._client = client
        self._pubsub_client = pubsub_client or client
        self._prefix = prefix
        self._address = address
        self._health = _Health(address, secret)
        self._confirm_timeout = confirm_timeout
        self._timeout = operation_timeout
        self._wait = (wait_replicas, max(1, math.ceil(wait_timeout * 1000)))
        self._owned = owned  # closed with the store (a Sentinel's own connections)
        self._subscriptions: set[RedisSubscription] = set()
        self._closed = False
        self._watch = next((o for o in owned if isinstance(o, _FailoverWatch)), None)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        max_connections: int = 64,
        connect_timeout: float = 1.0,
        command_timeout: float = 2.0,
        operation_timeout: float = 3.0,
        retries: int = 1,
        health_check_interval: float = 30.0,
        wait_replicas: int | None = None,
        wait_timeout: float | None = None,
    ) -> RedisStore:
        """Connect lazily to ``url`` (the module docstring lists the forms).

        Timeouts are seconds: ``connect_timeout`` per connection attempt,
        ``command_timeout`` per reply, ``operation_timeout`` for a whole operation
        (retries and Sentinel look-ups included). ``retries`` are immediate (no backoff).
        ``wait_replicas``/``wait_timeout`` may also come from the URL's query
        (``?wait_replicas=1&wait_timeout=0.5``).
        """
        parts = urlsplit(url)
        scheme = _SCHEMES.get(parts.scheme)
        if scheme is None:
            raise ValueError(f"unsupported Redis URL scheme {parts.scheme!r}: use one of "
                             f"{', '.join(sorted(_SCHEMES))}")
        query = dict(parse_qsl(parts.query))
        replicas = int(query.pop("wait_replicas", wait_replicas or 0))
        wait_for = float(query.pop("wait_timeout", wait_timeout or 0.5))
        options: dict[str, Any] = {
            "socket_connect_timeout": connect_timeout,
            "socket_timeout": command_timeout,
            "retry": Retry(NoBackoff(), retries),
            "health_check_interval": health_check_interval,
        }
        secret = parts.password
        plain = parts._replace(scheme=scheme, query=urlencode(query)).geturl()
        owned: tuple[Any, ...] = ()
        if parts.scheme.endswith("+sentinel"):
            client, pubsub, address, owned = _sentinel(parts, query, options,
                                                       max_connections, scheme)
        elif parts.scheme.endswith("+cluster"):
            if replicas:
                raise ValueError("wait_replicas is not supported with Redis Cluster")
            client = _cluster(parts, scheme, options, max_connections)
            pubsub, address = client, "cluster " + parts.netloc.rpartition("@")[2]
        else:
            # Blocking: a burst of more than ``max_connections`` concurrent commands
            # waits (up to ``command_timeout``) for a connection instead of failing.
            commands = aioredis.BlockingConnectionPool.from_url(
                plain, max_connections=max_connections, timeout=command_timeout, **options)
            subscriptions = aioredis.ConnectionPool.from_url(plain, **_no_retry(options))
            client = aioredis.Redis(connection_pool=commands)
            pubsub = aioredis.Redis(connection_pool=subscriptions)
            address = _describe(plain)
        return cls(client, pubsub_client=pubsub, prefix=prefix, address=address,
                   secret=secret, operation_timeout=operation_timeout,
                   wait_replicas=replicas, wait_timeout=wait_for, owned=owned)

    @property
    def prefix(self) -> str:
        return self._prefix

    @property
    def address(self) -> str:
        """Where the store is (``host:port``, the Sentinel service, the cluster), for
        messages and logs."""
        return self._address

    @property
    def client(self) -> RedisConnection:
        """The command client (the shared pool), for modules that run their own
        commands or scripts on this store (``mcpcore.stores.redis_tasks``)."""
        return self._client

    @property
    def available(self) -> bool:
        """False between a failed operation and the next successful one."""
        return not self._health.down

    async def run(self, command: Callable[[RedisConnection], Any], *, write: bool = False) -> Any:
        """``await command(client)`` within the operation timeout, errors mapped; a
        ``write`` also waits for ``wait_replicas`` (same connection, one round trip).
        For modules that run their own commands or scripts on this store."""
        watch = self._watch
        if watch is not None:
            watch.ensure()
            if write and watch.paused:
                # Not an outage of its own: the watch logged the failover once.
                raise StoreUnavailable(f"Redis at {self._address} is unavailable: a "
                                       "Sentinel failover is under way")
        with self._health:
            async with asyncio.timeout(self._timeout):
                if not write or not self._wait[0]:
                    return await command(self._client)
                pipe = self._client.pipeline(transaction=False)
                await command(pipe)  # queues it (a pipeline is awaitable; scripts are async)
                pipe.wait(*self._wait)
                *results, acked = await pipe.execute()
        if acked < self._wait[0]:
            raise self._health.unavailable(
                f"a write reached {acked} of the {self._wait[0]} replicas it must wait for")
        return results[0]

    # -- keys ---------------------------------------------------------------------------

    async def get(self, key: str) -> bytes | None:
        k = self._prefix + key
        value = await self.run(lambda c: c.get(k))
        # decode_responses is off: redis returns bytes.
        return value if value is None or isinstance(value, bytes) else value.encode()

    async def set(self, key: str, value: bytes, *, ttl: float | None) -> None:
        check_ttl(ttl)
        k, px = self._prefix + key, _ms(ttl)
        await self.run(lambda c: c.set(k, value, px=px), write=True)

    async def set_if_absent(self, key: str, value: bytes, *, ttl: float | None) -> bool:
        check_ttl(ttl)
        k, px = self._prefix + key, _ms(ttl)
        return bool(await self.run(lambda c: c.set(k, value, px=px, nx=True), write=True))

    async def delete(self, key: str) -> bool:
        k = self._prefix + key
        removed: int = await self.run(lambda c: c.delete(k), write=True)
        return removed > 0

    async def ping(self) -> None:
        """Raise ``StoreUnavailable`` unless the server answers (readiness checks)."""
        await self.run(lambda c: c.ping())

    # -- pub/sub ------------------------------------------------------------------------

    async def publish(self, channel: str, message: bytes) -> None:
        if not isinstance(message, bytes):
            raise TypeError(f"messages are bytes, not {type(message).__name__}")
        k = self._prefix + channel
        await self.run(lambda c: c.publish(k, message))

    def subscribe(self, channel: str) -> RedisSubscription:
        return RedisSubscription(self, channel)

    async def close(self) -> None:
        """End every subscription and disconnect both pools. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for sub in tuple(self._subscriptions):
            await sub.aclose()
        await _close_client(self._client)
        if self._pubsub_client is not self._client:
            await _close_client(self._pubsub_client)
        for owned in self._owned:
            await owned.aclose()

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
        store = self._store
        if store._closed:
            raise StoreUnavailable(f"Redis at {store._address} is unavailable: closed")
        if store._watch is not None:
            store._watch.ensure()
        self._state = "open"
        client = store._pubsub_client
        if isinstance(client, RedisCluster):
            # A cluster pub/sub finds its node from the slot map, which redis-py loads
            # on the client's first command, not on ``pubsub()``: load it first.
            with store._health:
                async with asyncio.timeout(store._timeout):
                    await client.initialize()
        self._pubsub = client.pubsub()
        store._subscriptions.add(self)
        try:
            with store._health:
                async with asyncio.timeout(store._timeout + store._confirm_timeout):
                    await self._pubsub.subscribe(self._key)
                    # Wait for the server's confirmation: from here on a PUBLISH from
                    # any connection reaches us.
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
                if is_outage(exc):
                    await self._release()
                    raise self._store._health.unavailable(exc) from exc
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
                async with asyncio.timeout(self._store._confirm_timeout):
                    await self._pubsub.unsubscribe(self._key)
                    await self._await_reply("unsubscribe")
            except (*_UNAVAILABLE, RuntimeError, ResponseError):
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


def _hosts(netloc: str, default_port: int) -> list[tuple[str, int]]:
    """``"a:1,b:2"`` (after any credentials) as ``[("a", 1), ("b", 2)]``."""
    out = []
    for item in netloc.rpartition("@")[2].split(","):
        host, _, port = item.strip().rpartition(":") if ":" in item else (item, "", "")
        host = host.strip("[]") or "localhost"
        out.append((host, int(port) if port else default_port))
    if not out:
        raise ValueError("a Redis URL must name at least one host")
    return out


def _credentials(parts: Any) -> dict[str, Any]:
    creds: dict[str, Any] = {}
    userinfo = parts.netloc.rpartition("@")[0]
    if userinfo:
        user, _, password = userinfo.partition(":")
        if user:
            creds["username"] = unquote(user)
        if password:
            creds["password"] = unquote(password)
    return creds


def _sentinel(parts: Any, query: dict[str, str], options: dict[str, Any],
              max_connections: int, scheme: str
              ) -> tuple[RedisConnection, RedisConnection, str, tuple[Any, ...]]:
    """Commands and pub/sub clients for the primary a set of Sentinels names."""
    path = [p for p in parts.path.split("/") if p]
    if not path:
        raise ValueError("a redis+sentinel:// URL names the service: "
                         "redis+sentinel://host:26379,host:26380/mymaster[/db]")
    service = unquote(path[0])
    db = int(path[1]) if len(path) > 1 else 0
    sentinels = _hosts(parts.netloc, 26379)
    sentinel_kwargs = {k: v for k, v in options.items()
                       if k in ("socket_connect_timeout", "socket_timeout")}
    if "sentinel_password" in query:
        sentinel_kwargs["password"] = query.pop("sentinel_password")
    if scheme == "rediss":
        options = {**options, "ssl": True}
    manager = Sentinel(sentinels, sentinel_kwargs=sentinel_kwargs,  # type: ignore[no-untyped-call]
                       **options)
    node = {**_credentials(parts), "db": db}
    commands = manager.master_for(service, max_connections=max_connections, **node)
    pubsub = manager.master_for(service, **node, retry=Retry(NoBackoff(), 0))
    hosts = ",".join(f"{h}:{p}" for h, p in sentinels)
    watch = _FailoverWatch(manager, service, (commands, pubsub))
    return commands, pubsub, f"sentinel service {service!r} via {hosts}", (watch, manager)


class _FailoverWatch:
    """Listens on every Sentinel for the failovers of one service.

    ``+try-failover``: the primary is about to change, and writes it acknowledges from
    now on may be lost with it (the replica being promoted no longer copies them), so
    writes fail fast with ``StoreUnavailable`` until the failover ends (at most
    ``pause_limit`` seconds). ``+switch-master``: once every Sentinel that answers names
    the new primary (the leader announces it first; a connection opened before the
    others learn it would be sent to the old one), every connection of ``clients`` is
    dropped, so the next command asks for the new primary, and writes go on.
    ``-failover-abort-*``: writes go on, on the same primary.

    One listening task per Sentinel and event loop, started by the store's first
    operation; each reconnects a second after its Sentinel fails. Best effort: were
    every Sentinel silent, connections still find the new primary once they fail.
    """

    EVENTS = ("+try-failover", "+switch-master", "-failover-abort-not-elected",
              "-failover-abort-no-good-slave", "-failover-abort-slave-timeout",
              "+failover-end-for-timeout")

    def __init__(self, manager: Sentinel, service: str, clients: tuple[RedisConnection, ...],
                 pause_limit: float = 10.0) -> None:
        self._manager = manager
        self._service = service.encode()
        self._clients = clients
        self._pause_limit = pause_limit
        self._paused_until = 0.0
        self._primary: bytes | None = None
        self._tasks: list[asyncio.Task[None]] = []
        #: Failovers acted on (for tests and logs).
        self.switches = 0

    @property
    def paused(self) -> bool:
        """True while a failover is under way: writes must not reach the old primary."""
        return self._paused_until > 0 and time.monotonic() < self._paused_until

    def ensure(self) -> None:
        loop = _loop()
        if self._tasks and all(not t.done() and t.get_loop() is loop for t in self._tasks):
            return
        for task in self._tasks:
            task.cancel()
        self._tasks = [asyncio.get_running_loop().create_task(
            self._listen(sentinel), name="mcpcore-sentinel-watch")
            for sentinel in self._manager.sentinels]

    async def _listen(self, sentinel: RedisConnection) -> None:
        while True:
            pubsub = sentinel.pubsub()
            try:
                await pubsub.subscribe(*self.EVENTS)
                while True:
                    message = await pubsub.get_message(timeout=None)
                    if message is not None and message["type"] == "message":
                        await self._heard(bytes(message["channel"]),
                                          bytes(message["data"]).split())
            except (RedisConnectionError, RedisTimeoutError, OSError):
                pass  # this Sentinel is gone for now
            finally:
                await pubsub.aclose()
            await asyncio.sleep(1.0)

    async def _heard(self, event: bytes, fields: list[bytes]) -> None:
        name = self._service.decode(errors="replace")
        if event == b"+switch-master":
            if not fields or fields[0] != self._service:
                return
            primary = b":".join(fields[-2:])
            if primary == self._primary:
                return  # the same news from another Sentinel
            self._primary = primary
            self.switches += 1
            where = primary.decode(errors="replace")
            log.warning("Sentinel failed %s over to %s: reconnecting", name, where)
            await self._agreed(fields[-2].decode(errors="replace"), int(fields[-1]))
            for client in self._clients:
                await client.connection_pool.disconnect(inuse_connections=True)
            self._paused_until = 0.0
        elif len(fields) > 1 and fields[1] == self._service:
            if event == b"+try-failover":
                self._paused_until = time.monotonic() + self._pause_limit
                log.warning("Sentinel is failing %s over: writes wait until it is done",
                            name)
            else:
                self._paused_until = 0.0

    async def _agreed(self, host: str, port: int) -> None:
        """Until every Sentinel that answers names ``host:port`` (bounded)."""
        deadline = time.monotonic() + self._pause_limit
        sentinels: list[RedisConnection] = self._manager.sentinels
        command = "SENTINEL GET-MASTER-ADDR-BY-NAME"
        while time.monotonic() < deadline:
            answers = await asyncio.gather(
                *(s.execute_command(command, self._service.decode()) for s in sentinels),
                return_exceptions=True)
            named = {_address(a) for a in answers if not isinstance(a, BaseException)}
            if named == {(host, port)}:
                return
            await asyncio.sleep(0.05)

    async def aclose(self) -> None:
        tasks, self._tasks = self._tasks, []
        loop = _loop()
        mine = [t for t in tasks if not t.done() and t.get_loop() is loop]
        for task in mine:
            task.cancel()
        await asyncio.gather(*mine, return_exceptions=True)


def _address(answer: Any) -> tuple[str, int] | None:
    """A Sentinel's ``GET-MASTER-ADDR-BY-NAME`` answer as ``(host, port)``."""
    if not answer or len(answer) != 2:
        return None
    host, port = answer
    return (host.decode() if isinstance(host, bytes) else str(host)), int(port)


def _loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _no_retry(options: dict[str, Any]) -> dict[str, Any]:
    """Options for pub/sub connections: redis-py would reconnect a subscription that
    lost its connection and resubscribe, silently skipping what was published
    meanwhile; with no retry the subscription ends with ``StoreUnavailable`` instead."""
    return {**options, "retry": Retry(NoBackoff(), 0)}


def _cluster(parts: Any, scheme: str, options: dict[str, Any],
             max_connections: int) -> RedisConnection:
    nodes = [ClusterNode(host, port) for host, port in _hosts(parts.netloc, 6379)]
    extra: dict[str, Any] = {"ssl": True} if scheme == "rediss" else {}
    options = {k: v for k, v in options.items() if k != "health_check_interval"}
    return RedisCluster(startup_nodes=nodes, max_connections=max_connections,
                        **_credentials(parts), **options, **extra)


async def _close_client(client: RedisConnection) -> None:
    if isinstance(client, RedisCluster):
        await client.aclose()
    else:
        await client.aclose(close_connection_pool=True)


def _ms(ttl: float | None) -> int | None:
    # Round up: a TTL must never be shorter than asked, and PX 0 is an error.
    return None if ttl is None else max(1, math.ceil(ttl * 1000))


__all__ = ["RedisStore", "RedisSubscription", "is_outage"]
