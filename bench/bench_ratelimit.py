"""The fleet rate limiter's cost: one Redis round trip per call.

    python bench/bench_ratelimit.py [--n 5000]

Starts a throwaway ``redis-server`` on loopback and times, on one ``RedisStore`` pool:
``PING`` (one round trip, the baseline), ``RedisRateLimiter.acquire`` (the script),
and ``MemoryRateLimiter.acquire`` for scale; sequentially (c=1) and with 32 calls in
flight. The ratio acquire / PING near 1 is the "one round trip" claim.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import subprocess
import time
from collections.abc import Awaitable, Callable
from typing import Any

from run import free_port  # bench/ is not a package: its sibling, run as a script

from mcpcore.policy import MemoryRateLimiter, RateLimit
from mcpcore.stores import RedisStore
from mcpcore.stores.redis_ratelimit import RedisRateLimiter


async def timed(op: Callable[[int], Awaitable[Any]], n: int, concurrency: int) -> float:
    """Wall µs per operation, ``concurrency`` in flight."""
    for i in range(min(n, 500)):
        await op(i)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        if concurrency == 1:
            for i in range(n):
                await op(i)
        else:
            async def worker(w: int) -> None:
                for i in range(w, n, concurrency):
                    await op(i)

            await asyncio.gather(*(worker(w) for w in range(concurrency)))
        best = min(best, (time.perf_counter() - start) / n)
    return best * 1e6


async def measure(url: str, n: int) -> None:
    store = RedisStore.from_url(url, prefix="bench:")
    limiter = RedisRateLimiter(store)
    memory = MemoryRateLimiter()
    limit = RateLimit(10**9, 60)  # never refuses: every call does the full work
    try:
        for concurrency in (1, 32):
            ping = await timed(lambda i: store.ping(), n, concurrency)
            redis = await timed(lambda i: limiter.acquire(f"p{i % 100}|tool", limit, 0), n,
                                concurrency)
            local = await timed(lambda i: memory.acquire(f"p{i % 100}|tool", limit,
                                                         time.time()), n, concurrency)
            print(f"c={concurrency:<3} PING {ping:7.1f} us   RedisRateLimiter {redis:7.1f} us"
                  f"   (ratio {redis / ping:.2f})   MemoryRateLimiter {local:6.2f} us")
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=5000)
    args = parser.parse_args()
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed (make system-deps)")
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        asyncio.run(measure(f"redis://127.0.0.1:{port}/0", args.n))
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
