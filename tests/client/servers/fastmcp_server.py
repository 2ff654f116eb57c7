"""A test server built with FastMCP 4 (run with the venv ``scripts/third-party.sh``
installs for it).

    python tests/client/servers/fastmcp_server.py stdio
    python tests/client/servers/fastmcp_server.py http PORT      # 127.0.0.1 only
"""

from __future__ import annotations

import asyncio
import sys

from fastmcp import Context, FastMCP
from pydantic import BaseModel

mcp = FastMCP("fastmcp-fixture", instructions="A fixture for client tests.")


class Name(BaseModel):
    name: str


@mcp.tool
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return str(a + b)


@mcp.tool
async def slow_progress(ctx: Context, steps: int = 3) -> str:
    """Report progress, then finish."""
    for step in range(steps):
        await ctx.report_progress(step + 1, steps, f"step {step + 1}")
    return "done"


@mcp.tool
async def nap(seconds: float) -> str:
    """Sleep, then answer (for cancellation tests)."""
    await asyncio.sleep(seconds)
    return "rested"


@mcp.tool
async def log_something(ctx: Context) -> str:
    """Send one log message."""
    await ctx.info("hello from FastMCP")
    return "logged"


@mcp.tool
async def ask_name(ctx: Context) -> str:
    """Elicit a name."""
    result = await ctx.elicit("Your name?", Name)
    return f"hello {result.data.name}" if result.action == "accept" else result.action


@mcp.resource("fixture://static", mime_type="text/plain")
def static() -> str:
    """A static text resource."""
    return "static text"


@mcp.resource("fixture://items/{item}")
def item(item: str) -> str:
    """One item, by name."""
    return f"item {item}"


@mcp.prompt
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        mcp.run("stdio", show_banner=False)
    else:
        mcp.run("http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False,
                log_level="warning")
