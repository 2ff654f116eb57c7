"""MemoryStore specifics: the bounded sweep, the drop policy for slow subscribers, and
that the memory path never imports redis."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from mcpcore.stores import MemoryStore, StoreUnavailable, SubscriptionLagged


def clocked(**kwargs: int) -> tuple[MemoryStore, list[float]]:
    now = [0.0]
    return MemoryStore(clock=lambda: now[0], **kwargs), now  # type: ignore[arg-type]


async def test_expired_keys_are_swept_by_later_writes_in_bounded_batches() -> None:
    store, now = clocked(sweep_batch=10)
    for i in range(100):
        await store.set(f"k{i}", b"v", ttl=1.0)
    now[0] = 2.0
    assert len(store) == 100  # nothing swept until something is written
    await store.set("trigger", b"v", ttl=None)
    assert len(store) == 91  # 10 due entries swept, plus the new key
    for i in range(9):
        await store.set(f"t{i}", b"v", ttl=None)
    assert len(store) == 10  # all dead keys gone, live ones kept


async def test_rewrites_do_not_grow_the_deadline_heap_without_bound() -> None:
    store, _ = clocked()
    for _ in range(10_000):
        await store.set("same", b"v", ttl=3600.0)
    assert len(store) == 1
    assert len(store._deadlines) <= 2 * len(store) + 65


async def test_rewritten_key_is_not_swept_by_its_old_deadline() -> None:
    store, now = clocked()
    await store.set("k", b"old", ttl=1.0)
    await store.set("k", b"new", ttl=10.0)
    now[0] = 5.0
    await store.set("other", b"v", ttl=None)  # sweeps the stale (1.0, "k") entry
    assert await store.get("k") == b"new"


async def test_keys_are_stored_under_the_prefix() -> None:
    store = MemoryStore(prefix="app1:")
    await store.set("k", b"v", ttl=None)
    assert list(store._data) == ["app1:k"]
    assert MemoryStore().prefix == "mcpcore:"


async def test_a_lagging_subscriber_is_dropped_not_buffered_forever() -> None:
    store = MemoryStore(max_queue=3)
    async with store.subscribe("c") as slow, store.subscribe("c") as fast:
        for i in range(3):
            await store.publish("c", bytes([i]))
        assert [await anext(fast) for _ in range(3)] == [b"\x00", b"\x01", b"\x02"]
        await store.publish("c", b"\x03")  # slow's queue is full: it is dropped
        assert slow.lagged and not fast.lagged
        assert store.subscriber_count("c") == 1
        await store.publish("c", b"\x04")
        assert slow.pending == 3
        # The slow one drains what it had, then learns it lost messages.
        assert [await anext(slow) for _ in range(3)] == [b"\x00", b"\x01", b"\x02"]
        with pytest.raises(SubscriptionLagged, match="more than 3 messages behind"):
            await anext(slow)
        assert [await anext(fast) for _ in range(2)] == [b"\x03", b"\x04"]
    assert store.subscriber_count("c") == 0
    assert slow.pending == 0


async def test_unsubscribe_frees_the_channel_entry() -> None:
    store = MemoryStore()
    async with store.subscribe("c"), store.subscribe("c"):
        assert store.subscriber_count("c") == 2
    assert store.subscriber_count("c") == 0
    assert store._channels == {}


async def test_a_blocked_reader_wakes_on_publish() -> None:
    store = MemoryStore()
    async with store.subscribe("c") as sub:
        reader = asyncio.create_task(anext(sub))
        await asyncio.sleep(0)
        assert not reader.done()
        await store.publish("c", b"hi")
        assert await asyncio.wait_for(reader, 1.0) == b"hi"


async def test_a_closed_store_refuses_work() -> None:
    store = MemoryStore()
    await store.set("k", b"v", ttl=None)
    await store.close()
    assert len(store) == 0
    for op in (store.get("k"), store.delete("k"), store.publish("c", b"m")):
        with pytest.raises(StoreUnavailable, match="closed"):
            await op
    with pytest.raises(StoreUnavailable, match="closed"):
        store.subscribe("c")


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="max_queue"):
        MemoryStore(max_queue=0)


async def test_set_rejects_non_bytes_values() -> None:
    with pytest.raises(TypeError, match="bytes"):
        await MemoryStore().set("k", "text", ttl=None)  # type: ignore[arg-type]


def test_the_memory_path_does_not_import_redis() -> None:
    code = (
        "import sys, mcpcore.stores, mcpcore.sealing\n"
        "from mcpcore.stores import MemoryStore\n"
        "assert not any(m == 'redis' or m.startswith('redis.') for m in sys.modules), 'redis'\n"
        "from mcpcore.stores import RedisStore\n"
        "assert 'redis' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=".")
