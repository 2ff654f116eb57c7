"""One contract, every backend: ``MemoryStore`` and ``RedisStore`` behave the same.

Memory tests let time pass through the injected clock; Redis tests use real TTLs of
50-100 ms and bounded polling, so nothing sleeps long and nothing flakes on a slow box.
"""

from __future__ import annotations

import asyncio

import pytest
from storekit import Harness

from mcpcore.stores import ChannelSubscription, Store, StoreUnavailable

TIMEOUT = 2.0


async def test_both_backends_satisfy_the_protocol(harness: Harness) -> None:
    assert isinstance(harness.store, Store)
    assert isinstance(harness.store.subscribe("c"), ChannelSubscription)
    assert harness.store.prefix.startswith("test-")


async def test_get_set_delete(harness: Harness) -> None:
    store = harness.store
    assert await store.get("k") is None
    await store.set("k", b"v1", ttl=None)
    assert await store.get("k") == b"v1"
    await store.set("k", b"\x00\xffbinary", ttl=None)
    assert await store.get("k") == b"\x00\xffbinary"
    assert await store.delete("k") is True
    assert await store.delete("k") is False
    assert await store.get("k") is None


async def test_ttl_expires_keys(harness: Harness) -> None:
    store = harness.store
    await store.set("short", b"v", ttl=0.1)
    await store.set("forever", b"v", ttl=None)
    await harness.advance(0.03)
    assert await store.get("short") == b"v"
    await harness.advance(0.08)
    await harness.wait_absent("short")
    assert await store.get("forever") == b"v"
    assert await store.delete("short") is False


async def test_set_replaces_the_ttl(harness: Harness) -> None:
    store = harness.store
    await store.set("k", b"v", ttl=0.05)
    await store.set("k", b"w", ttl=None)
    await harness.advance(0.12)
    assert await store.get("k") == b"w"


async def test_set_if_absent_stores_only_once(harness: Harness) -> None:
    store = harness.store
    assert await store.set_if_absent("once", b"a", ttl=60) is True
    assert await store.set_if_absent("once", b"b", ttl=60) is False
    assert await store.get("once") == b"a"
    assert await store.delete("once") is True
    assert await store.set_if_absent("once", b"c", ttl=None) is True
    assert await store.get("once") == b"c"


async def test_set_if_absent_succeeds_again_after_expiry(harness: Harness) -> None:
    store = harness.store
    assert await store.set_if_absent("marker", b"1", ttl=0.05) is True
    assert await store.set_if_absent("marker", b"2", ttl=0.05) is False
    await harness.advance(0.06)
    await harness.wait_absent("marker")
    assert await store.set_if_absent("marker", b"3", ttl=60) is True


async def test_exactly_one_concurrent_set_if_absent_wins(harness: Harness) -> None:
    results = await asyncio.gather(
        *(harness.store.set_if_absent("race", str(i).encode(), ttl=60) for i in range(20))
    )
    assert results.count(True) == 1


@pytest.mark.parametrize("ttl", [0, -1.0, float("nan")])
async def test_nonsense_ttls_are_refused(harness: Harness, ttl: float) -> None:
    with pytest.raises(ValueError, match="ttl"):
        await harness.store.set("k", b"v", ttl=ttl)
    with pytest.raises(ValueError, match="ttl"):
        await harness.store.set_if_absent("k", b"v", ttl=ttl)


async def test_publish_reaches_every_subscriber_in_order(harness: Harness) -> None:
    store = harness.store
    async with (
        store.subscribe("news") as a,
        store.subscribe("news") as b,
        store.subscribe("other") as other,
    ):
        for i in range(3):
            await store.publish("news", f"m{i}".encode())
        await store.publish("other", b"x")
        for sub in (a, b):
            got = [await asyncio.wait_for(anext(sub), TIMEOUT) for _ in range(3)]
            assert got == [b"m0", b"m1", b"m2"]
        assert await asyncio.wait_for(anext(other), TIMEOUT) == b"x"
        assert a.channel == "news"


async def test_publish_without_subscribers_is_fine(harness: Harness) -> None:
    await harness.store.publish("nobody", b"hello")


async def test_async_for_reads_until_the_consumer_stops(harness: Harness) -> None:
    store = harness.store
    async with store.subscribe("feed") as sub:
        for i in range(5):
            await store.publish("feed", bytes([i]))
        got: list[bytes] = []

        async def consume() -> None:
            async for message in sub:
                got.append(message)
                if len(got) == 5:
                    break

        await asyncio.wait_for(consume(), TIMEOUT)
    assert got == [bytes([i]) for i in range(5)]


async def test_unsubscribed_subscribers_get_nothing_and_are_freed(harness: Harness) -> None:
    store = harness.store
    async with store.subscribe("gone") as sub:
        pass
    await store.publish("gone", b"late")
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(sub), TIMEOUT)
    await sub.aclose()  # idempotent


async def test_subscription_must_be_entered_before_reading(harness: Harness) -> None:
    sub = harness.store.subscribe("c")
    with pytest.raises(RuntimeError, match="async with"):
        await anext(sub)
    async with sub:
        pass
    with pytest.raises(RuntimeError, match="only once"):
        await sub.__aenter__()


async def test_close_ends_open_subscriptions(harness: Harness) -> None:
    store = harness.store
    async with store.subscribe("c") as sub:
        reader = asyncio.create_task(anext(sub))
        await asyncio.sleep(0.01)  # let the reader block
        await store.close()
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(reader, TIMEOUT)
    with pytest.raises(StoreUnavailable):
        async with store.subscribe("c"):
            pass
    await store.close()  # idempotent


async def test_values_must_be_bytes(harness: Harness) -> None:
    with pytest.raises(TypeError, match="bytes"):
        await harness.store.publish("c", "text")  # type: ignore[arg-type]
