"""A stateless MCP 2026-07-28 client: Streamable HTTP or stdio, MRTR with resolvers.

::

    from mcpcore.client import Client

    async def main() -> None:
        async with Client.http("http://127.0.0.1:8000/mcp",
                               on_elicit=lambda params: {"action": "decline"}) as client:
            await client.discover()
            async for tool in client.iter_tools():
                print(tool.name)
            result = await client.call_tool("test_simple_text")
            print(result.content[0].text)

Modules: ``session`` (``Client``, ``Subscription``: ``_meta``, headers, version
negotiation, the MRTR loop, typed results), ``transport`` (HTTP via httpx with JSON or
SSE responses; stdio via a subprocess), ``sse`` (a sans-I/O event-stream decoder) and
``errors`` (``ClientError``: ``LocalProtocolError`` vs ``RemoteProtocolError``).
See docs/client.md.
"""

from mcpcore.client.errors import (
    ClientError,
    LocalProtocolError,
    RemoteProtocolError,
    RequestTimeout,
    TransportError,
)
from mcpcore.client.session import (
    SUPPORTED_VERSIONS,
    Client,
    ElicitHandler,
    NotificationHandler,
    RootsHandler,
    SampleHandler,
    Subscription,
)
from mcpcore.client.sse import SseDecoder, SseEvent
from mcpcore.client.transport import HttpTransport, Reply, StdioTransport, Transport

__all__ = [
    "SUPPORTED_VERSIONS",
    "Client",
    "ClientError",
    "ElicitHandler",
    "HttpTransport",
    "LocalProtocolError",
    "NotificationHandler",
    "RemoteProtocolError",
    "Reply",
    "RequestTimeout",
    "RootsHandler",
    "SampleHandler",
    "SseDecoder",
    "SseEvent",
    "StdioTransport",
    "Subscription",
    "Transport",
    "TransportError",
]
