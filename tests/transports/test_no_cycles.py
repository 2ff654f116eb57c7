"""A request's objects are freed when it ends: serving one leaves no reference cycle.

Cycles are freed only by the garbage collector, later, and until then they hold the
whole request (scope, headers, the server's response object behind ``send``): memory
that is not reused while it is still in the cache, and collections that interrupt the
loop. So the hot paths are written without cycles, and this test holds them to it:
with ``gc.DEBUG_SAVEALL`` every object a collection would free lands in ``gc.garbage``.
"""

from __future__ import annotations

import asyncio
import gc
import json
from typing import Any

import pytest

from mcpcore import Context, Server, StreamableHTTP
from mcpcore.conformance.asgi import http_scope
from tests.support.wire import make_meta, standard_headers


def app() -> StreamableHTTP:
    server = Server("cycles")

    @server.tool()
    def echo(text: str) -> str:
        """Echoes."""
        return text

    @server.tool()
    async def slow(ctx: Context) -> str:
        """Reports progress (the reply becomes an event stream)."""
        await ctx.report_progress(1, total=2)
        return "done"

    return StreamableHTTP(server)


class Plain:
    """``receive``/``send`` as uvicorn gives them, kept free of cycles themselves."""

    def __init__(self, body: bytes) -> None:
        self.request: dict[str, Any] | None = {"type": "http.request", "body": body,
                                               "more_body": False}
        self.done = asyncio.Event()
        self.chunks: list[bytes] = []

    async def receive(self) -> dict[str, Any]:
        request, self.request = self.request, None
        if request is not None:
            return request
        await self.done.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            self.chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                self.done.set()


def call(tool: str, arguments: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    params = {"name": tool, "arguments": arguments,
              "_meta": make_meta({}, progressToken="p")}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": params}).encode()
    return body, standard_headers("tools/call", params)


@pytest.mark.parametrize(("tool", "arguments", "expect"), [
    ("echo", {"text": "hi"}, b'"text":"hi"'),         # a JSON reply
    ("slow", {}, b"notifications/progress"),          # an event stream
])
async def test_a_request_leaves_no_reference_cycle(
        tool: str, arguments: dict[str, Any], expect: bytes) -> None:
    served = app()
    body, headers = call(tool, arguments)
    scope = http_scope("POST", "/mcp", headers)
    for _ in range(3):  # warm: first-use caches are not per request
        exchange = Plain(body)
        await served(dict(scope), exchange.receive, exchange.send)
    gc.collect()  # frees what setting up left (saved, it would be found again below)
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(20):
            exchange = Plain(body)
            await served(dict(scope), exchange.receive, exchange.send)
            assert expect in b"".join(exchange.chunks)
            await asyncio.sleep(0)  # what the request scheduled runs (a cancelled watch)
        del exchange
        gc.collect()
        kinds = sorted({type(o).__qualname__ for o in gc.garbage})
        assert gc.garbage == [], f"{len(gc.garbage)} objects in cycles: {kinds}"
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
