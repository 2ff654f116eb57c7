"""The gateway in front of real servers on loopback, at once: ``examples.everything``
(2026-07-28, HTTP under uvicorn), the official Python SDK's server pinned to its 2025
session wire (HTTP), and ``examples.quickstart`` over stdio, spawned and supervised by
the gateway. Downstream: our own client in both eras."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from mcpcore.client.errors import RemoteProtocolError
from mcpcore.gateway.config import GatewayConfig, UpstreamConfig
from tests.client.third_party import http_server, launch
from tests.gateway.inprocess import downstream, serving
from tests.support.processes import ROOT

pytestmark = pytest.mark.integration

STATE_KEYS = "test1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"


@pytest.fixture(scope="module")
def everything_url() -> Iterator[str]:
    with http_server(launch("mcpcore", STATE_KEYS)) as url:
        yield url


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    with http_server(launch("sdk", STATE_KEYS)) as url:
        yield url


def quickstart(**options: Any) -> UpstreamConfig:
    return UpstreamConfig("quick", command=sys.executable,
                          args=("-m", "examples.quickstart", "--stdio"), cwd=str(ROOT),
                          env={"PYTHONPATH": str(ROOT)}, **options)


def three(everything_url: str, sdk_url: str) -> GatewayConfig:
    return GatewayConfig(upstreams=(
        UpstreamConfig("everything", url=everything_url),
        UpstreamConfig("sdk", url=sdk_url, era="legacy"),
        quickstart()))


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_three_real_servers_behind_one_endpoint(everything_url: str, sdk_url: str,
                                                      mode: str) -> None:
    async with serving(three(everything_url, sdk_url), {}) as gateway, \
            downstream(gateway, mode) as client:
        health = gateway.health()
        assert {name: h["state"] for name, h in health.items()} == {
            "everything": "up", "sdk": "up", "quick": "up"}
        assert health["everything"]["era"] == "2026-07-28"
        assert health["sdk"]["era"].startswith("2025-")  # its session wire, pinned
        names = {t.name for t in await client.tools()}
        assert {"everything__test_simple_text", "sdk__add", "quick__echo"} <= names
        simple = await client.call_tool("everything__test_simple_text")
        assert simple.content[0].text
        added = await client.call_tool("sdk__add", {"a": 2, "b": 3})
        assert added.content[0].text == "5.0"
        echoed = await client.call_tool("quick__echo", {"text": "through stdio"})
        assert echoed.content[0].text == "through stdio"
        static = await client.read_resource("fixture://static")
        assert static.contents[0].text == "static text"
        text = await client.read_resource("test://static-text")
        assert text.contents[0].text
        greeting = await client.get_prompt("sdk__greet", {"name": "Ada"})
        assert greeting.messages[0].content.text == "Hello, Ada!"
        done = await client.complete({"type": "ref/prompt", "name": "sdk__greet"},
                                     {"name": "name", "value": "a"})
        assert done.completion.values == ["ada", "alan"]


async def test_progress_from_a_2025_upstream_reaches_a_modern_client(
        everything_url: str, sdk_url: str) -> None:
    seen: list[Any] = []
    async with serving(three(everything_url, sdk_url), {}) as gateway, \
            downstream(gateway) as client:
        result = await client.call_tool("sdk__slow_progress", {"steps": 3},
                                        on_notification=seen.append)
    assert result.content[0].text == "done"
    assert [n.params["progress"] for n in seen
            if n.method == "notifications/progress"] == [1, 2, 3]


async def test_a_killed_stdio_upstream_is_restarted_and_stopped_on_shutdown(
        everything_url: str) -> None:
    config = GatewayConfig(upstreams=(UpstreamConfig("everything", url=everything_url),
                                      quickstart()))
    async with serving(config, {}) as gateway, downstream(gateway) as client:
        quick = gateway.upstreams["quick"]
        first = quick.pid
        assert first is not None
        os.killpg(first, signal.SIGKILL)
        # Meanwhile: a typed error naming it, and the other upstream still served.
        with pytest.raises(RemoteProtocolError) as down:
            await client.call_tool("quick__echo", {"text": "x"})
        assert down.value.data["upstream"] == "quick"
        assert (await client.call_tool("everything__test_simple_text")).content
        await until_async(lambda: quick.pid not in (None, first))
        second = quick.pid
        assert second is not None and quick.restarts == 1
        assert gone(first)
        echoed = await client.call_tool("quick__echo", {"text": "back"})
        assert echoed.content[0].text == "back"
    assert gone(second)  # stopped and reaped: no zombie, no orphan


async def until_async(condition: Any, seconds: float = 30.0) -> None:
    """Wait (polling the loop) for a real process to come back; generous for a loaded
    machine."""
    async with asyncio.timeout(seconds):
        while not condition():
            await asyncio.sleep(0.05)


async def test_an_unreachable_upstream_never_stops_the_gateway(everything_url: str) -> None:
    config = GatewayConfig(upstreams=(
        UpstreamConfig("nowhere", url="http://127.0.0.1:9/mcp", timeout=5.0),
        UpstreamConfig("everything", url=everything_url),
        UpstreamConfig("broken", command=sys.executable, args=("-c", "print('banner')"))))
    async with serving(config, {}) as gateway, downstream(gateway, "legacy") as client:
        assert gateway.ready
        states = {n: h["state"] for n, h in gateway.health().items()}
        assert states == {"nowhere": "down", "everything": "up", "broken": "down"}
        assert any(t.name.startswith("everything__") for t in await client.tools())
        with pytest.raises(RemoteProtocolError):
            await client.call_tool("nowhere__x")

