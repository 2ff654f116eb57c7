"""An MCP client for servers of every era: 2026-07-28 (stateless) and the 2025 session
wire (2025-11-25, 2025-06-18, 2025-03-26), over Streamable HTTP or stdio, one API.

::

    from mcpcore.client import Client

    async def main() -> None:
        async with Client.http("http://127.0.0.1:8000/mcp",
                               on_elicit=lambda params: {"action": "decline"}) as client:
            print(client.era, client.protocol_version)
            async for tool in client.iter_tools():
                print(tool.name)
            result = await client.call_tool("test_simple_text")
            print(result.content[0].text)

Modules: ``client`` (``Client``: the API, typed results, MRTR), ``era`` (the probe),
``subscription`` (``Subscription``), ``tasks`` (``ClientTasks``, ``TaskHandle``: the
tasks extension), ``resolvers`` (answers to the server's questions,
both eras), ``modern`` and ``legacy`` (the two wires), ``http`` and ``stdio`` (the
transports), ``wire`` (JSON-RPC plumbing), ``sse`` (a sans-I/O event-stream decoder) and
``errors``. Importing this package loads neither the server engine nor jsonschema.
See docs/client.md.
"""

from mcpcore.client.client import SUPPORTED_VERSIONS, Client, NotificationHandler
from mcpcore.client.era import EraCache
from mcpcore.client.errors import (
    ClientError,
    EraNegotiationError,
    HttpError,
    ListingIncomplete,
    LocalProtocolError,
    RemoteProtocolError,
    RequestTimeout,
    ResponseTooLarge,
    SessionExpired,
    TransportError,
)
from mcpcore.client.http import HttpTransport
from mcpcore.client.legacy import Backoff
from mcpcore.client.resolvers import ElicitHandler, RootsHandler, SampleHandler
from mcpcore.client.sse import SseDecoder, SseEvent
from mcpcore.client.stdio import StdioTransport
from mcpcore.client.subscription import Subscription
from mcpcore.client.tasks import ClientTasks, TaskCancelled, TaskHandle

__all__ = [
    "SUPPORTED_VERSIONS",
    "Backoff",
    "Client",
    "ClientError",
    "ClientTasks",
    "ElicitHandler",
    "EraCache",
    "EraNegotiationError",
    "HttpError",
    "HttpTransport",
    "ListingIncomplete",
    "LocalProtocolError",
    "NotificationHandler",
    "RemoteProtocolError",
    "RequestTimeout",
    "ResponseTooLarge",
    "RootsHandler",
    "SampleHandler",
    "SessionExpired",
    "SseDecoder",
    "SseEvent",
    "StdioTransport",
    "Subscription",
    "TaskCancelled",
    "TaskHandle",
    "TransportError",
]
