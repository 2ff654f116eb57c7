"""Which ``TaskBackend`` lives in a store: ``task_backend(store)``.

Above both backends (``mcpcore.stores.tasks`` for a ``MemoryStore``,
``mcpcore.stores.redis_tasks`` for a ``RedisStore``), so that neither imports the other.
"""

from __future__ import annotations

import sys

from mcpcore.stores.base import Store
from mcpcore.stores.memory import MemoryStore
from mcpcore.stores.tasks import LocalTaskBackend, TaskBackend


def task_backend(store: Store) -> TaskBackend:
    """The task backend that lives in ``store``.

    >>> isinstance(task_backend(MemoryStore()), LocalTaskBackend)
    True
    """
    # RedisStore's module is loaded only if someone made a RedisStore: look it up,
    # never import it (that would import redis for memory-only servers).
    redis_module = sys.modules.get("mcpcore.stores.redis")
    if redis_module is not None and isinstance(store, redis_module.RedisStore):
        # Imported here, not above: it imports redis, which a memory-only server never
        # loads (the import graph still counts this edge: it makes no circle).
        from mcpcore.stores.redis_tasks import RedisTaskBackend

        return RedisTaskBackend(store)
    if isinstance(store, MemoryStore):
        return LocalTaskBackend(store)
    raise TypeError(f"no task backend for {type(store).__name__}; pass one explicitly "
                    "(an object implementing mcpcore.stores.tasks.TaskBackend)")


__all__ = ["task_backend"]
