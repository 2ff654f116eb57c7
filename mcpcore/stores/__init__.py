"""Stores: the little state a fleet of stateless servers shares.

``MemoryStore`` (one process, the default) and ``RedisStore`` (a fleet) implement the
``Store`` protocol from ``mcpcore.stores.base``. ``RedisStore`` is imported on first use,
so code that only needs memory never imports redis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpcore.stores.base import (
    Store,
    StoreError,
    StoreUnavailable,
    Subscription,
    SubscriptionLagged,
)
from mcpcore.stores.memory import MemoryStore

if TYPE_CHECKING:
    from mcpcore.stores.redis import RedisStore


def __getattr__(name: str) -> Any:
    if name == "RedisStore":
        from mcpcore.stores.redis import RedisStore

        return RedisStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MemoryStore",
    "RedisStore",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "Subscription",
    "SubscriptionLagged",
]
