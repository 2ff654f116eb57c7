"""Change notifications cross instances: listen and legacy GET streams in a Redis fleet.

A ``subscriptions/listen`` stream (2026-07-28) or a legacy session's GET stream is held
open directly on instance A (its own port, bypassing nginx). The change is announced by
a tool call sent through nginx until an instance other than A served it (``X-Upstream``).
The event travels A ← Redis pub/sub ← B, and A's stream must deliver it: tagged with the
listen id (JSON type kept) on a listen stream, untagged on a legacy
stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from tests.integration.conftest import Fleet, RedisServer, fleet
from tests.support.sse import SseParser

pytestmark = pytest.mark.integration

MODERN = "2026-07-28"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "listen-fleet", "version": "1"}}
WATCHED = "test://watched-resource"


@pytest.fixture(scope="module")
def redis_fleet(redis_server: RedisServer,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with fleet(tmp_path_factory.mktemp("listen-fleet"),
               env={"MCPCORE_REDIS_URL": redis_server.url}) as running:
        yield running


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


class SseStream:
    """JSON-RPC messages from an open SSE response, one at a time, with a timeout
    (framed by the one parser, ``tests.support.sse``)."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._chunks = response.aiter_raw()
        self._parser = SseParser()
        self._ready: list[str] = []

    @property
    def comments(self) -> int:
        return self._parser.comments

    async def next(self, timeout: float = 5.0) -> dict[str, Any]:
        return await asyncio.wait_for(self._next(), timeout)

    async def _next(self) -> dict[str, Any]:
        while not self._ready:
            await self._read()
        message: dict[str, Any] = json.loads(self._ready.pop(0))
        return message

    async def _read(self) -> None:
        chunk = await anext(self._chunks, None)
        if chunk is None:
            raise EOFError("the stream ended")
        self._ready += self._parser.feed(chunk)

    async def first_comment(self, timeout: float = 5.0) -> None:
        async def wait() -> None:
            while not self._parser.comments:
                await self._read()

        await asyncio.wait_for(wait(), timeout)


@contextlib.asynccontextmanager
async def listen(client: httpx.AsyncClient, url: str, listen_id: Any,
                 notifications: dict[str, Any]) -> AsyncIterator[SseStream]:
    body = {"jsonrpc": "2.0", "id": listen_id, "method": "subscriptions/listen",
            "params": {"_meta": META, "notifications": notifications}}
    async with client.stream("POST", url, json=body,
                             headers=modern_headers("subscriptions/listen")) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        yield SseStream(response)


async def trigger_elsewhere(client: httpx.AsyncClient, fleet_: Fleet, avoid: int,
                            tool: str, arguments: dict[str, Any]) -> list[str]:
    """Call ``tool`` through nginx until an instance other than ``ports[avoid]`` served
    it; the upstream of every call made, in order."""
    avoided = f"127.0.0.1:{fleet_.ports[avoid]}"
    upstreams: list[str] = []
    for attempt in range(10):
        body = {"jsonrpc": "2.0", "id": f"trigger-{attempt}", "method": "tools/call",
                "params": {"name": tool, "arguments": arguments, "_meta": META}}
        response = await client.post(fleet_.url, json=body,
                                     headers=modern_headers("tools/call", tool))
        assert response.status_code == 200, response.text
        assert "result" in response.json(), response.text
        upstreams.append(response.headers["x-upstream"])
        if upstreams[-1] != avoided:
            return upstreams
    raise AssertionError(f"nginx never routed away from {avoided}: {upstreams}")


async def test_listen_on_one_instance_hears_updates_announced_on_another(
        redis_fleet: Fleet) -> None:
    # A string id on instance A, an integer id on instance B: each keeps its type.
    async with (
        httpx.AsyncClient(timeout=10) as client,
        listen(client, redis_fleet.instance_url(0), "listen-A",
               {"resourceSubscriptions": [WATCHED]}) as on_a,
        listen(client, redis_fleet.instance_url(1), 7,
               {"resourceSubscriptions": [WATCHED], "toolsListChanged": True}) as on_b,
    ):
        for stream, listen_id in ((on_a, "listen-A"), (on_b, 7)):
            ack = await stream.next()
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            assert ack["params"]["_meta"] == {SUBSCRIPTION_ID: listen_id}
            assert ack["params"]["notifications"]["resourceSubscriptions"] == [WATCHED]

        upstreams = await trigger_elsewhere(client, redis_fleet, 0,
                                            "test_trigger_resource_update", {"uri": WATCHED})
        print(f"\nlisten on 127.0.0.1:{redis_fleet.ports[0]}, triggers on {upstreams}")
        # One update per trigger, including the one announced by another instance.
        for stream, listen_id in ((on_a, "listen-A"), (on_b, 7)):
            for _ in upstreams:
                update = await stream.next()
                assert update == {
                    "jsonrpc": "2.0", "method": "notifications/resources/updated",
                    "params": {"_meta": {SUBSCRIPTION_ID: listen_id}, "uri": WATCHED}}
                assert type(update["params"]["_meta"][SUBSCRIPTION_ID]) is type(listen_id)

        # A tool-list change from elsewhere reaches B (asked for it) but not A (did not).
        await trigger_elsewhere(client, redis_fleet, 1, "test_trigger_tool_change", {})
        changed = await on_b.next()
        assert changed["method"] == "notifications/tools/list_changed"
        assert changed["params"]["_meta"] == {SUBSCRIPTION_ID: 7}
        with pytest.raises(TimeoutError):
            await on_a.next(timeout=0.5)


async def test_legacy_get_stream_hears_updates_announced_on_another_instance(
        redis_fleet: Fleet) -> None:
    a = redis_fleet.instance_url(0)
    async with httpx.AsyncClient(timeout=10) as client:
        legacy = {"Content-Type": "application/json",
                  "Accept": "application/json, text/event-stream"}
        init = await client.post(redis_fleet.url, headers=legacy, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "legacy-fleet", "version": "1"}}})
        assert init.status_code == 200, init.text
        session = {**legacy, "Mcp-Session-Id": init.headers["mcp-session-id"],
                   "MCP-Protocol-Version": "2025-11-25"}
        done = await client.post(redis_fleet.url, headers=session, json={
            "jsonrpc": "2.0", "method": "notifications/initialized"})
        assert done.status_code == 202
        # Subscribe through nginx (any instance): the session record lives in Redis.
        sub = await client.post(redis_fleet.url, headers=session, json={
            "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
            "params": {"uri": WATCHED}})
        assert sub.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}

        get_headers = {"Accept": "text/event-stream",
                       "Mcp-Session-Id": session["Mcp-Session-Id"],
                       "MCP-Protocol-Version": "2025-11-25"}
        async with client.stream("GET", a, headers=get_headers) as response:
            assert response.status_code == 200
            stream = SseStream(response)
            await stream.first_comment()  # ": open": subscribed to the event channel
            # An update of a URI this session did not subscribe to is filtered out.
            await trigger_elsewhere(client, redis_fleet, 0, "test_trigger_resource_update",
                                    {"uri": "test://not-subscribed"})
            upstreams = await trigger_elsewhere(client, redis_fleet, 0,
                                                "test_trigger_resource_update",
                                                {"uri": WATCHED})
            for _ in upstreams:
                update = await stream.next()
                # Legacy notifications carry no subscriptionId (no _meta at all).
                assert update == {"jsonrpc": "2.0",
                                  "method": "notifications/resources/updated",
                                  "params": {"uri": WATCHED}}
        end = await client.delete(redis_fleet.url, headers=get_headers)
        assert end.status_code == 200
