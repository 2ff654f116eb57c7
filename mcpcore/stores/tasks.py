"""Task storage: the ``TaskBackend`` protocol, and ``LocalTaskBackend`` on a ``MemoryStore``.

A task needs two things the plain ``Store`` protocol does not give, both per task id:

- a **record** written by compare-and-set: every write names the version it read, and
  loses (``False``) if someone wrote in between, so two instances never overwrite each
  other's transitions (the caller reads again and retries);
- an **answer log**, appended in the same atomic step as the record write that accepted
  the answers, and read by the worker from a cursor: answers from ``tasks/update`` on any
  instance reach the instance running the work, and none is lost if it looks late.

Both expire when the task does (the record's TTL counts from creation and is passed on
every write); the log is deleted as soon as the task finishes. Wake-ups (``a task you
run changed, look again``) are ordinary ``Store`` pub/sub and may be lost: workers also
look on every lease renewal.

``mcpcore.stores.backends.task_backend(store)`` picks the backend for a store: this
module's for ``MemoryStore`` (one process), ``mcpcore.stores.redis_tasks.RedisTaskBackend``
for ``RedisStore`` (a fleet: Lua scripts, a hash and a stream per task).
"""

from __future__ import annotations

import asyncio
from typing import NamedTuple, Protocol, runtime_checkable
from weakref import WeakKeyDictionary

import msgspec

from mcpcore.stores.memory import MemoryStore


class StoredTask(NamedTuple):
    """A record as stored: its version (for the next compare-and-set) and its bytes."""

    version: int
    data: bytes


@runtime_checkable
class TaskBackend(Protocol):
    """Versioned task records with an answer log each. Ids are opaque strings."""

    async def insert(self, task_id: str, data: bytes, *, ttl_ms: int) -> bool:
        """Store a new record at version 1; False if ``task_id`` exists. When this
        returns, every instance's ``load`` finds it (the extension's durable creation)."""
        ...

    async def load(self, task_id: str) -> StoredTask | None:
        """The record, or None if there is none (never created, or expired)."""
        ...

    async def replace(self, task_id: str, version: int, data: bytes, *, ttl_ms: int,
                      answers: bytes | None = None, finished: bool = False) -> bool:
        """Write ``data`` as version ``version + 1`` if the stored version is
        ``version``; else change nothing and return False.

        In the same atomic step: append ``answers`` to the task's log, or, if
        ``finished``, delete the log. ``ttl_ms`` is the record's remaining life.
        """
        ...

    async def answers(self, task_id: str, after: str | None = None
                      ) -> list[tuple[str, bytes]]:
        """Answer batches appended after cursor ``after`` (None: from the start),
        oldest first, each with its cursor."""
        ...


class LocalTaskBackend:
    """Task records inside a ``MemoryStore``: one process, the store's TTLs and sweep.

    Compare-and-set is a read and a write under an ``asyncio.Lock``, so it is atomic
    for the coroutines of one event loop, which is all a ``MemoryStore`` serves (it is
    not thread-safe either).
    """

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        # One lock per event loop: a module-level server may serve several loops over
        # its life (tests, reloads), and an asyncio lock belongs to one.
        self._locks: WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            WeakKeyDictionary())

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock

    @staticmethod
    def _keys(task_id: str) -> tuple[str, str]:
        return f"task:{task_id}", f"task:{task_id}:answers"

    async def insert(self, task_id: str, data: bytes, *, ttl_ms: int) -> bool:
        key, _ = self._keys(task_id)
        return await self.store.set_if_absent(key, _pack(1, data), ttl=ttl_ms / 1000)

    async def load(self, task_id: str) -> StoredTask | None:
        key, _ = self._keys(task_id)
        raw = await self.store.get(key)
        return None if raw is None else _unpack(raw)

    async def replace(self, task_id: str, version: int, data: bytes, *, ttl_ms: int,
                      answers: bytes | None = None, finished: bool = False) -> bool:
        key, log_key = self._keys(task_id)
        ttl = ttl_ms / 1000
        async with self._lock():
            raw = await self.store.get(key)
            if raw is None or _unpack(raw).version != version:
                return False
            await self.store.set(key, _pack(version + 1, data), ttl=ttl)
            if finished:
                await self.store.delete(log_key)
            elif answers is not None:
                held = await self.store.get(log_key)
                log = _decode_log(held) if held is not None else []
                log.append(answers)
                await self.store.set(log_key, _encode_log(log), ttl=ttl)
        return True

    async def answers(self, task_id: str, after: str | None = None
                      ) -> list[tuple[str, bytes]]:
        _, log_key = self._keys(task_id)
        held = await self.store.get(log_key)
        if held is None:
            return []
        start = 0 if after is None else int(after) + 1
        log = _decode_log(held)
        return [(str(i), log[i]) for i in range(start, len(log))]


def _pack(version: int, data: bytes) -> bytes:
    return b"%d:" % version + data


def _unpack(raw: bytes) -> StoredTask:
    head, _, data = raw.partition(b":")
    return StoredTask(int(head), data)


_encode_log = msgspec.msgpack.Encoder().encode
_decode_log = msgspec.msgpack.Decoder(list[bytes]).decode


__all__ = ["LocalTaskBackend", "StoredTask", "TaskBackend"]
