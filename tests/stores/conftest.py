"""Fixtures for the store tests: a real ``redis-server`` per session, and a harness that
runs one contract suite against ``MemoryStore`` and ``RedisStore``.

No redis-server on PATH: the redis tests are skipped locally, and *fail* when ``CI`` is
set, so CI can never go green by silently skipping them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import redis.asyncio as aioredis
from storekit import Harness, answers_ping, free_port

from mcpcore.stores import MemoryStore, RedisStore


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """URL of a throwaway redis-server (no persistence) on a free port."""
    binary = shutil.which("redis-server")
    if binary is None:
        why = "redis-server not installed: apt-get install redis-server (or brew install redis)"
        if os.environ.get("CI"):
            pytest.fail(f"{why}; CI must run the Redis integration tests", pytrace=False)
        pytest.skip(why)
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 10.0
        while not answers_ping(port):
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                pytest.fail(f"redis-server exited with {proc.returncode}: {err}", pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(f"redis-server did not answer PING on port {port}", pytrace=False)
            time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()


@pytest.fixture
async def raw_redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    """A plain client, to look behind the store's back (TTLs, NUMSUB, prefixes)."""
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
async def harness(request: pytest.FixtureRequest) -> AsyncIterator[Harness]:
    # A fresh prefix per test keeps tests independent on the shared server.
    prefix = f"test-{uuid.uuid4().hex[:8]}:"
    if request.param == "memory":
        now = [0.0]
        h = Harness("memory", MemoryStore(prefix=prefix, clock=lambda: now[0]), now)
    else:
        url = request.getfixturevalue("redis_url")
        h = Harness("redis", RedisStore.from_url(url, prefix=prefix))
    yield h
    await h.store.close()
