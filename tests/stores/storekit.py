"""Helpers for the store tests (a module name of its own, so ``import`` never picks up
another directory's conftest): free ports, a raw PING probe, and the test ``Harness``."""

from __future__ import annotations

import asyncio
import socket
import time
from dataclasses import dataclass, field

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
