"""A server closing its hub ends listen streams gracefully, with the listen result."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from mcpcore import Server
from mcpcore.jsonrpc import Request
from tests.support.clock import until

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}


def listen_request(request_id: int | str) -> Request:
    params = {"_meta": META, "notifications": {"toolsListChanged": True}}
    return Request(request_id, "subscriptions/listen", msgspec.Raw(msgspec.json.encode(params)))


async def test_aclose_ends_every_listen_stream_with_its_result() -> None:
    server = Server("s", "1")

    @server.tool()
    def noop() -> str:
        """Does nothing."""
        return ""

    seen: dict[int | str, list[dict[str, Any]]] = {1: [], "two": []}

    def sink_for(key: int | str) -> Any:
        async def sink(message: bytes) -> None:
            seen[key].append(msgspec.json.decode(message))
        return sink

    streams = [asyncio.ensure_future(server.handle(listen_request(key), sink=sink_for(key)))
               for key in (1, "two")]
    await until(lambda: all(seen.values()))
    await server.notify_list_changed("tools")
    await until(lambda: all(len(v) == 2 for v in seen.values()))
    await server.aclose()
    results = await asyncio.wait_for(asyncio.gather(*streams), 5)
    for key, result in zip((1, "two"), results, strict=True):
        assert result["resultType"] == "complete"
        # The subscription id keeps the JSON type of the listen request's id.
        assert result["_meta"]["io.modelcontextprotocol/subscriptionId"] == key
        assert [m["method"] for m in seen[key]] == [
            "notifications/subscriptions/acknowledged", "notifications/tools/list_changed"]
    assert server.subscriptions.active == 0


async def test_registering_a_tool_at_runtime_announces_the_change() -> None:
    server = Server("s", "1")

    @server.tool()
    def first() -> str:
        """The first tool."""
        return ""

    seen: list[str] = []

    async def sink(message: bytes) -> None:
        seen.append(msgspec.json.decode(message)["method"])

    stream = asyncio.ensure_future(server.handle(listen_request(5), sink=sink))
    await until(lambda: bool(seen))

    def second() -> str:
        """Added while a client listens."""
        return ""

    server.tools.add(second)
    await until(lambda: len(seen) >= 2)
    assert seen == ["notifications/subscriptions/acknowledged",
                    "notifications/tools/list_changed"]
    await server.aclose()
    await asyncio.wait_for(stream, 5)
