"""Baseline (b): the official MCP Python SDK (``mcp`` 2.3.0) serving the same ``echo`` tool.

Uses the SDK's high-level ``MCPServer`` and its own Streamable HTTP ASGI app in stateless,
JSON-response mode (no sessions, no SSE), the configuration closest to our stateless
engine. The SDK routes a request carrying the 2026-07-28 ``_meta`` envelope and
``MCP-Protocol-Version: 2026-07-28`` to its single-exchange path (no ``initialize``).

    uvicorn bench.sdk_server:app --loop uvloop --http httptools
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk-bench", version="1.0.0")


@server.tool(structured_output=False)  # content only, as ours and the bare app answer
def echo(text: str) -> str:
    """Echo the text back."""
    return text


# A Starlette app whose lifespan runs the SDK's session manager (uvicorn runs it).
app = server.streamable_http_app(json_response=True, stateless_http=True)
