"""What a proxied call does NOT do per call (docs/performance.md, "The gateway's cost per
proxied call"): with the upstream on a real loopback socket (the gateway's own
connection pool, as ``mcpcore gateway serve`` runs), no httpx request model is built
per call, the credential's header is still on every request, and the connection to
the upstream is reused."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpcore import StreamableHTTP
from mcpcore.gateway.app import Gateway
from mcpcore.gateway.config import Credentials, GatewayConfig, SecretRef, UpstreamConfig
from tests.auth.support import LoopbackServer
from tests.gateway.inprocess import alpha_server, downstream

pytest.importorskip("httptools")

ENVIRON = {"STATIC_KEY": "static-key-7c1a"}


class Recording:
    """The upstream's app, recording each request's credential and client port."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[str | None, int]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            value = dict(scope["headers"]).get(b"authorization")
            self.seen.append((value.decode() if value else None, scope["client"][1]))
        await self.app(scope, receive, send)


@pytest.fixture
def upstream() -> Iterator[tuple[str, Recording]]:
    app = Recording(StreamableHTTP(alpha_server()))
    with LoopbackServer(lambda url: app) as server:
        yield server.url + "/mcp", app


@pytest.mark.parametrize("era", ["2026-07-28", "legacy"])
async def test_a_proxied_call_builds_no_httpx_request_and_reuses_its_connection(
        upstream: tuple[str, Recording], monkeypatch: pytest.MonkeyPatch, era: str) -> None:
    url, recording = upstream
    static = Credentials(kind="static", secret=SecretRef(env="STATIC_KEY"))
    config = GatewayConfig(upstreams=(UpstreamConfig("alpha", url=url, era=era,  # type: ignore[arg-type]
                                                     credentials=static),),
                           prefixing=False)
    gateway = Gateway(config, environ=ENVIRON)
    await gateway.start()
    try:
        async with downstream(gateway, "2026-07-28") as client:
            await client.call_tool("add", {"a": 1, "b": 1})  # warm: connections, lists
            built: list[str] = []
            original = httpx.AsyncClient.build_request

            def build_request(self: httpx.AsyncClient, method: str, target: Any,
                              **kw: Any) -> httpx.Request:
                if str(target).startswith(url):
                    built.append(method)
                return original(self, method, target, **kw)

            monkeypatch.setattr(httpx.AsyncClient, "build_request", build_request)
            start = len(recording.seen)
            for n in range(5):
                result = await client.call_tool("add", {"a": n, "b": 1})
                assert result.content[0].text == str(n + 1)  # type: ignore[union-attr]
    finally:
        await gateway.aclose()
    calls = recording.seen[start:]
    assert built == []
    assert len(calls) >= 5
    assert {credential for credential, _ in calls} == {"Bearer static-key-7c1a"}
    assert len({port for _, port in calls}) == 1  # one kept-alive connection


async def tasks_per_call(url: str, era: str, calls: int = 10) -> float:
    """Tasks this event loop starts per proxied ``tools/call`` (gateway and its
    in-process caller together)."""
    config = GatewayConfig(upstreams=(UpstreamConfig("alpha", url=url, era=era),),  # type: ignore[arg-type]
                           prefixing=False)
    gateway = Gateway(config)
    await gateway.start()
    loop = asyncio.get_running_loop()
    started = 0

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        nonlocal started
        started += 1
        return asyncio.Task(coro, loop=loop, **kw)

    try:
        async with downstream(gateway, "2026-07-28") as client:
            await client.call_tool("add", {"a": 1, "b": 1})
            loop.set_task_factory(factory)
            try:
                for _ in range(calls):
                    await client.call_tool("add", {"a": 1, "b": 1})
            finally:
                loop.set_task_factory(None)
    finally:
        await gateway.aclose()
    return started / calls


async def test_a_call_to_a_2025_upstream_starts_two_tasks_more_than_a_modern_one(
        upstream: tuple[str, Recording]) -> None:
    # The parked call (so that its questions can reach the caller) and the session's
    # reader of the POST: waiting for either a question or the end is one future, not
    # a task per wait.
    url, _ = upstream
    modern = await tasks_per_call(url, "2026-07-28")
    legacy = await tasks_per_call(url, "legacy")
    assert legacy - modern <= 2, (modern, legacy)
