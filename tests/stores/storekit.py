"""Helpers for the store tests (a module name of its own, so ``import`` never picks up
another directory's conftest): free ports, a raw PING probe, a throwaway redis-server,
and the test ``Harness``. ``tests/tasks`` uses them too (as ``tests.stores.storekit``)."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

from mcpcore.stores import Store


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def redis_server() -> Iterator[str]:
    """A throwaway redis-server (no persistence) on a free loopback port; its URL.

    No redis-server on PATH: the test is skipped locally and *fails* when ``CI`` is set,
    so CI can never go green by silently skipping Redis tests.
    """
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


@dataclass
class Harness:
    """A store plus a way to let time pass that suits its backend."""

    kind: str
    store: Store
    now: list[float] = field(default_factory=lambda: [0.0])

    async def advance(self, seconds: float) -> None:
        if self.kind == "memory":
            self.now[0] += seconds
        else:
            await asyncio.sleep(seconds)

    async def wait_absent(self, key: str, *, within: float = 2.0) -> None:
        """Memory: expiry is exact, the clock was advanced. Redis: poll, bounded."""
        deadline = time.monotonic() + within
        while await self.store.get(key) is not None:
            assert time.monotonic() < deadline, f"{key!r} did not expire within {within}s"
            await asyncio.sleep(0.01)
