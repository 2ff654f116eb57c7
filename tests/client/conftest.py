"""Fixtures for the client tests: our ``Client`` against ``examples.everything``.

``connect`` opens a client over httpx's ``ASGITransport`` (in-process, no sockets);
``resolvers`` gives canned MRTR answers (``client_doubles.Resolvers``) that record what
they were asked.
``MCPCORE_STATE_KEYS`` comes from the session fixture ``state_keys`` (tests/conftest.py),
so sealing never falls back to the dev key and its warning.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from client_doubles import Connect, Resolvers

from mcpcore.client import Client

URL = "http://localhost/mcp"
@pytest.fixture
def everything() -> Any:
    import examples.everything as module

    return module


@pytest.fixture
def resolvers() -> Resolvers:
    return Resolvers()


@pytest.fixture
def connect(everything: Any, state_keys: str) -> Connect:
    """``async with connect(**options) as client``: a client of the fixture server."""

    @contextlib.asynccontextmanager
    async def opened(app: Any = None, *, sent: list[httpx.Request] | None = None,
                     **options: Any) -> AsyncIterator[Client]:
        hooks: dict[str, list[Any]] = {}
        if sent is not None:
            async def record(request: httpx.Request) -> None:
                sent.append(request)
            hooks["request"] = [record]
        # The era is named unless a test names another: no test depends on an earlier
        # one having cached this URL's era in the process-wide EraCache (test_era.py
        # tests probing).
        options.setdefault("mode", "2026-07-28")
        transport = httpx.ASGITransport(app=app or everything.app)
        async with httpx.AsyncClient(transport=transport, event_hooks=hooks) as http, \
                Client.http(URL, http_client=http, **options) as client:
            yield client

    return opened
