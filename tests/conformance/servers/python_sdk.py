"""A small server built with the official Python SDK (``mcp`` 2.3.0), for the suite's
third-party runs: what a typical author writes, nothing tuned for conformance.

    python tests/conformance/servers/python_sdk.py PORT      # 127.0.0.1 only
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("python-sdk-sample", version="1.0.0")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True), structured_output=False)
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool(annotations=ToolAnnotations(readOnlyHint=True), structured_output=False)
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.resource("sample://readme", mime_type="text/plain")
def readme() -> str:
    """A static text resource."""
    return "A sample server."


@server.prompt()
def greet(name: str) -> str:
    """Greet someone by name."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[1]),
                log_level="warning")
