"""Stores: the little state a fleet of stateless servers shares.

``MemoryStore`` (one process, the default) and ``RedisStore`` (a fleet) implement the
``Store`` protocol from ``mcpcore.stores.base``. ``RedisStore`` is imported on first use,
so code that only needs memory never imports redis.

Tasks (``mcpcore.tasks``) keep their records through a ``TaskBackend``
(``mcpcore.stores.tasks``): ``task_backend(store)`` (``mcpcore.stores.backends``) gives
the one that lives in a store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpcore.stores.backends import task_backend
from mcpcore.stores.base import (
    ChannelSubscription,
    Store,
    StoreError,
    StoreUnavailable,
    SubscriptionLagged,
)
from mcpcore.stores.memory import MemoryStore
from mcpcore.stores.tasks import LocalTaskBackend, StoredTask, TaskBackend

if TYPE_CHECKING:
    from mcpcore.stores.redis import RedisStore


def __getattr__(name: str) -> Any:
    if name == "RedisStore":
        from mcpcore.stores.redis import RedisStore

        return RedisStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ChannelSubscription",
    "LocalTaskBackend",
    "MemoryStore",
    "RedisStore",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "StoredTask",
    "SubscriptionLagged",
    "TaskBackend",
    "task_backend",
]
