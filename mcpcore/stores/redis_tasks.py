"""``RedisTaskBackend``: task records a fleet shares, with Redis's own primitives.

Per task, two keys with the same hash tag (so a Redis Cluster keeps them on one slot):

- ``<prefix>task:{<id>}``: a hash with ``v`` (the version) and ``d`` (the record), its
  TTL the task's remaining life;
- ``<prefix>task:{<id>}:answers``: a stream of answer batches (``XADD``), read from a
  cursor with ``XRANGE``; same TTL, deleted when the task finishes.

Every write is one Lua script, so compare-and-set and the log append (or delete) happen
together or not at all, whichever instance runs them (and, like every ``RedisStore``
operation, bounded by its timeout and counted as acknowledged only once ``wait_replicas``
replicas hold it): ``tasks/update`` on one instance
and the worker's next transition on another never interleave inside a write. Nothing is
held in process memory: an instance that dies loses nothing but its running work.
"""

from __future__ import annotations

from typing import Any

from mcpcore.stores.redis import RedisStore
from mcpcore.stores.tasks import StoredTask

# KEYS[1] record. ARGV[1] data, ARGV[2] ttl ms.
_INSERT = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'v', '1', 'd', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""

# KEYS[1] record, KEYS[2] answer log. ARGV[1] expected version, ARGV[2] data,
# ARGV[3] ttl ms, ARGV[4] answers ('' for none), ARGV[5] '1' if the task finished.
_REPLACE = """
local v = redis.call('HGET', KEYS[1], 'v')
if v ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', tostring(tonumber(v) + 1), 'd', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if ARGV[5] == '1' then
  redis.call('DEL', KEYS[2])
elseif ARGV[4] ~= '' then
  redis.call('XADD', KEYS[2], '*', 'a', ARGV[4])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
end
return 1
"""


class RedisTaskBackend:
    """The ``TaskBackend`` of a ``RedisStore`` (``task_backend(store)`` makes it).

    >>> backend = RedisTaskBackend(RedisStore.from_url("redis://127.0.0.1:6379/0"))
    ... # doctest: +SKIP
    """

    def __init__(self, store: RedisStore) -> None:
        self.store = store
        client = store.client
        self._insert = client.register_script(_INSERT)
        self._replace = client.register_script(_REPLACE)

    def _keys(self, task_id: str) -> tuple[str, str]:
        record = f"{self.store.prefix}task:{{{task_id}}}"
        return record, record + ":answers"

    async def insert(self, task_id: str, data: bytes, *, ttl_ms: int) -> bool:
        record, _ = self._keys(task_id)
        done = await self.store.run(
            lambda c: self._insert(keys=[record], args=[data, ttl_ms], client=c), write=True)
        return bool(done)

    async def load(self, task_id: str) -> StoredTask | None:
        record, _ = self._keys(task_id)
        version, data = await self.store.run(lambda c: c.hmget(record, ["v", "d"]))
        if version is None or data is None:
            return None
        return StoredTask(int(version), _bytes(data))

    async def replace(self, task_id: str, version: int, data: bytes, *, ttl_ms: int,
                      answers: bytes | None = None, finished: bool = False) -> bool:
        record, log = self._keys(task_id)
        args: list[Any] = [version, data, ttl_ms, answers or b"", "1" if finished else "0"]
        done = await self.store.run(
            lambda c: self._replace(keys=[record, log], args=args, client=c), write=True)
        return bool(done)

    async def answers(self, task_id: str, after: str | None = None
                      ) -> list[tuple[str, bytes]]:
        _, log = self._keys(task_id)
        start = "-" if after is None else "(" + after
        entries = await self.store.run(lambda c: c.xrange(log, min=start, max="+"))
        # decode_responses is off: ids and fields are bytes.
        return [(_bytes(entry_id).decode(), _bytes(fields[b"a"]))
                for entry_id, fields in entries or ()
                if entry_id is not None and fields is not None]


def _bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


__all__ = ["RedisTaskBackend"]
