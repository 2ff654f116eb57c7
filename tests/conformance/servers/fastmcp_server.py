"""A small server built with FastMCP 4.x, for the suite's third-party runs.

    python tests/conformance/servers/fastmcp_server.py PORT   # 127.0.0.1 only
"""

from __future__ import annotations

import sys

from fastmcp import FastMCP

mcp = FastMCP("fastmcp-sample")


@mcp.tool(annotations={"readOnlyHint": True})
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@mcp.tool(annotations={"readOnlyHint": True})
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.resource("sample://readme", mime_type="text/plain")
def readme() -> str:
    """A static text resource."""
    return "A sample server."


@mcp.prompt()
def greet(name: str) -> str:
    """Greet someone by name."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    mcp.run("http", host="127.0.0.1", port=int(sys.argv[1]), show_banner=False,
            log_level="warning")
