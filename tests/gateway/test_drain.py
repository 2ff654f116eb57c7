"""A gateway instance starting and stopping in a fleet (docs/gateway.md, "Operating a
fleet"): a request that reaches it before its first catalog waits for it (never
"unknown tool"); a stopping instance keeps the calls parked on it reachable until they
are done (``GatewayLifespan.settle``, which ``mcpcore.serving.run`` waits for within
``--graceful-timeout``), so a retry through another instance completes instead of
``owner_gone``."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import httpx

from mcpcore import StreamableHTTP
from mcpcore.gateway import serve as gateway_serve
from mcpcore.gateway.app import Gateway, GatewayLifespan
from mcpcore.gateway.config import GatewayConfig, UpstreamConfig
from mcpcore.serving import find_hook
from mcpcore.transports.asgi import Receive, Scope, Send
from mcpcore.transports.http import LOCAL_HOSTS
from tests.gateway.inprocess import URL, alpha_server, http_client
from tests.gateway.test_bridge import ADA, answered
from tests.gateway.test_handoff import WHO, handle, instances, key_of

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}


class Slow:
    """An upstream that takes ``seconds`` before each answer (its start and first
    listing are slow too)."""

    def __init__(self, app: Any, seconds: float) -> None:
        self.app, self.seconds = app, seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await asyncio.sleep(self.seconds)
        await self.app(scope, receive, send)


@contextlib.asynccontextmanager
async def lifespan(app: Any) -> AsyncIterator[None]:
    """Run ``app``'s ASGI lifespan (as uvicorn does) around the block."""
    incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    sent: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await incoming.put({"type": "lifespan.startup"})

    async def send(message: dict[str, Any]) -> None:
        await sent.put(message)

    running = asyncio.ensure_future(app({"type": "lifespan", "asgi": {"version": "3.0"}},
                                        incoming.get, send))
    assert (await asyncio.wait_for(sent.get(), 10))["type"] == "lifespan.startup.complete"
    try:
        yield
    finally:
        await incoming.put({"type": "lifespan.shutdown"})
        await asyncio.wait_for(running, 30)


async def test_a_request_before_the_first_catalog_waits_for_it() -> None:
    """A balancer that only sees connections (nginx) sends to an instance as soon as
    its port accepts: the gateway must not answer "unknown tool" for a tool its
    catalog is about to hold."""
    upstream = http_client(Slow(StreamableHTTP(alpha_server()), 0.3))
    gateway = Gateway(GatewayConfig(upstreams=(UpstreamConfig("alpha", url=URL),)),
                      http_clients={"alpha": upstream})
    app = gateway_serve.build(gateway, allowed_hosts=LOCAL_HOSTS)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "alpha__add", "arguments": {"a": 1, "b": 2}, "_meta": META}}
    try:
        async with lifespan(app), httpx.AsyncClient(
                transport=httpx.ASGITransport(app), base_url="http://localhost") as http:
            assert not gateway.ready  # the catalog is being built
            answer = await http.post("/mcp", json=body, headers={
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                "Mcp-Name": "alpha__add"})
            assert answer.status_code == 200, answer.text
            assert answer.json()["result"]["content"][0]["text"] == "3", answer.text
    finally:
        await upstream.aclose()


async def test_a_request_gets_a_typed_503_when_the_catalog_cannot_be_built() -> None:
    upstream = http_client(StreamableHTTP(alpha_server()))
    gateway = Gateway(GatewayConfig(upstreams=(UpstreamConfig("alpha", url=URL),)),
                      http_clients={"alpha": upstream})
    app = gateway_serve.build(gateway, allowed_hosts=LOCAL_HOSTS)
    # What mcpcore.serving.run finds through the middleware for its graceful stop.
    assert find_hook(app, "settle") is not None

    async def failing_start() -> None:
        raise RuntimeError("the first catalog could not be built")

    gateway.start = failing_start  # type: ignore[method-assign]
    try:
        async with lifespan(app), httpx.AsyncClient(
                transport=httpx.ASGITransport(app), base_url="http://localhost") as http:
            answer = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1,
                                                   "method": "tools/list", "params": {}},
                                     headers={"MCP-Protocol-Version": "2026-07-28"})
            assert answer.status_code == 503
            assert answer.headers["retry-after"] == "1"
            assert answer.json()["error"]["data"] == {"reason": "unavailable",
                                                      "retryAfter": 1}
    finally:
        await upstream.aclose()


async def test_settle_waits_for_the_calls_parked_on_a_stopping_instance() -> None:
    """The owner stops (``settle`` begins: SIGTERM, after the drain): its parked call's
    retry, through another instance, still completes through the Store, and only then
    does ``settle`` return."""
    seen: Counter[str] = Counter()
    async with instances(2, seen=seen) as (owner, other):
        settle = GatewayLifespan(StreamableHTTP(owner.server), owner).settle
        params = {"name": "old__tally", "arguments": {"tag": "drained"}}
        first = await handle(owner, params)
        assert first["result"]["resultType"] == "input_required"
        assert owner.holding == 1
        settling = asyncio.ensure_future(settle())
        await asyncio.sleep(0.3)
        assert not settling.done()  # the parked call holds the stop
        done = await handle(other, answered(params, first, **{key_of(first): ADA}))
        assert done["result"]["content"][0]["text"] == "drained: Ada #1"
        await asyncio.wait_for(settling, 10)
        assert owner.holding == 0 and seen["drained"] == 1


async def test_settle_is_immediate_without_a_store() -> None:
    """A single instance (no Store): nothing can reach its parked calls once it stops
    accepting, so the stop does not wait for them."""
    async with instances(1) as (gateway,):
        gateway.handoff = None
        first = await handle(gateway, WHO)
        assert first["result"]["resultType"] == "input_required"
        assert gateway.holding == 0
        await asyncio.wait_for(GatewayLifespan(StreamableHTTP(gateway.server),
                                               gateway).settle(), 1)
