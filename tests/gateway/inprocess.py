"""Gateways over in-process upstreams, for the tests that need no real process.

Each upstream is an ordinary ``Server`` behind ``StreamableHTTP`` (both eras on one
endpoint, like a real one) reached through ``StreamingASGITransport``; the gateway is served
the same way to a downstream ``Client`` of either era.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from mcpcore import Context, Server, StreamableHTTP
from mcpcore.client import Client
from mcpcore.conformance.asgi import StreamingASGITransport
from mcpcore.gateway.app import Gateway
from mcpcore.gateway.config import GatewayConfig, UpstreamConfig

URL = "http://localhost/mcp"


def alpha_server() -> Server:
    server = Server("alpha", "1.0.0")

    @server.tool(annotations={"readOnlyHint": True})
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    @server.tool()
    def shared() -> str:
        """Alpha's tool of a name beta has too."""
        return "alpha"

    @server.tool()
    async def slow_progress(ctx: Context, steps: int = 3) -> str:
        """Report progress, then finish."""
        for step in range(steps):
            await ctx.report_progress(step + 1, steps, f"step {step + 1}")
        return "done"

    @server.tool()
    def fail() -> str:
        """A tool error (isError), not a protocol error."""
        from mcpcore import ToolError

        raise ToolError("alpha failed on purpose")

    @server.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello {name}"

    @server.completion(prompt="greet")
    def complete_name(argument: str, value: str, context: dict[str, str]) -> list[str]:
        return [n for n in ("alice", "albert", "bob") if n.startswith(value)]

    @server.resource("mem://shared/readme", name="readme", mime_type="text/plain")
    def readme() -> str:
        return "alpha's readme"

    @server.resource_template("mem://alpha/{id}", name="item", mime_type="text/plain")
    def item(id: str) -> str | None:
        return None if id == "missing" else f"alpha item {id}"  # None: not found

    return server


def beta_server() -> Server:
    server = Server("beta", "1.0.0")

    @server.tool()
    def shared() -> str:
        """Beta's tool of a name alpha has too."""
        return "beta"

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return f"beta: {text}"

    @server.resource("mem://shared/readme", name="readme", mime_type="text/plain")
    def readme() -> str:
        return "beta's readme"

    @server.resource("mem://beta/notes", name="notes", mime_type="text/plain")
    def notes() -> str:
        return "beta's notes"

    return server


CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}},
           "required": ["confirm"]}


def jobs_server() -> Server:
    """A 2026-07-28 upstream whose tools may become tasks (the tasks extension)."""
    server = Server("jobs", "1.0.0")
    server.tasks.manager.poll_interval = 0.05

    @server.tool(task="optional")
    async def build(ctx: Context, seconds: float = 0.0) -> str:
        """Sleep ``seconds`` (reporting it), then finish."""
        await ctx.report_status(f"building for {seconds:g} s")
        await asyncio.sleep(seconds)
        return f"built in {seconds:g} s"

    @server.tool(task="optional")
    async def approve(ctx: Context, item: str) -> str:
        """Ask before approving ``item``."""
        answer = await ctx.elicit(f"Approve {item}?", CONFIRM, key="approve")
        if answer.accepted and (answer.content or {}).get("confirm") is True:
            return f"{item} approved"
        return f"{item} rejected"

    @server.tool(task="required", task_start="handler")
    async def named(ctx: Context) -> str:
        """Ask a name synchronously, then run as a task."""
        answer = await ctx.elicit("Your name?", {"type": "object", "properties": {
            "name": {"type": "string"}}, "required": ["name"]}, key="name")
        await ctx.start_task()
        return f"Hello, {(answer.content or {}).get('name')}"

    @server.tool(task="optional")
    async def broken(ctx: Context) -> str:
        """A protocol error inside the task: it ends failed."""
        from mcpcore.errors import InvalidParams

        raise InvalidParams("broken on purpose")

    @server.tool()
    def quick() -> str:
        """Never a task."""
        return "quick"

    return server


def http_client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=StreamingASGITransport(app), base_url="http://localhost")


@contextlib.asynccontextmanager
async def serving(config: GatewayConfig, apps: Mapping[str, Any], **options: Any
                  ) -> AsyncIterator[Gateway]:
    """``config``'s gateway over ``apps`` (upstream name → ASGI app), started."""
    clients = {name: http_client(app) for name, app in apps.items()}
    gateway = Gateway(config, http_clients=clients, **options)
    try:
        await gateway.start()
        yield gateway
    finally:
        await gateway.aclose()
        for client in clients.values():
            await client.aclose()


@contextlib.asynccontextmanager
async def downstream(gateway: Gateway, mode: str = "auto", **options: Any
                     ) -> AsyncIterator[Client]:
    """Our own client, of ``mode``'s era, talking to the gateway over HTTP."""
    async with http_client(StreamableHTTP(gateway.server)) as http, \
            Client.http(URL, http_client=http, mode=mode, era_cache=None,
                        **options) as client:
        yield client


def with_jobs(config: GatewayConfig) -> GatewayConfig:
    """``config`` with the ``jobs`` upstream (``jobs_server``) added."""
    return dataclasses.replace(config, upstreams=(*config.upstreams,
                                                  UpstreamConfig("jobs", url=URL)))


def two_upstreams(**gateway: Any) -> GatewayConfig:
    return GatewayConfig(upstreams=(UpstreamConfig("alpha", url=URL),
                                    UpstreamConfig("beta", url=URL, era="legacy")),
                         **gateway)
